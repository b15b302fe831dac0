"""When two descriptions with the same normalised title are one paper.

A title alone is not enough: collections hold different papers under one title (a test
collection's 19 "note on creep buckling of columns", front matter such as "Preface" in
every volume). Two descriptions with the same normalised title are the same paper only when
nothing says otherwise and at least one thing agrees.

Evidence against (any one refuses the match):
- different DOIs, or different arXiv ids (both present);
- different first authors (both present);
- different years, except one year apart with the same first author (a preprint and its
  publication); a year missing on one side only matches with the same first author;
- abstracts that disagree (both present; `abstracts_agree`), unless the first author and
  the year (as above) agree: engines send snippets, often of another part of the abstract,
  so two true descriptions of one paper may share no word there;
- neither names an author and their venues differ (both present).

Evidence for (at least one is needed): the same first author, the same year, the same
venue, agreeing abstracts, or the same source id from the same source.

Identifiers of other schemes (an ACL id against another ACL id) are checked by the caller,
against the identifier table.

Identifiers before titles (papers/services.py, in this order): the same DOI (or a DOI alias
row), the same arXiv id, or the same id of another scheme (PMID, PMCID, OpenReview id, ACL
id, an engine's id) is the same paper, whatever the titles say. Two different ids of one
scheme on both sides (two PMIDs, two PMCIDs, two OpenReview ids, two ACL ids) refuse a
title match, as two different DOIs or arXiv ids do here.

Preprint <-> published version: a preprint's record may name the DOI of its published
version (`identifiers["published_doi"]`: bioRxiv, medRxiv and Europe PMC give it). A record
whose published_doi is a library paper's DOI (its column or a DOI alias row) is that paper,
and a record whose DOI is a library preprint's published_doi is that preprint: one work, as
an arXiv preprint and its venue version are one when the venue's record carries the arXiv
id. This link is explicit, so it holds even when the two sides carry different PMIDs (PubMed
indexes some preprints under a PMID of their own). The merged paper keeps the DOI it had
first; the other is kept as an alternate (`metadata.alternates.doi`), and the review's
grouping reads both (projects/review/dedup.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

YEAR_TOLERANCE = 1
# Two abstracts of one paper (a preprint's and the publication's, a re-typed copy) share
# most of their words; two papers on one subject share under a third (measured on the
# Cranfield collection: its same-title pairs score 0.08-0.20 when different papers,
# 0.69-0.91 when the same).
ABSTRACT_AGREEMENT = 0.5
_WORD = re.compile(r"[^\W_]{3,}")


@dataclass(frozen=True)
class Description:
    """What matching reads of a record or a stored paper ('' / None when unknown)."""

    first_author: str = ""  # folded family name
    year: int | None = None
    venue: str = ""  # folded venue name
    abstract: str = ""
    doi: str = ""
    arxiv_id: str = ""
    source: str = ""
    source_id: str = ""


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower()))


def abstracts_agree(first: str, second: str) -> bool | None:
    """Whether two abstracts describe one paper (Jaccard overlap of their words of three
    letters or more at least ABSTRACT_AGREEMENT); None when either is empty."""
    a, b = _words(first), _words(second)
    if not a or not b:
        return None
    return len(a & b) / len(a | b) >= ABSTRACT_AGREEMENT


def same_paper_by_title(incoming: Description, known: Description) -> bool:
    """Whether two descriptions that share a normalised title are one paper (the rule in
    the module docstring)."""
    if incoming.doi and known.doi and incoming.doi != known.doi:
        return False
    if incoming.arxiv_id and known.arxiv_id and incoming.arxiv_id != known.arxiv_id:
        return False
    authors = bool(incoming.first_author and known.first_author)
    same_author = authors and incoming.first_author == known.first_author
    if authors and not same_author:
        return False
    years = incoming.year is not None and known.year is not None
    if incoming.year != known.year:
        if not same_author:
            return False
        if years and abs(incoming.year - known.year) > YEAR_TOLERANCE:  # type: ignore[operator]
            return False
    if same_author and years:
        return True  # title, first author and year (or a year apart): the strongest case
    abstracts = abstracts_agree(incoming.abstract, known.abstract)
    if abstracts is False:
        return False
    venues = bool(incoming.venue and known.venue)
    same_venue = venues and incoming.venue == known.venue
    if venues and not same_venue and not incoming.first_author and not known.first_author:
        return False
    same_source_id = bool(
        incoming.source_id
        and incoming.source == known.source
        and incoming.source_id == known.source_id
    )
    same_year = incoming.year is not None and incoming.year == known.year
    return same_author or same_year or same_venue or bool(abstracts) or same_source_id

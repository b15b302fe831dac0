"""Version-aware de-duplication inside a review: records of one work found as
several library papers (a preprint and its publication, arXiv id <-> DOI <-> OpenAlex/S2
ids, title variants) are grouped before screening, so each work is screened once.

The library's upsert already merges records naming the same DOI, arXiv id or source id, or
the same normalised title, first author and year (papers/services.py). What reaches a
review as two papers is what it left apart on purpose: an arXiv preprint (its arXiv DOI,
10.48550/arXiv.<id>) and the journal version (another DOI) a year or two later, a title
with a subtitle, "v2" or other punctuation. Grouping here is a review's reading, kept in
`ReviewDuplicate` rows and reversible (`duplicate_split`); the library stays as it is.

Two papers are one work when
- they share an identifier: DOI, arXiv id (also read from an arXiv DOI), another scheme's
  id (OpenAlex, S2, ACL, PMID, PMCID, OpenReview, ...), or a related one their records
  named (a DOI or arXiv id the library kept as an alternate when records merged, an arXiv
  entry's other DOIs, a bioRxiv/medRxiv/Europe PMC preprint's published version's DOI,
  `published_doi`, read as a DOI): `same <scheme> <value>`;
- or, conservatively, their titles are the same once folded (case, accents, punctuation,
  spaces, a trailing "v2" / "preprint" / "extended version"), or one is the other plus a
  subtitle, or they differ only in the spelling of a word or two; with the same numbers
  in both ("Part 1" is not "Part 2"); both with authors, the same first author's family
  name and at least half the shorter author list shared; and years at most one apart, or
  up to PREPRINT_YEARS when the earlier is a preprint. Two groups are never joined when
  that would put two different arXiv ids, or two different non-preprint DOIs, in one
  group.

The group's screened candidate is its published version (not a preprint) when it has one,
else the best-ranked record; the others are its members.
"""

from __future__ import annotations

import difflib
import functools
import itertools
import re
import uuid
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils import timezone

from core.errors import InvalidInput, NotFound
from papers.identifiers import fold_key, normalize_arxiv_id, normalize_doi
from papers.models import Paper, PaperAuthor, PaperIdentifier
from projects import permissions
from projects.models import ReviewCandidate, ReviewCheckpoint, ReviewDuplicate, ReviewSession
from projects.review.workflow import (
    InvalidDecision,
    NoPendingCheckpoint,
    SessionComplete,
    WorkflowFailed,
)

# A preprint may come out this many years before its publication.
PREPRINT_YEARS = 2
# Title variants (in titles of at least MIN_FUZZY_CHARS letters): at most
# MAX_VARIANT_WORDS words spelled differently, each starting with the same VARIANT_PREFIX
# letters and at most MAX_WORD_EDITS letters apart: "colour"/"color", "modelling"/
# "modeling", "analyse"/"analyze".
MIN_FUZZY_CHARS = 20
MAX_VARIANT_WORDS = 2
MAX_WORD_EDITS = 2
VARIANT_PREFIX = 3
VARIANT_MIN_LETTERS = 4
# A main title (before a subtitle) stands for the whole title from this many words.
MIN_MAIN_TITLE_WORDS = 3
# DOI prefixes of preprint servers: arXiv, bioRxiv/medRxiv, SSRN, OSF/PsyArXiv/SocArXiv,
# Preprints.org, Research Square, TechRxiv, ChemRxiv, Authorea.
PREPRINT_DOI_PREFIXES = (
    "10.48550/", "10.1101/", "10.2139/", "10.31219/", "10.31234/", "10.31235/", "10.20944/",
    "10.21203/", "10.36227/", "10.26434/", "10.22541/",
)  # fmt: skip
PREPRINT_VENUES = ("arxiv", "biorxiv", "medrxiv", "ssrn", "preprint", "research square")
ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$")
# Trailing version marks dropped before comparing titles (on the folded title).
_VERSION_MARK = re.compile(
    r"\s+(?:v\d{1,2}|version \d{1,2}|preprint|extended version|full version|"
    r"extended abstract|arxiv|arxiv preprint)$"
)
_SUBTITLE = re.compile(r"\s*(?::|\s[-\u2013\u2014]\s|\?|\.\s)\s*")
_ROMAN = {"i", "ii", "iii", "iv", "v", "vi", "vii", "viii", "ix", "x"}
_NUMBERED = {"part", "volume", "vol", "chapter", "section", "paper", "study", "phase"}
SCHEMES_IGNORED = {"citekey"}  # not identifying (papers.services.NON_IDENTIFYING_SCHEMES)


@dataclass
class Work:
    """What matching reads of one library paper."""

    paper_id: int
    title: str
    year: int | None
    doi: str | None
    arxiv_id: str | None
    preprint: bool
    identifiers: set[tuple[str, str]] = field(default_factory=set)
    authors: list[str] = field(default_factory=list)  # folded family names, in order

    @property
    def key(self) -> str:
        return title_key(self.title)

    @property
    def published_doi(self) -> str | None:
        return self.doi if self.doi and not _preprint_doi(self.doi) else None


@functools.lru_cache(maxsize=4096)
def title_key(title: str) -> str:
    """The folded title without a trailing version mark ("v2", "preprint", ...)."""
    key = fold_key(title, max_length=1000)
    while True:
        shorter = _VERSION_MARK.sub("", key)
        if shorter == key or not shorter:
            return key
        key = shorter


def _compact(key: str) -> str:
    return key.replace(" ", "")


@functools.lru_cache(maxsize=4096)
def _main_title(title: str) -> str | None:
    """The title before its subtitle, folded, when it has one of enough words."""
    parts = _SUBTITLE.split(title.strip(), maxsplit=1)
    if len(parts) < 2 or not parts[1].strip():
        return None
    main = title_key(parts[0])
    return main if len(main.split()) >= MIN_MAIN_TITLE_WORDS else None


@functools.lru_cache(maxsize=4096)
def _numbers(key: str) -> frozenset[str]:
    """The numbers a title names: digits, and roman numerals after "part", "volume"..."""
    words = key.split()
    found = {w for w in words if w.isdigit()}
    found |= {w for prev, w in itertools.pairwise(words) if prev in _NUMBERED and w in _ROMAN}
    return frozenset(found)


def _preprint_doi(doi: str) -> bool:
    return doi.startswith(PREPRINT_DOI_PREFIXES)


def titles_match(a: str, b: str) -> str | None:
    """How two titles are the same title (`same title`, `subtitle`, `title variant`), or
    None. Titles naming different numbers are never the same."""
    key_a, key_b = title_key(a), title_key(b)
    if not key_a or not key_b or _numbers(key_a) != _numbers(key_b):
        return None
    compact_a, compact_b = _compact(key_a), _compact(key_b)
    if compact_a == compact_b:
        return "same title"
    main_a, main_b = _main_title(a), _main_title(b)
    if (main_a and _compact(main_a) == compact_b) or (main_b and _compact(main_b) == compact_a):
        return "subtitle"
    if min(len(compact_a), len(compact_b)) >= MIN_FUZZY_CHARS and _spelling_variants(
        key_a.split(), key_b.split()
    ):
        return "title variant"
    return None


def _spelling_variants(words_a: list[str], words_b: list[str]) -> bool:
    """The same words but for at most MAX_VARIANT_WORDS spelled differently: the same
    first letters and at most MAX_WORD_EDITS characters apart ("colour"/"color",
    "modelling"/"modeling"; not "image"/"video")."""
    if len(words_a) != len(words_b):
        return False
    differing = [(a, b) for a, b in zip(words_a, words_b, strict=True) if a != b]
    if len(differing) > MAX_VARIANT_WORDS:
        return False
    for a, b in differing:
        if min(len(a), len(b)) < VARIANT_MIN_LETTERS or a[:VARIANT_PREFIX] != b[:VARIANT_PREFIX]:
            return False
        matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
        same = sum(block.size for block in matcher.get_matching_blocks())
        if max(len(a), len(b)) - same > MAX_WORD_EDITS:
            return False
    return True


def _years_fit(a: Work, b: Work, exact_title: bool) -> str | None:
    if a.year is None or b.year is None:
        # Unknown years: only the very same title.
        return "year unknown" if exact_title else None
    if a.year == b.year:
        return str(a.year)
    early, late = (a, b) if a.year < b.year else (b, a)
    gap = late.year - early.year  # type: ignore[operator]
    if gap <= 1 or (early.preprint and not late.preprint and gap <= PREPRINT_YEARS):
        return f"{early.year}/{late.year}"
    return None


def _authors_fit(a: Work, b: Work) -> bool:
    if not a.authors or not b.authors or a.authors[0] != b.authors[0]:
        return False
    shorter = min(len(set(a.authors)), len(set(b.authors)))
    return len(set(a.authors) & set(b.authors)) * 2 >= shorter


def same_work(a: Work, b: Work) -> str | None:
    """Why two papers are versions of one work by title, authors and year; None if not
    (identifiers are compared by `work_groups`)."""
    if not _authors_fit(a, b):
        return None
    if a.arxiv_id and b.arxiv_id and a.arxiv_id != b.arxiv_id:
        return None
    if a.published_doi and b.published_doi and a.published_doi != b.published_doi:
        return None
    how = titles_match(a.title, b.title)
    if how is None:
        return None
    years = _years_fit(a, b, exact_title=how == "same title")
    if years is None:
        return None
    return f"{how}, first author {a.authors[0]}, years {years}"


def works_load(paper_ids: Iterable[int]) -> dict[int, Work]:
    """The Work of each paper (three queries whatever their number)."""
    ids = list(dict.fromkeys(paper_ids))
    rows = Paper.objects.filter(pk__in=ids).values_list(
        "pk", "title", "year", "doi", "arxiv_id", "venue__name", "source", "metadata"
    )
    works: dict[int, Work] = {}
    for pk, title, year, doi, arxiv_id, venue, source, metadata in rows:
        doi = normalize_doi(doi) if doi else None
        arxiv = normalize_arxiv_id(arxiv_id) if arxiv_id else None
        preprint_venue = any(name in (venue or "").lower() for name in PREPRINT_VENUES)
        preprint = (doi is not None and _preprint_doi(doi)) or (
            doi is None and (arxiv is not None or preprint_venue or source == "arxiv")
        )
        works[pk] = Work(pk, title, year, doi, arxiv, preprint, _related(metadata))
    for pk, scheme, value in PaperIdentifier.objects.filter(paper_id__in=ids).values_list(
        "paper_id", "scheme", "value"
    ):
        if scheme not in SCHEMES_IGNORED:
            works[pk].identifiers.add((scheme.lower(), value.strip().lower()))
    for pk, family in (
        PaperAuthor.objects.filter(paper_id__in=ids)
        .order_by("paper_id", "position")
        .values_list("paper_id", "author__family_name")
    ):
        works[pk].authors.append(fold_key(family or ""))
    return works


def _related(metadata: Any) -> set[tuple[str, str]]:
    """The other DOIs and arXiv ids a paper's records named: the values the library kept
    as alternates when records merged into it disagreed (an arXiv record naming its
    journal DOI), and the further DOIs an arXiv entry lists."""
    if not isinstance(metadata, dict):
        return set()
    alternates = metadata.get("alternates") or {}
    named: list[tuple[str, Any]] = [
        (scheme, entry.get("value"))
        for scheme, field_name in (("doi", "doi"), ("arxiv", "arxiv_id"))
        for entry in alternates.get(field_name) or []
        if isinstance(entry, dict)
    ]
    named += [("doi", value) for value in metadata.get("other_dois") or []]
    related = set()
    for scheme, value in named:
        normal = normalize_doi(value) if scheme == "doi" else normalize_arxiv_id(value)
        if normal:
            related.add((scheme, normal))
    return related


def _identity_keys(work: Work) -> set[tuple[str, str]]:
    keys = set(work.identifiers)
    if work.doi:
        keys.add(("doi", work.doi))
        arxiv_doi = ARXIV_DOI.match(work.doi)
        if arxiv_doi:
            arxiv = normalize_arxiv_id(arxiv_doi.group(1))
            if arxiv:
                keys.add(("arxiv", arxiv))
    if work.arxiv_id:
        keys.add(("arxiv", work.arxiv_id))
    normalised = set()
    for scheme, value in keys:
        if scheme == "published_doi":  # a preprint's published version: the same work
            scheme = "doi"
        if scheme == "doi":
            value = normalize_doi(value) or value
        elif scheme == "arxiv":
            value = normalize_arxiv_id(value) or value
        normalised.add((scheme, value))
    return normalised


@dataclass
class Grouping:
    """`groups`: lists of paper_ids, the screened one first, in the order of their first
    paper; `attached`: paper_id -> the known candidate (paper_id) it is a version of;
    `why`: paper_id -> why it joined its group (members only)."""

    groups: list[list[int]]
    attached: dict[int, int]
    why: dict[int, str]


class _Groups:
    """Union-find over papers, refusing a union that would hold two different arXiv ids
    or two different published DOIs."""

    def __init__(self, works: Mapping[int, Work]) -> None:
        self.parent = {pk: pk for pk in works}
        self.arxiv = {pk: {w.arxiv_id} - {None} for pk, w in works.items()}
        self.dois = {pk: {w.published_doi} - {None} for pk, w in works.items()}

    def find(self, pk: int) -> int:
        while self.parent[pk] != pk:
            self.parent[pk] = self.parent[self.parent[pk]]
            pk = self.parent[pk]
        return pk

    def union(self, a: int, b: int, *, check: bool) -> bool:
        root_a, root_b = self.find(a), self.find(b)
        if root_a == root_b:
            return False
        for sets in (self.arxiv, self.dois):
            if check and sets[root_a] and sets[root_b] and not sets[root_a] & sets[root_b]:
                return False
        self.parent[root_b] = root_a
        for sets in (self.arxiv, self.dois):
            sets[root_a] |= sets.pop(root_b)
        return True


def work_groups(
    order: Sequence[int], works: Mapping[int, Work], known: Mapping[int, int] | None = None
) -> Grouping:
    """Group the papers `order` lists (best first) into works. `known` maps papers the
    review already has (the candidates and their members) to their candidate's paper_id:
    a new paper of the same work as one of them is attached to that candidate."""
    known = dict(known or {})
    everyone = [pk for pk in dict.fromkeys([*order, *known]) if pk in works]
    position = {pk: index for index, pk in enumerate(everyone)}
    groups = _Groups({pk: works[pk] for pk in everyone})
    why: dict[int, str] = {}

    def join(a: int, b: int, reason: str, *, check: bool) -> None:
        first, second = sorted((a, b), key=position.__getitem__)
        if groups.union(first, second, check=check):
            why.setdefault(second, reason)

    by_key: dict[tuple[str, str], int] = {}
    for pk in everyone:
        for key in sorted(_identity_keys(works[pk])):
            if key in by_key:
                join(by_key[key], pk, f"same {key[0]} {key[1]}", check=False)
            else:
                by_key[key] = pk
    # Only papers of the same first author whose titles start alike can match by title
    # (same title, a subtitle added, a word spelled with the same first letters).
    blocks: dict[tuple[str, str], list[int]] = {}
    for pk in everyone:
        work = works[pk]
        if work.authors and work.authors[0]:
            start = _compact(work.key)[:VARIANT_PREFIX]
            blocks.setdefault((work.authors[0], start), []).append(pk)
    for block in blocks.values():
        for i, a in enumerate(block):
            for b in block[i + 1 :]:
                if groups.find(a) == groups.find(b):
                    continue
                reason = same_work(works[a], works[b])
                if reason:
                    join(a, b, reason, check=True)
    members: dict[int, list[int]] = {}
    for pk in everyone:
        members.setdefault(groups.find(pk), []).append(pk)
    result = Grouping([], {}, {})
    for group in members.values():
        new = [pk for pk in group if pk not in known]
        if not new:
            continue
        candidates = [pk for pk in group if pk in known]
        if candidates:
            target = known[candidates[0]]
            for pk in new:
                result.attached[pk] = target
                result.why[pk] = why.get(pk) or f"a version of paper {target}"
            continue
        # The published version is screened; among equals, the best ranked.
        primary = min(new, key=lambda pk: (works[pk].preprint, position[pk]))
        ordered = [primary, *[pk for pk in new if pk != primary]]
        result.groups.append(ordered)
        for pk in ordered[1:]:
            result.why[pk] = why.get(pk) or why.get(primary) or "same work"
    result.groups.sort(key=lambda group: min(position[pk] for pk in group))
    return result


# --- undoing a merge ------------------------------------------------------------------------


@transaction.atomic
def duplicate_split(
    *, session_id: uuid.UUID | str, paper: Any, split_by: str = "agent"
) -> dict[str, Any]:
    """Undo a grouping: the grouped record `paper` (paper_id, id or citekey) becomes a
    candidate of its own, pending screening, while its source's checkpoint (screen for the
    search, expand for the citation search) waits; the grouping stays recorded with who
    split it and when. Raises NotFound, SessionComplete, WorkflowFailed,
    NoPendingCheckpoint (screening of its source is over), InvalidDecision (not a grouped
    record of the review), InvalidInput (a bad screener name)."""
    permissions.require_review(session_id, permissions.EDIT)
    session = ReviewSession.objects.select_for_update().filter(pk=session_id).first()
    if session is None:
        raise NotFound(f"No review session {session_id!r}.", session_id=str(session_id))
    if session.status == ReviewSession.Status.COMPLETE:
        raise SessionComplete(
            f"Review {session.pk} is complete; its groups can no longer change.",
            session_id=str(session.pk),
        )
    if session.status == ReviewSession.Status.FAILED:
        raise WorkflowFailed(
            f"Review {session.pk} failed: {session.error}",
            session_id=str(session.pk),
            error=session.error,
        )
    who = " ".join(str(split_by).split())
    if not 1 <= len(who) <= 150 or not who.isprintable():
        raise InvalidInput("split_by must be 1-150 characters.", field="split_by")
    live = list(
        session.duplicates.filter(split_at__isnull=True).select_related("paper", "candidate")
    )
    ref = str(paper).strip() if isinstance(paper, int | str) else None
    member = next(
        (m for m in live if ref in (str(m.paper_id), m.paper.human_id, m.paper.citekey)),
        None,
    )
    if member is None:
        raise InvalidDecision(
            f"Paper {paper!r} is not a grouped record of this review; its grouped records "
            f"are {[m.paper_id for m in live][:20]}.",
            papers=[str(paper)],
        )
    kind = (
        ReviewCheckpoint.Kind.SCREEN
        if member.source == ReviewCandidate.Source.SEARCH
        else ReviewCheckpoint.Kind.EXPAND
    )
    pending = session.checkpoints.filter(resolved_at__isnull=True).first()
    if session.status != ReviewSession.Status.WAITING or pending is None or pending.kind != kind:
        raise NoPendingCheckpoint(
            f"Paper {member.paper_id} can be split out only while the {kind} checkpoint "
            "waits (its records are still being screened).",
            session_id=str(session.pk),
        )
    last = session.candidates.filter(source=member.source).aggregate(last=Max("rank"))["last"]
    ReviewCandidate.objects.create(
        session=session,
        paper_id=member.paper_id,
        source=member.source,
        round=member.round,
        rank=(last or 0) + 1,
        score=member.score,
        engines=member.engines,
        queries=member.queries,
        cites=member.cites,
    )
    member.split_at = timezone.now()
    member.split_by = who
    member.save(update_fields=["split_at", "split_by"])
    session.save(update_fields=["updated_at"])
    return {
        "session_id": str(session.pk),
        "paper_id": member.paper_id,
        "was_grouped_with": member.candidate.paper_id,
        "status": ReviewCandidate.Status.PENDING.value,
        "next": "It is a candidate of its own now, to screen like the others.",
    }


def duplicates_of(candidates: Iterable[ReviewCandidate]) -> dict[int, list[dict[str, Any]]]:
    """The live grouped records of these candidates (by candidate pk): paper_id, source,
    engines and why."""
    rows = ReviewDuplicate.objects.filter(
        candidate__in=list(candidates), split_at__isnull=True
    ).order_by("pk")
    grouped: dict[int, list[dict[str, Any]]] = {}
    for candidate_id, paper_id, source, engines, match in rows.values_list(
        "candidate_id", "paper_id", "source", "engines", "match"
    ):
        grouped.setdefault(candidate_id, []).append(
            {"paper_id": paper_id, "source": source, "engines": engines, "match": match}
        )
    return grouped

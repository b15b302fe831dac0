"""Resolving cited works to papers: the library first, then the external engines.

Library (no network, a few queries per cite): a citekey (or alias) for LaTeX and pandoc
keys; the DOI or arXiv id of a marker or of its reference-list entry; the entry's title
(the same normalised title, or a full-text hit whose title is nearly the same); and for an
author-year marker with no entry, the first author's family name and the year.

Engines (one fan-out for the whole draft, engines/runner.py, so one deadline and the
request's cancellation cover it): what the library does not hold is looked up by DOI or
arXiv id (details) and by title (search), and a record counts only when its title, or its
identifier, is the one asked for. Results are not added to the library: checking a draft
keeps nothing.

Statuses: `exists` (one paper), `ambiguous` (several, with candidates), `not_found` (the
library and at least one engine that answered know no such paper: an identifier no source
resolves, or a title no source has), `unresolved` (nothing to go on that a source could
settle: a citekey not in the library, a marker with no reference entry, or every engine
that could tell failed; never reported as not_found).

One module because the library and the engines answer the same lookups and are settled by
the same rules into one `Resolution` per cite.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from django.db.models import Q

from core.errors import InvalidInput
from engines.base import DETAILS, SEARCH, SearchRequest
from engines.citecheck.parse import (
    ARXIV,
    AUTHOR_YEAR,
    DOI,
    LATEX,
    NUMERIC,
    PANDOC,
    Cite,
    Draft,
    Reference,
)
from engines.registry import registry
from engines.runner import EngineCall, EngineOutcome, start_calls
from papers.identifiers import fold_key, parse_person_name
from papers.models import Paper, PaperPdf
from papers.schemas import PaperRecord
from papers.scoping import papers_in_scope
from papers.search.fulltext import paper_search_ids

EXISTS = "exists"
NOT_FOUND = "not_found"
AMBIGUOUS = "ambiguous"
UNRESOLVED = "unresolved"

# Two titles are the same work at this similarity of their normalised forms (a dropped
# subtitle or a typo passes, "Attention is all you need" vs "Attention is not all you need"
# does not: 0.96 and 0.93 respectively... so subtitles are compared separately).
TITLE_MATCH = 0.9
MAX_CANDIDATES = 3
SEARCH_ROWS = 5
# Engines asked per kind of lookup, in this order, when they are allowed and available.
DOI_ENGINES = {"crossref": "{}", "openalex": "doi:{}", "semantic_scholar": "DOI:{}"}
ARXIV_ENGINES = {"arxiv": "{}", "semantic_scholar": "ARXIV:{}"}
TITLE_ENGINES = ("crossref", "openalex", "semantic_scholar", "arxiv")
CROSSREF = "crossref"


@dataclass
class Work:
    """A resolved paper: from the library (paper_id set) or as an engine described it."""

    title: str
    year: int | None
    authors: list[str]
    paper_id: int | None = None
    citekey: str = ""
    doi: str = ""
    arxiv_id: str = ""
    has_pdf: bool = False
    abstract: str = ""
    metadata: dict[str, Any] = field(default_factory=dict)
    source: str = "library"
    # A library paper's retraction watch (papers/retractions.py): its status and notices.
    retraction_status: str = ""
    retraction_notices: list[dict[str, Any]] = field(default_factory=list)

    @property
    def families(self) -> list[str]:
        return [fold_key(parse_person_name(name).family) for name in self.authors]

    def short(self) -> str:
        """'Vaswani et al. 2017. Attention Is All You Need'"""
        families = [parse_person_name(name).family for name in self.authors]
        if len(families) > 2:
            who = f"{families[0]} et al."
        else:
            who = " & ".join(families) or "Anon."
        return f"{who} {self.year or 'n.d.'}. {self.title}"

    def brief(self) -> dict[str, Any]:
        return {
            "paper_id": self.paper_id,
            "citekey": self.citekey or None,
            "cite": self.short(),
            "doi": self.doi or None,
            "arxiv_id": self.arxiv_id or None,
            "source": None if self.paper_id else self.source,
        }

    @classmethod
    def of_paper(cls, paper: Paper, *, has_pdf: bool) -> Work:
        links = paper.author_links.select_related("author").order_by("position")
        return cls(
            title=paper.title,
            year=paper.year,
            authors=[link.author.name for link in links],
            paper_id=paper.pk,
            citekey=paper.citekey,
            doi=paper.doi or "",
            arxiv_id=paper.arxiv_id or "",
            has_pdf=has_pdf,
            abstract=paper.abstract or paper.snippet or "",
            metadata=dict(paper.metadata or {}),
            retraction_status=paper.retraction_status,
            retraction_notices=list(paper.retraction_notices or []),
        )

    @classmethod
    def of_record(cls, record: PaperRecord, engine: str) -> Work:
        return cls(
            title=record.title,
            year=record.year,
            authors=[author.name for author in record.authors],
            doi=record.doi or "",
            arxiv_id=record.arxiv_id or "",
            metadata=dict(record.metadata or {}),
            source=engine,
        )


@dataclass
class Resolution:
    status: str
    work: Work | None = None
    candidates: list[Work] = field(default_factory=list)
    via: str = ""  # citekey | doi | arxiv | title | author_year | <engine id>
    reason: str = ""
    reference: Reference | None = None
    engines: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Set by reading the citing sentence (claim.py): the sentence's fit with the paper's
    # title and abstract, with each candidate's (by paper id); how a paper was picked among
    # several; and the paper the citation named when the sentence is about another one.
    fit: float | None = None
    fits: dict[int, float] = field(default_factory=dict)
    picked: dict[str, Any] | None = None
    cited: Work | None = None
    cited_fit: float | None = None


def titles_match(a: str, b: str) -> bool:
    """The same title, allowing case, punctuation, accents, a typo or a subtitle."""
    left, right = fold_key(a), fold_key(b)
    if not left or not right:
        return False
    if left == right:
        return True
    # A subtitle given on one side only ("BERT" vs "BERT: Pre-training of ...").
    short, long = sorted((left, right), key=len)
    if len(short.split()) >= 3 and long.startswith(short + " "):
        return True
    return difflib.SequenceMatcher(None, left, right).ratio() >= TITLE_MATCH


# --- the library ----------------------------------------------------------------------


class Library:
    """Lookups in the library (within the client's scope), each paper read once."""

    def __init__(self, scope: Sequence[str] | None) -> None:
        self.papers = papers_in_scope(scope)
        self._works: dict[int, Work] = {}

    def works(self, queryset: Any, limit: int = MAX_CANDIDATES + 1) -> list[Work]:
        ids = list(queryset.values_list("pk", flat=True).distinct()[:limit])
        wanted = [pk for pk in ids if pk not in self._works]
        if wanted:
            with_pdf = set(
                PaperPdf.objects.filter(paper_id__in=wanted).values_list("paper_id", flat=True)
            )
            for paper in Paper.objects.filter(pk__in=wanted):
                self._works[paper.pk] = Work.of_paper(paper, has_pdf=paper.pk in with_pdf)
        return [self._works[pk] for pk in ids]

    def by_citekey(self, key: str) -> list[Work]:
        return self.works(
            self.papers.filter(
                Q(citekey=key) | Q(identifiers__scheme="citekey", identifiers__value=key)
            )
        )

    def by_doi(self, doi: str) -> list[Work]:
        return self.works(
            self.papers.filter(Q(doi=doi) | Q(identifiers__scheme="doi", identifiers__value=doi))
        )

    def by_arxiv(self, arxiv_id: str) -> list[Work]:
        return self.works(
            self.papers.filter(
                Q(arxiv_id=arxiv_id) | Q(identifiers__scheme="arxiv", identifiers__value=arxiv_id)
            )
        )

    def by_title(self, title: str, year: str = "") -> list[Work]:
        found = self.works(self.papers.filter(title_key=fold_key(title)))
        if not found:
            try:
                ids = paper_search_ids(query=title[:500], limit=SEARCH_ROWS)
            except InvalidInput:
                ids = []
            if ids:
                hits = self.works(self.papers.filter(pk__in=ids))
                found = [work for work in hits if titles_match(work.title, title)]
        if len(found) > 1 and year[:4].isdigit():
            same_year = [work for work in found if work.year == int(year[:4])]
            found = same_year or found
        return found

    def by_author_year(self, family: str, year: str) -> list[Work]:
        if not year[:4].isdigit():
            return []
        rows = self.papers.filter(
            year=int(year[:4]),
            author_links__position=0,
            author_links__author__family_name__iexact=family,
        )
        return self.works(rows)

    def by_first_author(self, family: str, years: range, limit: int) -> list[Work]:
        """Papers whose first author has this family name, in these years (oldest first)."""
        rows = self.papers.filter(
            year__gte=years.start,
            year__lt=years.stop,
            author_links__position=0,
            author_links__author__family_name__iexact=family,
        ).order_by("year", "pk")
        return self.works(rows, limit)

    def knows_author(self, family: str) -> bool:
        return self.papers.filter(author_links__author__family_name__iexact=family).exists()


def names_checked(draft: Draft, library: Library) -> None:
    """Put back a common word the parser dropped from the front of an author list
    ("Will, Smith and Lee (2020)") when the draft's reference list or the library has
    it as an author's family name: then it is a name after all."""
    for index, cite in enumerate(draft.cites):
        if not cite.dropped:
            continue
        word = cite.dropped.split()[-1]
        listed = any(fold_key(word) in map(fold_key, ref.authors) for ref in draft.references)
        if listed or library.knows_author(word):
            draft.cites[index] = replace(
                cite, author=word, key=f"{fold_key(word)}|{cite.year}", dropped=""
            )


# --- one draft --------------------------------------------------------------------------


@dataclass
class _Lookup:
    """What a cite asks the engines: by identifier, or by title."""

    doi: str = ""
    arxiv_id: str = ""
    title: str = ""
    year: str = ""


def _reference_for(cite: Cite, draft: Draft) -> Reference | None:
    if cite.kind == NUMERIC:
        return draft.reference(cite.key)
    if cite.kind in (LATEX, PANDOC):
        return draft.reference(cite.key)
    if cite.kind == AUTHOR_YEAR:
        family = fold_key(cite.author.split()[-1]) if cite.author else ""
        matches = [
            ref
            for ref in draft.references
            if ref.authors
            and fold_key(ref.authors[0]) in (family, fold_key(cite.author))
            and ref.year[:4] == cite.year[:4]
        ]
        suffix = cite.year[4:]
        if len(matches) > 1 and suffix:
            exact = [ref for ref in matches if ref.year == cite.year]
            if exact:
                return exact[0]
            index = ord(suffix) - ord("a")
            return matches[index] if 0 <= index < len(matches) else None
        if len(matches) > 1:
            raise _SeveralEntries(len(matches))
        return matches[0] if matches else None
    return None


class _SeveralEntries(Exception):
    """An author-year marker with no a/b suffix that several entries fit."""

    def __init__(self, count: int) -> None:
        self.count = count


def _settle(found: list[Work], via: str, reference: Reference | None) -> Resolution | None:
    if len(found) == 1:
        return Resolution(EXISTS, found[0], via=via, reference=reference)
    if len(found) > 1:
        return Resolution(
            AMBIGUOUS, candidates=found[:MAX_CANDIDATES], via=via, reference=reference,
            reason="several papers in the library match",
        )  # fmt: skip
    return None


def _resolve_in_library(
    cite: Cite, reference: Reference | None, library: Library
) -> tuple[Resolution | None, _Lookup | None]:
    """The library's answer, or what to ask the engines (None: nothing to ask)."""
    if cite.kind in (LATEX, PANDOC):
        settled = _settle(library.by_citekey(cite.key), "citekey", reference)
        if settled is not None:
            return settled, None
    if cite.kind == DOI:
        return _settle(library.by_doi(cite.key), "doi", None), _Lookup(doi=cite.key)
    if cite.kind == ARXIV:
        return _settle(library.by_arxiv(cite.key), "arxiv", None), _Lookup(arxiv_id=cite.key)
    if reference is not None:
        lookup = _Lookup(reference.doi, reference.arxiv_id, reference.title, reference.year)
        for found, via in (
            (library.by_doi(reference.doi) if reference.doi else [], "doi"),
            (library.by_arxiv(reference.arxiv_id) if reference.arxiv_id else [], "arxiv"),
            (library.by_title(reference.title, reference.year) if reference.title else [], "title"),
        ):
            settled = _settle(found, via, reference)
            if settled is not None:
                return settled, None
        if lookup.doi or lookup.arxiv_id or len(lookup.title.split()) >= 2:
            return None, lookup
        return Resolution(
            UNRESOLVED, reference=reference, reason="the reference entry has no title or identifier"
        ), None
    if cite.kind == AUTHOR_YEAR:
        family = cite.author.split()[-1] if cite.author else ""
        settled = _settle(library.by_author_year(family, cite.year), "author_year", None)
        if settled is not None:
            return settled, None
        return Resolution(
            UNRESOLVED, reason="no paper by this author and year in the library, and no "
            "reference-list entry to look up",
        ), None  # fmt: skip
    if cite.kind == NUMERIC:
        return Resolution(UNRESOLVED, reason=f"no entry [{cite.key}] in the reference list"), None
    return Resolution(
        UNRESOLVED, reason="citekey not in the library and not in the reference list"
    ), None


def _calls(lookup: _Lookup, allowed: Sequence[str]) -> list[EngineCall]:
    engines = registry.engines()

    def usable(engine_id: str, operation: str) -> bool:
        engine = engines.get(engine_id)
        return engine_id in allowed and engine is not None and operation in engine.operations

    if lookup.doi:
        return [
            EngineCall.details(engine_id, form.format(lookup.doi))
            for engine_id, form in DOI_ENGINES.items()
            if usable(engine_id, DETAILS)
        ]
    if lookup.arxiv_id:
        return [
            EngineCall.details(engine_id, form.format(lookup.arxiv_id))
            for engine_id, form in ARXIV_ENGINES.items()
            if usable(engine_id, DETAILS)
        ]
    request = SearchRequest(query=lookup.title[:500], max_results=SEARCH_ROWS)
    return [EngineCall.search(e, request) for e in TITLE_ENGINES if usable(e, SEARCH)]


def _engine_answer(
    lookup: _Lookup, outcomes: list[EngineOutcome], reference: Reference | None
) -> Resolution:
    statuses = {outcome.engine: outcome.summary() for outcome in outcomes}
    matches: list[Work] = []
    for outcome in outcomes:
        if not outcome.ok:
            continue
        for record in outcome.records():
            if lookup.doi or lookup.arxiv_id:
                same = (lookup.doi and record.doi == lookup.doi) or (
                    lookup.arxiv_id and record.arxiv_id == lookup.arxiv_id
                )
                if not same and not (lookup.title and titles_match(record.title, lookup.title)):
                    continue
            elif not titles_match(record.title, lookup.title):
                continue
            if not any(_same_work(record, work) for work in matches):
                matches.append(Work.of_record(record, outcome.engine))
    if matches:
        best = _closest(matches, lookup)
        return Resolution(EXISTS, best, via=best.source, reference=reference, engines=statuses)
    answered = [o for o in outcomes if o.ok or o.status == "not_found"]
    if not outcomes:
        return Resolution(
            UNRESOLVED, reference=reference, engines=statuses,
            reason="not in the library; no engine asked (engines='local' or none available)",
        )  # fmt: skip
    if not answered:
        return Resolution(
            UNRESOLVED, reference=reference, engines=statuses,
            reason="not in the library, and every engine that could tell failed",
        )  # fmt: skip
    what = "identifier" if lookup.doi or lookup.arxiv_id else "title"
    return Resolution(
        NOT_FOUND, reference=reference, engines=statuses,
        reason=f"no paper with this {what} in the library or at "
        + ", ".join(o.engine for o in answered),
    )  # fmt: skip


def _same_work(record: PaperRecord, work: Work) -> bool:
    if record.doi and record.doi == work.doi:
        return True
    return titles_match(record.title, work.title) and (record.year or 0) == (work.year or 0)


def _closest(matches: list[Work], lookup: _Lookup) -> Work:
    def rank(work: Work) -> tuple[int, int, float]:
        same_id = bool(lookup.doi and work.doi == lookup.doi) or bool(
            lookup.arxiv_id and work.arxiv_id == lookup.arxiv_id
        )
        same_year = bool(lookup.year[:4].isdigit() and work.year == int(lookup.year[:4]))
        similarity = difflib.SequenceMatcher(
            None, fold_key(work.title), fold_key(lookup.title)
        ).ratio()
        return (int(same_id), int(same_year), similarity)

    return max(matches, key=rank)


def resolve_all(
    draft: Draft, *, scope: Sequence[str] | None, engine_ids: Sequence[str]
) -> list[Resolution]:
    """One Resolution per cite of `draft`, in order. The library answers first; the rest
    go to `engine_ids` (external engines only) in one fan-out."""
    library = Library(scope)
    names_checked(draft, library)
    resolutions: list[Resolution | None] = []
    asks: dict[int, tuple[_Lookup, Reference | None]] = {}
    memo: dict[tuple[str, str, str], tuple[Resolution | None, _Lookup | None]] = {}
    for index, cite in enumerate(draft.cites):
        try:
            reference = _reference_for(cite, draft)
        except _SeveralEntries as several:
            reason = f"{several.count} reference entries fit this marker (add 2020a, 2020b)"
            resolutions.append(Resolution(AMBIGUOUS, reason=reason))
            continue
        memo_key = (cite.kind, cite.key, reference.label if reference else "")
        if memo_key not in memo:
            memo[memo_key] = _resolve_in_library(cite, reference, library)
        resolution, lookup = memo[memo_key]
        resolutions.append(resolution)
        if resolution is None and lookup is not None:
            asks[index] = (lookup, reference)

    # One call list for the draft; identical lookups share their calls.
    calls: list[EngineCall] = []
    spans: dict[tuple[str, str, str], tuple[int, int]] = {}
    for lookup, _ in asks.values():
        key = (lookup.doi, lookup.arxiv_id, lookup.title)
        if key not in spans:
            mine = _calls(lookup, engine_ids)
            spans[key] = (len(calls), len(calls) + len(mine))
            calls += mine
    # Crossref's update notices (retractions, corrections) of the library's papers cited
    # by DOI, in the same fan-out: the library keeps what Crossref said when the paper was
    # added, and a retraction may have come since.
    notices: dict[str, int] = {}
    if CROSSREF in engine_ids and CROSSREF in registry.engines():
        for resolution in resolutions:
            work = resolution.work if resolution is not None else None
            if work is not None and work.doi and work.doi not in notices:
                notices[work.doi] = len(calls)
                calls.append(EngineCall.details(CROSSREF, work.doi))
    outcomes = start_calls(calls).wait() if calls else []
    for index, (lookup, reference) in asks.items():
        start, end = spans[(lookup.doi, lookup.arxiv_id, lookup.title)]
        resolutions[index] = _engine_answer(lookup, outcomes[start:end], reference)
    for resolution in resolutions:
        work = resolution.work if resolution is not None else None
        if work is not None and work.doi in notices:
            outcome = outcomes[notices[work.doi]]
            records = outcome.records() if outcome.ok else []
            if records and records[0].metadata.get("updated_by"):
                work.metadata["updated_by"] = records[0].metadata["updated_by"]
            if outcome.ok and resolution is not None:
                resolution.engines.setdefault(CROSSREF, outcome.summary())
    return [r if r is not None else Resolution(UNRESOLVED) for r in resolutions]

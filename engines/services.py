"""Searching several engines at once and keeping what they find (docs/ENGINES.md).

`engines_search` fans the external engines out in parallel (engines/runner.py), runs the
local search meanwhile, and merges every external record into the library through the same
de-duplication as the importers (`papers_upsert`): the same paper found by arXiv, Scholar
and OpenAlex becomes one paper with all their identifiers, and appears once in the results
with every engine that found it. No network call happens inside a transaction: the upsert
starts after the engines have answered.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

from core.errors import EngineUnavailable, InvalidInput, NotFound
from engines import query_dialects, search_strings
from engines.base import AUTHOR, SEARCH, EngineError, PaperRef, SearchRequest
from engines.http import path_segment
from engines.registry import BUILTIN_ENGINES, LOCAL_ENGINE, registry
from engines.runner import EngineCall, EngineOutcome, start_calls
from engines.selectors import engines_known_down, in_default
from papers.acl import anthology_id, anthology_page_url, anthology_pdf_url
from papers.identifiers import normalize_arxiv_id, normalize_doi, reference_identifier
from papers.models import Paper
from papers.schemas import SCHOLAR_FIELDS, PaperRecord
from papers.search.types import SearchHit, SearchPage
from papers.selectors import identifier_lookups, paper_brief, papers_in_scope, with_relations
from papers.services import OnSaved, citations_add, papers_upsert_retrying

MAX_ENGINES = 20


@dataclass
class EngineSearchResult:
    """The merged answer: one entry per paper, and each engine's status."""

    results: list[dict[str, Any]]
    engines: dict[str, dict[str, Any]]
    notes: list[str] = field(default_factory=list)
    saved: int = 0
    local_page: SearchPage | None = None


def engines_available(*, operation: str) -> list[str]:
    """Local plus every available engine that supports `operation`, in or out of the
    default set: what a process may search when asked (a review's engines_allowed)."""
    found = registry.engines().values()
    return [LOCAL_ENGINE, *(e.id for e in found if operation in e.operations and e.is_available())]


def engine_ids_resolve(engines: str | Sequence[str] | None, *, operation: str) -> list[str]:
    """The engines to ask, in order: `None` means local plus every available engine of the
    default set (`in_default`) that supports `operation`. Unknown ids stay in the list: they
    are reported per engine."""
    if engines is None:
        available = [
            engine.id
            for engine in registry.engines().values()
            if operation in engine.operations and engine.is_available() and in_default(engine)
        ]
        return [LOCAL_ENGINE, *available]
    requested = [engines] if isinstance(engines, str) else list(engines)
    if len(requested) > MAX_ENGINES:
        raise InvalidInput(f"At most {MAX_ENGINES} engines.", field="engines")
    names = list(dict.fromkeys(name.strip().lower() for name in requested if name.strip()))
    if not names:
        raise InvalidInput("engines is empty: give engine ids or omit it.", field="engines")
    return names


def engine_ids_known(engines: str | Sequence[str] | None, *, operation: str) -> list[str]:
    """`engine_ids_resolve` for a client's argument: a 'a,b' string split, and every
    unknown id an InvalidInput naming the known ones."""
    if isinstance(engines, str):
        engines = [part for part in engines.split(",") if part.strip()] or [engines]
    resolved = engine_ids_resolve(engines, operation=operation)
    known = list(dict.fromkeys([LOCAL_ENGINE, *BUILTIN_ENGINES, *registry.engines()]))
    unknown = [engine_id for engine_id in resolved if engine_id not in known]
    if unknown:
        raise InvalidInput(
            f"Unknown engine(s): {', '.join(unknown)}; known: {', '.join(known)}.",
            field="engines",
            known=known,
        )
    return resolved


@dataclass(frozen=True)
class EngineChoice:
    """The engines a search asks: `local` when the library is searched, the external ones,
    and those left out because they are known to be down (id -> why)."""

    local: bool
    external: list[str]
    skipped: dict[str, str]

    def notes(self) -> list[str]:
        """One line per engine left out: the answer's only words about it."""
        return [f"{engine} skipped: {why}." for engine, why in self.skipped.items()]


def engines_choose(engines: str | Sequence[str] | None, *, operation: str) -> EngineChoice:
    """The engines a search asks. Named ones (a list, or 'a,b') are asked whatever their
    state; an unknown id is InvalidInput naming the known ones. None: the library plus
    every available engine that supports `operation` and is not known to be down
    (`engines_known_down`: its breaker is open, its key refused, its quota used up), so a
    search offline costs no failures, only a line per engine it left out."""
    resolved = engine_ids_known(engines, operation=operation)
    external = [engine_id for engine_id in resolved if engine_id != LOCAL_ENGINE]
    skipped = engines_known_down(external) if engines is None else {}
    return EngineChoice(
        local=LOCAL_ENGINE in resolved,
        external=[engine_id for engine_id in external if engine_id not in skipped],
        skipped=skipped,
    )


# --- search strings -----------------------------------------------------------------------


@dataclass(frozen=True)
class EngineSearches:
    """One search's calls to the external engines, each with the query in the engine's own
    dialect when the query is a search string (engines/search_strings.py), the engines that
    refused it (strict mode), the translations' notes (one line per engine), and the query
    and date range the library gets."""

    calls: list[EngineCall]
    refused: list[EngineOutcome] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    local_query: str = ""
    local_dates: tuple[str | None, str | None] = (None, None)


def engine_searches(
    *,
    engine_ids: Sequence[str],
    request: SearchRequest,
    strict: bool = False,
    fresh: bool = False,
    local_query: str | None = None,
) -> EngineSearches:
    """The search calls for `request` on `engine_ids` (external ones; `local` is skipped).

    A query written as a search string is parsed (InvalidInput, with the position, for a
    malformed one) and translated for each engine by its `query_dialect`, its date range
    narrowing the request's; in `strict` mode an engine that would have to leave out a
    constraint is refused (`unsupported`, reason `query_untranslatable`) instead of asked.
    Any other query goes to every engine as it is (`local_query`, when given, is what the
    library searches: the long-text cut does not apply to it)."""
    external = [engine_id for engine_id in engine_ids if engine_id != LOCAL_ENGINE]
    plain_local = local_query if local_query is not None else request.query
    if not search_strings.is_search_string(request.query):
        return EngineSearches(
            [EngineCall.search(e, request, fresh=fresh) for e in external],
            local_query=plain_local,
            local_dates=(request.date_from, request.date_to),
        )
    written = search_strings.parse(request.query)
    calls: list[EngineCall] = []
    refused: list[EngineOutcome] = []
    notes: list[str] = []
    for engine_id in external:
        try:
            translation = query_dialects.translate(written, _dialect(engine_id), strict=strict)
        except query_dialects.Untranslatable as exc:
            refused.append(
                EngineOutcome(
                    engine_id,
                    "unsupported",
                    f"{engine_id} cannot run this search string as written: {exc.message}.",
                    reason="query_untranslatable",
                )
            )
            continue
        date_from, date_to = search_strings.dates_within(
            translation.dates, request.date_from, request.date_to
        )
        sent = replace(request, query=translation.query, date_from=date_from, date_to=date_to)
        calls.append(EngineCall.search(engine_id, sent, fresh=fresh))
        notes += [f"{engine_id}: {note}." for note in translation.notes]
    library = query_dialects.translate(written, LOCAL_ENGINE)
    notes += [f"{LOCAL_ENGINE}: {note}." for note in library.notes]
    local_dates = search_strings.dates_within(library.dates, request.date_from, request.date_to)
    return EngineSearches(calls, refused, notes, library.query, local_dates)


def _dialect(engine_id: str) -> str:
    """The engine's query dialect; "plain" for one that cannot be used here (its call is
    answered `unavailable` before anything is sent)."""
    try:
        return registry.get(engine_id).query_dialect
    except EngineUnavailable:
        return "plain"


def engines_search(
    *,
    calls: list[EngineCall],
    local: Callable[[], SearchPage] | None,
    save: bool = True,
    on_saved: OnSaved | None = None,
    refused: Sequence[EngineOutcome] = (),
    local_query: str | None = None,
) -> EngineSearchResult:
    """Run `calls` (external engines) in parallel and `local` meanwhile; merge.

    With `save`, every external record is upserted into the library, and `on_saved` gets
    the saved papers' ids (in the upsert's transaction), then the local hits' ids (to file
    them into a project: projects.intake); without it (read-only mode) external results
    are returned as they came, with no paper_id. `refused`: engines answered before any
    call (engine_searches), reported with the others. Each search's status carries the
    search log (docs/SEARCH-STRINGS.md): `query_sent` (`local_query` for the library),
    `searched_at` and the source's `total` when it reports one.
    """
    started_at = _utc_now()
    pending = start_calls(calls) if calls else None
    local_page = local() if local is not None else None
    outcomes = pending.wait() if pending is not None else []

    statuses: dict[str, dict[str, Any]] = {}
    if local_page is not None:
        statuses[LOCAL_ENGINE] = {
            "status": "ok",
            "outcome": "ok" if local_page.hits else "no_results",
            "count": len(local_page.hits),
            "total": local_page.total,
            "mode": local_page.mode,
        }
        if local_query is not None:
            statuses[LOCAL_ENGINE] |= {"query_sent": local_query, "searched_at": started_at}
    for call, outcome in zip(calls, outcomes, strict=True):
        statuses[outcome.engine] = _status(outcome)
        if call.operation in (SEARCH, AUTHOR):
            statuses[outcome.engine] |= _search_log(call, outcome, started_at)
        if call.operation == AUTHOR and (match := _author_match(outcome)):
            statuses[outcome.engine]["author_match"] = match
    for outcome in refused:
        statuses[outcome.engine] = _status(outcome)

    ranked: list[tuple[int, int, str, PaperRecord]] = []
    engine_order = {outcome.engine: index for index, outcome in enumerate(outcomes, start=1)}
    for outcome in outcomes:
        if outcome.ok:
            for rank, record in enumerate(outcome.records()):
                ranked.append((rank, engine_order[outcome.engine], outcome.engine, record))
    notes: list[str] = []
    if save:
        entries, saved = _save_and_merge(local_page, ranked, on_saved)
    else:
        entries, saved = _merge_unsaved(local_page, ranked), 0
        if ranked:
            notes.append(
                "Read-only mode: external results were not added to the library "
                "(they have no paper_id)."
            )
        if on_saved is not None:
            notes.append("Read-only mode: results were not added to the project.")
    # A failed engine is said once, in its own status (message): not again in the notes.
    return EngineSearchResult(entries, statuses, notes, saved, local_page)


def _utc_now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _search_log(call: EngineCall, outcome: EngineOutcome, started_at: str) -> dict[str, Any]:
    """A search's entry in the search log: the query the engine was sent, when (the time
    the source answered: for a cached answer, when it was fetched; else when the search
    started) and the total it reported."""
    request = call.arguments["request"]
    entry: dict[str, Any] = {
        "query_sent": outcome.sent or request["query"],
        "searched_at": outcome.answered_at or started_at,
    }
    # Dates a source takes apart from the query (parameters, or a clause already in `sent`).
    for bound in ("date_from", "date_to"):
        if request.get(bound):
            entry[bound] = request[bound]
    if outcome.ok and outcome.total is not None:
        entry["total"] = outcome.total
    return entry


def _author_match(outcome: EngineOutcome) -> dict[str, Any] | None:
    """The person an engine took the author's name for (DBLP, OpenAlex and Semantic Scholar
    return the papers of the one person their own author search ranks first: a common or
    misspelt name may be someone else), or None when it says nothing of it."""
    records = outcome.result if outcome.ok and isinstance(outcome.result, list) else []
    for values in records:
        metadata = values.get("metadata") if isinstance(values, dict) else None
        match = metadata.get("author_match") if isinstance(metadata, dict) else None
        if isinstance(match, dict):
            return {key: value for key, value in match.items() if value not in ("", None, [])}
    return None


def _status(outcome: EngineOutcome) -> dict[str, Any]:
    """An engine's entry in a search's answer. A failure leaves out the counters that say
    nothing (not cached, no attempt made, no time taken): agents pay for each of them."""
    summary = {**outcome.summary(), "count": len(outcome.result or []) if outcome.ok else 0}
    if not outcome.ok:
        for key in ("cached", "attempts", "elapsed_ms"):
            if not summary.get(key):
                summary.pop(key, None)
    return summary


def _save_and_merge(
    local_page: SearchPage | None,
    ranked: list[tuple[int, int, str, PaperRecord]],
    on_saved: OnSaved | None,
) -> tuple[list[dict[str, Any]], int]:
    ranked.sort(key=lambda item: (item[0], item[1]))
    records = [record for _, _, _, record in ranked]
    outcome = papers_upsert_retrying(records=records, on_saved=on_saved) if records else None
    saved_ids = outcome.paper_ids if outcome else []

    local_hits = local_page.hits if local_page else []
    if on_saved is not None and local_hits:
        on_saved([hit.record["paper_id"] for hit in local_hits])

    # One entry per paper, in rank order: local hits first at their rank, then external.
    order: list[int] = []
    found_by: dict[int, list[str]] = {}
    local_entry: dict[int, dict[str, Any]] = {}
    for hit in local_hits:
        paper_id = hit.record["paper_id"]
        local_entry[paper_id] = hit.as_dict()
        found_by.setdefault(paper_id, []).append(LOCAL_ENGINE)
        order.append(paper_id)
    external_rank: dict[int, tuple[int, str, PaperRecord]] = {}
    source_ranks: dict[int, dict[str, int]] = {}
    for (rank, _, engine, record), paper_id in zip(ranked, saved_ids, strict=True):
        engines = found_by.setdefault(paper_id, [])
        if engine not in engines:
            engines.append(engine)
        source_ranks.setdefault(paper_id, {}).setdefault(engine, rank + 1)
        if paper_id not in local_entry and paper_id not in external_rank:
            external_rank[paper_id] = (rank, engine, record)
    order += fused_order(list(external_rank), source_ranks)

    # Local hits already carry their record; only papers the engines found are read here.
    # A client scoped to collections sees the engine's record, not the library's, for a
    # result that de-duplicated into a paper outside its collections (papers_in_scope
    # narrows to the client's; the whole library outside a client).
    wanted = {paper_id for paper_id in order if paper_id not in local_entry}
    papers = (
        {paper.pk: paper for paper in with_relations(papers_in_scope(None).filter(pk__in=wanted))}
        if wanted
        else {}
    )
    entries = []
    for paper_id in order:
        entry = local_entry.get(paper_id)
        if entry is None:
            paper = papers.get(paper_id)
            if paper is None:
                rank, engine, record = external_rank[paper_id]
                entries.append(unsaved_entry(record, engine=engine, rank=rank + 1))
                continue
            entry = _brief_with_links(paper)
        entry["engine"] = found_by[paper_id][0]
        entry["engines"] = found_by[paper_id]
        if paper_id in external_rank:
            entry["rank"] = external_rank[paper_id][0] + 1
            if len(source_ranks[paper_id]) > 1:  # each source's own rank, kept
                entry["ranks"] = source_ranks[paper_id]
        entries.append(entry)
    created = outcome.created if outcome else 0
    return entries, created


# Reciprocal-rank fusion's constant (Cormack et al. 2009), as the review's ranking uses.
FUSION_K = 60


def fused_order(paper_ids: list[int], source_ranks: dict[int, dict[str, int]]) -> list[int]:
    """Papers the engines found, by relevance across sources: reciprocal-rank fusion of
    each source's own relevance rank, so a work several sources rank high comes first and
    no source's date order decides; ties keep the interleaved order (`paper_ids`)."""
    position = {paper_id: index for index, paper_id in enumerate(paper_ids)}

    def fused(paper_id: int) -> tuple[float, int]:
        score = sum(1 / (FUSION_K + rank) for rank in source_ranks[paper_id].values())
        return -score, position[paper_id]

    return sorted(paper_ids, key=fused)


def _brief_with_links(paper: Paper) -> dict[str, Any]:
    """The record of a paper an engine found: the one record shape (publication, urls,
    has_pdf, ... from paper_brief) plus what the engines report of it."""
    return {**paper_brief(paper), "citation_count": paper.citation_count}


def _merge_unsaved(
    local_page: SearchPage | None, ranked: list[tuple[int, int, str, PaperRecord]]
) -> list[dict[str, Any]]:
    entries = [
        {**hit.as_dict(), "engine": LOCAL_ENGINE, "engines": [LOCAL_ENGINE]}
        for hit in (local_page.hits if local_page else [])
    ]
    ranked.sort(key=lambda item: (item[0], item[1]))
    for rank, _, engine, record in ranked:
        entries.append(unsaved_entry(record, engine=engine, rank=rank + 1))
    return entries


def unsaved_entry(record: PaperRecord, *, engine: str, rank: int | None = None) -> dict[str, Any]:
    """An external record shown as it came, when it is not (yet) in the library."""
    entry: dict[str, Any] = {
        "paper_id": None,
        "id": None,
        "title": record.title,
        "year": record.year,
        "venue": record.venue or None,
        "publication": record.publication_info or record.venue or None,
        "authors": [author.name for author in record.authors],
        "keywords": record.keywords,
        "source": record.source,
        "doi": record.doi,
        "arxiv_id": record.arxiv_id,
        "url": record.source_url or None,
        "pdf_url": record.pdf_url or None,
        "citation_count": record.citation_count,
        "engine": engine,
        "engines": [engine],
    }
    if rank is not None:
        entry["rank"] = rank
    return entry


def outcomes_by_engine(outcomes: list[EngineOutcome]) -> dict[str, EngineOutcome]:
    return {outcome.engine: outcome for outcome in outcomes}


# --- one paper by identifier (add_paper) -----------------------------------------------------

_OPENALEX_ID = re.compile(r"(?:openalex\.org/)?\b(W\d{4,})\b", re.IGNORECASE)
_S2_ID = re.compile(r"semanticscholar\.org/paper/(?:[^/]+/)?([0-9a-f]{40})\b", re.IGNORECASE)
# A bioRxiv / medRxiv page or PDF: the preprint's DOI, then its version and page kind.
_PREPRINT_PAGE = re.compile(
    r"^https?://(?:www\.)?(?:biorxiv|medrxiv)\.org/content/(10\.(?:1101|64898)/[\d.]+?)"
    r"(?:v\d+)?(?:\.full(?:\.pdf)?|\.full-text|\.abstract|\.article-info|\.supplementary-material)?"
    r"/?(?:[?#]\S*)?$",
    re.IGNORECASE,
)
# The preprint servers' DOIs (Cold Spring Harbor's prefixes): their own details API knows them.
PREPRINT_DOI_PREFIXES = ("10.1101/", "10.64898/")


# The engines that describe a paper by a PubMed, PubMed Central or OpenReview id, and the id
# each is given (its own form: the PMID's digits, the PMCID 'PMC...', the OpenReview note id).
# Europe PMC indexes PubMed too, so it also answers for a PMID (asked together with PubMed).
ENGINES_BY_SCHEME = {
    "pmid": ("pubmed", "europepmc"),
    "pmcid": ("europepmc",),
    "openreview": ("openreview",),
}
SCHEME_NAMES = {"pmid": "PMID", "pmcid": "PMCID", "openreview": "OpenReview id"}


@dataclass(frozen=True)
class ParsedIdentifier:
    """What `add_paper` was given: kind is doi | arxiv | pmid | pmcid | openreview | acl |
    openalex | s2."""

    kind: str
    value: str

    def lookups(self) -> list[EngineCall]:
        """Which engines can describe the paper, asked together and merged."""
        if self.kind in ENGINES_BY_SCHEME:
            return [
                EngineCall.details(engine, self.value) for engine in ENGINES_BY_SCHEME[self.kind]
            ]
        if self.kind == "arxiv":
            return [
                EngineCall.details("arxiv", self.value),
                EngineCall.details("semantic_scholar", f"ARXIV:{self.value}"),
            ]
        if self.kind == "doi":
            preprint = self.value.startswith(PREPRINT_DOI_PREFIXES)
            calls = [
                EngineCall.details("crossref", self.value),
                EngineCall.details("openalex", f"doi:{self.value}"),
                EngineCall.details("semantic_scholar", f"DOI:{self.value}"),
            ]
            if not any(call.engine in registry.engines() for call in calls):
                # A server offering only a field's sources (a biomedical one): they know DOIs.
                calls = [EngineCall.details(e, self.value) for e in ("europepmc", "pubmed")]
            return [
                *calls,
                *(EngineCall.details(e, self.value) for e in ("biorxiv", "medrxiv") if preprint),
            ]
        if self.kind == "openalex":
            return [EngineCall.details("openalex", self.value)]
        if self.kind == "acl":
            return [EngineCall.details("semantic_scholar", f"ACL:{self.value}")]
        return [EngineCall.details("semantic_scholar", self.value)]


def identifier_parse(identifier: str) -> ParsedIdentifier:
    """A DOI, arXiv id, ACL Anthology id, OpenAlex work id or a URL holding one of them
    (doi.org, arxiv.org, aclanthology.org, openalex.org, semanticscholar.org, a bioRxiv or
    medRxiv page). InvalidInput says what is accepted."""
    text = identifier.strip()
    if not text:
        raise InvalidInput("identifier is empty.", field="identifier")
    page = _PREPRINT_PAGE.match(text)
    doi = normalize_doi(page.group(1) if page else text)
    if doi:
        try:  # what no real DOI holds, and would choose an engine's URL path
            path_segment(doi, what="DOI")
        except EngineError as exc:
            raise InvalidInput(exc.message, field="identifier") from None
        return ParsedIdentifier("doi", doi)
    arxiv_id = normalize_arxiv_id(text)
    if arxiv_id:
        return ParsedIdentifier("arxiv", arxiv_id)
    # The rule of paper references: 'pmid:' / 'PMID ' or a PubMed URL (bare digits are not
    # read as a PMID), 'PMC...' or a PMC URL, 'openreview:' or an OpenReview URL.
    named = reference_identifier(text)
    if named is not None and named[0] in ENGINES_BY_SCHEME:
        return ParsedIdentifier(*named)
    acl_id = anthology_id(text)
    if acl_id:
        return ParsedIdentifier("acl", acl_id)
    if match := _OPENALEX_ID.search(text):
        return ParsedIdentifier("openalex", match.group(1).upper())
    if match := _S2_ID.search(text):
        return ParsedIdentifier("s2", match.group(1).lower())
    raise InvalidInput(
        f"Cannot tell which paper {identifier!r} is: give a DOI (10.xxxx/...), an arXiv id "
        "(2106.01234 or hep-th/9901001), a PMID (pmid:31452104), a PMCID (PMC6739224), an "
        "OpenReview id (openreview:<id>), an ACL Anthology id (2020.acl-main.1 or P18-1001), "
        "an OpenAlex work id (W...), or a doi.org, arxiv.org, pubmed, PMC, openreview.net, "
        "aclanthology.org, openalex.org, semanticscholar.org, biorxiv.org or medrxiv.org URL.",
        field="identifier",
    )


def _library_match(parsed: ParsedIdentifier) -> Paper | None:
    """The library paper with this identifier: in its column (DOI, arXiv id), among its
    identifier rows, or (a DOI) as a preprint's published version's DOI; best first."""
    for query, _ in identifier_lookups(parsed.kind, [parsed.value]):
        paper = Paper.objects.filter(query).order_by("pk").first()
        if paper is not None:
            return paper
    return None


@dataclass
class AddedPaper:
    paper: Paper
    created: bool
    engines: dict[str, dict[str, Any]]
    notes: list[str]


def paper_add_by_identifier(*, identifier: str, on_saved: OnSaved | None = None) -> AddedPaper:
    """Add the paper an identifier names, with metadata from every engine that knows it
    (merged into one paper by the usual de-duplication). A paper already in the library is
    returned as it is; no duplicate is ever created. `on_saved` gets the paper's id either
    way (projects.intake files it into projects).

    Raises InvalidInput (unrecognised identifier), NotFound (no engine knows the paper) or
    EngineUnavailable (every engine that could tell failed).
    """
    parsed = identifier_parse(identifier)
    existing = _library_match(parsed)
    if existing is not None:
        if on_saved is not None:
            on_saved([existing.pk])
        return AddedPaper(existing, False, {}, ["Already in the library; nothing fetched."])
    outcomes = start_calls(parsed.lookups()).wait()
    # `count` as every engine status has it (the tool's EngineStatus requires it).
    statuses = {
        outcome.engine: {**outcome.summary(), "count": len(outcome.result or []) * outcome.ok}
        for outcome in outcomes
    }
    records = [record for outcome in outcomes if outcome.ok for record in outcome.records()]
    if parsed.kind == "acl":
        for record in records:  # the Anthology's own addresses, whatever the engine said
            record.identifiers.setdefault("acl", parsed.value)
            record.pdf_url = record.pdf_url or anthology_pdf_url(parsed.value)
            record.source_url = record.source_url or anthology_page_url(parsed.value)
    if not records:
        if all(outcome.status in ("unavailable", "unsupported") for outcome in outcomes):
            reasons = "; ".join(f"{o.engine}: {o.message}" for o in outcomes)
            raise EngineUnavailable(
                f"No engine here can look up {identifier!r}"
                f" ({SCHEME_NAMES.get(parsed.kind, parsed.kind)}): {reasons}",
                identifier=identifier,
                engines=statuses,
            )
        if all(outcome.status in ("not_found", "ok") for outcome in outcomes):
            raise NotFound(
                f"No engine knows {identifier!r}.", identifier=identifier, engines=statuses
            )
        raise EngineUnavailable(
            f"Could not look up {identifier!r}: the engines that could tell failed.",
            identifier=identifier,
            engines=statuses,
        )
    outcome = papers_upsert_retrying(records=records, on_saved=on_saved)
    paper_ids = list(dict.fromkeys(outcome.paper_ids))
    notes = []
    if len(paper_ids) > 1:
        notes.append(
            "The engines described this identifier as different papers (conflicting "
            f"identifiers); kept as paper_ids {paper_ids}."
        )
    paper = Paper.objects.get(pk=paper_ids[0])
    return AddedPaper(paper, outcome.created > 0, statuses, notes)


# --- citing papers --------------------------------------------------------------------------


def paper_ref(paper: Paper) -> PaperRef:
    """The handles engines may use to find `paper`."""
    identifiers = dict(paper.identifiers.values_list("scheme", "value"))
    scholar = {name: getattr(paper, name) for name in SCHOLAR_FIELDS if getattr(paper, name, "")}
    return PaperRef(
        title=paper.title,
        doi=paper.doi,
        arxiv_id=paper.arxiv_id,
        identifiers=identifiers,
        scholar=scholar,
        year=paper.year,
    )


def citing_papers(
    *,
    paper: Paper,
    engine_ids: list[str],
    max_results: int,
    scope: Sequence[str] | None,
    save: bool = True,
    on_saved: OnSaved | None = None,
) -> EngineSearchResult:
    """Papers citing `paper`: those in the library (engine `local`) and those the external
    engines know. External ones are added to the library with the citation recorded;
    `on_saved` as for engines_search."""
    local: Callable[[], SearchPage] | None = None
    if LOCAL_ENGINE in engine_ids:

        def local() -> SearchPage:
            citing = papers_in_scope(scope).filter(references__cited=paper).order_by("-year", "pk")
            total = citing.count()
            hits = [
                SearchHit(paper_brief(item), 1.0) for item in with_relations(citing)[:max_results]
            ]
            return SearchPage(hits, total, max_results, 0, mode="citations")

    ref = paper_ref(paper)
    calls = [
        EngineCall.citing(engine_id, ref, max_results)
        for engine_id in engine_ids
        if engine_id != LOCAL_ENGINE
    ]
    result = engines_search(calls=calls, local=local, save=save, on_saved=on_saved)
    if save:
        pairs = [
            (entry["paper_id"], paper.pk)
            for entry in result.results
            if entry.get("paper_id") and entry["paper_id"] != paper.pk
        ]
        citations_add(pairs=pairs)
    return result

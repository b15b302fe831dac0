"""Gathering a review's candidates: the search stage and the citation search (snowballing).

Both ask the engines through `engines.services` (parallel calls, rate limits, the response
cache), which merges every record into the library with the usual de-duplication, so each
candidate is a library paper with a paper_id, however many engines and queries found it.
They return the candidates, ranked, and the PRISMA identification counts; they write
nothing of the review itself (the step's commit does that, in one transaction).

Ranking is reciprocal-rank fusion over the result lists (one per query, or one per cited
paper): a paper high in several lists, or found by several engines, comes first. Citation
candidates that cite more of the included papers come before the others.

Before ranking, papers that are versions of one work (a preprint and its publication,
projects/review/dedup.py) are grouped: the group is one candidate, screened once, with the
other versions as its `members`; its score is theirs summed. In the citation search, a
version of a paper the review already has is `attached` to that paper's candidate.
"""

from __future__ import annotations

import logging
import random
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from django.db import IntegrityError

from core.errors import EngineUnavailable, InvalidInput
from engines.base import CITING, SearchRequest
from engines.registry import LOCAL_ENGINE, registry
from engines.runner import EngineOutcome
from engines.selectors import engines_known_down
from engines.services import (
    EngineSearches,
    EngineSearchResult,
    citing_papers,
    engine_searches,
    engines_search,
)
from engines.snowball import citations_walk
from papers.models import Paper
from papers.search.local import local_search, year_of
from papers.search.types import SearchFilters, SearchPage
from projects.review.dedup import work_groups, works_load
from projects.review.planning import Plan

# Reciprocal-rank fusion constant (Cormack et al. 2009): 60 damps the top ranks' weight.
RRF_K = 60
# Citation search follows at most this many included papers (each costs engine calls).
MAX_CITED_PAPERS = 10
# Tries of a search whose saving into the library collided with another's (see _saved).
SAVE_ATTEMPTS = 5

logger = logging.getLogger(__name__)


class Stopped(Exception):
    """The review was removed, or handed to another run, while this one was searching."""


@dataclass
class Found:
    paper_id: int
    year: int | None
    first_seen: int
    score: float = 0.0
    engines: list[str] = field(default_factory=list)
    queries: list[str] = field(default_factory=list)
    cites: list[int] = field(default_factory=list)
    # Other versions of the same work, grouped with this one: (record, why).
    members: list[tuple[Found, str]] = field(default_factory=list)


@dataclass
class Gathered:
    """Candidates best first (at most max_results), identification counts, and each
    engine's status per query (or per cited paper); `attached`: versions of papers the
    review already has, as (that candidate's paper_id, record, why)."""

    candidates: list[Found]
    identification: dict[str, Any]
    statuses: dict[str, dict[str, Any]]
    notes: list[str]
    attached: list[tuple[int, Found, str]] = field(default_factory=list)
    # The search log (docs/SEARCH-STRINGS.md): one entry per query and source.
    searches: list[dict[str, Any]] = field(default_factory=list)


def search_gather(*, plan: Plan, max_results: int, keep_going: Callable[[], bool]) -> Gathered:
    """Run every query of the plan on every engine of the plan; rank and count.

    Engine failures are statuses, not errors; engines known to be down (breaker open) are
    not asked (`_without_down`). Raises Stopped when `keep_going()` turns false between
    queries."""
    plan, down = _without_down(plan)
    found: dict[int, Found] = {}
    identified: Counter[str] = Counter()
    sources: dict[str, dict[str, Any]] = {}
    statuses: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    searches: list[dict[str, Any]] = []
    for query in plan.queries:
        if not keep_going():
            raise Stopped
        result, translation_notes = _search_one(query, plan, max_results)
        _collect(result, query, found, identified, sources, statuses, notes, label=query)
        searches += search_log_entries(query, result, translation_notes)
    gathered = _ranked(found, identified, sources, statuses, notes, plan, max_results, known={})
    gathered.searches = searches
    return _with_down(gathered, down)


# What a search-log entry keeps of an engine's status.
LOG_FIELDS = (
    "query_sent", "date_from", "date_to", "searched_at", "count", "total", "status", "reason",
    "message",
)  # fmt: skip


def search_log_entries(
    query: str, result: EngineSearchResult, notes: list[str]
) -> list[dict[str, Any]]:
    """One search-log entry per source asked for `query`: the query as written, the query
    the source was sent, when, the records it returned (`count`) and the matches it
    reported (`total`), its status (with why, when it failed or refused) and what the
    translation could not keep (`notes`)."""
    entries = []
    for engine, status in result.engines.items():
        entry: dict[str, Any] = {"source": engine, "query": query}
        for key in LOG_FIELDS:
            value = status.get(key)
            if value is not None and (
                key not in ("reason", "message") or status.get("status") != "ok"
            ):
                entry[key] = value
        prefix = f"{engine}: "
        kept = [note.removeprefix(prefix) for note in notes if note.startswith(prefix)]
        if kept:
            entry["notes"] = kept
        entries.append(entry)
    return entries


def citations_gather(
    *,
    plan: Plan,
    cited: list[Paper],
    known: dict[int, int],
    max_results: int,
    keep_going: Callable[[], bool],
) -> Gathered:
    """Papers citing the `cited` ones (the included papers, best first), from the library's
    citations and the plan's engines that have citation data. Papers in `known` (already
    candidates, or grouped with one: paper_id -> the candidate's paper_id) count as
    duplicates, and so do other versions of them (attached to their candidate). Engines
    known to be down are not asked."""
    plan, down = _without_down(plan)
    found: dict[int, Found] = {}
    identified: Counter[str] = Counter()
    sources: dict[str, dict[str, Any]] = {}
    statuses: dict[str, dict[str, Any]] = {}
    notes: list[str] = []
    if plan.snowball_direction != "citing":
        return _with_down(_snowball_gather(plan, cited, known, max_results, keep_going), down)
    engine_ids = [engine for engine in plan.engines if _has_citations(engine)]
    if len(cited) > MAX_CITED_PAPERS:
        notes.append(f"Citations followed for the first {MAX_CITED_PAPERS} included papers.")
    for paper in cited[:MAX_CITED_PAPERS]:
        if not keep_going():
            raise Stopped
        search = partial(
            citing_papers, paper=paper, engine_ids=engine_ids, max_results=max_results, scope=None
        )
        result = _saved(search)
        label = f"cites paper {paper.pk}"
        _collect(
            result, None, found, identified, sources, statuses, notes, label=label, cites=paper.pk
        )
    gathered = _ranked(found, identified, sources, statuses, notes, plan, max_results, known=known)
    return _with_down(gathered, down)


def _snowball_gather(
    plan: Plan,
    cited: list[Paper],
    known: dict[int, int],
    max_results: int,
    keep_going: Callable[[], bool],
) -> Gathered:
    """The citation search through projects.snowball (plan.snowball_direction references
    or both): one walk from the included papers; a candidate's `cites` are the included
    papers it connects to, whichever way the citation goes."""
    if not keep_going():
        raise Stopped
    notes: list[str] = []
    if len(cited) > MAX_CITED_PAPERS:
        notes.append(f"Citations followed for the first {MAX_CITED_PAPERS} included papers.")
    walk = citations_walk(
        seeds=cited[:MAX_CITED_PAPERS], direction=plan.snowball_direction, depth=1,
        limit=max_results, engine_ids=plan.engines,
    )  # fmt: skip
    years = dict(Paper.objects.filter(pk__in=list(walk.reached)).values_list("pk", "year"))
    found = {
        item.paper_id: Found(
            item.paper_id,
            years.get(item.paper_id),
            first_seen=position,
            score=len(item.engines) / (RRF_K + position + 1),
            engines=list(item.engines),
            cites=sorted(item.via),
        )
        for position, item in enumerate(walk.ranked())
    }
    identified = Counter({e: s["records"] for e, s in walk.engines.items() if s["answered"]})
    sources = {
        engine: {"asked": s["calls"], "answered": s["answered"]}
        | ({"failure": s["last_failure"]} if "last_failure" in s else {})
        for engine, s in walk.engines.items()
    }
    statuses = {f"{plan.snowball_direction} of the included papers": walk.engines}
    notes += walk.notes
    return _ranked(found, identified, sources, statuses, notes, plan, max_results, known=known)


# --- pieces ---------------------------------------------------------------------------------


def _without_down(plan: Plan) -> tuple[Plan, dict[str, str]]:
    """The plan without the engines whose breakers are open now (asking them would only
    fail again, once per query), and those engines with why."""
    down = engines_known_down(plan.engines)
    if not down:
        return plan, {}
    return replace(plan, engines=[e for e in plan.engines if e not in down]), down


def _with_down(gathered: Gathered, down: dict[str, str]) -> Gathered:
    """The step's counts with the engines left out as known to be down: not reached, with
    why once (in `sources`), never a count of 0."""
    if down:
        identification = gathered.identification
        for engine, why in down.items():
            identification["not_reached"][engine] = "known_down"
            identification["sources"][engine] = {
                "outcome": "known_down", "searches": 0, "failed": 0,
                "last_failure": {"reason": "circuit_open", "message": why},
            }  # fmt: skip
    return gathered


def _search_one(query: str, plan: Plan, max_results: int) -> tuple[EngineSearchResult, list[str]]:
    """One query of the plan on its engines, and the notes of its translation. A search
    string is translated per engine in strict mode (engines.services.engine_searches): a
    review's log must be the search as written, so a source that would leave out a
    constraint is refused (its status says why) rather than searched more broadly."""
    request = SearchRequest(
        query=query, max_results=max_results, date_from=plan.date_from, date_to=plan.date_to
    )
    try:
        searches = engine_searches(engine_ids=plan.engines, request=request, strict=True)
    except InvalidInput as exc:  # a malformed search string: said per source, as a refusal
        searches = _malformed(plan, query, exc.message)
    local_error: list[str] = []
    local_from, local_to = searches.local_dates

    def local() -> SearchPage:
        try:
            filters = SearchFilters(year_from=year_of(local_from), year_to=year_of(local_to))
            return local_search(query=searches.local_query, filters=filters, limit=max_results)
        except InvalidInput as exc:  # the library's query language refused it
            local_error.append(exc.message)
            return SearchPage([], 0, max_results, 0)

    result = _saved(
        lambda: engines_search(
            calls=searches.calls,
            local=local if LOCAL_ENGINE in plan.engines else None,
            save=True,
            refused=searches.refused,
            local_query=searches.local_query,
        )
    )
    if local_error:
        result.engines[LOCAL_ENGINE] = {
            **result.engines[LOCAL_ENGINE],
            "status": "error",
            "outcome": "error",
            "reason": "bad_query",
            "message": local_error[0],
            "count": 0,
        }
        for key in ("total", "mode"):
            result.engines[LOCAL_ENGINE].pop(key, None)
    return result, searches.notes


def _malformed(plan: Plan, query: str, message: str) -> EngineSearches:
    """A plan query that is a malformed search string: every source refuses it with the
    parser's message, so the review goes on with its other queries and says why."""
    refused = [
        EngineOutcome(
            engine, "error", f"The search string is malformed: {message}", reason="bad_query"
        )
        for engine in plan.engines
        if engine != LOCAL_ENGINE
    ]
    return EngineSearches([], refused, local_query=query)


def _saved(search: Callable[[], EngineSearchResult]) -> EngineSearchResult:
    """Run a search that saves what it finds into the library, again when the saving
    collided with another review's saving the same paper, or another paper given the same
    citekey (papers_upsert checks, then inserts: two transactions can both pass the check).
    The next try merges into what the other one saved; engines answer it from their cache."""
    for attempt in range(1, SAVE_ATTEMPTS + 1):
        try:
            return search()
        except IntegrityError as exc:
            if attempt == SAVE_ATTEMPTS:
                raise
            logger.info("Saving search results collided (%s); try %d", exc, attempt + 1)
            time.sleep(random.uniform(0.05, 0.25) * attempt)
    raise AssertionError("unreachable")


def _collect(
    result: EngineSearchResult,
    query: str | None,
    found: dict[int, Found],
    identified: Counter[str],
    sources: dict[str, dict[str, Any]],
    statuses: dict[str, dict[str, Any]],
    notes: list[str],
    *,
    label: str,
    cites: int | None = None,
) -> None:
    statuses[label] = result.engines
    found_by: dict[str, set[int]] = {}
    for entry in result.results:
        if entry.get("paper_id"):
            for engine in entry.get("engines") or [entry.get("engine")]:
                found_by.setdefault(engine, set()).add(entry["paper_id"])
    for engine, status in result.engines.items():
        answered = status.get("status") == "ok"
        source = sources.setdefault(engine, {"asked": 0, "answered": 0, "papers": set()})
        if answered:
            # A source's records are counted once per step (PRISMA's records identified in
            # a database): the same paper from a second query of the same source, or (the
            # citation search) citing a second included paper, is not a new record, so
            # not a duplicate removed. docs/REVIEW.md "Counts".
            papers = found_by.get(engine, set())
            again = len(papers & source["papers"])
            identified[engine] += max(0, int(status.get("count") or 0) - again)
            source["papers"] |= papers
        source["asked"] += 1
        if answered:
            source["answered"] += 1
        else:
            source["failure"] = {
                key: status[key]
                for key in ("outcome", "reason", "message")
                if status.get(key) is not None
            }
            source["failure"].setdefault("outcome", status.get("status", "error"))
    for note in result.notes:
        if note not in notes:
            notes.append(note)
    for position, entry in enumerate(result.results):
        paper_id = entry.get("paper_id")
        if not paper_id:
            continue
        item = found.get(paper_id)
        if item is None:
            item = found[paper_id] = Found(paper_id, entry.get("year"), first_seen=len(found))
        engines = entry.get("engines") or [entry.get("engine")]
        item.score += len(engines) / (RRF_K + position + 1)
        item.engines.extend(engine for engine in engines if engine not in item.engines)
        if query is not None and query not in item.queries:
            item.queries.append(query)
        if cites is not None and cites not in item.cites:
            item.cites.append(cites)


def _ranked(
    found: dict[int, Found],
    identified: Counter[str],
    sources: dict[str, dict[str, Any]],
    statuses: dict[str, dict[str, Any]],
    notes: list[str],
    plan: Plan,
    max_results: int,
    *,
    known: dict[int, int],
) -> Gathered:
    year_from, year_to = plan.year_range()
    total = sum(identified.values())
    new = [item for item in found.values() if item.paper_id not in known]
    grouping = work_groups(
        [item.paper_id for item in new], works_load([*found, *known]), known=known
    )
    attached = [
        (grouping.attached[item.paper_id], item, grouping.why[item.paper_id])
        for item in new
        if item.paper_id in grouping.attached
    ]
    works = []
    for group in grouping.groups:
        head = found[group[0]]
        head.members = [(found[pk], grouping.why[pk]) for pk in group[1:]]
        works.append(head)
    # A work is within the date range when one of its versions is (a 2018 preprint of a
    # 2020 paper); its score sums its versions', as a paper found twice sums its ranks.
    within = [
        item
        for item in works
        if any(_within(v.year, year_from, year_to) for v in (item, *_versions(item)))
    ]
    within.sort(key=lambda item: (-len(work_cites(item)), -work_score(item), _first_seen(item)))
    kept = within[:max_results]
    versions = sum(len(item.members) for item in kept) + len(attached)
    identification = {
        # Records per source that answered; a source that never did is not 0 here but
        # under `not_reached` with what happened (unreachable, rate_limited, bad_key, ...).
        "identified": {
            engine: identified[engine] for engine, source in sources.items() if source["answered"]
        },
        "not_reached": {
            engine: source["failure"]["outcome"]
            for engine, source in sources.items()
            if not source["answered"]
        },
        "sources": {engine: _source_summary(source) for engine, source in sources.items()},
        "identified_total": total,
        # Records of a work already counted: the same paper from another engine or query,
        # another version of it (grouped), or (citation search) a paper the review has.
        "duplicates_removed": total - len(works),
        # Of those, the versions kept as members of a candidate's group (dedup.py).
        "versions_grouped": versions,
        "outside_date_range": len(works) - len(within),
        "over_limit": len(within) - len(kept),
    }
    return Gathered(kept, identification, statuses, notes, attached)


def _versions(item: Found) -> list[Found]:
    return [member for member, _ in item.members]


def work_cites(item: Found) -> set[int]:
    return {pk for version in (item, *_versions(item)) for pk in version.cites}


def work_score(item: Found) -> float:
    return item.score + sum(member.score for member in _versions(item))


def _first_seen(item: Found) -> int:
    return min(version.first_seen for version in (item, *_versions(item)))


def _source_summary(source: dict[str, Any]) -> dict[str, Any]:
    """How one source did over the step's searches: `outcome` ok (every search answered),
    partial (some failed) or the failure's outcome (none answered), with the searches
    asked and failed, and the last failure's reason and message."""
    asked, answered = source["asked"], source["answered"]
    failure = source.get("failure", {})
    outcome = "ok" if answered == asked else "partial" if answered else failure["outcome"]
    summary: dict[str, Any] = {"outcome": outcome, "searches": asked, "failed": asked - answered}
    if failure:
        summary["last_failure"] = failure
    return summary


def _within(year: int | None, year_from: int | None, year_to: int | None) -> bool:
    if year is None:  # unknown years are screened by a person, not dropped
        return True
    return (year_from is None or year >= year_from) and (year_to is None or year <= year_to)


def _has_citations(engine_id: str) -> bool:
    if engine_id == LOCAL_ENGINE:
        return True
    try:
        return CITING in registry.get(engine_id).operations
    except EngineUnavailable:
        return False

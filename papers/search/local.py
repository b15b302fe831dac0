"""The `local` engine: searching the papers already in the library, with the filters,
project and date bounds that the search interfaces accept (MCP's search_papers for engine
`local`, REST's /api/search). External engines are the engines app's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from django.conf import settings

from papers.scoping import project_find, project_ids_for
from papers.search import filters as search_filters
from papers.search import fulltext, semantic, startup, understanding
from papers.search.embedding import models_loaded
from papers.search.lexical import one_search
from papers.search.types import SearchFilters, SearchPage

Found = TypeVar("Found")

LOCAL_ENGINE = "local"


def year_of(date: str | None) -> int | None:
    """The year of a YYYY, YYYY-MM or YYYY-MM-DD bound (the interfaces check the pattern)."""
    return int(date[:4]) if date else None


def search_filters_build(
    *,
    payload: Mapping[str, Any] | None = None,
    project: str | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
    scope: Sequence[str] | None = None,
) -> SearchFilters:
    """Filters from a payload dict (see `filters_from_payload`) narrowed to a project (id
    or name, resolved within the scope) and to publication years from the date bounds.

    Raises InvalidInput for a bad payload or an empty date range, NotFound for an unknown
    project.
    """
    filters = search_filters.filters_from_payload(payload or {})
    project_id = project_find(ref=project, scope=scope).id if project else None
    return search_filters.filters_merge(
        filters, project=project_id, year_from=year_of(date_from), year_to=year_of(date_to)
    )


def local_search(
    *,
    query: str,
    filters: SearchFilters | None = None,
    limit: int = 10,
    offset: int = 0,
    scope: Sequence[str] | None = None,
    rerank: bool | None = None,
    understand: bool = True,
) -> SearchPage:
    """Search the library as `search_papers` (engine `local`) and REST /api/search do.

    `rerank` true: hybrid (full text fused with semantic ranking); false: full text only.
    None (the default): hybrid when SEARCH_RERANK is on (the default, chosen by
    measurement: docs/SEARCH.md), the query is natural language (no phrase, prefix,
    exclusion or operator, whose strict meaning a paper found by meaning would break),
    the library has vectors, and the words match at least FUZZY_BELOW papers (fewer: a
    misspelling, which typo-tolerant full text handles); else full text. Errors as
    `paper_search`.

    When the filters name one project (its id or name, no pattern), every hit carries that
    project's `project_id`, as engine results do.

    `understand` (and the SEARCH_UNDERSTAND setting): authors, years and venues the query
    names are read as filters where the intent is clear, with a note
    (papers/search/understanding.py).
    """
    fulltext.check_query(query, limit, offset)
    reading = _understood(query, filters, scope, understand)
    page, notes = _as_read(
        reading,
        lambda text, where: _search(
            query=text, filters=where, limit=limit, offset=offset, scope=scope, rerank=rerank
        ),
        lambda found: found.total,
        query,
        filters,
        scope,
    )
    page.notes[:0] = notes
    project_id = _filtered_project(filters, scope)
    if project_id is not None:
        for hit in page.hits:
            hit.record["project_id"] = project_id
    return page


def _understood(
    query: str, filters: SearchFilters | None, scope: Sequence[str] | None, understand: bool
) -> understanding.Reading:
    if not understand:
        return understanding.Reading(query=query, filters=filters, topic=query)
    return understanding.read_query(query, filters, scope=scope)


def _as_read(
    reading: understanding.Reading,
    search: Callable[[str, SearchFilters | None], Found],
    total: Callable[[Found], int],
    query: str,
    filters: SearchFilters | None,
    scope: Sequence[str] | None,
) -> tuple[Found, tuple[str, ...]]:
    """`search` of the query as read (its text, the filters read from it merged in) and
    the reading's notes; when the filters read from it leave no paper at all in the
    library (a reading is a guess: "... since 1979" in a claim is not about when papers
    appeared, and the library may hold no years), of the query as typed with the request's
    own filters instead, if that finds papers, with a note saying so. Filters that hold
    papers, none of which has the words, are the empty answer they are."""
    found = search(reading.query, reading.filters)
    if (
        not reading.understood
        or total(found)
        or search_filters.papers_passing(reading.filters, scope).exists()
    ):
        return found, reading.notes
    as_typed = search(query, filters)
    if not total(as_typed):
        return found, reading.notes
    return as_typed, (understanding.unmatched_note(reading), *reading.notes[1:])


def _filtered_project(filters: SearchFilters | None, scope: Sequence[str] | None) -> str | None:
    """The id of the one project the filters restrict to, else None."""
    if filters is None or not filters.project or search_filters.has_wildcard(filters.project):
        return None
    ids = project_ids_for([filters.project])
    if scope is not None:
        ids = [project_id for project_id in ids if project_id in project_ids_for(scope)]
    return ids[0] if len(ids) == 1 else None


def _reading(query: str, rerank: bool | None) -> str:
    """How a query is ranked: "fulltext", "hybrid" (asked for), or "auto" (hybrid when
    the library has vectors and the words match at least FUZZY_BELOW papers)."""
    if rerank is False or (rerank is None and not settings.SEARCH_RERANK):
        return "fulltext"
    if rerank:
        return "hybrid"
    understood = fulltext.check_query(query, 1, 0)
    if understood.mode != "natural" or understood.constraint is not None:
        return "fulltext"
    if startup.loading() or not models_loaded():
        # A server's warm-up is still loading the models or the vectors
        # (vectors_available would wait for them): "auto" ranks the words first and asks
        # for vectors only when they match enough papers, so a misspelt query is answered
        # at once.
        return "auto"
    return "auto" if semantic.vectors_available() else "fulltext"


def _search(
    *,
    query: str,
    filters: SearchFilters | None,
    limit: int,
    offset: int,
    scope: Sequence[str] | None,
    rerank: bool | None,
) -> SearchPage:
    fulltext.check_query(query, limit, offset)  # limits first, whichever reading follows
    reading = _reading(query, rerank)
    if reading == "hybrid":
        return semantic.hybrid_search(
            query=query, filters=filters, limit=limit, offset=offset, scope=scope
        )
    if reading == "auto" and startup.loading():
        words = _while_starting(query, filters, limit, offset, scope)
        if words is not None:
            return words
    if reading == "auto":
        page = semantic.hybrid_page(
            query=query, filters=filters, limit=limit, offset=offset, scope=scope, lazy=False,
            min_lexical=fulltext.FUZZY_BELOW,
        )  # fmt: skip
        if page is not None:
            return page
    return fulltext.paper_search(
        query=query, filters=filters, limit=limit, offset=offset, scope=scope
    )


def _while_starting(
    query: str,
    filters: SearchFilters | None,
    limit: int,
    offset: int,
    scope: Sequence[str] | None,
) -> SearchPage | None:
    """A search while a server's start loads the models and vectors
    (papers/search/startup.py): ranked by the words first, so a misspelling (fewer than
    FUZZY_BELOW matches, for typo-tolerant full text) never waits; else the start's first
    searches wait for the load, up to SEARCH_START_WAIT_MS, and None when it ended in
    time (hybrid follows, its words ranked again: a start's first searches only); after
    that, the words' ranking with a note."""
    page = fulltext.paper_search(
        query=query, filters=filters, limit=limit, offset=offset, scope=scope
    )
    if page.mode == "fuzzy" or page.total < fulltext.FUZZY_BELOW:
        return page  # the words matched too few papers: typo tolerance's answer
    if _loaded_in_time():
        return None
    if semantic.vectors_stored():
        page.notes.append(
            "Ranked by the words alone: the server started moments ago and is still loading "
            f"semantic search ({startup.loading_for():.0f} s so far); the same search ranks "
            "by meaning as well once it has loaded."
        )
    return page


def _loaded_in_time() -> bool:
    """Whether nothing is loading, or the start's load ended within its first searches'
    wait (papers/search/startup.py)."""
    return startup.wait(settings.SEARCH_START_WAIT_MS / 1000)


@dataclass
class LocalRanking:
    """The papers a search finds, best first, as ids (see local_search_ids)."""

    ids: list[int]
    total: int
    mode: str  # "fulltext" or "hybrid"
    # The respelled query when nothing matched it as typed (fulltext.query_correction).
    corrected: str | None = None
    # What was read from the query (query understanding's notes; local_search's page
    # carries the same), for the interfaces that show or pass on a ranking.
    notes: tuple[str, ...] = ()


@one_search()  # the full-text and semantic rankings read the filters' papers once
def local_search_ids(
    *,
    query: str,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
    limit: int = fulltext.MAX_IDS,
    rerank: bool | None = None,
    understand: bool = True,
) -> LocalRanking:
    """The order `local_search` pages through, as ids, `limit` deep (at most MAX_IDS):
    for the interfaces that list or count a search's papers rather than show a page of
    hits (the admin's search boxes, a project's page, facets over a query), so the same
    query and filters give the same order everywhere.

    Hybrid: the first HYBRID_DEPTH ids are the fused ranking local_search shows, then
    the remaining full-text matches in their order. `total`: the papers matching the
    query's words (plus those found by meaning only, in hybrid). Errors as local_search.
    """
    fulltext.check_query(query, 1, 0)
    ranking, notes = _as_read(
        _understood(query, filters, scope, understand),
        lambda text, where: _ranked_ids(text, where, scope, limit, rerank),
        lambda found: found.total,
        query,
        filters,
        scope,
    )
    ranking.notes = notes
    return ranking


def _ranked_ids(
    query: str,
    filters: SearchFilters | None,
    scope: Sequence[str] | None,
    limit: int,
    rerank: bool | None,
) -> LocalRanking:
    reading = _reading(query, rerank)
    if reading == "fulltext" or (reading == "auto" and not _loaded_in_time()):
        ranked = fulltext.paper_search_ranked(
            query=query, filters=filters, scope=scope, limit=limit
        )
        return LocalRanking(ranked.ids, ranked.total, "fulltext", ranked.corrected)
    if reading == "hybrid":
        lexical = fulltext.paper_search_scored(
            query=query, filters=filters, scope=scope, limit=limit
        )
    else:
        lexical = fulltext.paper_search_ranked(
            query=query, filters=filters, scope=scope, limit=limit
        )
        if lexical.total < fulltext.FUZZY_BELOW or not semantic.vectors_available():
            return LocalRanking(lexical.ids, lexical.total, "fulltext", lexical.corrected)
    fused = semantic.hybrid_fuse(
        query=query, lexical=(lexical.ids, lexical.scores), filters=filters, scope=scope
    )
    return LocalRanking([pk for pk, _ in fused[:limit]], max(len(fused), lexical.total), "hybrid")

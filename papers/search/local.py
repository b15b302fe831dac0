"""The `local` engine: searching the papers already in the library, with the filters,
project and date bounds that the search interfaces accept (MCP's search_papers for engine
`local`, REST's /api/search). External engines are the engines app's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.conf import settings

from papers.scoping import project_find
from papers.search import filters as search_filters
from papers.search import fulltext, semantic
from papers.search.types import SearchFilters, SearchPage

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
) -> SearchPage:
    """Search the library as `search_papers` (engine `local`) and REST /api/search do.

    `rerank` true: hybrid (full text fused with semantic ranking); false: full text only.
    None (the default): hybrid when SEARCH_RERANK is on (the default, chosen by
    measurement: docs/SEARCH.md), the query is natural language (no phrase, prefix,
    exclusion or operator, whose strict meaning a paper found by meaning would break),
    the library has vectors, and the words match at least FUZZY_BELOW papers (fewer: a
    misspelling, which typo-tolerant full text handles); else full text. Errors as
    `paper_search`.
    """
    if rerank is False or (rerank is None and not settings.SEARCH_RERANK):
        return fulltext.paper_search(
            query=query, filters=filters, limit=limit, offset=offset, scope=scope
        )
    if rerank:
        return semantic.hybrid_search(
            query=query, filters=filters, limit=limit, offset=offset, scope=scope
        )
    understood = fulltext.check_query(query, limit, offset)
    if understood.mode != "natural" or understood.constraint is not None:
        return fulltext.paper_search(
            query=query, filters=filters, limit=limit, offset=offset, scope=scope
        )
    if not semantic.vectors_available():
        return fulltext.paper_search(
            query=query, filters=filters, limit=limit, offset=offset, scope=scope
        )
    page = semantic.hybrid_page(
        query=query, filters=filters, limit=limit, offset=offset, scope=scope, lazy=False,
        min_lexical=fulltext.FUZZY_BELOW,
    )  # fmt: skip
    if page is None:
        return fulltext.paper_search(
            query=query, filters=filters, limit=limit, offset=offset, scope=scope
        )
    return page

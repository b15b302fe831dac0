"""REST endpoints for searching the library (`/api/search`): the library's ranking
(local_search: hybrid or full text), keyword, metadata (payload), semantic, facets and
author search.

They mirror the MCP `search` tools with engine `local` (external engines and saving their
results are the engines app's endpoints): the same selectors, parameter names, limits
(query <= 4000 characters, page size <= 100, offset <= 10000) and answer shapes. Filters are
query parameters (`?venue=Findings*&year=2022-2023&has_pdf=true`) with the payload
filters' names, so every search is a GET, which read-only tokens may make.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from django.http import HttpRequest
from ninja import Field, Query, Router, Schema
from pydantic import ConfigDict

from core.schemas import with_errors
from papers.search import facets as search_facets
from papers.search import filters as search_filters
from papers.search import listings, semantic
from papers.search.local import LOCAL_ENGINE, local_search, search_filters_build, year_of
from papers.search.types import SearchPage

router = Router(tags=["search"])

PageSize = Annotated[int, Field(ge=1, le=settings.MAX_PAGE_SIZE, description="Results, 1-100.")]
Offset = Annotated[
    int, Field(ge=0, le=settings.MAX_OFFSET, description="Results to skip for paging, 0-10000.")
]
SearchText = Annotated[
    str,
    Field(
        min_length=1,
        max_length=settings.MAX_QUERY_CHARS,
        description=(
            "A question or keywords, as you would type them: any word may match, papers "
            'with more of them rank first. Also "exact phrase", -excluded, prefix*, '
            "AND/OR/NOT. At most 4000 characters; a longer text than 500 (a pasted abstract) "
            "is read as plain words and ranked by its 32 rarest terms and its meaning."
        ),
    ),
]
DateBound = Annotated[
    str | None,
    Field(
        default=None,
        pattern=r"^\d{4}(-\d{2}(-\d{2})?)?$",
        description="YYYY-MM-DD (or YYYY-MM, YYYY); applied to the publication year.",
    ),
]
FilterText = Annotated[str | None, Field(default=None, max_length=search_filters.MAX_FILTER_CHARS)]


# --- parameters ------------------------------------------------------------------------------


class FilterParams(Schema):
    """Metadata filters, combined with AND. Text values match case-insensitively and
    exactly, or as glob patterns with * and ?, e.g. venue=Findings*."""

    year: str | None = Field(
        default=None, max_length=20, description="A year (2021) or a range: 2019-2021, 2019-."
    )
    year_from: int | None = Field(default=None, description="Earliest publication year.")
    year_to: int | None = Field(default=None, description="Latest publication year.")
    venue: FilterText = Field(description="Venue name or short name.")
    author: FilterText = Field(description="Author: full name, family name or pattern.")
    institution: FilterText = Field(description="An author's affiliation.")
    source: FilterText = Field(description="Where the record came from, e.g. 'acl', 'arxiv'.")
    keyword: FilterText = Field(description="A user-assigned keyword.")
    category: FilterText = Field(description="A source subject category, e.g. 'cs.CL', 'cs.*'.")
    project: FilterText = Field(description="Project id or name.")
    doi: FilterText = Field(description="DOI, e.g. '10.18653/v1/2023.acl-long.1'.")
    has_pdf: bool | None = Field(
        default=None, description="Only papers with (or without) a PDF stored in the library."
    )
    has_pdf_url: bool | None = Field(
        default=None, description="Only papers with (or without) a known PDF download link."
    )
    url: FilterText = Field(description="The paper's page or PDF URL, e.g. '*aclanthology.org*'.")

    def payload(self) -> dict[str, Any]:
        return self.model_dump(exclude_none=True)


class SearchParams(Schema):
    query: SearchText
    max_results: PageSize = 10
    offset: Offset = 0
    project_id: str | None = Field(
        default=None, max_length=200, description="Only papers of this project (id or name)."
    )
    date_from: DateBound
    date_to: DateBound
    rerank: bool | None = Field(
        default=None,
        description="Fuse full-text with semantic ranking; default: the server's SEARCH_RERANK.",
    )


class KeywordParams(Schema):
    keyword: str = Field(min_length=1, max_length=100, description="The keyword or category.")
    match: Literal["exact", "prefix"] = "exact"
    limit: PageSize = 10
    offset: Offset = 0


class PageParams(Schema):
    limit: PageSize = 10
    offset: Offset = 0


class SemanticParams(Schema):
    query: SearchText
    prompt: str | None = Field(
        default=None, max_length=2000, description="Context to refine the query (optional)."
    )
    top_k: PageSize = 10


class FacetParams(Schema):
    limit: int = Field(default=20, ge=1, le=search_facets.MAX_FACET_LIMIT, description="1-100.")
    query: str | None = Field(
        default=None,
        max_length=settings.MAX_QUERY_CHARS,
        description=(
            "Count only over the papers /api/search finds for this query (its best 10,000 "
            "at most; a note says when capped)."
        ),
    )
    by_year: bool = Field(default=False, description="Also each value's paper counts per year.")


class AuthorParams(Schema):
    author_name: str = Field(min_length=1, max_length=200, description="The author's name.")
    max_results: PageSize = 10
    offset: Offset = 0
    date_from: DateBound
    date_to: DateBound


# --- answers ----------------------------------------------------------------------------------


class SearchResult(Schema):
    """A paper found: its brief record plus scoring (more record fields may follow)."""

    model_config = ConfigDict(extra="allow")

    paper_id: int = Field(description="Use with /api/papers/{paper_id}.")
    id: str
    citekey: str
    title: str
    year: int | None = None
    venue: str | None = None
    authors: list[str] = Field(default_factory=list)
    score: float = Field(description="Relevance, higher is better; comparable within one search.")
    snippet_markdown: str = Field(description="Why it matched, matches in **bold**.")
    engine: str = LOCAL_ENGINE


class ResultsPage(Schema):
    total: int = Field(description="How many papers match in all.")
    limit: int
    offset: int
    has_more: bool
    next_offset: int | None = Field(description="The offset of the next page; null on the last.")
    mode: str = Field(description="fulltext, fuzzy, hybrid, semantic, keyword or payload.")
    notes: list[str] = Field(default_factory=list)
    results: list[SearchResult]


class QueryResultsPage(ResultsPage):
    query: str
    filters: dict[str, Any] = Field(default_factory=dict, description="Filters applied.")


class FacetValue(Schema):
    model_config = ConfigDict(extra="allow")

    name: str
    paper_count: int
    filter: dict[str, Any] = Field(description="Query parameters for /api/search/payload.")


class FacetsPage(Schema):
    category: str
    values: list[FacetValue] = Field(description="Most papers first, then by name.")
    papers_considered: int | None = None
    notes: list[str] = Field(default_factory=list)


def _results(page: SearchPage) -> dict[str, Any]:
    return {
        "total": page.total,
        "limit": page.limit,
        "offset": page.offset,
        "has_more": page.has_more,
        "next_offset": page.next_offset,
        "mode": page.mode,
        "notes": list(page.notes),
        "results": [{**hit.as_dict(), "engine": LOCAL_ENGINE} for hit in page.hits],
    }


# --- endpoints --------------------------------------------------------------------------------


@router.get(
    "",
    operation_id="search_library",
    summary="Search the library by words, ranked by relevance",
    response=with_errors({200: QueryResultsPage}, 404),
)
def search_papers(
    request: HttpRequest, params: Query[SearchParams], filters: Query[FilterParams]
) -> dict[str, Any]:
    """The library searched as MCP's search_papers (engine local) searches it
    (`local_search`: hybrid for natural-language questions once the library has vectors,
    full text for the query language; rerank=false forces full text, rerank=true hybrid),
    narrowed by the filters, a project and date bounds; 404 for an unknown project_id."""
    applied = search_filters_build(
        payload=filters.payload(),
        project=params.project_id,
        date_from=params.date_from,
        date_to=params.date_to,
    )
    page = local_search(
        query=params.query, filters=applied, limit=params.max_results, offset=params.offset,
        rerank=params.rerank,
    )  # fmt: skip
    return {
        **_results(page),
        "query": params.query,
        "filters": search_filters.filters_as_dict(applied),
    }


@router.get(
    "/keyword",
    operation_id="search_papers_by_keyword",
    summary="Papers tagged with a keyword or source category",
    response=with_errors({200: ResultsPage}),
)
def search_by_keyword(request: HttpRequest, params: Query[KeywordParams]) -> dict[str, Any]:
    page = listings.paper_search_by_keyword(
        keyword=params.keyword, match=params.match, limit=params.limit, offset=params.offset
    )
    return _results(page)


@router.get(
    "/payload",
    operation_id="search_papers_by_payload",
    summary="Papers matching metadata filters (at least one), newest first",
    response=with_errors({200: ResultsPage}, 404),
)
def search_by_payload(
    request: HttpRequest, filters: Query[FilterParams], page: Query[PageParams]
) -> dict[str, Any]:
    found = listings.paper_search_by_payload(
        filters=search_filters_build(payload=filters.payload()),
        limit=page.limit,
        offset=page.offset,
    )
    return _results(found)


@router.get(
    "/semantic",
    operation_id="search_papers_semantic",
    summary="Papers closest in meaning to a description (embeddings)",
    response=with_errors({200: ResultsPage}, 404),
)
def search_semantic(
    request: HttpRequest, params: Query[SemanticParams], filters: Query[FilterParams]
) -> dict[str, Any]:
    page = semantic.semantic_search(
        query=params.query,
        prompt=params.prompt,
        top_k=params.top_k,
        filters=search_filters_build(payload=filters.payload()),
    )
    return _results(page)


@router.get(
    "/facets/{category}",
    operation_id="list_top_facets",
    summary="The authors, venues, keywords, ... holding the most papers",
    response=with_errors({200: FacetsPage}, 404),
)
def top_facets(
    request: HttpRequest,
    category: search_facets.FacetCategory,
    params: Query[FacetParams],
    filters: Query[FilterParams],
) -> dict[str, Any]:
    """Optionally over a full-text query's hits or over filtered papers. Each value has
    the filter that lists its papers."""
    result = search_facets.facet_counts(
        category=category,
        limit=params.limit,
        query=params.query,
        filters=search_filters_build(payload=filters.payload()),
        by_year=params.by_year,
    )
    return {
        "category": result.category,
        "values": result.values,
        "papers_considered": result.papers_considered,
        "notes": result.notes,
    }


@router.get(
    "/author",
    operation_id="search_library_by_author",
    summary="An author's papers in the library, newest first",
    response=with_errors({200: QueryResultsPage}),
)
def search_by_author(request: HttpRequest, params: Query[AuthorParams]) -> dict[str, Any]:
    """author_name: a full name, family name, 'A. Vaswani' or a pattern with *."""
    page = listings.paper_search_by_author(
        name=params.author_name,
        year_from=year_of(params.date_from),
        year_to=year_of(params.date_to),
        limit=params.max_results,
        offset=params.offset,
    )
    return {
        **_results(page),
        "query": params.author_name,
        "filters": {"author": params.author_name},
    }

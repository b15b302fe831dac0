"""Tool set `search`, part 1: searching the local library (full text, meaning, metadata,
keywords and facets; docs/SEARCH.md).

Every tool here is read-only, takes the client's collection scope, and returns paper
records whose `paper_id` works with get_paper_details and every other paper tool. Limits
come from the schema (query <= 4000 characters, page size <= 100, offset <= 10000), so the
registry answers a violation with -32602; `InvalidInput` from the selectors (a bad filter
value) is -32602 too. The multi-engine tools (`search_papers`, `search_by_author`,
`list_search_engines`, ...) are in engines_search.py and reuse the types defined here.
"""

from __future__ import annotations

import re
from typing import Annotated, Any, Literal

from django.conf import settings
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, WithJsonSchema

from engines.registry import LOCAL_ENGINE
from mcp_endpoint.registry import READ_ONLY, Registry, mcp_tool
from mcp_endpoint.scope import current_scope
from papers.search import facets as search_facets
from papers.search import filters as search_filters
from papers.search import listings, semantic
from papers.search.local import search_filters_build
from papers.search.types import SearchFilters, SearchPage

# --- input types -----------------------------------------------------------------------

Query = Annotated[
    str,
    Field(
        min_length=1,
        max_length=settings.MAX_QUERY_CHARS,
        description=(
            'Keywords or a question; "phrase", -word, prefix*, AND/OR/NOT. Over 500 chars (a '
            "pasted abstract): plain words, ranked by its 32 rarest terms."
        ),
    ),
]
MeaningQuery = Annotated[str, Field(min_length=1, max_length=settings.MAX_QUERY_CHARS)]
PageSize = Annotated[int, Field(ge=1, le=settings.MAX_PAGE_SIZE)]
Offset = Annotated[int, Field(ge=0, le=settings.MAX_OFFSET)]
DATE_BOUND = re.compile(r"\d{4}(-\d{2}(-\d{2})?)?")


def _date_bound(value: str | None) -> str | None:
    # Checked here rather than as a schema `pattern`: the description says the form in
    # fewer tokens, and the error says it in words.
    if value is not None and not DATE_BOUND.fullmatch(value):
        raise ValueError("a date is YYYY, YYYY-MM or YYYY-MM-DD")
    return value


DateBound = Annotated[str | None, AfterValidator(_date_bound), Field(description="YYYY[-MM[-DD]]")]
FilterText = Annotated[str | None, Field(max_length=search_filters.MAX_FILTER_CHARS)]


# The field names are in the schema, and how text matches is in the server's instructions
# (registry.INSTRUCTIONS): this says only what neither does.
FILTERS_HELP = (
    "year: 2021, '2019-2021' or [2019,2021]; has_pdf: a PDF is stored; has_pdf_url: a "
    "download link is known."
)


def _closed_undescribed(schema: dict[str, Any]) -> None:
    schema.pop("description", None)
    schema["additionalProperties"] = False


class PayloadFilters(BaseModel):
    """Metadata filters (FILTERS_HELP); the field descriptions live in that one text."""

    # Unknown keys reach filters_from_payload, whose error lists the allowed keys. Listed
    # closed and without this docstring (the field that uses it describes it).
    model_config = ConfigDict(extra="allow", json_schema_extra=_closed_undescribed)

    year: int | str | list[int | None] | None = None
    year_from: int | None = None
    year_to: int | None = None
    venue: FilterText = None
    author: FilterText = None
    institution: FilterText = None
    source: FilterText = None
    keyword: FilterText = None
    category: FilterText = None
    project: FilterText = None
    doi: FilterText = None
    has_pdf: bool | None = None
    has_pdf_url: bool | None = None
    url: FilterText = None


# Listed inline rather than as a `$ref` into `$defs` (fewer tokens in every tool that takes
# filters); validation still goes through PayloadFilters.
_FILTERS_SCHEMA = WithJsonSchema(PayloadFilters.model_json_schema())
Filters = Annotated[PayloadFilters | None, _FILTERS_SCHEMA, Field(description=FILTERS_HELP)]


# --- output types -------------------------------------------------------------------------


class SearchResult(BaseModel):
    """A paper found; the brief record plus scoring (extra record fields allowed)."""

    model_config = ConfigDict(extra="allow")

    paper_id: int = Field(description="Use with get_paper_details and other paper tools.")
    id: str = Field(description="Human-readable id, e.g. '[Vaswani, A., Shazeer, N. 2017]'.")
    citekey: str
    title: str
    year: int | None = None
    venue: str | None = None
    authors: list[str] = Field(default_factory=list)
    score: float = Field(description="Relevance, higher is better; comparable within one search.")
    snippet_markdown: str = Field(description="Why it matched: a passage, matches in **bold**.")
    engine: str = Field(default=LOCAL_ENGINE, description="The engine that found it.")


class ResultsPage(BaseModel):
    total: int = Field(description="How many papers match in all.")
    limit: int
    offset: int
    has_more: bool
    next_offset: int | None = Field(
        description="Pass as offset to get the next page; null on the last page."
    )
    mode: str = Field(description="fulltext, fuzzy, hybrid, semantic, keyword or payload.")
    notes: list[str] = Field(default_factory=list, description="Remarks about the search.")
    results: list[SearchResult]


class FacetValue(BaseModel):
    model_config = ConfigDict(extra="allow")

    name: str
    paper_count: int
    filter: dict[str, Any] = Field(
        description="Pass as payload to search_papers_by_payload to list these papers."
    )


class FacetsPage(BaseModel):
    category: str
    values: list[FacetValue] = Field(description="Most papers first, then by name.")
    papers_considered: int | None = Field(
        default=None, description="Papers the counts are over, when counted over a query."
    )
    notes: list[str] = Field(default_factory=list)


# --- helpers ---------------------------------------------------------------------------------


def _results_page(page: SearchPage, **extra: Any) -> dict[str, Any]:
    return {
        "total": page.total,
        "limit": page.limit,
        "offset": page.offset,
        "has_more": page.has_more,
        "next_offset": page.next_offset,
        "mode": page.mode,
        "notes": list(page.notes),
        "results": [
            SearchResult.model_validate({**hit.as_dict(), "engine": LOCAL_ENGINE})
            for hit in page.hits
        ],
        **extra,
    }


def filters_payload(payload: PayloadFilters | dict[str, Any] | None) -> dict[str, Any] | None:
    """The filters as the services take them (a dict of the keys set)."""
    return payload.model_dump(exclude_none=True) if isinstance(payload, BaseModel) else payload


def filters_build(
    payload: PayloadFilters | dict[str, Any] | None,
    *,
    project_id: str | None = None,
    date_from: str | None = None,
    date_to: str | None = None,
) -> SearchFilters:
    """The tool's filter arguments through the same builder REST uses."""
    return search_filters_build(
        payload=filters_payload(payload), project=project_id, date_from=date_from, date_to=date_to,
        scope=current_scope(),
    )  # fmt: skip


@mcp_tool(
    name="search_papers_by_keyword",
    title="Search by keyword",
    description=(
        "Library papers tagged with a keyword (user keywords and source categories such "
        "as 'cs.CL'), newest first. match 'prefix': 'transform' finds 'transformers'."
    ),
    annotations=READ_ONLY,
)
def search_papers_by_keyword(
    keyword: Annotated[str, Field(min_length=1, max_length=100)],
    match: Literal["exact", "prefix"] = "exact",
    limit: PageSize = 10,
    offset: Offset = 0,
) -> ResultsPage:
    page = listings.paper_search_by_keyword(
        keyword=keyword, match=match, limit=limit, offset=offset, scope=current_scope()
    )
    return ResultsPage(**_results_page(page))


@mcp_tool(
    name="search_papers_by_payload",
    title="Search by metadata",
    description=(
        'Library papers matching metadata filters only, e.g. {"venue": "Findings*", '
        '"year": "2022-2023"}; newest first. list_top_facets suggests values.'
    ),
    annotations=READ_ONLY,
)
def search_papers_by_payload(
    payload: Annotated[PayloadFilters, _FILTERS_SCHEMA, Field(description=FILTERS_HELP)],
    limit: PageSize = 10,
    offset: Offset = 0,
) -> ResultsPage:
    page = listings.paper_search_by_payload(
        filters=filters_build(payload), limit=limit, offset=offset, scope=current_scope()
    )
    return ResultsPage(**_results_page(page))


@mcp_tool(
    name="search_papers_semantic",
    title="Search by meaning",
    description=(
        "Library papers closest in meaning to a plain-words description, even without "
        "shared words (embeddings). For names and exact terms use search_papers."
    ),
    annotations=READ_ONLY,
    aliases={"top_k": "limit"},
)
def search_papers_semantic(
    query: MeaningQuery,
    prompt: Annotated[
        str | None, Field(max_length=2000, description="What the search is for.")
    ] = None,
    limit: PageSize = 10,
    filters: Filters = None,
) -> ResultsPage:
    page = semantic.semantic_search(
        query=query, prompt=prompt, top_k=limit, filters=filters_build(filters),
        scope=current_scope(),
    )  # fmt: skip
    return ResultsPage(**_results_page(page))


@mcp_tool(
    name="list_top_facets",
    title="Top facet values",
    description=(
        "Papers per author, venue (per edition; venue_short: per series, e.g. emnlp), "
        "keyword, institution, tag (project), category or year, most first; over the "
        "library, a query's hits or filters. Each value has a filter for "
        "search_papers_by_payload."
    ),
    annotations=READ_ONLY,
)
def list_top_facets(
    category: search_facets.FacetCategory,
    limit: Annotated[int, Field(ge=1, le=search_facets.MAX_FACET_LIMIT)] = 20,
    query: Annotated[
        str | None,
        Field(
            max_length=settings.MAX_QUERY_CHARS,
            description="Count over search_papers' hits (best 10,000; a note says if capped).",
        ),
    ] = None,
    filters: Filters = None,
    by_year: Annotated[bool, Field(description="Also counts per year.")] = False,
) -> FacetsPage:
    result = search_facets.facet_counts(
        category=category, limit=limit, query=query, filters=filters_build(filters),
        scope=current_scope(), by_year=by_year,
    )  # fmt: skip
    return FacetsPage(
        category=result.category,
        values=[FacetValue.model_validate(value) for value in result.values],
        papers_considered=result.papers_considered,
        notes=result.notes,
    )


def register(registry: Registry) -> None:
    registry.add_tools(
        search_papers_by_keyword, search_papers_by_payload, search_papers_semantic, list_top_facets
    )

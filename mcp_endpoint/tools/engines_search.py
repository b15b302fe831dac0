"""Tool set `search`, part 2: the multi-engine tools of seed 004 (issue 5).

`search_papers` and `search_by_author` ask the local library and external engines in
parallel (engines/services.py); one slow or failing engine never stops the others, and each
engine's status comes back in `engines`. External results are added to the library (one
paper per real paper, however many engines found it) so their `paper_id` works with every
other tool; in read-only mode they are returned without being saved.

`project_id` tags every result with the project (seed 004); to search only within a
project, use `filters: {"project": ...}`. A client scoped to collections that names no
project gets its external results tagged with its first collection, so it can see them.
"""

from __future__ import annotations

from typing import Annotated, Any

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from core.errors import InvalidInput
from engines import selectors as engine_selectors
from engines.base import AUTHOR, CATEGORIES, SEARCH, SearchRequest
from engines.registry import BUILTIN_ENGINES, LOCAL_ENGINE
from engines.registry import registry as engine_registry
from engines.runner import EngineCall
from engines.services import MAX_ENGINES, EngineSearchResult, engine_ids_resolve
from mcp_endpoint.registry import READ_ONLY, SEARCH_AND_KEEP, Registry
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.search import (
    DateBound,
    EngineStatus,
    Filters,
    Offset,
    Query,
    filters_build,
)
from papers.search import filters as search_filters
from papers.search.local import local_search, year_of
from papers.search.types import SearchPage
from projects import selectors as project_selectors
from projects.intake import engines_search

DEFAULT_MAX_RESULTS = 5  # seed 004: search_papers(max_results=5)
MaxResults = Annotated[int, Field(ge=1, le=settings.MAX_PAGE_SIZE, description="Per engine.")]
Engines = Annotated[
    str | list[Annotated[str, Field(min_length=1, max_length=64)]] | None,
    Field(
        description=(
            "Engine ids, a list or 'a,b': local (the library), arxiv, google_scholar, "
            "openalex, crossref, semantic_scholar. Default: all available."
        ),
        max_length=MAX_ENGINES,
    ),
]
ProjectTag = Annotated[
    str | None, Field(max_length=200, description="File every result in this project.")
]


def engine_ids(engines: str | list[str] | None, *, operation: str) -> list[str]:
    """The engines asked: comma lists split, every unknown id named with the known ones."""
    if isinstance(engines, str):
        engines = [part for part in engines.split(",") if part.strip()] or [engines]
    resolved = engine_ids_resolve(engines, operation=operation)
    known = list(dict.fromkeys([LOCAL_ENGINE, *BUILTIN_ENGINES, *engine_registry.engines()]))
    unknown = [engine_id for engine_id in resolved if engine_id not in known]
    if unknown:
        raise InvalidInput(
            f"Unknown engine(s): {', '.join(unknown)}; known: {', '.join(known)}.",
            field="engines",
            known=known,
        )
    return resolved


class EngineResult(BaseModel):
    """A paper found. External results saved to the library have a paper_id like any other."""

    model_config = ConfigDict(extra="allow")

    paper_id: int | None = Field(description="null only in read-only mode (not saved).")
    id: str | None = None
    title: str
    year: int | None = None
    venue: str | None = None
    authors: list[str] = Field(default_factory=list)
    engine: str = Field(description="The first engine that found it.")
    engines: list[str] = Field(description="Every engine that found it.")


class MultiEnginePage(BaseModel):
    query: str
    engines: dict[str, EngineStatus] = Field(description="Status of each engine asked.")
    results: list[EngineResult] = Field(
        description="One entry per paper: library matches first, then engines' results by rank."
    )
    total: int = Field(description="Local matches in all plus external results returned.")
    limit: int = Field(description="max_results: results per engine.")
    offset: int = Field(description="Offset into the local matches.")
    mode: str | None = Field(
        default=None, description="How the library was searched: fulltext, fuzzy, hybrid, ..."
    )
    has_more: bool = Field(description="More local matches: call again with a larger offset.")
    next_offset: int | None = None
    saved: int = Field(description="Papers new to the library from this search.")
    project_id: str | None = Field(default=None, description="The project results were added to.")
    filters: dict[str, Any] = Field(default_factory=dict)
    notes: list[str] = Field(default_factory=list)


class EngineListing(BaseModel):
    model_config = ConfigDict(extra="allow")

    engines: list[dict[str, Any]] = Field(
        description="Each engine: id, name, type, is_available (and why not), operations, "
        "rate_limit state and cache hit rate."
    )
    load_errors: list[dict[str, str]] = Field(description="Plugin engines that failed to load.")


class CategoryListing(BaseModel):
    model_config = ConfigDict(extra="allow")

    engines: dict[str, dict[str, Any]] = Field(
        description="Per engine: status and categories grouped by subject area."
    )


def tag_projects(project_id: str | None, has_external: bool) -> tuple[list[str], list[str]]:
    """Projects to add results to, and a note when the scope chose it."""
    scope = current_scope()
    if project_id:
        return [project_selectors.project_get(ref=project_id, scope=scope).id], []
    if scope and has_external:
        note = f"External results were added to your collection {scope[0]!r} so you can see them."
        return [scope[0]], [note]
    return [], []


def _page(
    query: str,
    limit: int,
    offset: int,
    result: EngineSearchResult,
    project_ids: list[str],
    notes: list[str],
    filters: dict[str, Any],
) -> MultiEnginePage:
    local = result.local_page
    local_more = bool(local and local.has_more)
    external = sum(1 for entry in result.results if entry["engine"] != LOCAL_ENGINE)
    return MultiEnginePage(
        query=query,
        engines={name: EngineStatus.model_validate(s) for name, s in result.engines.items()},
        results=[EngineResult.model_validate(entry) for entry in result.results],
        total=(local.total if local else 0) + external,
        limit=limit,
        offset=offset,
        mode=local.mode if local else None,
        has_more=local_more,
        next_offset=(local.offset + len(local.hits)) if local and local_more else None,
        saved=result.saved,
        project_id=project_ids[0] if project_ids else None,
        filters=filters,
        notes=[*(local.notes if local else []), *notes, *result.notes],
    )


def register(registry: Registry) -> None:
    save = not registry.read_only

    @registry.tool(
        name="search_papers",
        title="Search papers (library and engines)",
        description=(
            "Search the library and external engines in parallel; `engines` gives each "
            "one's status. Found papers are kept in the library, so every result has a "
            "paper_id. engines='local' is fast and offline; external engines cost seconds. "
            "filters, rerank and offset apply to the library."
        ),
        annotations=SEARCH_AND_KEEP,
        saves_results=True,
        aliases={"max_results": "limit", "q": "query"},
    )
    def search_papers(
        query: Query,
        engines: Engines = None,
        limit: MaxResults = DEFAULT_MAX_RESULTS,
        offset: Offset = 0,
        project_id: ProjectTag = None,
        date_from: DateBound = None,
        date_to: DateBound = None,
        categories: Annotated[
            list[Annotated[str, Field(max_length=64)]] | None,
            Field(max_length=20, description="e.g. ['cs.CL'] (arXiv)."),
        ] = None,
        filters: Filters = None,
        rerank: Annotated[
            bool | None, Field(description="Fuse full-text and semantic ranking.")
        ] = None,
    ) -> MultiEnginePage:
        engine_list = engine_ids(engines, operation=SEARCH)
        scope = current_scope()
        applied = filters_build(filters, date_from=date_from, date_to=date_to)
        request = SearchRequest(
            query=query, max_results=limit, date_from=date_from, date_to=date_to,
            categories=tuple(categories or ()),
        )  # fmt: skip
        calls = [EngineCall.search(e, request) for e in engine_list if e != LOCAL_ENGINE]
        project_ids, notes = tag_projects(project_id, bool(calls))

        def local() -> SearchPage:
            return local_search(
                query=query, filters=applied, limit=limit, offset=offset, scope=scope,
                rerank=rerank,
            )  # fmt: skip

        result = engines_search(
            calls=calls,
            local=local if LOCAL_ENGINE in engine_list else None,
            project_ids=project_ids,
            save=save,
        )
        applied_filters = search_filters.filters_as_dict(applied)
        return _page(query, limit, offset, result, project_ids, notes, applied_filters)

    @registry.tool(
        name="search_by_author",
        title="Search papers by author (library and engines)",
        description=(
            "Papers by an author ('Ashish Vaswani', 'Vaswani, A.', a family name or a * "
            "pattern) from the library and the engines; kept like search_papers."
        ),
        annotations=SEARCH_AND_KEEP,
        saves_results=True,
        aliases={"max_results": "limit", "author": "author_name"},
    )
    def search_by_author(
        author_name: Annotated[str, Field(min_length=1, max_length=200)],
        engines: Engines = None,
        limit: MaxResults = DEFAULT_MAX_RESULTS,
        offset: Offset = 0,
        date_from: DateBound = None,
        date_to: DateBound = None,
        project_id: ProjectTag = None,
    ) -> MultiEnginePage:
        engine_list = engine_ids(engines, operation=AUTHOR)
        scope = current_scope()
        request = SearchRequest(
            query=author_name, max_results=limit, date_from=date_from, date_to=date_to
        )
        calls = [
            EngineCall.author(e, author_name, request) for e in engine_list if e != LOCAL_ENGINE
        ]
        project_ids, notes = tag_projects(project_id, bool(calls))

        def local() -> SearchPage:
            return search_filters.paper_search_by_author(
                name=author_name, year_from=year_of(date_from), year_to=year_of(date_to),
                limit=limit, offset=offset, scope=scope,
            )  # fmt: skip

        result = engines_search(
            calls=calls,
            local=local if LOCAL_ENGINE in engine_list else None,
            project_ids=project_ids,
            save=save,
        )
        filters = {"author": author_name}
        return _page(author_name, limit, offset, result, project_ids, notes, filters)

    @registry.tool(
        name="list_search_engines",
        title="List search engines",
        description=(
            "Each engine's id, availability (and why not: key, quota, breaker, no network), "
            "operations, rate-limit state and cache hit rate."
        ),
        annotations=READ_ONLY,
    )
    def list_search_engines(
        refresh: Annotated[bool, Field(description="Re-scan plugin engines.")] = False,
    ) -> EngineListing:
        return EngineListing.model_validate(engine_selectors.engines_list(refresh=refresh))

    @registry.tool(
        name="get_search_engine_categories",
        title="Subject categories of the engines",
        description=(
            "Subject categories each engine can filter by (e.g. arXiv cs.CL), for "
            "search_papers(categories=[...])."
        ),
        annotations=READ_ONLY,
    )
    def get_search_engine_categories(engines: Engines = None) -> CategoryListing:
        engine_list = engine_ids(engines, operation=CATEGORIES)
        return CategoryListing(engines=engine_selectors.engines_categories(engine_ids=engine_list))

    @registry.resource(
        "engines://list",
        name="engines",
        title="Search engines",
        description="Markdown table of the search engines, their availability and limits.",
        mime_type="text/markdown",
    )
    def engines_resource() -> str:
        return engine_selectors.engines_markdown()

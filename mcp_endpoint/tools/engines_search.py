"""Tool set `search`, part 2: the multi-engine tools (docs/ENGINES.md).

`search_papers` and `search_by_author` ask the local library and external engines in
parallel (engines/services.py); one slow or failing engine never stops the others, and each
engine's status comes back in `engines`. External results are added to the library (one
paper per real paper, however many engines found it) so their `paper_id` works with every
other tool; in read-only mode they are returned without being saved.

`project_id` tags every result with the project; to search only within a
project, use `filters: {"project": ...}`. The search itself is projects/intake.py's
`search_everywhere`, which REST /api/engines/search calls with the same arguments.
"""

from __future__ import annotations

from typing import Annotated, Any

from django.conf import settings
from pydantic import BaseModel, ConfigDict, Field

from engines import selectors as engine_selectors
from engines.base import CATEGORIES
from engines.schemas import EngineResult, MultiEnginePage
from engines.services import MAX_ENGINES
from engines.services import engine_ids_known as engine_ids
from mcp_endpoint.registry import (
    READ_ONLY,
    SEARCH_AND_KEEP,
    Registry,
    mcp_resource,
    mcp_tool,
    serving_read_only,
    tool_result,
)
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.search import DateBound, Filters, Offset, Query, filters_payload
from projects.intake import projects_to_file, search_by_author_everywhere, search_everywhere

__all__ = ["EngineResult", "Engines", "MaxResults", "ProjectTag", "engine_ids", "tag_projects"]

DEFAULT_MAX_RESULTS = 5  # a page an agent reads whole
MaxResults = Annotated[int, Field(ge=1, le=settings.MAX_PAGE_SIZE, description="Per engine.")]
# At most MAX_ENGINES engines is checked by the service, once an 'a,b' string is split: a
# max_length here would cap the string at MAX_ENGINES characters (and cost schema tokens).
Engines = Annotated[
    Annotated[str, Field(max_length=MAX_ENGINES * 65)]
    | list[Annotated[str, Field(min_length=1, max_length=64)]]
    | None,
    Field(description=("Ids (list_search_engines); default: local and the general engines up.")),
]
ProjectTag = Annotated[
    str | None, Field(max_length=200, description="File every result in this project.")
]


def tag_projects(project_id: str | None, has_external: bool) -> tuple[list[str], list[str]]:
    """projects_to_file for this client's scope."""
    return projects_to_file(project_id, current_scope(), has_external)


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


@mcp_tool(
    name="search_papers",
    title="Search papers",
    description=(
        "Search the library and external engines in parallel (each one's status in "
        "`engines`); found papers are kept, each with a paper_id. filters, rerank and "
        "offset apply to the library only. PubMed-style strings (asthma[tiab] AND "
        "2020:2024[dp]) are translated."
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
        Field(max_length=20, description="e.g. cs.CL (arXiv)."),
    ] = None,
    filters: Filters = None,
    rerank: Annotated[
        bool | None, Field(description="Fuse full-text and semantic ranking.")
    ] = None,
) -> MultiEnginePage:
    return search_everywhere(
        query=query, engines=engines, limit=limit, offset=offset, project_id=project_id,
        date_from=date_from, date_to=date_to, categories=categories or (),
        filters=filters_payload(filters),
        rerank=rerank, scope=current_scope(), save=not serving_read_only(),
    )  # fmt: skip


def rehearse_search_papers(query: str) -> object:
    """`search_papers` on the library as a client's call runs it (service, answer encoded),
    saving nothing: the server's search warm-up runs it (papers/search/warmup.py), so a
    first call does not pay this code's first run."""
    return tool_result(
        search_everywhere(
            query=query, engines="local", limit=DEFAULT_MAX_RESULTS, scope=None, save=False
        )
    )


@mcp_tool(
    name="search_by_author",
    title="Search by author",
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
    return search_by_author_everywhere(
        author_name=author_name, engines=engines, limit=limit, offset=offset,
        project_id=project_id, date_from=date_from, date_to=date_to,
        scope=current_scope(), save=not serving_read_only(),
    )  # fmt: skip


@mcp_tool(
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


@mcp_tool(
    name="get_search_engine_categories",
    title="Engine categories",
    description=(
        "Subject categories each engine can filter by (e.g. arXiv cs.CL), for "
        "search_papers' categories."
    ),
    annotations=READ_ONLY,
)
def get_search_engine_categories(engines: Engines = None) -> CategoryListing:
    engine_list = engine_ids(engines, operation=CATEGORIES)
    return CategoryListing(engines=engine_selectors.engines_categories(engine_ids=engine_list))


@mcp_resource(
    "engines://list",
    name="engines",
    title="Search engines",
    description="Markdown table of the search engines, their availability and limits.",
    mime_type="text/markdown",
)
def engines_resource() -> str:
    return engine_selectors.engines_markdown()


def register(registry: Registry) -> None:
    registry.add_tools(
        search_papers, search_by_author, list_search_engines, get_search_engine_categories
    )
    registry.add_resources(engines_resource)

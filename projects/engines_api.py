"""REST endpoints that search the engines and keep what they find (`/api/engines/search`,
`/search/author`, `/add-paper`, `/citing`), mirroring the MCP tools `search_papers` /
`search_by_author` (multi-engine), `add_paper` and `get_citing_papers` over the same
services (projects/intake.py) with the same arguments and the same answer
(`MultiEnginePage`).

They live in projects, not engines, because a `project_id` files the results into that
project (docs/LAYERS.md); research_site mounts them under `/engines` beside engines/api.py.
Engine searches add what they find to the library, so they are POSTs (write scope).
"""

from __future__ import annotations

from typing import Annotated, Any

from django.conf import settings
from django.http import HttpRequest
from ninja import Field, Router, Schema

from core.schemas import with_errors
from engines.base import CITING
from engines.schemas import CitingPage, EngineResult, MultiEnginePage, engine_statuses
from engines.services import engine_ids_resolve
from papers.selectors import paper_detail, paper_get
from projects.intake import (
    citing_papers,
    paper_add_by_identifier,
    search_by_author_everywhere,
    search_everywhere,
)
from projects.selectors import project_get

router = Router(tags=["engines"])

DATE = r"^\d{4}(-\d{2}(-\d{2})?)?$"
EngineIds = Annotated[
    list[Annotated[str, Field(min_length=1, max_length=64)]] | None,
    Field(
        max_length=20, description="Engine ids; omitted: the library and every available engine."
    ),
]
MaxResults = Annotated[
    int, Field(ge=1, le=settings.MAX_PAGE_SIZE, description="Per engine, 1-100.")
]


class EngineSearchIn(Schema):
    query: str = Field(min_length=1, max_length=settings.MAX_QUERY_CHARS)
    engines: EngineIds = None
    max_results: MaxResults = 10
    offset: int = Field(default=0, ge=0, le=settings.MAX_OFFSET, description="Library offset.")
    project_id: str | None = Field(default=None, max_length=200, description="Add results here.")
    date_from: str | None = Field(default=None, pattern=DATE)
    date_to: str | None = Field(default=None, pattern=DATE)
    categories: list[Annotated[str, Field(max_length=64)]] | None = Field(
        default=None, max_length=20
    )
    filters: dict[str, Any] | None = Field(
        default=None, description="Library metadata filters, as /api/search's."
    )
    rerank: bool | None = None


class AuthorSearchIn(Schema):
    author_name: str = Field(min_length=1, max_length=200)
    engines: EngineIds = None
    max_results: MaxResults = 10
    offset: int = Field(default=0, ge=0, le=settings.MAX_OFFSET)
    project_id: str | None = Field(default=None, max_length=200)
    date_from: str | None = Field(default=None, pattern=DATE)
    date_to: str | None = Field(default=None, pattern=DATE)


class AddPaperIn(Schema):
    identifier: str = Field(min_length=1, max_length=500, description="DOI, arXiv id or URL.")
    project_id: str | None = Field(default=None, max_length=200)


class AddPaperOut(Schema):
    created: bool
    paper: dict[str, Any]
    engines: dict[str, dict[str, Any]]
    notes: list[str]


class CitingIn(Schema):
    paper_id: str | int = Field(description="paper_id, human id or citekey.")
    engines: EngineIds = None
    max_results: MaxResults = 10
    project_id: str | None = Field(default=None, max_length=200)


def _projects(project_id: str | None) -> list[str]:
    return [project_get(ref=project_id).id] if project_id else []


@router.post(
    "/search",
    operation_id="search_papers",
    summary="Search the library and the external engines",
    response=with_errors({200: MultiEnginePage}, 403, 404, 503),
)
def engines_search_view(request: HttpRequest, body: EngineSearchIn) -> MultiEnginePage:
    """Engines run in parallel with a deadline; results are merged into the library."""
    return search_everywhere(
        query=body.query, engines=body.engines, limit=body.max_results, offset=body.offset,
        project_id=body.project_id, date_from=body.date_from, date_to=body.date_to,
        categories=body.categories or (), filters=body.filters, rerank=body.rerank,
        save=not settings.MCP_READ_ONLY,
    )  # fmt: skip


@router.post(
    "/search/author",
    operation_id="search_by_author",
    summary="An author's papers from the library and the engines",
    response=with_errors({200: MultiEnginePage}, 403, 404, 503),
)
def engines_author_view(request: HttpRequest, body: AuthorSearchIn) -> MultiEnginePage:
    return search_by_author_everywhere(
        author_name=body.author_name, engines=body.engines, limit=body.max_results,
        offset=body.offset, project_id=body.project_id, date_from=body.date_from,
        date_to=body.date_to, save=not settings.MCP_READ_ONLY,
    )  # fmt: skip


@router.post(
    "/add-paper",
    operation_id="add_paper",
    summary="Add a paper by DOI, arXiv id or URL",
    response=with_errors({200: AddPaperOut}, 403, 404, 503),
)
def add_paper_view(request: HttpRequest, body: AddPaperIn) -> dict[str, Any]:
    """Never creates a duplicate; a paper already in the library is returned as it is."""
    added = paper_add_by_identifier(
        identifier=body.identifier, project_ids=_projects(body.project_id)
    )
    return {
        "created": added.created,
        "paper": paper_detail(ref=added.paper.pk),
        "engines": added.engines,
        "notes": added.notes,
    }


@router.post(
    "/citing",
    operation_id="get_citing_papers",
    summary="Papers citing a paper, from the library and the engines",
    response=with_errors({200: CitingPage}, 403, 404),
)
def citing_view(request: HttpRequest, body: CitingIn) -> CitingPage:
    paper = paper_get(ref=body.paper_id)
    engine_ids = engine_ids_resolve(body.engines, operation=CITING)
    result = citing_papers(
        paper=paper, engine_ids=engine_ids, max_results=body.max_results, scope=None,
        project_ids=_projects(body.project_id), save=not settings.MCP_READ_ONLY,
    )  # fmt: skip
    return CitingPage(
        paper_id=paper.pk,
        engines=engine_statuses(result.engines),
        results=[EngineResult.model_validate(entry) for entry in result.results],
        saved=result.saved,
        notes=result.notes,
    )

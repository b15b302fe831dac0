"""REST endpoints for the external engines (`/api/engines`) that only read them, mirroring
the MCP tools `list_search_engines` and `get_search_engine_categories`.

The engine searches (`search_papers`, `search_by_author`, `add_paper`, `get_citing_papers`)
can file what they find into a project, so they are served under the same prefix from
projects/engines_api.py, a layer above (docs/LAYERS.md).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Field, Query, Router, Schema

from core.schemas import with_errors
from engines import selectors as engine_selectors
from engines.base import CATEGORIES
from engines.services import engine_ids_resolve

router = Router(tags=["engines"])


class CategoriesParams(Schema):
    engines: list[str] | None = Field(default=None, max_length=20)


@router.get(
    "",
    operation_id="list_search_engines",
    summary="The search engines",
    response=with_errors({200: dict[str, Any]}),
)
def engines_list(request: HttpRequest, refresh: bool = False) -> dict[str, Any]:
    """Availability (and why not), operations, rate-limit state, cache hit rate; no network."""
    return engine_selectors.engines_list(refresh=refresh)


@router.get(
    "/categories",
    operation_id="get_search_engine_categories",
    summary="Subject categories per engine",
    response=with_errors({200: dict[str, Any]}),
)
def engines_categories(request: HttpRequest, params: Query[CategoriesParams]) -> dict[str, Any]:
    engine_ids = engine_ids_resolve(params.engines, operation=CATEGORIES)
    return engine_selectors.engines_categories(engine_ids=engine_ids)

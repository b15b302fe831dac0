"""Tool set `watch`: saved searches and alerts (docs/MCP.md).

Thin adapters over projects/watch/: `save_search` / `delete_saved_search` write,
`run_saved_search` runs a search now through the path search_papers takes and answers with
only its new papers and each engine's status, `get_alerts` and the `alerts://recent`
resource read the alerts (saved searches, retractions, ...). Write tools are hidden in
read-only mode; get_alerts is listed there but refuses `mark_read`.
"""

from __future__ import annotations

import datetime
from typing import Annotated, Any, Literal

from django.conf import settings
from django.utils.dateparse import parse_date, parse_datetime
from mcp_types import ToolAnnotations
from pydantic import Field

from core.errors import InvalidInput
from mcp_endpoint.registry import READ_ONLY, Registry, mcp_resource, mcp_tool, serving_read_only
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.engines_search import engine_ids
from papers.scoping import project_ids_for
from projects.watch import selectors, services

SAVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
RUNS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)
REMOVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)
Name = Annotated[str, Field(min_length=1, max_length=100)]
# Plain types with short descriptions: search_papers' own cost 400 tokens more.
EngineIds = Annotated[
    list[Annotated[str, Field(max_length=64)]] | None,
    Field(
        max_length=20,
        description="Ids (list_search_engines); default: search_papers'.",
    ),
]
SavedFilters = Annotated[dict[str, Any] | None, Field(description="search_papers' filters.")]
MAX_ALERTS = 100


def _since(value: str | None) -> datetime.datetime | None:
    if not value:
        return None
    try:
        moment = parse_datetime(value)
        if moment is None and (day := parse_date(value)) is not None:
            moment = datetime.datetime.combine(day, datetime.time())
    except ValueError:  # well formed but no such day: '2026-02-30'
        moment = None
    if moment is None:
        raise InvalidInput("since must be an ISO date or date-time.", field="since")
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment


@mcp_tool(
    name="save_search",
    title="Save a search",
    description=(
        "Save a scheduled search; its runs alert on papers it never reported and on "
        "failed engines, filing papers into project_id."
    ),
    annotations=SAVES,
)
def save_search(
    name: Name,
    query: Annotated[str, Field(min_length=1, max_length=settings.MAX_QUERY_CHARS)],
    engines: EngineIds = None,
    filters: SavedFilters = None,
    project_id: Annotated[str | None, Field(max_length=200)] = None,
    schedule: Literal["manual", "hourly", "daily", "weekly"] = "daily",
) -> dict[str, Any]:
    engine_list = engine_ids(engines, operation="search") if engines is not None else None
    search, created = services.saved_search_save(
        name=name, query=query, engines=engine_list,
        filters=filters,
        project=project_id, schedule=schedule, scope=current_scope(),
    )  # fmt: skip
    return {"created": created, **selectors.saved_search_summary(search, None)}


@mcp_tool(
    name="list_saved_searches",
    title="List saved searches",
    description="Saved searches with their schedule and last run.",
    annotations=READ_ONLY,
)
def list_saved_searches() -> dict[str, Any]:
    searches = services.saved_searches_in_scope(current_scope())
    return {"saved_searches": selectors.saved_searches_list(searches)}


@mcp_tool(
    name="run_saved_search",
    title="Run a saved search",
    description=(
        "Run a saved search now: its new papers, each engine's status (failed ones "
        "retried next run)."
    ),
    annotations=RUNS,
)
def run_saved_search(name: Name) -> dict[str, Any]:
    search = services.saved_search_get(name=name, scope=current_scope())
    run = services.saved_search_run(search=search)
    return {
        "status": run.status,
        "found": run.found,
        "new": selectors.run_new_papers(run),
        "engines": run.engines,
    }


@mcp_tool(
    name="delete_saved_search",
    title="Delete a saved search",
    description="Delete a saved search; the papers it found stay.",
    annotations=REMOVES,
)
def delete_saved_search(name: Name) -> dict[str, Any]:
    services.saved_search_delete(name=name, scope=current_scope())
    return {"deleted": name}


@mcp_tool(
    name="get_alerts",
    title="Get alerts",
    description=(
        "Alerts, newest first: saved searches' new papers, retractions, failures. "
        "mark_read: mark them read."
    ),
    # mark_read writes (honest hints); listed read-only in read-only mode, refusing it.
    annotations=SAVES,
    saves_results=True,
)
def get_alerts(
    since: Annotated[str | None, Field(max_length=40)] = None,
    unread: bool = False,
    limit: Annotated[int, Field(ge=1, le=MAX_ALERTS)] = 20,
    mark_read: bool = False,
) -> dict[str, Any]:
    if mark_read and serving_read_only():
        raise InvalidInput("This server is read-only: mark_read is refused.", field="mark_read")
    scope = current_scope()
    alerts = selectors.alerts_list(
        since=_since(since), unread=unread, limit=limit,
        project_ids=project_ids_for(scope) if scope is not None else None,
    )  # fmt: skip
    if mark_read and alerts:
        services.alerts_mark_read(alert_ids=[alert.pk for alert in alerts])
    return {"alerts": [selectors.alert_as_dict(alert) for alert in alerts]}


@mcp_resource(
    "alerts://recent",
    name="alerts",
    title="Recent alerts",
    description="The latest alerts as Markdown (unread ones marked).",
    mime_type="text/markdown",
)
def alerts_resource() -> str:
    scope = current_scope()
    alerts = selectors.alerts_list(
        limit=settings.MAX_PAGE_SIZE,
        project_ids=project_ids_for(scope) if scope is not None else None,
    )
    return selectors.alerts_markdown(alerts)


def register(registry: Registry) -> None:
    registry.add_tools(
        save_search, list_saved_searches, run_saved_search, delete_saved_search, get_alerts
    )
    registry.add_resources(alerts_resource)

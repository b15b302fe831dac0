"""Tool set `watch`, retractions (docs/RETRACTIONS.md): `check_retractions`, a thin adapter over
projects/retractions.py."""

from __future__ import annotations

from typing import Annotated, Any

from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from mcp_endpoint.registry import Registry, mcp_tool
from mcp_endpoint.scope import current_scope
from projects.retractions import retractions_check

# Records what the sources say on the papers and raises alerts; asks external engines.
CHECK = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)


class RetractionCheckResult(BaseModel):
    model_config = ConfigDict(extra="allow")

    checked: int
    failed: int = Field(description="Not checked: an engine failed; retried later.")
    flagged: list[dict[str, Any]]


@mcp_tool(
    name="check_retractions",
    title="Check retractions",
    description=(
        "Ask Crossref and OpenAlex now whether papers with a DOI (a project's, else the "
        "library's least recently checked) were retracted or corrected; flags them, alerts "
        "their projects, returns counts and the flagged papers."
    ),
    annotations=CHECK,
)
def check_retractions(
    project_id: Annotated[str | None, Field(max_length=200)] = None,
) -> RetractionCheckResult:
    report = retractions_check(project_ref=project_id, scope=current_scope())
    return RetractionCheckResult.model_validate(report.summary())


def register(registry: Registry) -> None:
    registry.add_tools(check_retractions)

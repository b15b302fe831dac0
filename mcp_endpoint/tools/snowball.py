"""Tool set `search`: `expand_by_citations`, citation snowballing over projects.snowball
(docs/MCP.md). It stores what it finds, so it is a write tool (hidden when read-only)."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import Field

from mcp_endpoint.registry import EXTERNAL_SEARCH, Registry
from mcp_endpoint.scope import current_scope
from projects.snowball import expand_by_citations


def register(registry: Registry) -> None:
    registry.tool(
        name="expand_by_citations",
        title="Snowball citations",
        description=(
            "Works the seeds (paper_ids, else project_id's papers) cite and/or that cite "
            "them, saved; ranked by seeds connected."
        ),
        annotations=EXTERNAL_SEARCH,
    )(expand_by_citations_tool)


def expand_by_citations_tool(
    paper_ids: list[int | str] | None = None,
    project_id: Annotated[str | None, Field(max_length=200)] = None,
    direction: Literal["references", "citing", "both"] = "both",
    depth: Literal[1, 2] = 1,
    limit: Annotated[int, Field(ge=1, le=100)] = 20,
    add_to_project: bool = False,
) -> dict[str, Any]:
    expansion = expand_by_citations(
        paper_ids=paper_ids, project_id=project_id, direction=direction, depth=depth,
        limit=limit, add_to_project=add_to_project, scope=current_scope(),
    )  # fmt: skip
    return expansion.as_dict()


# paper_ids (at most MAX_SEEDS) is bounded by the service, not the schema, and every available
# engine with the operation is asked (no `engines` argument): the tool's whole listing must
# fit in 200 tokens.

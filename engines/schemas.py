"""The answers of an engine search as every interface gives them: one pydantic model per
shape, used as the MCP tools' output schema and as the REST endpoints' response, so the two
cannot drift apart (docs/API.md)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

# engines/base.py STATUSES, spelled out for the schema.
StatusName = Literal[
    "ok", "error", "timeout", "unavailable", "unsupported", "not_found", "rate_limited",
    "cancelled",
]  # fmt: skip


class EngineStatus(BaseModel):
    model_config = ConfigDict(extra="allow")

    status: StatusName = Field(
        description="ok, or why this engine gave nothing (the others still answer)."
    )
    count: int = Field(description="Results from this engine on this page.")
    total: int | None = Field(default=None, description="Matches this engine reports.")
    mode: str | None = Field(
        default=None, description="How the local engine searched: fulltext, fuzzy, hybrid, ..."
    )
    message: str | None = None
    query_sent: str | None = Field(
        default=None, description="The exact query this engine was sent."
    )
    searched_at: str | None = Field(default=None, description="When it answered (UTC).")


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


class CitingPage(BaseModel):
    paper_id: int
    engines: dict[str, EngineStatus]
    results: list[EngineResult]
    saved: int
    notes: list[str] = Field(default_factory=list)


def engine_statuses(statuses: dict[str, dict[str, Any]]) -> dict[str, EngineStatus]:
    return {name: EngineStatus.model_validate(status) for name, status in statuses.items()}

"""Tool set `review`, screening record by record: `screen_next` and
`screen_decide`, at a review's `screen` checkpoint. Thin adapters over
projects/review/screening.py; docs/SCREENING.md explains the ranking and the stopping rule.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from django.conf import settings
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from mcp_endpoint.registry import READ_ONLY, Registry, mcp_tool
from projects.review import screening, selectors, stopping

SessionId = Annotated[str, Field(min_length=1, max_length=64)]
Share = Annotated[float, Field(ge=0.5, le=0.99)]
Screener = Annotated[
    str, Field(min_length=1, max_length=150, description="Who decides; a second one: kappa.")
]

RECORDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)


class ScreenDecision(BaseModel):
    model_config = ConfigDict(extra="forbid")

    paper: int | Annotated[str, Field(max_length=200)]
    decision: Literal["include", "exclude", "maybe"]
    reason: Annotated[str | None, Field(max_length=500)] = None


class ScreeningAnswer(BaseModel):
    """Records to screen (screen_next) or what was recorded (screen_decide), with tallies
    and the stopping report."""

    model_config = ConfigDict(extra="allow")

    session_id: str
    stopping: dict[str, Any] | None = Field(
        default=None, description="estimated_recall, safe_to_stop, heuristics."
    )


@mcp_tool(
    name="screen_next",
    title="Next records to screen",
    description=(
        "Review at its screen checkpoint: the pending records most likely to be included "
        "first (a model of your decisions so far), with abstracts, why each ranks there, "
        "and whether it is safe to stop. Answer with screen_decide."
    ),
    annotations=READ_ONLY,
)
def screen_next(
    session_id: SessionId,
    limit: Annotated[int, Field(ge=1, le=settings.MAX_PAGE_SIZE)] = 10,
    target_recall: Share = stopping.TARGET_RECALL,
    confidence: Share = stopping.CONFIDENCE,
    screener: Screener | None = None,
) -> ScreeningAnswer:
    session = selectors.review_get(session_id=session_id)
    return ScreeningAnswer.model_validate(
        screening.screening_next(
            session=session,
            limit=limit,
            target_recall=target_recall,
            confidence=confidence,
            screener=screener,
        )
    )


@mcp_tool(
    name="screen_decide",
    title="Record screening decisions",
    description=(
        "Review at its screen checkpoint: include, exclude or maybe (come back later) "
        "records from screen_next, one or a batch; all or none. Finish with decide "
        "approve when safe to stop. "
        "resolve=true settles screeners' disagreements (get_session lists them; reason "
        "required)."
    ),
    annotations=RECORDS,
)
def screen_decide(
    session_id: SessionId,
    decisions: Annotated[list[ScreenDecision], Field(min_length=1, max_length=100)],
    screener: Screener = "agent",
    resolve: bool = False,
) -> ScreeningAnswer:
    return ScreeningAnswer.model_validate(
        screening.screening_decide(
            session_id=selectors.review_session_id(session_id),
            decisions=[_typed(item) for item in decisions],
            decided_by=screener,
            resolve=resolve,
        )
    )


def _typed(item: ScreenDecision | dict[str, Any]) -> screening.ScreeningDecision | dict[str, Any]:
    """The service's decision; a dict (a call that skipped the schema) is the service's to
    check, with its own errors."""
    if not isinstance(item, ScreenDecision):
        return item
    return screening.ScreeningDecision(
        paper=item.paper,
        include=item.decision == "include",
        reason=item.reason or "",
        maybe=item.decision == "maybe",
    )


def register(registry: Registry) -> None:
    registry.add_tools(screen_next, screen_decide)

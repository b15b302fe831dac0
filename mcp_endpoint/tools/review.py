"""Tool set `review`: the literature-review workflow (docs/REVIEW.md).

An agent starts a review, shows each checkpoint to its person and passes on their
decision; the workflow runs on Celery workers and its state is in the database, so each
call may reach any server process. `start_review` and `decide` wait (at most
`wait_seconds`, polling the database) for the next checkpoint; a review still working
after that comes back with `state: "running"`, to be looked at again with `get_session`.

Errors an agent can act on are isError results with {"error": {"code", "message"}}:
not_found (unknown session), no_pending_checkpoint, session_complete, invalid_action,
invalid_decision, session_not_complete (export too early) and workflow_failed (with the
error). Write tools are hidden in read-only mode.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from django.conf import settings
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from mcp_endpoint.registry import READ_ONLY, Registry, mcp_resource, mcp_tool, serving_read_only
from projects.models import ReviewSession
from projects.review import selectors, services
from projects.review.dedup import duplicate_split
from projects.review.prisma import prisma_svg
from projects.review.state import DEFAULT_PAGE, review_state
from projects.review.workflow import WorkflowFailed

MAX_WAIT_SECONDS = 20

SessionId = Annotated[str, Field(min_length=1, max_length=64)]
WaitSeconds = Annotated[
    int, Field(ge=0, le=MAX_WAIT_SECONDS, description="Then returned as it is (running).")
]
CandidatesOffset = Annotated[int, Field(ge=0, le=settings.MAX_OFFSET)]
CandidatesLimit = Annotated[int, Field(ge=1, le=settings.MAX_PAGE_SIZE)]
# A page of candidates in every answer (DEFAULT_PAGE, abstracts cut short to keep
# the answer within its token budget); get_session pages through more.
WAITED_PAGE = DEFAULT_PAGE

STARTS_WORK = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)
CHANGES = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)
REMOVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


class ReviewState(BaseModel):
    """A review as it is now (get_session's fields, docs/REVIEW.md)."""

    model_config = ConfigDict(extra="allow")

    session_id: str
    query: str
    state: Literal["running", "waiting", "complete", "failed"] = Field(
        description="running: a step is working; waiting: a checkpoint needs a decision."
    )
    stage: str = Field(description="plan, search, screen, expand, extract or complete.")
    is_complete: bool
    has_pending_checkpoint: bool
    current_checkpoint_kind: str | None = Field(description="plan, screen, expand or extract.")
    iteration: int = Field(description="Decisions applied so far.")
    error: str | None = None
    counts: dict[str, Any] = Field(description="PRISMA-style counts.")
    prisma: dict[str, Any] | None = Field(
        default=None, description="PRISMA 2020 flow numbers; diagram: its `diagram` resource."
    )
    checkpoint: dict[str, Any] | None = Field(
        description=(
            "The pending checkpoint: kind, payload (at extract: form, studies extracted, "
            "flagged, disagreements, agreement), candidates page, actions."
        )
    )
    result: dict[str, Any] | None = Field(description="When complete: included, project_id.")
    next: str = Field(description="What to do next.")


class ReviewExport(BaseModel):
    session_id: str
    format: str
    count: int = Field(description="Included papers exported.")
    content: str


class DuplicateSplit(BaseModel):
    session_id: str
    paper_id: int
    was_grouped_with: int
    status: str
    next: str


class ReviewRemoved(BaseModel):
    session_id: str
    removed: bool
    cancelled: bool = Field(description="True if a step was under way and was cancelled.")


def _state(session_id: str, *, offset: int = 0, limit: int = DEFAULT_PAGE) -> ReviewState:
    session = selectors.review_get(session_id=session_id)
    return ReviewState.model_validate(review_state(session=session, offset=offset, limit=limit))


def _waited(session_id: str, wait_seconds: int) -> ReviewState:
    """The state after waiting; a failure the caller was waiting for is an isError."""
    services.review_wait(session_id=session_id, timeout=wait_seconds)
    state = _state(session_id, limit=WAITED_PAGE)
    if state.state == ReviewSession.Status.FAILED:
        raise WorkflowFailed(
            f"The review failed: {state.error}", session_id=session_id, error=state.error
        )
    return state


@mcp_tool(
    name="start_review",
    title="Start a literature review",
    description=(
        "Review workflow, step 1: start a literature review of a research question. It "
        "stops at checkpoints (plan, screen, expand) for the person's decision; pass it "
        "with decide. Included papers end in a project, with PRISMA counts."
    ),
    annotations=STARTS_WORK,
    aliases={"max_results": "limit", "question": "query"},
)
def start_review(
    query: Annotated[
        str,
        Field(
            min_length=1,
            max_length=settings.MAX_QUERY_CHARS,
            description="The research question.",
        ),
    ],
    domain: Annotated[
        str, Field(max_length=40, description="general, cs, bio/med, physics, math, social.")
    ] = "general",
    limit: Annotated[
        int, Field(ge=1, le=settings.MAX_PAGE_SIZE, description="Most candidates.")
    ] = services.DEFAULT_MAX_RESULTS,
    wait_seconds: WaitSeconds = MAX_WAIT_SECONDS,
) -> ReviewState:
    session = services.review_start(query=query, domain=domain, max_results=limit)
    return _waited(str(session.pk), wait_seconds)


@mcp_tool(
    name="decide",
    title="Decide at a review checkpoint",
    description=(
        "Review workflow: answer the pending checkpoint (approve, edit with data, reject "
        "with a note) and wait for the next. The checkpoint's `actions` say what each "
        "does and what data edit takes. Pass checkpoint (its sequence) against retries."
    ),
    annotations=STARTS_WORK,
)
def decide(
    session_id: SessionId,
    action: Literal["approve", "edit", "reject"],
    data: Annotated[dict[str, Any] | None, Field(description="For edit.")] = None,
    note: Annotated[str | None, Field(max_length=2000)] = None,
    checkpoint: Annotated[int | None, Field(ge=1)] = None,
    wait_seconds: WaitSeconds = MAX_WAIT_SECONDS,
) -> ReviewState:
    services.review_decide(
        session_id=session_id,
        action=action,
        data=data,
        note=note,
        expected_sequence=checkpoint,
    )
    return _waited(session_id, wait_seconds)


@mcp_tool(
    name="get_session",
    title="Get a review session",
    description=(
        "Review workflow: a review's state, stage, pending checkpoint with a page of "
        "candidates, PRISMA counts and result. Poll a running review with it."
    ),
    annotations=READ_ONLY,
    aliases={"candidates_limit": "limit", "candidates_offset": "offset"},
)
def get_session(
    session_id: SessionId,
    offset: CandidatesOffset = 0,
    limit: CandidatesLimit = WAITED_PAGE,
) -> ReviewState:
    if not serving_read_only():
        # A look at a review whose worker died sends its step again.
        services.review_resume(session_id=str(selectors.review_session_id(session_id)))
    return _state(session_id, offset=offset, limit=limit)


@mcp_tool(
    name="export_results",
    title="Export a finished review",
    description=(
        "Review workflow, last step: a complete review's included papers as markdown or "
        "json (with question, plan, decisions, PRISMA counts), bibtex, csv or ris."
    ),
    annotations=READ_ONLY,
)
def export_results(
    session_id: SessionId,
    format: Literal["json", "bibtex", "markdown", "csv", "ris"] = "markdown",
) -> ReviewExport:
    session = selectors.review_get(session_id=session_id)
    return ReviewExport.model_validate(selectors.review_export(session=session, fmt=format))


@mcp_tool(
    name="cleanup_review",
    title="Remove a review session",
    description=(
        "Review workflow: remove a review session, cancelling work under way. Its papers "
        "and project stay."
    ),
    annotations=REMOVES,
)
def cleanup_review(session_id: SessionId) -> ReviewRemoved:
    return ReviewRemoved.model_validate(services.review_cleanup(session_id=session_id))


@mcp_tool(
    name="split_duplicate",
    title="Split a record out of its version group",
    description=(
        "Review workflow: undo a de-duplication. A record grouped as another version of "
        "a candidate (its `versions`) becomes a candidate of its own, to screen."
    ),
    annotations=CHANGES,
)
def split_duplicate(
    session_id: SessionId,
    paper: Annotated[str, Field(min_length=1, max_length=200, description="paper_id or id.")],
) -> DuplicateSplit:
    session_id = str(selectors.review_session_id(session_id))
    return DuplicateSplit.model_validate(
        duplicate_split(session_id=session_id, paper=paper, split_by="agent")
    )


@mcp_resource(
    "review://{session_id}/prisma.svg",
    name="review_prisma_diagram",
    title="PRISMA 2020 flow diagram of a review",
    description="The review's PRISMA 2020 flow diagram with its counts, as SVG.",
    mime_type="image/svg+xml",
)
def review_prisma_resource(session_id: str) -> str:
    session = selectors.review_get(session_id=session_id)
    return prisma_svg(selectors.review_prisma(session=session), title=session.query)


def register(registry: Registry) -> None:
    registry.add_tools(
        start_review, decide, get_session, export_results, cleanup_review, split_duplicate
    )
    registry.add_resources(review_prisma_resource, review_search_log_resource)


@mcp_resource(
    "review://{session_id}/search-log",
    name="review_search_log",
    title="Search log of a review",
    description=(
        "Every search a review ran (PRISMA-S): per query and source, the query as written "
        "and as sent, when, records returned and the source's total, status."
    ),
    mime_type="application/json",
)
def review_search_log_resource(session_id: str) -> str:
    session = selectors.review_get(session_id=session_id)
    return json.dumps(selectors.review_search_log(session=session), ensure_ascii=False)

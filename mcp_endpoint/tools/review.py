"""Tool set `review`: the literature-review workflow (seed 002, issue 6).

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

from typing import Annotated, Any, Literal

from django.conf import settings
from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from mcp_endpoint.registry import READ_ONLY, Registry
from projects.models import ReviewSession
from projects.review import selectors, services
from projects.review.workflow import WorkflowFailed

MAX_WAIT_SECONDS = 20

SessionId = Annotated[
    str, Field(min_length=1, max_length=64, description="The session_id start_review returned.")
]
WaitSeconds = Annotated[
    int,
    Field(
        ge=0,
        le=MAX_WAIT_SECONDS,
        description="Seconds to wait for the next checkpoint (0-20); then the review is "
        "returned as it is (state 'running' if still working).",
    ),
]
CandidatesOffset = Annotated[
    int, Field(ge=0, le=settings.MAX_OFFSET, description="First candidate of the page shown.")
]
CandidatesLimit = Annotated[
    int,
    Field(ge=1, le=settings.MAX_PAGE_SIZE, description="Candidates per page, 1-100 (default 20)."),
]

STARTS_WORK = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)
REMOVES = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=False
)


class ReviewState(BaseModel):
    """A review as it is now (seed 002's get_session fields and more)."""

    model_config = ConfigDict(extra="allow")

    session_id: str
    query: str
    state: Literal["running", "waiting", "complete", "failed"] = Field(
        description="running: a step is working; waiting: a checkpoint needs a decision."
    )
    stage: str = Field(description="plan, search, screen, expand or complete.")
    is_complete: bool
    has_pending_checkpoint: bool
    current_checkpoint_kind: str | None = Field(description="plan, screen or expand.")
    iteration: int = Field(description="Decisions applied so far.")
    error: str | None = None
    counts: dict[str, Any] = Field(description="PRISMA-style counts.")
    checkpoint: dict[str, Any] | None = Field(
        description="The pending checkpoint: kind, payload, candidates page, actions."
    )
    result: dict[str, Any] | None = Field(description="When complete: included, project_id.")
    next: str = Field(description="What to do next.")


class ReviewExport(BaseModel):
    session_id: str
    format: str
    count: int = Field(description="Included papers exported.")
    content: str


class ReviewRemoved(BaseModel):
    session_id: str
    removed: bool
    cancelled: bool = Field(description="True if a step was under way and was cancelled.")


def _state(session_id: str, *, offset: int = 0, limit: int = selectors.DEFAULT_PAGE) -> ReviewState:
    session = selectors.review_get(session_id=session_id)
    return ReviewState.model_validate(
        selectors.review_state(session=session, offset=offset, limit=limit)
    )


def _waited(session_id: str, wait_seconds: int) -> ReviewState:
    """The state after waiting; a failure the caller was waiting for is an isError."""
    services.review_wait(session_id=session_id, timeout=wait_seconds)
    state = _state(session_id)
    if state.state == ReviewSession.Status.FAILED:
        raise WorkflowFailed(
            f"The review failed: {state.error}", session_id=session_id, error=state.error
        )
    return state


def register(registry: Registry) -> None:
    @registry.tool(
        name="start_review",
        title="Start a literature review",
        description=(
            "Start a literature review of a research question, driven by a person's decisions "
            "at checkpoints: plan (queries, engines, dates, criteria) -> search -> screen the "
            "candidates -> optional citation search (expand) -> complete (included papers "
            "saved in a project named after the review, with PRISMA counts). Returns the "
            "session_id and the first checkpoint (plan): show it to the person and pass their "
            "answer to decide. domain: general, cs, bio/med, physics, math, social. "
            "max_results: most candidates to screen (1-100). Searching calls external "
            "engines (rate-limited) and adds what they find to the library."
        ),
        annotations=STARTS_WORK,
    )
    def start_review(
        query: Annotated[
            str,
            Field(
                min_length=1,
                max_length=settings.MAX_QUERY_CHARS,
                description="The research question, e.g. 'How do transformers handle long "
                "documents?'.",
            ),
        ],
        domain: Annotated[
            str, Field(max_length=40, description="general, cs, bio/med, physics, math, social.")
        ] = "general",
        max_results: Annotated[
            int, Field(ge=1, le=settings.MAX_PAGE_SIZE, description="Most candidates, 1-100.")
        ] = services.DEFAULT_MAX_RESULTS,
        wait_seconds: WaitSeconds = MAX_WAIT_SECONDS,
    ) -> ReviewState:
        session = services.review_start(query=query, domain=domain, max_results=max_results)
        return _waited(str(session.pk), wait_seconds)

    @registry.tool(
        name="decide",
        title="Decide at a review checkpoint",
        description=(
            "Pass the person's decision on the review's pending checkpoint and wait for the "
            "next one (or completion). action: approve | edit | reject. At plan: edit "
            'changes the plan, e.g. data={"queries": [...], "engines": [...], "date_from": '
            '"2018", "snowball": true}; reject plans again using the note. At screen: edit '
            'takes data={"include": [paper_id, ...]} or {"exclude": [...], "reasons": '
            '{"<paper_id>": "why"}}; reject goes back to planning. Pass checkpoint (the '
            "pending checkpoint's sequence) so a retried call cannot answer the next one. "
            "The checkpoint's `actions` say what each action does there."
        ),
        annotations=STARTS_WORK,
    )
    def decide(
        session_id: SessionId,
        action: Annotated[str, Field(max_length=20, description="approve, edit or reject.")],
        data: Annotated[
            dict[str, Any] | None, Field(description="The edit (action=edit); see description.")
        ] = None,
        note: Annotated[
            str | None, Field(max_length=2000, description="The person's reasons, kept.")
        ] = None,
        checkpoint: Annotated[
            int | None, Field(ge=1, description="Sequence of the checkpoint being answered.")
        ] = None,
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

    @registry.tool(
        name="get_session",
        title="Get a review session",
        description=(
            "A review's state: running/waiting/complete/failed, the stage, the pending "
            "checkpoint with a page of candidates (abstracts included; page with "
            "candidates_offset), PRISMA counts, the decisions so far, the error if it "
            "failed, and the result once complete. Call it to poll a running review."
        ),
        annotations=READ_ONLY,
    )
    def get_session(
        session_id: SessionId,
        candidates_offset: CandidatesOffset = 0,
        candidates_limit: CandidatesLimit = selectors.DEFAULT_PAGE,
    ) -> ReviewState:
        if not registry.read_only:
            # A look at a review whose worker died sends its step again.
            services.review_resume(session_id=str(selectors.review_session_id(session_id)))
        return _state(session_id, offset=candidates_offset, limit=candidates_limit)

    @registry.tool(
        name="export_results",
        title="Export a finished review",
        description=(
            "The included papers of a complete review: json and markdown also carry the "
            "question, plan, decisions and PRISMA counts; bibtex, csv and ris are the papers "
            "for reference managers. An isError session_not_complete before completion."
        ),
        annotations=READ_ONLY,
    )
    def export_results(
        session_id: SessionId,
        format: Literal["json", "bibtex", "markdown", "csv", "ris"] = "markdown",
    ) -> ReviewExport:
        session = selectors.review_get(session_id=session_id)
        return ReviewExport.model_validate(selectors.review_export(session=session, fmt=format))

    @registry.tool(
        name="cleanup_review",
        title="Remove a review session",
        description=(
            "Remove a review session, cancelling any step under way; get_session then says "
            "not_found. Papers found stay in the library and a finished review's project "
            "stays."
        ),
        annotations=REMOVES,
    )
    def cleanup_review(session_id: SessionId) -> ReviewRemoved:
        return ReviewRemoved.model_validate(services.review_cleanup(session_id=session_id))

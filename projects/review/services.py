"""Writes of the review workflow on the person's side: start a review, answer its
checkpoint, remove it, and wait on it (resuming a step whose worker was lost on the way).
The steps themselves are in projects/review/steps.py."""

from __future__ import annotations

import logging
import time
import unicodedata
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import transaction
from django.utils import timezone

from core.errors import InvalidInput, NotFound
from engines.base import SEARCH
from engines.services import engine_ids_resolve, engines_available
from papers.scoping import client_project_ids
from projects import permissions
from projects.dispatch import review_step_revoke
from projects.models import ReviewCandidate, ReviewCheckpoint, ReviewSession
from projects.review import planning, steps
from projects.review.extract_stage import extract_decision_check
from projects.review.handler import DatabaseCheckpointHandler
from projects.review.planning import Plan, plan_edit
from projects.review.screening import screening_on_approve, screening_unresolved_check
from projects.review.selectors import review_session_id
from projects.review.steps import extract_begin, review_complete, step_dispatch, step_send
from projects.review.workflow import (
    Decision,
    DecisionAction,
    InvalidDecision,
    Screening,
    SessionComplete,
    WorkflowFailed,
    decision_parse,
    next_stage,
    screening_apply,
)

logger = logging.getLogger(__name__)

Stage = ReviewSession.Stage
Status = ReviewSession.Status

DEFAULT_MAX_RESULTS = 100


@transaction.atomic
def review_start(
    *, query: str, domain: str = "general", max_results: int = DEFAULT_MAX_RESULTS
) -> ReviewSession:
    """A new review of `query`; its planning step is sent to a worker (or run in-process
    on the embedded default) once this commits. The engines it may use are this process's
    (ENGINES_ENABLED, keys).

    Raises InvalidInput for an empty, oversized or wordless question, an unknown domain or
    max_results outside 1-100."""
    text = _clean_question(query)
    key = planning.domain_key(domain)
    if isinstance(max_results, bool) or not isinstance(max_results, int):
        raise InvalidInput("max_results must be a whole number.", field="max_results")
    if not 1 <= max_results <= settings.MAX_PAGE_SIZE:
        raise InvalidInput(f"max_results must be 1-{settings.MAX_PAGE_SIZE}.", field="max_results")
    session = ReviewSession(
        query=text,
        domain=key,
        max_results=max_results,
        engines_allowed=engines_available(operation=SEARCH),
        engines_default=engine_ids_resolve(None, operation=SEARCH),
        collections=permissions.review_collections(client_project_ids()),
    )
    step_dispatch(session, Stage.PLAN)
    session.save()
    return session


@transaction.atomic
def review_decide(
    *,
    session_id: str,
    action: str,
    data: Any = None,
    note: str | None = None,
    expected_sequence: int | None = None,
    decided_by: str = "agent",
) -> ReviewSession:
    """Answer the review's pending checkpoint (see projects/review/workflow.py for what each
    action does there) and start what comes next: a step on a worker, or completion, done
    here. `expected_sequence`, when given, must be the pending checkpoint's sequence, so a
    retried call never answers the next checkpoint by mistake.

    Raises NotFound, SessionComplete, WorkflowFailed, NoPendingCheckpoint, InvalidAction,
    InvalidDecision."""
    session = _lock(session_id)
    if session.status == Status.COMPLETE:
        raise SessionComplete(
            f"Review {session.pk} is complete; export_results gives its papers.",
            session_id=str(session.pk),
        )
    if session.status == Status.FAILED:
        raise WorkflowFailed(
            f"Review {session.pk} failed: {session.error}",
            session_id=str(session.pk),
            error=session.error,
        )
    decision = decision_parse(action=action, data=data, note=note, decided_by=decided_by)
    handler = DatabaseCheckpointHandler(session)
    checkpoint = handler.set_decision(decision, expected_sequence=expected_sequence)
    session.iteration += 1
    plan = _decision_apply(session, checkpoint.kind, decision)
    stage = next_stage(
        checkpoint.kind, decision.action, snowball=plan.snowball, extract=plan.extract
    )
    if stage == Stage.PLAN:  # rejected: plan again, with the note
        session.candidates.all().delete()
        session.identification = {}
        session.round += 1
        session.plan = {**session.plan, "feedback": [*plan.feedback, decision.note or "(no note)"]}
    if stage == Stage.COMPLETE:
        review_complete(session)
    elif stage == Stage.EXTRACT:
        extract_begin(session)
    else:
        step_dispatch(session, stage)
    session.save()
    return session


def _decision_apply(session: ReviewSession, kind: str, decision: Decision) -> Plan:
    """What a decision changes at its checkpoint: the plan (an edit at `plan`), or the
    screening of the pending candidates (at `screen` and `expand`; a rejection at `screen`
    discards them instead); at `extract`, nothing, once extract_decision_check lets the
    decision through. Returns the plan from here on."""
    plan = Plan.from_dict(session.plan)
    if kind == ReviewCheckpoint.Kind.EXTRACT:
        extract_decision_check(session=session, decision=decision)
    elif kind == ReviewCheckpoint.Kind.PLAN:
        if decision.action is DecisionAction.EDIT:
            if not decision.data:
                editable = ", ".join(planning.EDITABLE)
                raise InvalidDecision(f"An edit of the plan needs data with changes ({editable}).")
            try:
                plan = plan_edit(plan, decision.data, engines_allowed=session.engines_allowed)
            except ValueError as exc:
                raise InvalidDecision(str(exc)) from None
            session.plan = plan.as_dict()
    elif kind == ReviewCheckpoint.Kind.EXPAND:
        _screen(session, ReviewCandidate.Source.CITATION, decision)
    elif decision.action is not DecisionAction.REJECT:
        _screen(session, ReviewCandidate.Source.SEARCH, decision)
    return plan


def review_cleanup(*, session_id: str) -> dict[str, Any]:
    """Remove a review: its session, checkpoints, decisions and candidates (the papers stay
    in the library, and a finished review's project stays). A step under way is revoked
    and, if already running, discards its work at its next check. NotFound if unknown."""
    with transaction.atomic():
        session = _lock(session_id)
        running = session.status == Status.RUNNING
        task_id = session.task_id
        session.delete()
        if running and task_id:
            transaction.on_commit(lambda: review_step_revoke(task_id), robust=True)
    return {"session_id": str(session_id), "removed": True, "cancelled": running}


def review_wait(*, session_id: str, timeout: float) -> None:
    """Wait, polling the database, until the review is no longer running (it reached a
    checkpoint, completed or failed) or `timeout` seconds have passed; resumes it on the
    way if its step was lost. NotFound if it is (or gets) removed."""
    pk = review_session_id(session_id)
    deadline = time.monotonic() + max(0.0, timeout)
    pause = 0.05
    while True:
        row = ReviewSession.objects.filter(pk=pk).values_list("status", "lease_expires_at").first()
        if row is None:
            raise NotFound(f"No review session {session_id!r}.", session_id=str(session_id))
        status, lease = row
        if status != Status.RUNNING:
            return
        if lease is not None and lease <= timezone.now():
            review_resume(session_id=str(pk))
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            return
        time.sleep(min(pause, remaining))
        pause = min(pause * 1.5, 0.5)


def review_resume(*, session_id: str) -> bool:
    """Send a running review's step again if its lease ran out (worker killed, message
    lost); True if it did. The step keeps its task id, so whichever copy comes first does
    the work and the others find nothing to do."""
    with transaction.atomic():
        session = (
            ReviewSession.objects.select_for_update()
            .filter(pk=review_session_id(session_id))
            .first()
        )
        now = timezone.now()
        if (
            session is None
            or session.status != Status.RUNNING
            or session.lease_expires_at is None
            or session.lease_expires_at > now
        ):
            return False
        logger.warning(
            "Review %s: step %s (%s) lost its lease; sending it again",
            session.pk, session.stage, session.task_id,
        )  # fmt: skip
        session.started_at = None
        session.lease_expires_at = now + timedelta(seconds=steps.DISPATCH_GRACE_SECONDS)
        session.save(update_fields=["started_at", "lease_expires_at", "updated_at"])
        step_send(session)
    return True


def _screen(session: ReviewSession, source: str, decision: Decision) -> None:
    pending = list(
        session.candidates.filter(source=source, status=ReviewCandidate.Status.PENDING)
        .order_by("rank")
        .select_related("paper")
    )
    by_ref: dict[str, int] = {}
    for candidate in pending:
        paper = candidate.paper
        for ref in (str(paper.pk), paper.human_id, paper.citekey):
            by_ref[ref] = paper.pk

    def resolve(ref: Any) -> int | None:
        return by_ref.get(str(ref).strip())

    pending_ids = [c.paper_id for c in pending]
    if source == ReviewCandidate.Source.SEARCH:
        screening_unresolved_check(session)  # a PRISMA count needs one decision per record
    # After record-by-record screening (screen_decide), approve keeps those decisions.
    unscreened = None
    if source == ReviewCandidate.Source.SEARCH and decision.action is DecisionAction.APPROVE:
        unscreened = screening_on_approve(session, pending_ids)
    if unscreened is not None:
        screening = Screening([], unscreened)
    else:
        screening = screening_apply(decision, pending_ids, resolve)
    included = set(screening.included)
    for candidate in pending:
        if candidate.paper_id in included:
            candidate.status = ReviewCandidate.Status.INCLUDED
        else:
            candidate.status = ReviewCandidate.Status.EXCLUDED
            candidate.reason = screening.excluded[candidate.paper_id]
    ReviewCandidate.objects.bulk_update(pending, ["status", "reason"])


def _lock(session_id: str) -> ReviewSession:
    """The session, locked, for a change: its checkpoints (review_decide) or its removal,
    which its project's editors may make (projects.permissions)."""
    pk = review_session_id(session_id)
    permissions.require_review(pk, permissions.EDIT)
    session = ReviewSession.objects.select_for_update().filter(pk=pk).first()
    if session is None:
        raise NotFound(f"No review session {session_id!r}.", session_id=str(session_id))
    return session


def _clean_question(query: Any) -> str:
    if not isinstance(query, str):
        raise InvalidInput("query must be text.", field="query")
    if any(unicodedata.category(ch) in ("Cc", "Cs") and ch not in "\t\n\r" for ch in query):
        raise InvalidInput("query contains control characters.", field="query")
    text = " ".join(query.split())
    if not text:
        raise InvalidInput("query cannot be empty.", field="query")
    if len(text) > settings.MAX_QUERY_CHARS:
        raise InvalidInput(f"query is over {settings.MAX_QUERY_CHARS} characters.", field="query")
    if not planning.key_terms(text):
        raise InvalidInput("The question has no words to search for.", field="query")
    return text

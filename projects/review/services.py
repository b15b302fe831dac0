"""Writes of the review workflow: start, decide, clean up, and the steps Celery runs.

Steps. A review advances by steps (plan, search, expand), each a Celery task given the
session's id, the stage and the round. The task for a step is sent once its transaction
commits, and it only acts if the session is still at that stage and round and names that
task (`task_id`): a late, duplicated or redelivered message does nothing. A step:

1. claims the session (row lock, compare-and-set: `attempt` + 1, lease of LEASE_SECONDS);
2. works outside any transaction (engine calls), renewing its lease from a heartbeat
   thread, and stops early if the review is removed or handed to another run meanwhile;
3. commits everything it found and the next checkpoint in one transaction, again only if
   it still holds the claim. A step that dies before 3 leaves no trace but papers merged
   into the library (which de-duplication makes harmless to add again).

A step whose lease ran out (its worker was killed, its message lost) is sent again by
whoever next waits on or looks at the review (`review_resume`), at most MAX_ATTEMPTS
times, so a review survives worker crashes without relying on the broker's redelivery
(Redis redelivers an unacknowledged task only after its visibility timeout, an hour).
"""

from __future__ import annotations

import logging
import threading
import time
import unicodedata
import uuid
from datetime import timedelta
from typing import Any

from django.conf import settings
from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from engines.base import SEARCH
from engines.services import engine_ids_resolve
from projects.models import Project, ReviewCandidate, ReviewCheckpoint, ReviewSession
from projects.review import planning
from projects.review.handler import DatabaseCheckpointHandler
from projects.review.planning import Plan, plan_edit, plan_propose
from projects.review.searching import Gathered, Stopped, citations_gather, search_gather
from projects.review.selectors import review_session_id
from projects.review.workflow import (
    Checkpoint,
    DecisionAction,
    InvalidDecision,
    SessionComplete,
    WorkflowFailed,
    decision_parse,
    next_stage,
    screening_apply,
)
from projects.services import project_add_papers, project_create
from research_site.errors import Conflict, InvalidInput, NotFound

logger = logging.getLogger(__name__)

Stage = ReviewSession.Stage
Status = ReviewSession.Status

DEFAULT_MAX_RESULTS = 100
# How long a claimed step is trusted without a heartbeat, and how often it renews.
LEASE_SECONDS = 10.0
HEARTBEAT_SECONDS = 2.5
# How long a sent step may wait in the queue before it is sent again (busy workers).
DISPATCH_GRACE_SECONDS = 60.0
# Claims of one step before the review is failed (each one a worker lost or timed out).
MAX_ATTEMPTS = 3


class StepBusy(Exception):
    """Another copy of this step holds a live lease; try again in `retry_in` seconds."""

    def __init__(self, retry_in: float) -> None:
        super().__init__(f"busy for {retry_in:.1f} s")
        self.retry_in = retry_in


# --- the person's side: start, decide, clean up -------------------------------------------


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
        engines_allowed=engine_ids_resolve(None, operation=SEARCH),
    )
    _dispatch(session, Stage.PLAN)
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
    plan = Plan.from_dict(session.plan)
    session.iteration += 1
    if checkpoint.kind == ReviewCheckpoint.Kind.PLAN:
        if decision.action is DecisionAction.EDIT:
            if not decision.data:
                editable = ", ".join(planning.EDITABLE)
                raise InvalidDecision(f"An edit of the plan needs data with changes ({editable}).")
            try:
                plan = plan_edit(plan, decision.data, engines_allowed=session.engines_allowed)
            except ValueError as exc:
                raise InvalidDecision(str(exc)) from None
            session.plan = plan.as_dict()
    else:
        source = (
            ReviewCandidate.Source.SEARCH
            if checkpoint.kind == ReviewCheckpoint.Kind.SCREEN
            else ReviewCandidate.Source.CITATION
        )
        if not (checkpoint.kind == "screen" and decision.action is DecisionAction.REJECT):
            _screen(session, source, decision)
    stage = next_stage(checkpoint.kind, decision.action, snowball=plan.snowball)
    if stage == Stage.PLAN:  # rejected: plan again, with the note
        session.candidates.all().delete()
        session.identification = {}
        session.round += 1
        session.plan = {**session.plan, "feedback": [*plan.feedback, decision.note or "(no note)"]}
    if stage == Stage.COMPLETE:
        _complete(session)
    else:
        _dispatch(session, stage)
    session.save()
    return session


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
            transaction.on_commit(lambda: _revoke(task_id), robust=True)
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
        session.lease_expires_at = now + timedelta(seconds=DISPATCH_GRACE_SECONDS)
        session.save(update_fields=["started_at", "lease_expires_at", "updated_at"])
        _send_on_commit(session)
    return True


# --- the workflow's side: steps --------------------------------------------------------------


def review_step(*, session_id: str, stage: str, round: int, run_id: str) -> str:
    """Run one step (the body of the Celery task; see the module docstring). Returns what
    happened: done | failed | gone | stale | superseded | stopped | discarded. Raises
    StepBusy when another copy holds a live lease."""
    claimed = _claim(session_id, stage, round, run_id)
    if isinstance(claimed, str):
        return claimed
    session = claimed
    with _Lease(session.pk, run_id, session.attempt) as lease:
        try:
            outcome = _work(session, stage, keep_going=lambda: lease.alive)
        except Stopped:
            return "stopped"
        except Exception as exc:  # a bug, a damaged plan, the time limit: the review fails
            logger.exception("Review %s: step %s failed", session.pk, stage)
            _fail(session.pk, run_id, session.attempt, f"{type(exc).__name__}: {exc}")
            return "failed"
        return _commit(session.pk, run_id, session.attempt, stage, outcome)


def _work(session: ReviewSession, stage: str, *, keep_going: Any) -> Plan | Gathered:
    if stage == Stage.PLAN:
        feedback = (session.plan or {}).get("feedback", [])
        return plan_propose(
            question=session.query,
            domain=session.domain,
            engines_allowed=session.engines_allowed,
            feedback=feedback,
        )
    plan = Plan.from_dict(session.plan)
    if stage == Stage.SEARCH:
        return search_gather(plan=plan, max_results=session.max_results, keep_going=keep_going)
    if stage == Stage.EXPAND:
        included = session.candidates.filter(status=ReviewCandidate.Status.INCLUDED)
        cited = [candidate.paper for candidate in included.select_related("paper").order_by("rank")]
        known = set(session.candidates.values_list("paper_id", flat=True))
        return citations_gather(
            plan=plan,
            cited=cited,
            known=known,
            max_results=session.max_results,
            keep_going=keep_going,
        )
    raise ValueError(f"No step for stage {stage!r}.")


@transaction.atomic
def _claim(session_id: str, stage: str, round: int, run_id: str) -> ReviewSession | str:
    session = ReviewSession.objects.select_for_update().filter(pk=session_id).first()
    if session is None:
        return "gone"
    if session.status != Status.RUNNING or session.stage != stage or session.round != round:
        return "stale"
    if session.task_id != run_id:
        return "superseded"
    now = timezone.now()
    if session.started_at and session.lease_expires_at and session.lease_expires_at > now:
        raise StepBusy((session.lease_expires_at - now).total_seconds())
    if session.attempt >= MAX_ATTEMPTS:
        session.status = Status.FAILED
        session.error = (
            f"The {stage} step was interrupted {session.attempt} times (its worker was lost "
            "or it ran out of time)."
        )
        _clear_lease(session)
        session.save()
        return "failed"
    session.attempt += 1
    session.started_at = now
    session.lease_expires_at = now + timedelta(seconds=LEASE_SECONDS)
    session.save(update_fields=["attempt", "started_at", "lease_expires_at", "updated_at"])
    return session


@transaction.atomic
def _commit(session_id: uuid.UUID, run_id: str, attempt: int, stage: str, outcome: Any) -> str:
    session = _locked_claim(session_id, run_id, attempt, stage)
    if session is None:
        return "discarded"
    handler = DatabaseCheckpointHandler(session)
    if stage == Stage.PLAN:
        session.plan = outcome.as_dict()
        checkpoint = Checkpoint(
            "plan",
            {
                "plan": session.plan,
                "editable": list(planning.EDITABLE),
                "engines_allowed": session.engines_allowed,
            },
        )
    else:
        source = (
            ReviewCandidate.Source.SEARCH
            if stage == Stage.SEARCH
            else ReviewCandidate.Source.CITATION
        )
        _store_candidates(session, source, outcome)
        key = "search" if stage == Stage.SEARCH else "citations"
        session.identification = {**session.identification, key: outcome.identification}
        if stage == Stage.EXPAND and not outcome.candidates:
            _complete(session)
            session.save()
            return "done"
        session.stage = Stage.SCREEN if stage == Stage.SEARCH else Stage.EXPAND
        checkpoint = Checkpoint(
            "screen" if stage == Stage.SEARCH else "expand",
            {
                "counts": outcome.identification,
                "candidates": len(outcome.candidates),
                "engines": outcome.statuses,
                "notes": outcome.notes,
            },
        )
    handler.handle(checkpoint)
    _clear_lease(session)
    session.save()
    return "done"


@transaction.atomic
def _fail(session_id: uuid.UUID, run_id: str, attempt: int, message: str) -> None:
    session = ReviewSession.objects.select_for_update().filter(pk=session_id).first()
    if session is None or session.task_id != run_id or session.attempt != attempt:
        return
    session.status = Status.FAILED
    session.error = message[:2000]
    _clear_lease(session)
    session.save()


def _locked_claim(
    session_id: uuid.UUID, run_id: str, attempt: int, stage: str
) -> ReviewSession | None:
    session = ReviewSession.objects.select_for_update().filter(pk=session_id).first()
    if (
        session is None
        or session.status != Status.RUNNING
        or session.stage != stage
        or session.task_id != run_id
        or session.attempt != attempt
    ):
        return None
    return session


def _store_candidates(session: ReviewSession, source: str, gathered: Gathered) -> None:
    session.candidates.filter(source=source).delete()
    ReviewCandidate.objects.bulk_create(
        [
            ReviewCandidate(
                session=session,
                paper_id=found.paper_id,
                source=source,
                round=session.round,
                rank=rank,
                score=round(found.score, 6),
                engines=found.engines,
                queries=found.queries,
                cites=found.cites,
            )
            for rank, found in enumerate(gathered.candidates, start=1)
        ]
    )


def _screen(session: ReviewSession, source: str, decision: Any) -> None:
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

    screening = screening_apply(decision, [c.paper_id for c in pending], resolve)
    included = set(screening.included)
    for candidate in pending:
        if candidate.paper_id in included:
            candidate.status = ReviewCandidate.Status.INCLUDED
        else:
            candidate.status = ReviewCandidate.Status.EXCLUDED
            candidate.reason = screening.excluded[candidate.paper_id]
    ReviewCandidate.objects.bulk_update(pending, ["status", "reason"])


def _complete(session: ReviewSession) -> None:
    """Save the included papers into a project named after the review; mark it complete."""
    included = list(
        session.candidates.filter(status=ReviewCandidate.Status.INCLUDED).values_list(
            "paper_id", flat=True
        )
    )
    project = _review_project(session)
    project_add_papers(project=project, paper_ids=included)
    session.project = project
    session.stage = Stage.COMPLETE
    session.status = Status.COMPLETE
    session.completed_at = timezone.now()
    _clear_lease(session)


def _review_project(session: ReviewSession) -> Project:
    base = " ".join(f"Review: {session.query}".split())[:180]
    description = f"Literature review {session.pk} ({session.domain}): {session.query}"
    for number in range(1, 1000):
        name = base if number == 1 else f"{base} ({number})"
        try:
            return project_create(name=name, description=description)
        except Conflict:
            continue
    return project_create(name=f"{base[:140]} {session.pk}", description=description)


def _dispatch(session: ReviewSession, stage: str) -> None:
    """Set the session running at `stage` with a new step; the step is sent on commit."""
    session.stage = stage
    session.status = Status.RUNNING
    session.task_id = str(uuid.uuid4())
    session.attempt = 0
    session.started_at = None
    session.lease_expires_at = timezone.now() + timedelta(seconds=DISPATCH_GRACE_SECONDS)
    _send_on_commit(session)


def _send_on_commit(session: ReviewSession) -> None:
    from projects.tasks import review_step_task

    args = (str(session.pk), session.stage, session.round)
    task_id = session.task_id
    # robust: the state is committed whatever happens here; if the broker is down the
    # step's lease runs out and the next look at the review sends it again.
    transaction.on_commit(
        lambda: review_step_task.apply_async(args=args, task_id=task_id), robust=True
    )


def _revoke(task_id: str) -> None:
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        from research_site.celery import app

        app.control.revoke(task_id)


def _clear_lease(session: ReviewSession) -> None:
    session.started_at = None
    session.lease_expires_at = None


def _lock(session_id: str) -> ReviewSession:
    session = (
        ReviewSession.objects.select_for_update().filter(pk=review_session_id(session_id)).first()
    )
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


class _Lease:
    """Renews a claimed step's lease from a background thread while the step works.

    `alive` turns false when the renewal finds the claim gone: the review was removed, or
    its lease ran out and another run took the step over."""

    def __init__(self, session_id: uuid.UUID, run_id: str, attempt: int) -> None:
        self._claim = {"pk": session_id, "task_id": run_id, "attempt": attempt}
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._beat, name="review-lease", daemon=True)
        self.alive = True

    def __enter__(self) -> _Lease:
        self._thread.start()
        return self

    def __exit__(self, *exc_info: object) -> None:
        self._stop.set()
        self._thread.join(timeout=LEASE_SECONDS)

    def _beat(self) -> None:
        try:
            while not self._stop.wait(HEARTBEAT_SECONDS):
                until = timezone.now() + timedelta(seconds=LEASE_SECONDS)
                try:
                    renewed = ReviewSession.objects.filter(
                        status=Status.RUNNING, **self._claim
                    ).update(lease_expires_at=until)
                except DatabaseError:
                    logger.warning("Review %s: lease renewal failed", self._claim["pk"])
                    continue
                if not renewed:
                    self.alive = False
                    return
        finally:
            connection.close()

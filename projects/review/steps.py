"""The workflow's steps. Plan, search and expand are each a Celery task given the
session's id, the stage and the round; extract (raising its checkpoint: there is nothing
to run) and complete happen inside the decision that leads to them.

A step's task is sent once the transaction that asks for it commits, and it only acts if
the session is still at that stage and round and names that task (`task_id`): a late,
duplicated or redelivered message does nothing. A step:

1. claims the session (row lock, compare-and-set: `attempt` + 1, lease of LEASE_SECONDS);
2. works outside any transaction (engine calls), renewing its lease from a heartbeat
   thread, and stops early if the review is removed or handed to another run meanwhile;
3. commits everything it found and the next checkpoint in one transaction, again only if
   it still holds the claim. A step that dies before 3 leaves no trace but papers merged
   into the library (which de-duplication makes harmless to add again).

A step whose lease ran out (its worker was killed, its message lost) is sent again by
whoever next waits on or looks at the review (services.review_resume); it runs at most
MAX_ATTEMPTS times. So a review survives worker crashes without relying on the broker's
redelivery (Redis redelivers an unacknowledged task only after its visibility timeout, an
hour).
"""

from __future__ import annotations

import logging
import threading
import uuid
from datetime import timedelta
from typing import Any

from django.db import DatabaseError, connection, transaction
from django.utils import timezone

from core.errors import Conflict, database_unavailable
from core.scope import client_scope
from engines.selectors import engines_known_down
from projects.dispatch import review_step_send
from projects.models import Project, ReviewCandidate, ReviewDuplicate, ReviewSession
from projects.review import planning
from projects.review.extract_stage import extract_status
from projects.review.handler import DatabaseCheckpointHandler
from projects.review.planning import Plan, plan_propose
from projects.review.searching import (
    Gathered,
    Stopped,
    citations_gather,
    search_gather,
    work_cites,
    work_score,
)
from projects.review.workflow import Checkpoint, CheckpointHandler
from projects.services import project_add_papers, project_create

logger = logging.getLogger(__name__)

Stage = ReviewSession.Stage
Status = ReviewSession.Status

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
            if database_unavailable(exc) is not None:
                # The database went away (a restart), not the step: the task retries it
                # (autoretry_for), and the review keeps waiting instead of failing.
                logger.warning("Review %s: step %s lost the database; retrying", session.pk, stage)
                raise
            logger.exception("Review %s: step %s failed", session.pk, stage)
            _fail(session.pk, run_id, session.attempt, f"{type(exc).__name__}: {exc}")
            return "failed"
        return _commit(session.pk, run_id, session.attempt, stage, outcome)


def _work(session: ReviewSession, stage: str, *, keep_going: Any) -> Plan | Gathered:
    """The step's work, searching only the collections of the client that started the
    review (a worker runs outside any client: the scope comes from the session)."""
    if not session.collections:
        return _step_work(session, stage, keep_going=keep_going)
    with client_scope(tuple(session.collections)):
        return _step_work(session, stage, keep_going=keep_going)


def _step_work(session: ReviewSession, stage: str, *, keep_going: Any) -> Plan | Gathered:
    if stage == Stage.PLAN:
        feedback = (session.plan or {}).get("feedback", [])
        return plan_propose(
            question=session.query,
            domain=session.domain,
            engines_allowed=session.engines_allowed,
            engines_default=session.engines_default,
            feedback=feedback,
            engines_down=engines_known_down(session.engines_allowed),
        )
    plan = Plan.from_dict(session.plan)
    if stage == Stage.SEARCH:
        return search_gather(plan=plan, max_results=session.max_results, keep_going=keep_going)
    if stage == Stage.EXPAND:
        included = session.candidates.filter(status=ReviewCandidate.Status.INCLUDED)
        cited = [candidate.paper for candidate in included.select_related("paper").order_by("rank")]
        # The review's papers: its candidates, and the versions grouped with them.
        known = {pk: pk for pk in session.candidates.values_list("paper_id", flat=True)}
        members = session.duplicates.filter(split_at__isnull=True)
        known.update(members.values_list("paper_id", "candidate__paper_id"))
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
        lease_clear(session)
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
    handler: CheckpointHandler = DatabaseCheckpointHandler(session)
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
        if outcome.searches:
            logged = [{"round": session.round, **entry} for entry in outcome.searches]
            session.search_log = [*(session.search_log or []), *logged]
        if stage == Stage.EXPAND and not outcome.candidates:
            screening_done(session)
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
    lease_clear(session)
    session.save()
    return "done"


@transaction.atomic
def _fail(session_id: uuid.UUID, run_id: str, attempt: int, message: str) -> None:
    session = ReviewSession.objects.select_for_update().filter(pk=session_id).first()
    if session is None or session.task_id != run_id or session.attempt != attempt:
        return
    session.status = Status.FAILED
    session.error = message[:2000]
    lease_clear(session)
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
    """The candidates, and the other versions grouped with them (ReviewDuplicate)."""
    session.candidates.filter(source=source).delete()
    session.duplicates.filter(source=source).delete()
    ReviewCandidate.objects.bulk_create(
        [
            ReviewCandidate(
                session=session,
                paper_id=found.paper_id,
                source=source,
                round=session.round,
                rank=rank,
                score=round(work_score(found), 6),
                engines=found.engines,
                queries=found.queries,
                cites=sorted(work_cites(found)),
            )
            for rank, found in enumerate(gathered.candidates, start=1)
        ]
    )
    groups = [
        (found.paper_id, member, why)
        for found in gathered.candidates
        for member, why in found.members
    ]
    groups += gathered.attached
    if not groups:
        return
    by_paper = dict(session.candidates.values_list("paper_id", "pk"))
    ReviewDuplicate.objects.bulk_create(
        [
            ReviewDuplicate(
                session=session,
                candidate_id=by_paper[head],
                paper_id=member.paper_id,
                source=source,
                round=session.round,
                score=round(member.score, 6),
                engines=member.engines,
                queries=member.queries,
                cites=member.cites,
                match=why[:300],
            )
            for head, member, why in groups
        ]
    )


def screening_done(session: ReviewSession) -> None:
    """After the last screening decision: the extract checkpoint when the plan extracts
    data and a study is included; else completion."""
    if Plan.from_dict(session.plan).extract:
        extract_begin(session)
    else:
        review_complete(session)


def extract_begin(session: ReviewSession) -> None:
    """Raise the extract checkpoint (its payload as things stand now), or complete the
    review when no study was included: there is nothing to extract."""
    if not session.candidates.filter(status=ReviewCandidate.Status.INCLUDED).exists():
        review_complete(session)
        return
    session.stage = Stage.EXTRACT
    lease_clear(session)
    handler: CheckpointHandler = DatabaseCheckpointHandler(session)
    handler.handle(Checkpoint("extract", extract_status(session=session)))


def review_complete(session: ReviewSession) -> None:
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
    lease_clear(session)


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


def step_dispatch(session: ReviewSession, stage: str) -> None:
    """Set the session running at `stage` with a new step; the step is sent on commit."""
    session.stage = stage
    session.status = Status.RUNNING
    session.task_id = str(uuid.uuid4())
    session.attempt = 0
    session.started_at = None
    session.lease_expires_at = timezone.now() + timedelta(seconds=DISPATCH_GRACE_SECONDS)
    step_send(session)


def step_send(session: ReviewSession) -> None:
    """Send the session's step (its `task_id`) once the current transaction commits; also
    how a lost step is sent again, under the same id."""
    args = (str(session.pk), session.stage, session.round)
    task_id = session.task_id

    def send() -> None:
        try:
            review_step_send(session_id=args[0], stage=args[1], round=args[2], task_id=task_id)
        except Exception:  # the broker is unreachable (Redis restarting, ...)
            # The state is committed: end the step's dispatch lease now, so the next look
            # at the review (review_resume) sends the step again instead of in a minute.
            logger.warning(
                "Review %s: could not send step %s (%s); it is sent again on the next look",
                args[0], args[1], task_id, exc_info=True,
            )  # fmt: skip
            ReviewSession.objects.filter(pk=args[0], task_id=task_id, started_at=None).update(
                lease_expires_at=timezone.now()
            )

    transaction.on_commit(send, robust=True)


def lease_clear(session: ReviewSession) -> None:
    session.started_at = None
    session.lease_expires_at = None


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

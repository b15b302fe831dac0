"""Celery tasks of the projects app: the literature-review steps (projects/review/), the
retraction watch (projects/retractions.py) and the saved searches' scheduled runs
(projects/watch/).

Thin wrappers: the review services send theirs by name through projects/dispatch.py; the
saved-search tasks are sent by Celery beat and by the beat task (projects/watch/scheduler.py)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.conf import settings
from django.db import InterfaceError, OperationalError

from projects.retractions import retractions_check, retractions_check_due
from projects.review.steps import StepBusy, review_step
from projects.watch import scheduler

# A search step asks each engine once per query, each call bounded by
# ENGINE_DEADLINE_SECONDS (25 s by default), and a citation step up to ten times that.
STEP_SOFT_TIME_LIMIT = 900
STEP_TIME_LIMIT = 960
# A retraction check of RETRACTION_CHECK_LIMIT papers: a few rounds of engine calls.
RETRACTION_SOFT_TIME_LIMIT = 600
RETRACTION_TIME_LIMIT = 660


@shared_task(
    name="projects.review_step",
    bind=True,
    # Acknowledged only when done, and given back to the queue if the worker process
    # dies: a step that was under way runs again. It is idempotent (review_step's claim),
    # so a second delivery of a finished step does nothing.
    acks_late=True,
    reject_on_worker_lost=True,
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_jitter=True,
    max_retries=3,
    soft_time_limit=STEP_SOFT_TIME_LIMIT,
    time_limit=STEP_TIME_LIMIT,
    ignore_result=True,
    serializer="json",
)
def review_step_task(self: Any, session_id: str, stage: str, round: int) -> str:
    """Run one step of a review (plan, search or expand): see review_step. Returns what
    happened, for the worker's log."""
    try:
        return review_step(session_id=session_id, stage=stage, round=round, run_id=self.request.id)
    except StepBusy as busy:
        if self.request.is_eager:
            return "busy"
        # Another copy is working; look again when its lease would have run out.
        raise self.retry(countdown=busy.retry_in + 1, max_retries=20) from None


@shared_task(
    name="projects.check_retractions",
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_jitter=True,
    max_retries=3,
    soft_time_limit=RETRACTION_SOFT_TIME_LIMIT,
    time_limit=RETRACTION_TIME_LIMIT,
    serializer="json",
)
def check_retractions_task(paper_ids: list[int]) -> dict[str, Any]:
    """Check these papers (just added) for retractions; see retractions_check."""
    return retractions_check(paper_ids=[int(pk) for pk in paper_ids]).summary()


@shared_task(
    name="projects.check_retractions_due",
    soft_time_limit=RETRACTION_SOFT_TIME_LIMIT,
    time_limit=RETRACTION_TIME_LIMIT,
    serializer="json",
)
def check_retractions_due_task() -> dict[str, Any]:
    """The scheduled retraction check (Celery beat): see retractions_check_due. Nothing
    on a read-only deployment (it would ask the engines, then fail to write)."""
    if settings.MCP_READ_ONLY:
        return {"skipped": "read-only"}
    return retractions_check_due()


@shared_task(
    name="projects.tasks.run_due_saved_searches",
    ignore_result=True,
    serializer="json",
    soft_time_limit=30,
    time_limit=60,
)
def run_due_saved_searches() -> int:
    """Celery beat's tick: claim the due saved searches and send each to a worker as its
    own task (projects/watch/scheduler.py). Returns how many were sent."""
    return scheduler.send_due()


@shared_task(
    name=scheduler.RUN_SAVED_SEARCH,
    ignore_result=True,
    serializer="json",
    autoretry_for=(OperationalError, InterfaceError),
    retry_backoff=2,
    retry_jitter=True,
    max_retries=3,
    soft_time_limit=STEP_SOFT_TIME_LIMIT,
    time_limit=STEP_TIME_LIMIT,
)
def run_saved_search(search_id: int) -> str:
    """One scheduled run of a saved search (claimed by the beat tick)."""
    return scheduler.saved_search_run_by_id(search_id)

"""Sending review steps to a worker (projects/tasks.py) and calling them off, by task name.

The review services send through here and never import the task, which calls them
(core/tasks.py says why).

With a broker the step goes to a Celery worker. On the embedded default (no broker) it
runs on a thread of this process (REVIEW_STEP_THREADS of them), never inside the request
that asked for it, so `start_review` and `decide` return within their `wait_seconds`. The
thread runs the same task through Celery's eager `apply` (same claim, lease and commit,
projects/review/steps.py): a process that dies mid-step leaves the lease to run out, and
the next look at the review sends the step again, here or in another process.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from celery import current_app
from django.conf import settings
from django.db import connections

from core.tasks import registered_task

logger = logging.getLogger(__name__)

REVIEW_STEP = "projects.review_step"

_pool_lock = threading.Lock()
_pools: dict[int, ThreadPoolExecutor] = {}


def review_step_send(*, session_id: str, stage: str, round: int, task_id: str) -> None:
    """Queue one review step under `task_id` (on a thread of this process on the embedded
    default). Raises whatever the broker raises when it cannot take the message."""
    task = registered_task(REVIEW_STEP)
    args = (session_id, stage, round)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        _pool().submit(_run_here, task, args, task_id)
        return
    task.apply_async(args=args, task_id=task_id)


def review_step_revoke(task_id: str) -> None:
    """Ask the workers to drop a queued step (a step running in-process finds its claim
    gone at its next check and discards its work)."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        current_app.control.revoke(task_id)


def _pool() -> ThreadPoolExecutor:
    size = settings.REVIEW_STEP_THREADS
    with _pool_lock:
        if size not in _pools:
            _pools[size] = ThreadPoolExecutor(max_workers=size, thread_name_prefix="review-step")
        return _pools[size]


def _run_here(task: Any, args: tuple[str, str, int], task_id: str) -> None:
    try:
        task.apply(args=args, task_id=task_id)
    except Exception:  # the step records its own failures; this is a bug around it
        logger.exception("Review %s: in-process step %s failed", args[0], args[1])
    finally:
        connections.close_all()  # this thread's connections; the pool thread lives on


# --- retraction checks (projects/retractions.py) -------------------------------------------

CHECK_RETRACTIONS = "projects.check_retractions"
_check_pool: list[ThreadPoolExecutor] = []


def retraction_check_send(*, paper_ids: list[int]) -> None:
    """Queue a retraction check of these papers: a Celery task with a broker, one thread of
    this process (checks run one after another) on the embedded default. Raises whatever
    the broker raises when it cannot take the message."""
    task = registered_task(CHECK_RETRACTIONS)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        with _pool_lock:
            if not _check_pool:
                _check_pool.append(
                    ThreadPoolExecutor(max_workers=1, thread_name_prefix="retraction-check")
                )
        _check_pool[0].submit(_check_here, task, paper_ids)
        return
    task.apply_async(args=(paper_ids,))


def _check_here(task: Any, paper_ids: list[int]) -> None:
    try:
        task.apply(args=(paper_ids,))
    except Exception:  # the check reports engine failures itself; this is a bug around it
        logger.exception("In-process retraction check of %d papers failed", len(paper_ids))
    finally:
        connections.close_all()

"""Sending review steps to a worker (projects/tasks.py) and calling them off, by task name.

The review services send through here and never import the task, which calls them
(core/tasks.py says why).
"""

from __future__ import annotations

from celery import current_app
from django.conf import settings

from core.tasks import registered_task

REVIEW_STEP = "projects.review_step"


def review_step_send(*, session_id: str, stage: str, round: int, task_id: str) -> None:
    """Queue one review step under `task_id` (in-process on the embedded default). Raises
    whatever the broker raises when it cannot take the message."""
    registered_task(REVIEW_STEP).apply_async(args=(session_id, stage, round), task_id=task_id)


def review_step_revoke(task_id: str) -> None:
    """Ask the workers to drop a queued step (nothing to do when steps run in-process)."""
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        current_app.control.revoke(task_id)

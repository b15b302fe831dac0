"""Sending engine calls to the `engines` queue (engines/tasks.py), by task name.

The runner sends through here and never imports the task, which calls the runner
(core/tasks.py says why). Only used with a broker: on the embedded default, and inside a
worker, the runner calls the engines on threads of its own.
"""

from __future__ import annotations

from typing import Any

from celery.result import AsyncResult

from core.tasks import registered_task

ENGINE_CALL = "engines.call"


def engine_call_send(
    *,
    engine_id: str,
    operation: str,
    arguments: dict[str, Any],
    timeout_seconds: float,
    expires: float,
) -> AsyncResult:
    """Queue one engine call; its result is the EngineOutcome as a dict. Raises whatever the
    broker raises when it cannot take the message."""
    task = registered_task(ENGINE_CALL)
    return task.apply_async(
        args=(engine_id, operation, arguments, timeout_seconds), expires=expires
    )

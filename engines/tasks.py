"""Celery tasks of the engines app, run on the `engines` queue (CELERY_TASK_ROUTES).

Thin wrappers over the runner, which sends them by name through engines/dispatch.py."""

from __future__ import annotations

from typing import Any

from celery import shared_task

from engines.runner import call_engine


@shared_task(name="engines.call", soft_time_limit=300, time_limit=330)
def engine_call_task(
    engine_id: str, operation: str, arguments: dict[str, Any], timeout_seconds: float
) -> dict[str, Any]:
    """One engine call (cache, rate limit, retries); returns the EngineOutcome as a dict.

    Takes only JSON-safe values and never raises for engine failures: they come back as
    the outcome's status, so the gatherer always gets an answer.
    """
    outcome = call_engine(engine_id, operation, arguments, timeout_seconds=timeout_seconds)
    return outcome.as_dict()

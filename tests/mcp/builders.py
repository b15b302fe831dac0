"""Helpers of the MCP suites: running manage.py with a server's environment, and the review
backend (eager tasks, or a real Celery worker when a broker is configured)."""

from __future__ import annotations

import contextlib
import os
import subprocess
import uuid
from collections.abc import Iterator
from pathlib import Path

from django.conf import settings

from tests.celery_worker import CeleryWorker
from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
)


def run(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [PYTHON, *args], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


BROKER = not settings.CELERY_TASK_ALWAYS_EAGER


def settings_module(directory: Path, queue: str) -> str:
    """A settings module sending this test's Celery tasks to its own queues."""
    name = f"review_settings_{queue.replace('-', '_')}"
    (directory / f"{name}.py").write_text(
        "from research_site.settings import *  # noqa: F403\n"
        f"CELERY_TASK_DEFAULT_QUEUE = {queue!r}\n"
        f"CELERY_TASK_ROUTES = {{'engines.*': {{'queue': {queue + '-engines'!r}}}}}\n"
    )
    return name


@contextlib.contextmanager
def review_backend(
    kb: KnowledgeBase, *, start_worker: bool = True
) -> Iterator[tuple[dict[str, str], CeleryWorker | None]]:
    """Server environment (and, with a broker, a worker) with queues of their own."""
    if not BROKER:
        yield {}, None
        return
    queue = f"review-{os.getpid()}-{uuid.uuid4().hex[:6]}"
    module = settings_module(kb.directory, queue)
    env = {"DJANGO_SETTINGS_MODULE": module, "PYTHONPATH": f"{ROOT}{os.pathsep}{kb.directory}"}
    worker = CeleryWorker(
        kb.directory, {**kb.env, **env}, queues=f"{queue},{queue}-engines",
        name=f"review-{queue}", concurrency=12,
    )  # fmt: skip
    if start_worker:
        worker.start()
    try:
        yield env, worker
    finally:
        worker.stop()

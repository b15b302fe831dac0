"""The scale-out scheduler (issue 24): a real `celery beat` process, ticking every second,
sends `projects.tasks.run_due_saved_searches` to the real worker, which claims the due
saved search and runs it as its own task (its engine call on the `engines` workers).

Runs on the PostgreSQL + Redis run (make test-pg, scripts/with-celery-worker.sh); the
worker uses this run's test database and knowledge base, where the plugin engine is.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings

from engines.registry import registry
from projects.models import SavedSearchRun
from projects.watch.services import saved_search_save
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply

pytestmark = pytest.mark.skipif(
    settings.CELERY_TASK_ALWAYS_EAGER or not os.environ.get("CELERY_WORKER_RUNNING"),
    reason="needs Redis and running Celery workers (make test-pg)",
)

ROOT = Path(__file__).resolve().parents[3]
PAPER = {"title": "Beat scheduled retrieval", "authors": ["Grace Hopper"], "year": 2025}


@pytest.mark.django_db(transaction=True)
def test_celery_beat_runs_a_due_saved_search_through_the_worker(
    settings: Any, replay_server: ReplayServer, tmp_path: Path
) -> None:
    settings.ENGINES_ENABLED = []
    engine_id = f"beat_{uuid.uuid4().hex[:8]}"
    plugin = write_plugin(Path(settings.ENGINES_DIR), engine_id, f"{replay_server.url}/e")
    replay_server.add("/e/search", Reply(200, [PAPER]))
    registry.refresh()
    search, _ = saved_search_save(
        name="Beat", query="retrieval", engines=[engine_id], schedule="hourly"
    )
    beat_log = tmp_path / "beat.log"
    env = {**os.environ, "SAVED_SEARCH_TICK_SECONDS": "1", "PYTHONPATH": str(ROOT)}
    with beat_log.open("wb") as log:
        beat = subprocess.Popen(
            [sys.executable, "-m", "celery", "-A", "research_site", "beat", "--loglevel=INFO",
             "-s", str(tmp_path / "beat-schedule")],
            cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while not SavedSearchRun.objects.filter(search=search, finished_at__isnull=False).exists():
            assert beat.poll() is None, beat_log.read_text()
            assert time.monotonic() < deadline, beat_log.read_text()
            time.sleep(0.5)
        time.sleep(3)  # three more ticks: the search is not due again for an hour
    finally:
        beat.terminate()
        beat.wait(10)
        plugin.unlink(missing_ok=True)
        registry.refresh()
    runs = list(SavedSearchRun.objects.filter(search=search))
    assert len(runs) == 1, runs
    assert runs[0].trigger == SavedSearchRun.Trigger.SCHEDULE
    assert runs[0].status == SavedSearchRun.Status.OK and runs[0].new == 1
    assert "projects.tasks.run_due_saved_searches" in beat_log.read_text()

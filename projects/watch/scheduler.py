"""Running saved searches when they are due.

A due search is *claimed* by moving its `next_run_at` on with a conditional UPDATE (`...
WHERE pk = ? AND next_run_at = <the value read>`): of two processes reading the same due
search, one UPDATE matches and the other changes nothing, so a search runs once per due
time however many server processes or beat ticks look. Moving `next_run_at` before the run
also means a run that dies is retried at the next period, not at once in a loop.

Two drivers call `saved_searches_claim_due`:
- scale-out (a broker): Celery beat sends `projects.tasks.run_due_saved_searches` every
  SAVED_SEARCH_TICK_SECONDS (settings.CELERY_BEAT_SCHEDULE); it claims the due searches
  and sends each to a worker as its own task;
- the embedded default (no broker): `start_in_process` starts one daemon thread per
  server process (the ASGI app's startup), which claims and runs them itself, so `make
  run` alone keeps saved searches running. Tests and management commands never start it.

The same two drivers run the retraction watch's scheduled check
(projects/retractions.py `retractions_check_due`) every RETRACTION_CHECK_EVERY_SECONDS:
beat as its own entry, the in-process thread at the first tick past that interval (never
at start: a server that lives a few minutes asks no engine).
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.db import connections
from django.utils import timezone

from core.tasks import registered_task
from projects.models import SavedSearch, SavedSearchRun
from projects.retractions import retractions_check_due
from projects.watch.services import saved_search_run, search_period

logger = logging.getLogger(__name__)

RUN_SAVED_SEARCH = "projects.run_saved_search"
CLAIM_BATCH = 50

_thread_lock = threading.Lock()
_thread: threading.Thread | None = None
_stop = threading.Event()
# time.monotonic() from which this process's thread runs the retraction check next.
_retractions_at = float("inf")


def saved_searches_claim_due(*, limit: int = CLAIM_BATCH) -> list[int]:
    """Claim the enabled searches whose `next_run_at` has passed (module docstring);
    returns the ids this caller won, to run now."""
    now = timezone.now()
    due = SavedSearch.objects.filter(enabled=True, next_run_at__lte=now).order_by("next_run_at")
    claimed = []
    for search in due[:limit]:
        period = search_period(search)
        following = now + period if period else None
        won = SavedSearch.objects.filter(pk=search.pk, next_run_at=search.next_run_at).update(
            next_run_at=following
        )
        if won:
            claimed.append(search.pk)
    return claimed


def saved_search_run_by_id(search_id: int) -> str:
    """Run one claimed search (a scheduled run); what happened, for the log."""
    search = SavedSearch.objects.select_related("project").filter(pk=search_id).first()
    if search is None:
        return "gone"
    run = saved_search_run(search=search, trigger=SavedSearchRun.Trigger.SCHEDULE)
    return f"{search.name}: {run.status}, {run.new} new"


def run_due_here() -> int:
    """Claim the due searches and run them one after another in this thread; how many."""
    claimed = saved_searches_claim_due()
    for search_id in claimed:
        try:
            saved_search_run_by_id(search_id)
        except Exception:  # recorded on the run; the others still run
            logger.exception("Saved search %s failed", search_id)
    return len(claimed)


def tick_here() -> dict[str, Any]:
    """One tick of the in-process scheduler: the due saved searches, and the retraction
    check when its interval has passed (its counts, else None)."""
    global _retractions_at
    report: dict[str, Any] = {"saved_searches": run_due_here(), "retractions": None}
    now = time.monotonic()
    if now >= _retractions_at:
        _retractions_at = now + settings.RETRACTION_CHECK_EVERY_SECONDS
        report["retractions"] = retractions_check_due()
    return report


def send_due() -> int:
    """Claim the due searches and send each to a worker (the beat task); how many. Sends
    nothing when SAVED_SEARCH_SCHEDULER is off or the server is read-only."""
    if not settings.SAVED_SEARCH_SCHEDULER or settings.MCP_READ_ONLY:
        return 0
    claimed = saved_searches_claim_due()
    task = registered_task(RUN_SAVED_SEARCH)
    for search_id in claimed:
        task.delay(search_id)
    return len(claimed)


def _loop(tick: float, tick_once: Callable[[], object]) -> None:
    while not _stop.wait(tick):
        try:
            tick_once()
        except Exception:  # the database away for a moment: try again at the next tick
            logger.exception("Saved-search scheduler tick failed")
        finally:
            connections.close_all()


def start_in_process() -> bool:
    """Start this process's scheduler thread unless it runs already, the scheduler is off
    (SAVED_SEARCH_SCHEDULER), the server is read-only (a run writes) or a broker is
    configured (Celery beat schedules then). Returns whether a thread was started."""
    global _thread, _retractions_at
    if not settings.SAVED_SEARCH_SCHEDULER or settings.MCP_READ_ONLY:
        return False
    if not settings.CELERY_TASK_ALWAYS_EAGER:
        return False
    with _thread_lock:
        if _thread is not None and _thread.is_alive():
            return False
        _stop.clear()
        _retractions_at = time.monotonic() + settings.RETRACTION_CHECK_EVERY_SECONDS
        _thread = threading.Thread(
            target=_loop,
            args=(float(settings.SAVED_SEARCH_TICK_SECONDS), tick_here),
            name="saved-search-scheduler",
            daemon=True,
        )
        _thread.start()
        logger.info(
            "Saved-search scheduler running in-process (every %s s)",
            settings.SAVED_SEARCH_TICK_SECONDS,
        )
        return True


def stop_in_process(timeout: float = 5.0) -> None:
    """Stop this process's scheduler thread (server shutdown, tests)."""
    global _thread
    with _thread_lock:
        thread, _thread = _thread, None
    _stop.set()
    if thread is not None:
        thread.join(timeout)

"""Computing the second tier's vectors (EMBEDDING_MODEL_STRONG) in the background.

The first tier is embedded as papers are written (semantic.schedule_embedding); the
second, ~100x slower, always afterwards and never on the caller's time. `schedule(ids)`
runs after the write's commit, behind the first tier, and dispatches like it:

- with a Celery broker: one `papers.embed_papers_strong` task per STRONG_TASK_BATCH ids,
  queued after the first tier's tasks (a worker takes them in order);
- without one (tasks in-process, the embedded default): it wakes one background thread
  per process (`backfill()`), which embeds every paper lacking a current second-tier
  vector, newest first, STRONG_CHUNK papers per short transaction, at a lower CPU
  priority (nice +10 on Linux), on STRONG_EMBEDDING_THREADS threads (every core by
  default) that all keep that priority, so searches and imports still come first. A
  bulk change (an import batch, more than semantic.EAGER_INLINE_MAX papers) does not wake
  it, so an import keeps both cores; the next search does (`nudge()`), as does
  `manage.py reindex_embeddings --tier strong` (in the foreground). Processes of one
  knowledge base (`serve --workers N`) take turns through a file lock in
  RESEARCH_DIRECTORY, so they never embed the same papers at once. A process that exits
  (a management command that added a paper) stops the thread after its current chunk:
  a thread left inside onnxruntime while the interpreter shuts down aborts the process.

When the setting is empty or the model's package is missing, all of this does nothing
(papers/search/embedding.py logs why once). Papers lacking a second-tier vector are
ranked by their first-tier vector meanwhile (papers/search/tiers.py).
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import logging
import math
import os
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path

from django.conf import settings
from django.db import DatabaseError, close_old_connections, connection

from core.shutdown import process_ending
from papers.dispatch import embed_papers_strong_enqueue
from papers.models import Paper, PaperStrongEmbedding
from papers.search.embedding import load_strong_model, strong_tier_configured
from papers.search.vector_index import strong_vector_index
from papers.search.vector_store import EmbedOutcome, embed_with

logger = logging.getLogger(__name__)

STRONG_TASK_BATCH = 200  # ~10 s of one worker process
# Papers per transaction of the background thread (1-4 s on two cores), sorted by length
# into model batches (embedding.MINILM_BATCH) shared among its threads; also the longest a
# process waits for the thread when it exits (see Backfill.stop).
STRONG_CHUNK = 64
NUDGE_SECONDS = 10.0  # how often a search checks for papers lacking the second tier
BACKGROUND_NICENESS = 10


def enabled() -> bool:
    """Whether the second tier is on here (setting set, package installed, embeddings on)."""
    return bool(settings.EMBEDDINGS_ENABLED) and load_strong_model() is not None


def schedule(paper_ids: Sequence[int]) -> None:
    """After a write's commit (and after the first tier): have these papers' second-tier
    vectors computed in the background; see the module docstring. Never embeds, nor
    loads the model, here: the thread or the worker does (and does nothing if the
    model's package is missing there)."""
    if not paper_ids or not settings.EMBEDDINGS_ENABLED or not strong_tier_configured():
        return
    if settings.CELERY_TASK_ALWAYS_EAGER:
        backfill().wake()
        return
    ids = sorted({int(i) for i in paper_ids}, reverse=True)  # newest first
    for start in range(0, len(ids), STRONG_TASK_BATCH):
        embed_papers_strong_enqueue(ids[start : start + STRONG_TASK_BATCH])


def writer_threads() -> int:
    """Threads the background thread and `reindex_embeddings --tier strong` encode on:
    STRONG_EMBEDDING_THREADS, or one per core this process may use (0, the default)."""
    configured = int(settings.STRONG_EMBEDDING_THREADS)
    if configured > 0:
        return configured
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:  # not Linux
        return max(1, os.cpu_count() or 1)


def embed_papers_strong(
    paper_ids: Sequence[int], *, force: bool = False, threads: int = 1
) -> EmbedOutcome:
    """Compute and store these papers' second-tier vectors (skipping unchanged text unless
    `force`); the outcome is empty when the tier is off. Encoding happens outside any
    transaction, on `threads` threads; each STRONG_CHUNK papers are written in one short
    transaction. A Celery task uses one thread: the worker's processes use the cores."""
    model = load_strong_model()
    if model is None:
        return EmbedOutcome()
    return embed_with(
        model,
        PaperStrongEmbedding,
        strong_vector_index(),
        paper_ids,
        force=force,
        chunk=STRONG_CHUNK,
        threads=threads,
    )


def papers_missing_strong(limit: int | None = None) -> list[int]:
    """Ids of papers with no vector from the second-tier model, newest first (empty when
    the tier is off)."""
    model = load_strong_model()
    if model is None:
        return []
    current = PaperStrongEmbedding.objects.filter(model=model.name).values("paper_id")
    queryset = Paper.objects.exclude(pk__in=current).order_by("-pk").values_list("pk", flat=True)
    return list(queryset[:limit] if limit is not None else queryset)


def missing_count() -> int:
    model = load_strong_model()
    if model is None:
        return 0
    done = PaperStrongEmbedding.objects.filter(model=model.name).count()
    return max(0, Paper.objects.count() - done)


_nudged_at = -math.inf


def nudge() -> None:
    """From a search with tasks in-process: wake the background thread when papers lack
    the second tier (an import, or a library from before the tier was on). At most one
    count query every NUDGE_SECONDS; never waits for the embedding."""
    global _nudged_at
    now = time.monotonic()
    if now - _nudged_at < NUDGE_SECONDS or backfill().busy:
        return
    _nudged_at = now
    try:
        if enabled() and missing_count():
            backfill().wake()
    except DatabaseError:
        logger.warning("Cannot check for papers lacking second-tier vectors", exc_info=True)


class Backfill:
    """One background thread per process that embeds every paper lacking a second-tier
    vector whenever it is woken; see the module docstring."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._idle = threading.Event()
        self._idle.set()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.embedded = 0  # since the process started (for logs and tests)

    @property
    def busy(self) -> bool:
        return not self._idle.is_set()

    def wake(self) -> None:
        """Start the thread if needed and have it look for work; returns at once."""
        with self._lock:
            self._idle.clear()
            self._wake.set()
            if self._stop.is_set():
                self._idle.set()
                return
            if self._thread is None or not self._thread.is_alive():
                if self._thread is None:
                    atexit.register(self.stop)
                self._thread = threading.Thread(
                    target=self._run, name="strong-embeddings", daemon=True
                )
                self._thread.start()

    def stop(self, timeout: float = 60.0) -> None:
        """Let the current chunk finish and end the thread (at interpreter exit)."""
        self._stop.set()
        self._wake.set()
        thread = self._thread
        if thread is not None and thread.is_alive():
            thread.join(timeout)

    def wait_idle(self, timeout: float) -> bool:
        """Wait until the thread has no work left (for tests and benchmarks)."""
        return self._idle.wait(timeout)

    def _run(self) -> None:
        _lower_this_threads_priority()
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                break
            try:
                self._embed_all_missing()
            except Exception:
                if process_ending():
                    # The process is ending (a command finished while this thread worked):
                    # the papers left are embedded by the next process, nothing is wrong.
                    logger.info("Second-tier embedding left: the process is ending")
                    break
                # Logged, not raised: the papers stay missing and the next wake retries.
                logger.exception("Second-tier embedding failed")
            finally:
                connection.close()
                with self._lock:  # wake() clears idle and sets wake under the same lock
                    if not self._wake.is_set():
                        self._idle.set()

    def _embed_all_missing(self) -> None:
        close_old_connections()
        with _one_process_at_a_time() as mine:
            if mine:
                self._embed_until_none_missing()

    def _embed_until_none_missing(self) -> None:
        started, done = time.perf_counter(), 0
        while settings.EMBEDDINGS_ENABLED and not self._stop.is_set():
            ids = papers_missing_strong(limit=STRONG_CHUNK)
            if not ids:
                break
            embedded = embed_papers_strong(ids, threads=writer_threads()).embedded
            if not embedded:
                break  # every id vanished meanwhile, or nothing can be written: retry later
            done += embedded
            self.embedded += embedded
        if done:
            seconds = time.perf_counter() - started
            logger.info(
                "Second tier: embedded %d papers in %.0f s (%.1f/s)",
                done,
                seconds,
                done / seconds if seconds else 0.0,
            )


@contextlib.contextmanager
def _one_process_at_a_time() -> Iterator[bool]:
    """True when this process holds the knowledge base's backfill lock (another process's
    thread is at work otherwise: it will find the same papers)."""
    path = Path(settings.RESEARCH_DIRECTORY) / ".strong-embeddings.lock"
    try:
        handle = path.open("a")
    except OSError:  # a read-only folder: nothing can be written anyway
        yield True
        return
    with handle:
        try:
            fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def _lower_this_threads_priority() -> None:
    """nice +BACKGROUND_NICENESS for this thread only (Linux: priority is per thread),
    counted from the process's own: a server started under `nice -n 10` (as the
    benchmarks run it) otherwise got a background thread at the searches' own priority,
    and at 1M papers its semantic searches took about twice as long while it filled."""
    try:
        thread = threading.get_native_id()
        niceness = min(19, os.getpriority(os.PRIO_PROCESS, thread) + BACKGROUND_NICENESS)
        os.setpriority(os.PRIO_PROCESS, thread, niceness)
    except (AttributeError, OSError):  # not Linux, or not allowed: full priority then
        pass


_backfill = Backfill()


def backfill() -> Backfill:
    return _backfill

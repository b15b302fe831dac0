"""Loading what a first search needs in background threads when a server starts: the
typo-tolerance vocabulary (seconds at 95k papers: papers/search/vocabulary.py), the
embedding models (3-4 s, the bulk of a first search after a start when loaded on
demand), the vector index, and one query encoded (a model's first encode sets itself up).
Then two searches are rehearsed, a misspelt word and a question, through the service a
search tool calls, so that what a first search still paid after the models (the code's
first run: lazy imports, Django's model metadata, the full-text tables read from disk,
about 30 ms at 3k papers, several times a later search) is paid here.
Start-up does not wait for it; a search that comes first waits on the model's lock
instead of loading it a second time.
"""

from __future__ import annotations

import logging
import threading
import time

from django.conf import settings
from django.db import close_old_connections, connection

from papers.search import vocabulary

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_state = "idle"  # idle, loading, ready or failed


def state() -> str:
    """idle (never started), loading, ready, or failed (logged; searches load on demand)."""
    return _state


def start_in_background() -> threading.Thread | None:
    """Start building the typo-tolerance vocabulary (its own thread) and loading the
    models in a thread, once per process; the models' thread, or None when embeddings are
    off or it was started before. Not a daemon: a process that ends while the models load
    (stdio's input closed at once) waits for it, because a native thread still inside the
    ONNX runtime at exit aborts the process ("terminate called without an active
    exception", exit -6)."""
    global _state
    with _lock:
        if _state != "idle":
            return None
        _state = "loading"
    building = vocabulary.holder().refresh_in_background()
    thread = threading.Thread(target=_load, args=(building,), name="search-warmup", daemon=False)
    thread.start()
    return thread


# A word no paper holds (typo tolerance runs) and a question (the default hybrid path).
REHEARSED = ("qzvxwjk", "how are these methods evaluated")


def _load(building: threading.Thread | None) -> None:
    global _state
    started = time.perf_counter()
    try:
        if settings.EMBEDDINGS_ENABLED:
            from papers.search.tiers import current_tiers

            logger.info("Loading the search models in the background")
            tiers = current_tiers()  # the models, and the vector index's snapshot
            tiers.encode("warm up")
            logger.info("Search models loaded in %.1f s", time.perf_counter() - started)
        if building is not None:
            building.join()
        _rehearse()
    except Exception:  # a search will load them again, and say what is wrong
        _state = "failed"
        if _process_ending():  # e.g. stdio's input closed at once: nothing is wrong
            logger.info("Search warm-up left: the process is ending")
        else:
            logger.warning("The search warm-up failed", exc_info=True)
    else:
        _state = "ready"
        logger.info("Search warm-up done in %.1f s", time.perf_counter() - started)
    finally:
        close_old_connections()
        connection.close()  # this thread's own connection


def _rehearse() -> None:
    """Run REHEARSED through the library search, answers unused (nothing is written)."""
    from papers.search.local import local_search

    for query in REHEARSED:
        if _process_ending():
            return
        local_search(query=query, limit=10)


def _process_ending() -> bool:
    """True once the interpreter is shutting down: the main thread has ended and is
    waiting for this one (a search's thread pool then refuses new work)."""
    return not threading.main_thread().is_alive()

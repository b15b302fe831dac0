"""Loading what a first search needs in background threads when a server starts: the
typo-tolerance vocabulary (seconds at 95k papers: papers/search/vocabulary.py), the
embedding models (3-4 s, the bulk of a first search after a start when loaded on
demand), the vector index, and one query encoded (a model's first encode sets itself up).
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
    vocabulary.holder().refresh_in_background()
    if not settings.EMBEDDINGS_ENABLED:
        _state = "ready"
        return None
    thread = threading.Thread(target=_load, name="search-warmup", daemon=False)
    thread.start()
    return thread


def _load() -> None:
    global _state
    from papers.search.tiers import current_tiers

    started = time.perf_counter()
    logger.info("Loading the search models in the background")
    try:
        tiers = current_tiers()  # the models, and the vector index's snapshot
        tiers.encode("warm up")
    except Exception:  # a search will load them again, and say what is wrong
        _state = "failed"
        logger.warning("Loading the search models failed", exc_info=True)
    else:
        _state = "ready"
        logger.info("Search models loaded in %.1f s", time.perf_counter() - started)
    finally:
        close_old_connections()
        connection.close()  # this thread's own connection

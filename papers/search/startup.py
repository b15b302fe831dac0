"""Whether a server's warm-up (papers/search/warmup.py) is still loading what semantic
ranking needs: the embedding models and the vector indexes (at a million papers, tens of
seconds: the vectors read, the saved graph loaded, beside the typo vocabulary's build).

A search that would rank by meaning too waits for it, the first searches only: until
SEARCH_START_WAIT_MS after the first one that waited; then, until it is loaded, searches
rank by the words alone at once and say so (papers/search/local.py), rather than
stalling the first calls after a start. (One waiting the whole time each would make every
call of a long load a slow one.) Outside a server's warm-up nothing is loading, and a
search loads what it needs itself.
"""

from __future__ import annotations

import threading
import time

_ready = threading.Event()
_ready.set()
_lock = threading.Lock()
_since = 0.0
_deadline: float | None = None  # when the first searches stop waiting


def begin() -> None:
    """The warm-up is about to load the models and vectors (before its thread starts, so
    no search comes in between)."""
    global _since, _deadline
    with _lock:
        _since, _deadline = time.monotonic(), None
        _ready.clear()


def end() -> None:
    """They are loaded, or failed to (a search then loads them itself)."""
    _ready.set()


def loading() -> bool:
    return not _ready.is_set()


def wait(seconds: float) -> bool:
    """True when nothing is loading, or it finishes within `seconds` of the first search
    that waited for it (then the same deadline for every search)."""
    global _deadline
    if _ready.is_set():
        return True
    with _lock:
        if _deadline is None:
            _deadline = time.monotonic() + seconds
        deadline = _deadline
    return _ready.wait(max(0.0, deadline - time.monotonic()))


def loading_for() -> float:
    """Seconds since the loading began (for a note)."""
    return time.monotonic() - _since

"""Whether a server's warm-up (papers/search/warmup.py) is still loading what semantic
ranking needs: the embedding models and the vector indexes (at a million papers, tens of
seconds: the vectors read, the saved graph loaded, beside the typo vocabulary's build).

A search that would rank by meaning too waits for it at most SEARCH_START_WAIT_MS, then
ranks by the words alone and says so (papers/search/local.py), rather than stalling the
first calls after a start. Outside a server's warm-up nothing is loading, and a search
loads what it needs itself, as before.
"""

from __future__ import annotations

import threading
import time

_ready = threading.Event()
_ready.set()
_since = 0.0


def begin() -> None:
    """The warm-up is about to load the models and vectors (before its thread starts, so
    no search comes in between)."""
    global _since
    _since = time.monotonic()
    _ready.clear()


def end() -> None:
    """They are loaded, or failed to (a search then loads them itself)."""
    _ready.set()


def wait(seconds: float) -> bool:
    """True when nothing is loading, or it finished within `seconds`."""
    return _ready.is_set() or _ready.wait(seconds)


def loading_for() -> float:
    """Seconds since the loading began (for a note)."""
    return time.monotonic() - _since

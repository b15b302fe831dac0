"""Whether a server's warm-up (papers/search/warmup.py) is still loading what semantic
ranking needs: the embedding models and the vector indexes (at a million papers, tens of
seconds: the vectors read, the saved graph loaded, beside the typo vocabulary's build).

A search that would rank by meaning too waits for it until SEARCH_START_WAIT_MS after it
began, then ranks by the words alone and says so (papers/search/local.py), rather than
stalling the first calls after a start: a search coming later while it still loads does
not wait at all (one waiting a second each time would make every call of the load's
last seconds a slow one). Outside a server's warm-up nothing is loading, and a search
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
    """True when nothing is loading, or it finishes within `seconds` of its beginning."""
    return _ready.is_set() or _ready.wait(max(0.0, _since + seconds - time.monotonic()))


def loading_for() -> float:
    """Seconds since the loading began (for a note)."""
    return time.monotonic() - _since

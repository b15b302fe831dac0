"""Whether the process is ending, for background threads that outlive a command's work.

When the main thread returns, the interpreter first runs threading's exit hooks (the
thread pools of concurrent.futures stop taking work: `submit` raises "cannot schedule new
futures after interpreter shutdown"), then marks the main thread stopped, then joins the
other non-daemon threads. A background thread whose work fails in that window has nothing
wrong to report: what it left is done by the next process.
"""

from __future__ import annotations

import threading


def process_ending() -> bool:
    """True once the interpreter has begun shutting down: its thread pools refuse work, or
    the main thread has ended."""
    # threading sets _SHUTTING_DOWN before the exit hooks run, so the window in which a
    # pool already refuses work while the main thread still counts as alive is covered.
    return bool(getattr(threading, "_SHUTTING_DOWN", False)) or not (
        threading.main_thread().is_alive()
    )

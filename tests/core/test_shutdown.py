"""core.shutdown.process_ending: a background thread whose work fails because the
interpreter is shutting down is told so, including in the window where the thread pools
already refuse work but the main thread still counts as alive (a stdio server whose input
closed during its warm-up printed a traceback from that window)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = """
import threading
from concurrent.futures import ThreadPoolExecutor
from core.shutdown import process_ending

pool = ThreadPoolExecutor(1)
print("before", process_ending(), flush=True)

def keep_submitting():
    while True:
        try:
            pool.submit(int).result()
        except RuntimeError as refused:
            print("refused", process_ending(), refused, flush=True)
            return

threading.Thread(target=keep_submitting).start()
"""


def test_a_thread_refused_by_a_pool_at_exit_learns_the_process_is_ending() -> None:
    for _ in range(5):  # the window is short: each run must see it as ending
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True,
            timeout=60, check=True,
        )  # fmt: skip
        lines = done.stdout.splitlines()
        assert lines[0] == "before False"
        assert lines[1].startswith("refused True cannot schedule new futures"), done.stdout

"""A process that exits while the approximate vector index is being built in the
background exits cleanly (papers/search/approximate.py, `in_background`).

usearch adding vectors on one thread while the interpreter exits on another aborted the
process ("terminate called without an active exception", exit status 134): after an
import of more than VECTOR_INDEX_APPROXIMATE_ABOVE papers, or a benchmark's last query.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

pytest.importorskip("usearch")

ROOT = Path(__file__).resolve().parents[3]

SCRIPT = textwrap.dedent(
    """
    import time
    import numpy as np
    from papers.search import approximate

    vectors = np.random.default_rng(7).random((60_000, 256), dtype=np.float32)
    ids = np.arange(len(vectors))
    built = []
    approximate.in_background(
        lambda: built.append(approximate.build_in_chunks(ids, vectors, 5_000)), "test-graph"
    )
    time.sleep(0.5)
    print("building" if not built else "built")
    """
)


def test_exiting_during_a_background_build_exits_cleanly() -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.stdout.strip() == "building"  # the exit came while usearch was adding
    assert done.returncode == 0, done.stderr[-500:]
    assert "terminate called" not in done.stderr

"""numpy's OpenBLAS runs one thread in every process of ours (research_site/__init__.py):
a search's small matrix products, many at once, were slower on OpenBLAS's own threads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
BLAS_THREADS = (
    "import json, research_site, numpy, threadpoolctl; "
    "print(json.dumps([p['num_threads'] for p in threadpoolctl.threadpool_info() "
    "if p['user_api'] == 'blas']))"
)


def blas_threads(variable: str | None) -> list[int]:
    env = {k: v for k, v in os.environ.items() if k != "OPENBLAS_NUM_THREADS"}
    if variable is not None:
        env["OPENBLAS_NUM_THREADS"] = variable
    done = subprocess.run(
        [sys.executable, "-c", BLAS_THREADS], cwd=ROOT, env=env, capture_output=True, text=True,
        timeout=120, check=True,
    )  # fmt: skip
    return json.loads(done.stdout)


def test_a_process_of_ours_runs_numpy_on_one_blas_thread() -> None:
    assert blas_threads(None) == [1]


def test_a_users_setting_is_kept() -> None:
    assert blas_threads("2") == [2]

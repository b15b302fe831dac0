"""The product sends nothing about its use anywhere: ONNX Runtime's usage telemetry (on by
default on Linux since 1.29: a device id under ~/.cache/Microsoft, a session file in the temp
folder, an upload) is turned off before any process of ours loads it."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# What loads ONNX Runtime in the product: `import pymupdf` (its layout model) and the
# embedding models.
LOADS_ONNXRUNTIME = (
    "import pymupdf, onnxruntime; from papers.search.embedding import load_model; load_model()"
)


def left_behind(home: Path) -> list[str]:
    return sorted(str(path.relative_to(home)) for path in home.rglob("*"))


def run(home: Path, *command: str, variable: str | None) -> None:
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(HOME=str(home), TMPDIR=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    env["RESEARCH_DIRECTORY"] = str(home.parent / "knowledge-base")
    if variable is not None:
        env["ORT_DISABLE_TELEMETRY"] = variable
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_process_of_ours_leaves_no_telemetry_file(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    run(home, sys.executable, "manage.py", "shell", "-c", LOADS_ONNXRUNTIME, variable=None)
    assert left_behind(home) == []


def test_onnxruntime_alone_does_write_them(tmp_path: Path) -> None:
    """The check above can see what it looks for: without our setting, this onnxruntime
    writes its files (if an upgrade stops doing so, this says the guard may be dropped)."""
    home = tmp_path / "home"
    home.mkdir()
    run(home, sys.executable, "-c", "import onnxruntime", variable=None)
    if not left_behind(home):
        # ONNX Runtime suppresses its telemetry where it detects a CI service.
        pytest.skip("onnxruntime wrote no telemetry files here (a CI environment)")


def test_a_user_may_still_choose_otherwise(tmp_path: Path) -> None:
    """The setting is a default: ORT_DISABLE_TELEMETRY=0 in the environment is kept."""
    home = tmp_path / "home"
    home.mkdir()
    run(
        home,
        sys.executable,
        "manage.py",
        "shell",
        "-c",
        "import os; assert os.environ['ORT_DISABLE_TELEMETRY'] == '0'",
        variable="0",
    )

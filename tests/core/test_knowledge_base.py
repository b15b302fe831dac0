"""core.knowledge_base: the per-install secret when several processes start at once."""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from core.knowledge_base import read_or_create_secret


def _read(directory: str, start: object, out: object) -> None:
    start.wait()  # type: ignore[attr-defined]
    try:
        out.put(read_or_create_secret(Path(directory), ".secret_key"))  # type: ignore[attr-defined]
    except Exception as exc:
        out.put(f"error: {exc!r}")  # type: ignore[attr-defined]


@pytest.mark.parametrize("round_", range(5))
def test_processes_starting_together_on_a_new_folder_share_one_secret(
    tmp_path: Path, round_: int
) -> None:
    # Celery's workers and a server's processes start at the same moment on a fresh
    # knowledge base: none may fail, and all must use the same secret.
    context = multiprocessing.get_context("fork")
    start, out = context.Barrier(24), context.Queue()
    processes = [context.Process(target=_read, args=(str(tmp_path), start, out)) for _ in range(24)]
    for process in processes:
        process.start()
    values = [out.get(timeout=30) for _ in processes]
    for process in processes:
        process.join(10)
    assert not [value for value in values if value.startswith("error")]
    assert len(set(values)) == 1
    assert (tmp_path / ".secret_key").read_text().strip() == values[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == [".secret_key"]

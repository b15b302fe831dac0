"""Progress of the long commands (issue 21): a bar on a terminal with log lines printed
above it, never through it; on a pipe nothing but the commands' own lines and summary."""

from __future__ import annotations

import fcntl
import io
import json
import logging
import os
import pty
import re
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from core.progress import progress_bar
from tests.core.builders import Terminal, segments

ROOT = Path(__file__).resolve().parents[2]
RECORDS = [
    {"id": f"2020.acl-main.{n}", "title": title, "author": [{"first": "Ann", "last": last}],
     "year": "2020", "venue": "Proceedings of ACL", "url": f"https://aclanthology.org/2020.acl-main.{n}"}
    for n, (title, last) in enumerate(
        [("Parsing with Graphs", "Smith"), ("Translating Rare Words", "Jones"),
         ("Summaries of Long Documents", "Lee")], start=1)
]  # fmt: skip


def test_log_lines_print_above_the_bar_not_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    screen = Terminal()
    monkeypatch.setattr(sys, "stderr", screen)
    handler = logging.StreamHandler(screen)
    handler.setFormatter(logging.Formatter("%(levelname)s %(name)s: %(message)s"))
    logger = logging.getLogger()
    logger.addHandler(handler)
    try:
        with progress_bar(total=3, desc="Importing", unit=" records") as bar:
            bar.update(1)
            bar.refresh()
            logging.getLogger("papers.test").warning("a record was odd")
            bar.update(2)
    finally:
        logger.removeHandler(handler)
    shown = segments(screen.getvalue())
    assert "WARNING papers.test: a record was odd" in shown  # a line of its own
    assert any("Importing" in part and "100%" in part for part in shown)  # the bar was drawn


def test_nothing_is_drawn_off_a_terminal(monkeypatch: pytest.MonkeyPatch) -> None:
    pipe = io.StringIO()
    monkeypatch.setattr(sys, "stderr", pipe)
    with progress_bar(total=2, desc="Reading", unit=" papers") as bar:
        bar.update(2)
    with progress_bar(total=2, desc="Reading", unit=" papers", hidden=True) as bar:
        bar.update(2)
    assert pipe.getvalue() == ""


# --- the commands, run as a user runs them --------------------------------------------------


@pytest.fixture
def knowledge_base(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """A knowledge base of its own (SQLite) holding the three RECORDS."""
    dropped = ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "MCP_AUTH_TOKEN")
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env.update(
        PYTHONPATH=str(ROOT),
        RESEARCH_DIRECTORY=str(tmp_path / "kb"),
        EMBEDDINGS_ENABLED="false",
        DJANGO_SETTINGS_MODULE="research_site.settings",
    )
    source = tmp_path / "records.jsonl"
    source.write_text("".join(json.dumps(r) + "\n" for r in RECORDS), encoding="utf-8")
    done = manage(env, "import_jsonl", str(source))
    assert done.returncode == 0, done.stderr
    # Piped: the summary only, no bar (no carriage return, no "Importing").
    assert done.stdout.strip() == "3 records: 3 created, 0 updated, 0 skipped (already in " \
        "the library, unchanged), 0 failed"  # fmt: skip
    assert "\r" not in done.stderr and "Importing" not in done.stderr
    return env, tmp_path


def manage(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip


def test_export_library_on_a_pipe_prints_only_its_summary(
    knowledge_base: tuple[dict[str, str], Path],
) -> None:
    env, _ = knowledge_base
    done = manage(env, "export_library", "--format", "bibtex", "--output", "all")
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert re.fullmatch(r"Exported 3 papers as bibtex to \S+/all\.bib\n", done.stdout)


def test_export_library_on_a_terminal_draws_its_bars_then_the_summary(
    knowledge_base: tuple[dict[str, str], Path],
) -> None:
    env, _ = knowledge_base
    main, child = pty.openpty()
    # A terminal of 100 columns (a pty starts at 0: tqdm would draw an empty bar).
    fcntl.ioctl(child, termios.TIOCSWINSZ, struct.pack("HHHH", 30, 100, 0, 0))
    process = subprocess.Popen(
        [sys.executable, "manage.py", "export_library", "--format", "csv", "--output", "all"],
        cwd=ROOT, env=env, stdin=child, stdout=child, stderr=child,
    )  # fmt: skip
    os.close(child)
    output = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # the terminal closed: the command is done
            break
        if not chunk:
            break
        output += chunk
    os.close(main)
    assert process.wait(timeout=300) == 0
    shown = segments(output.decode().replace("\r\n", "\n"))
    assert any(part.startswith("Reading") and "3/3" in part for part in shown), shown
    assert any(part.startswith("Writing") and "3/3" in part for part in shown), shown
    assert [part for part in shown if part.strip()][-1].startswith("Exported 3 papers as csv")

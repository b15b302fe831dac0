"""Fixtures for the hostile-input tests: one knowledge base of their own, real servers.

The servers are real `manage.py serve` processes started as tests/mcp/conftest.py starts
them (SQLite in a temporary directory, or a PostgreSQL database of its own when
DATABASE_URL is set). The knowledge base lives in a directory of its own inside a
"sandbox" directory, so a test can prove that nothing is written next to it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import shutil
import socket
import sqlite3
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    LiveServer,
    base_env,
    copy_sqlite_database,
    running_server,
    server_database,
)

SEED_SCRIPT = Path(__file__).with_name("seed_security.py")

# Where a server's own files are, and so what must never appear in an answer.
LEAK_MARKERS = ("Traceback", 'File "/', str(ROOT), "/work/", "site-packages")


@pytest.fixture(scope="session")
def sandbox(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The parent of the knowledge base: nothing but the knowledge base may appear in it."""
    return tmp_path_factory.mktemp("security-sandbox")


@pytest.fixture(scope="session")
def security_kb(sandbox: Path) -> Iterator[KnowledgeBase]:
    directory = sandbox / "knowledge-base"
    directory.mkdir()
    with server_database("security") as database_url:
        env = base_env(directory, database_url)
        seeded = subprocess.run(
            [PYTHON, str(SEED_SCRIPT)], env=env, cwd=ROOT, capture_output=True, text=True,
            timeout=180, check=False,
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        yield KnowledgeBase(directory, env, json.loads(seeded.stdout.strip().splitlines()[-1]))


def assert_no_leak(text: str, kb: KnowledgeBase | None = None) -> None:
    """No traceback and no path of the server's files in an answer sent to a client."""
    markers = [*LEAK_MARKERS, *([str(kb.directory)] if kb else [])]
    found = [marker for marker in markers if marker in text]
    assert not found, f"answer leaks {found}: {text[:1000]}"


def database_fingerprint(kb: KnowledgeBase) -> dict[str, Any]:
    """Row counts of every table (and, on SQLite, the database file's sha256)."""
    url = kb.env.get("DATABASE_URL")
    if url:
        import psycopg

        with psycopg.connect(url) as conn:
            tables = [
                row[0]
                for row in conn.execute(
                    "SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1"
                )
            ]
            # Table names come from the catalogue, not from input.
            count = 'SELECT count(*) FROM "{}"'
            return {t: conn.execute(count.format(t)).fetchone()[0] for t in tables}  # type: ignore[index]
    path = kb.directory / "research.db"
    fingerprint: dict[str, Any] = {"sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as conn:
        tables = [
            row[0]
            for row in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY 1"
            )
        ]
        for table in tables:
            query = f'SELECT count(*) FROM "{table}"'  # noqa: S608 - a catalogue name
            fingerprint[table] = conn.execute(query).fetchone()[0]
    return fingerprint


class Listener:
    """A local TCP server that records every connection: the SSRF canary."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = int(self.sock.getsockname()[1])
        self.hits: list[bytes] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(1)
                try:
                    self.hits.append(conn.recv(4096))
                except OSError:
                    self.hits.append(b"")
                conn.sendall(b"HTTP/1.0 200 OK\r\nContent-Type: application/pdf\r\n\r\n%PDF-1.4\n")

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.fixture
def listener() -> Iterator[Listener]:
    canary = Listener()
    try:
        yield canary
    finally:
        canary.close()


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


SCOPE_SEED_SCRIPT = Path(__file__).with_name("seed_scope.py")
SCOPE_SNAPSHOT_SCRIPT = Path(__file__).with_name("scope_snapshot.py")


@pytest.fixture(scope="session")
def scope_seed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """seed_scope.py's knowledge base, seeded once and never served: `scope_kb` and
    `roles_kb` are copies of it, so neither sees what the other's tests change."""
    directory = tmp_path_factory.mktemp("scope-seed")
    with server_database("scopeseed") as database_url:
        env = base_env(directory, database_url)
        seeded = subprocess.run(
            [PYTHON, str(SCOPE_SEED_SCRIPT)], env=env, cwd=ROOT, capture_output=True,
            text=True, timeout=180, check=False,
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        yield KnowledgeBase(directory, env, json.loads(seeded.stdout.strip().splitlines()[-1]))


@contextlib.contextmanager
def copy_of(seed: KnowledgeBase, directory: Path, label: str) -> Iterator[KnowledgeBase]:
    """A copy of `seed` (its files, and its database: a SQLite copy, or a PostgreSQL
    database of its own made from the seed's) in `directory`."""
    shutil.copytree(
        seed.directory, directory, dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("research.db*", "server-*.log"),
    )  # fmt: skip
    if seed.env.get("DATABASE_URL") is None:
        copy_sqlite_database(seed.directory / "research.db", directory / "research.db")
    with server_database(label, copy_of=seed.env.get("DATABASE_URL")) as database_url:
        yield KnowledgeBase(directory, base_env(directory, database_url), dict(seed.data))


@pytest.fixture(scope="session")
def scope_kb(
    tmp_path_factory: pytest.TempPathFactory, scope_seed: KnowledgeBase
) -> Iterator[KnowledgeBase]:
    """A knowledge base where "NLP Reading" holds what a client scoped to "Vision" must
    never reach (seed_scope.py)."""
    with copy_of(scope_seed, tmp_path_factory.mktemp("scope-kb"), "scope") as kb:
        try:
            yield kb
        finally:
            close_snapshots(kb)  # before its database goes


@pytest.fixture(scope="package")
def scope_server(scope_kb: KnowledgeBase) -> Iterator[LiveServer]:
    """The server of `scope_kb`, for every scope test of the package."""
    with running_server(scope_kb) as server:
        yield server


class Snapshotter:
    """scope_snapshot.py --serve for one knowledge base: a snapshot for each line sent."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.log_path = kb.directory / f"scope-snapshot-{id(self)}.log"
        with self.log_path.open("wb") as log:
            self.process = subprocess.Popen(
                [PYTHON, str(SCOPE_SNAPSHOT_SCRIPT), "--serve"], env=kb.env, cwd=ROOT,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True,
            )  # fmt: skip

    def take(self) -> dict[str, Any]:
        assert self.process.stdin is not None and self.process.stdout is not None
        self.process.stdin.write("\n")
        self.process.stdin.flush()
        while line := self.process.stdout.readline():
            if line.startswith(SNAPSHOT_LINE):
                return json.loads(line[len(SNAPSHOT_LINE) :])  # type: ignore[no-any-return]
        raise AssertionError(f"scope_snapshot.py ended: {self.log_path.read_text()[-3000:]}")

    def close(self) -> None:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            self.process.wait(30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(5)


SNAPSHOT_LINE = "SNAPSHOT "  # scope_snapshot.SERVED
_SNAPSHOTTERS: dict[Path, Snapshotter] = {}


def scope_snapshot(kb: KnowledgeBase) -> dict[str, Any]:
    """Everything outside "Vision" a scoped client could change (scope_snapshot.py), read
    by one process per knowledge base that stays for its next snapshot."""
    if kb.directory not in _SNAPSHOTTERS:
        _SNAPSHOTTERS[kb.directory] = Snapshotter(kb)
    return _SNAPSHOTTERS[kb.directory].take()


def close_snapshots(kb: KnowledgeBase) -> None:
    if (snapshotter := _SNAPSHOTTERS.pop(kb.directory, None)) is not None:
        snapshotter.close()


ROLES_SEED_SCRIPT = Path(__file__).with_name("seed_roles.py")


@pytest.fixture(scope="session")
def roles_kb(
    tmp_path_factory: pytest.TempPathFactory, scope_seed: KnowledgeBase
) -> Iterator[KnowledgeBase]:
    """A knowledge base where "NLP Reading" is private, with a user per role and one who
    is no member, each with an API token (seed_roles.py, on a copy of `scope_seed`)."""
    with copy_of(scope_seed, tmp_path_factory.mktemp("roles-kb"), "roles") as kb:
        seeded = subprocess.run(
            [PYTHON, str(ROLES_SEED_SCRIPT)], cwd=ROOT, capture_output=True, text=True,
            timeout=180, check=False, env={**kb.env, "SCOPE_SEED_DATA": json.dumps(kb.data)},
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        kb.data = json.loads(seeded.stdout.strip().splitlines()[-1])
        yield kb

"""Fixtures for the MCP tests: a seeded knowledge base and real server processes.

The servers are real `manage.py serve` processes (uvicorn, the ASGI app, migrations on
start), started once per test module. They need a database they can see from outside
the pytest process:

- SQLite (default): a temporary RESEARCH_DIRECTORY holding research.db;
- PostgreSQL (DATABASE_URL set, as in CI): a database `test_mcp_<pid>` created here and
  dropped at the end, next to pytest-django's own test database.
"""

from __future__ import annotations

import atexit
import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import ssl
import subprocess
import sys
import tempfile
import time
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit, urlunsplit

import httpx2
import mcp
import pytest
from mcp.client.streamable_http import streamable_http_client

ROOT = Path(__file__).resolve().parents[2]
PYTHON = sys.executable
SEED_SCRIPT = Path(__file__).with_name("seed_library.py")
STARTUP_TIMEOUT = 90.0  # a server starts in seconds; under a loaded 2-core CI it took ~40

# Variables of the developer's/CI environment that would change what the servers do.
_SCRUBBED = (
    "MCP_ENABLED",
    "MCP_TRANSPORT",
    "MCP_TOOLSETS",
    "MCP_READ_ONLY",
    "MCP_REQUIRE_COLLECTION",
    "MCP_AUTH_TOKEN",
    "MCP_ALLOWED_ORIGINS",
    "MCP_MAX_BODY_BYTES",
    "MCP_DEFAULT_COLLECTIONS",
    "ALLOWED_HOSTS",
    "RESEARCH_DIRECTORY",
    "RESEARCH_MCP_REEXEC",
    "DJANGO_SETTINGS_MODULE",
)


@dataclass
class KnowledgeBase:
    directory: Path
    env: dict[str, str]
    data: dict[str, Any] = field(default_factory=dict)

    def paper(self, name: str) -> dict[str, Any]:
        return self.data["papers"][name]

    def project(self, name: str) -> str:
        return self.data["projects"][name]


def base_env(directory: Path, database_url: str | None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env["RESEARCH_DIRECTORY"] = str(directory)
    env["PYTHONUNBUFFERED"] = "1"
    env["PYTHONPATH"] = str(ROOT)
    env["LOG_LEVEL"] = "INFO"
    # A search right after a start waits for the models and vectors, as with a small
    # library on a quiet machine: tests compare a server's rankings with the steady state's,
    # and a loaded machine can take longer than the default wait (papers/search/startup.py;
    # the answer without them: tests/papers/search/test_semantic.py).
    env["SEARCH_START_WAIT_MS"] = "600000"
    # No external engines unless a test asks for them: tests never reach the internet.
    env["ENGINES_ENABLED"] = "local"
    # Nor a background retraction check of added papers (the suite's shared Celery worker
    # would run it with its own engines); tests/mcp/test_retraction_tools.py checks on purpose.
    env["RETRACTION_CHECK_ON_IMPORT"] = "false"
    env.pop("DATABASE_URL", None)
    if database_url:
        env["DATABASE_URL"] = database_url
    else:
        _start_migrated(directory)
    return env


# Every knowledge base of the suite starts from one migrated template instead of migrating
# its own (some 2 s of CPU each, sixty-odd times a run): SQLite copies the template's
# research.db into a new directory, PostgreSQL creates `server_database`'s databases from a
# template database. Migrating from scratch is still tested (tests/core/test_runtime.py, and
# every run's own test database); `serve` and the seeding scripts still run `migrate`, which
# finds nothing to do.
_TEMPLATE: dict[str, Any] = {}


def _scrubbed_env(directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env.update(RESEARCH_DIRECTORY=str(directory), PYTHONPATH=str(ROOT))
    env.pop("DATABASE_URL", None)
    return env


def _migrate(env: dict[str, str]) -> None:
    migrated = subprocess.run(
        [PYTHON, "manage.py", "migrate", "--verbosity", "0"], env=env, cwd=ROOT,
        capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    assert migrated.returncode == 0, migrated.stderr


def _sqlite_template() -> Path:
    if "sqlite" not in _TEMPLATE:
        directory = Path(tempfile.mkdtemp(prefix="research-mcp-template-"))
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        _migrate(_scrubbed_env(directory))
        _TEMPLATE["sqlite"] = directory / "research.db"
    return Path(_TEMPLATE["sqlite"])


def copy_sqlite_database(source: Path, target: Path) -> None:
    """Copy a SQLite database file (through SQLite: its WAL included)."""
    with (
        contextlib.closing(sqlite3.connect(source)) as original,
        contextlib.closing(sqlite3.connect(target)) as copy,
    ):
        original.backup(copy)


def _start_migrated(directory: Path) -> None:
    """Give a new SQLite knowledge base directory the template's migrated database."""
    target = Path(directory) / "research.db"
    if target.exists():
        return
    target.parent.mkdir(parents=True, exist_ok=True)
    copy_sqlite_database(_sqlite_template(), target)


def _postgres_template(url: str) -> str:
    """The name of a migrated PostgreSQL database to copy (made once a run)."""
    if "postgres" not in _TEMPLATE:
        import psycopg

        parts = urlsplit(url)
        name = f"test_template_{os.getpid()}"
        admin_url = urlunsplit(parts._replace(path="/postgres"))
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
            conn.execute(f'CREATE DATABASE "{name}"')

        def drop() -> None:
            with psycopg.connect(admin_url, autocommit=True) as conn:
                conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

        atexit.register(drop)
        directory = Path(tempfile.mkdtemp(prefix="research-mcp-template-"))
        atexit.register(shutil.rmtree, directory, ignore_errors=True)
        env = _scrubbed_env(directory)
        env["DATABASE_URL"] = urlunsplit(parts._replace(path=f"/{name}"))
        _migrate(env)
        _TEMPLATE["postgres"] = name
    return str(_TEMPLATE["postgres"])


@contextlib.contextmanager
def server_database(label: str = "mcp", copy_of: str | None = None) -> Iterator[str | None]:
    """A PostgreSQL database of its own (`test_<label>_<pid>`, migrated, or a copy of the
    database at URL `copy_of`, which nothing may be connected to) for server processes,
    dropped afterwards; None for SQLite."""
    url = os.environ.get("DATABASE_URL", "")
    if not url.startswith(("postgres://", "postgresql://")):
        yield None
        return
    import psycopg

    parts = urlsplit(url)
    name = f"test_{label}_{os.getpid()}"
    admin_url = urlunsplit(parts._replace(path="/postgres"))
    template = urlsplit(copy_of).path.lstrip("/") if copy_of else _postgres_template(url)
    with psycopg.connect(admin_url, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{name}" TEMPLATE "{template}"')
    try:
        yield urlunsplit(parts._replace(path=f"/{name}"))
    finally:
        with psycopg.connect(admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@contextlib.contextmanager
def seeded_knowledge_base(directory: Path, label: str = "mcp") -> Iterator[KnowledgeBase]:
    """A knowledge base with two projects and four papers (see seed_library.py), in
    `directory` (and a PostgreSQL database of its own when DATABASE_URL is set)."""
    with server_database(label) as database_url:
        env = base_env(directory, database_url)
        seeded = subprocess.run(
            [PYTHON, str(SEED_SCRIPT), "--embed"], env=env, cwd=ROOT, capture_output=True,
            text=True, timeout=120, check=False,
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        yield KnowledgeBase(directory, env, json.loads(seeded.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="session")
def knowledge_base(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """The shared seeded knowledge base; tests that change it much bring their own."""
    with seeded_knowledge_base(tmp_path_factory.mktemp("knowledge-base")) as kb:
        yield kb


# The warm-up's log lines (papers/search/vocabulary.py).
VOCABULARY_LOADED = "Typo-tolerance vocabulary loaded"
VOCABULARY_FAILED = "Building the typo-tolerance vocabulary failed"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class LiveServer:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def mcp_url(self) -> str:
        return f"{self.base_url}/mcp"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 30) -> int:
        if self.process.poll() is None:
            self.process.send_signal(sig)
            try:
                self.process.wait(timeout)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(5)
        return self.process.returncode


def start_server(
    kb: KnowledgeBase,
    *,
    transport: str = "http",
    host: str = "127.0.0.1",
    env: dict[str, str] | None = None,
    args: tuple[str, ...] = (),
) -> LiveServer:
    port = free_port()
    log_path = kb.directory / f"server-{port}.log"
    command = [PYTHON, "manage.py", "serve", "--transport", transport]
    command += ["--host", host, "--port", str(port), *args]
    with log_path.open("wb") as log:
        process = subprocess.Popen(
            command, cwd=ROOT, env={**kb.env, **(env or {})}, stdout=log, stderr=subprocess.STDOUT
        )
    server = LiveServer(process, port, log_path)
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"server exited with {process.returncode}:\n{server.log()}")
        with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
            if {**kb.env, **(env or {})}.get("LOG_LEVEL") in ("INFO", "DEBUG"):
                _wait_for_typo_tolerance(server, deadline)
            return server
        time.sleep(0.1)
    server.stop(signal.SIGKILL)
    raise RuntimeError(f"server did not start in {STARTUP_TIMEOUT}s:\n{server.log()}")


def _wait_for_typo_tolerance(server: LiveServer, deadline: float) -> None:
    """Until the server's warm-up has built its typo-tolerance vocabulary (milliseconds on
    a test library): a search answered before goes without typo tolerance, with a note
    (papers/search/vocabulary.py), and tests compare answers with the steady state."""
    while time.monotonic() < deadline:
        log = server.log()
        if VOCABULARY_LOADED in log or VOCABULARY_FAILED in log:
            return
        if server.process.poll() is not None:
            raise RuntimeError(f"server exited with {server.process.returncode}:\n{log}")
        time.sleep(0.05)
    server.stop(signal.SIGKILL)
    raise RuntimeError(f"no typo-tolerance vocabulary in {STARTUP_TIMEOUT}s:\n{server.log()}")


@contextlib.contextmanager
def running_server(kb: KnowledgeBase, **options: Any) -> Iterator[LiveServer]:
    server = start_server(kb, **options)
    try:
        yield server
    finally:
        server.stop()


# One TLS context for the clients the tests make per request: httpx builds one for each
# client otherwise, loading the system's CA bundle every time (some 25 ms of CPU; three
# quarters of what tests/security/test_hostile_bodies.py's 1,200 requests cost this process),
# though the servers here speak plain HTTP.
TLS = ssl.create_default_context()


def post(
    url: str,
    body: Any = None,
    *,
    content: bytes | None = None,
    headers: dict[str, str] | None = None,
    method: str = "POST",
) -> httpx2.Response:
    """One raw HTTP request; `body` is sent as JSON, `content` as bytes."""
    if content is None and body is not None:
        content = json.dumps(body).encode()
    all_headers = {"content-type": "application/json", "accept": "application/json"}
    all_headers.update(headers or {})
    with httpx2.Client(timeout=20, verify=TLS) as client:
        return client.request(method, url, content=content, headers=all_headers)


def rpc(method: str, params: dict[str, Any] | None = None, request_id: int = 1) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
    if params is not None:
        message["params"] = params
    return message


def asgi_post_scope(headers: list[tuple[bytes, bytes]]) -> dict[str, Any]:
    """The ASGI scope of a loopback client's POST to /mcp (for the ASGI app in process)."""
    return {
        "type": "http",
        "method": "POST",
        "path": "/mcp",
        "headers": headers,
        "query_string": b"",
        "client": ("127.0.0.1", 5000),
    }


def call_tool_raw(
    url: str, name: str, arguments: dict[str, Any], headers: dict[str, str] | None = None
) -> httpx2.Response:
    return post(
        url,
        rpc("tools/call", {"name": name, "arguments": arguments}),
        headers={"mcp-protocol-version": "2025-06-18", **(headers or {})},
    )


@contextlib.asynccontextmanager
async def mcp_client(
    url: str, *, mode: str = "legacy", headers: dict[str, str] | None = None
) -> AsyncIterator[mcp.Client]:
    """The SDK's own client over Streamable HTTP, optionally with extra headers."""
    async with httpx2.AsyncClient(headers=headers or {}, timeout=30) as http_client:
        transport = streamable_http_client(url, http_client=http_client)
        async with mcp.Client(transport, mode=mode) as client:
            yield client


def tool_data(result: Any) -> Any:
    """The JSON answer of a successful tool call (its one text block; docs/MCP.md
    "Responses"); None for an error result."""
    if result.is_error:
        return None
    assert result.structured_content is None, "answers carry compact JSON text only"
    return json.loads(result.content[0].text)


def result_json(result: dict[str, Any]) -> Any:
    """The same for a raw JSON-RPC `result` object."""
    return json.loads(result["content"][0]["text"])


def tool_error(result: Any) -> dict[str, Any]:
    """The JSON body of an isError tool result."""
    assert result.is_error, result
    assert result.structured_content is None
    return json.loads(result.content[0].text)["error"]


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


MAX_BODY_BYTES = 16384


@pytest.fixture(scope="session")
def library_server(knowledge_base: KnowledgeBase) -> Iterator[LiveServer]:
    """The default server (no token, so loopback only), bound to every interface."""
    everywhere = "0.0.0.0"  # noqa: S104 - the non-loopback test connects from outside
    # Semantic search through the approximate index at any size (re-scored exactly, so
    # every answer is the exact search's): tests/mcp/test_search_tools.py checks it is used.
    env = {"MCP_MAX_BODY_BYTES": str(MAX_BODY_BYTES), "VECTOR_INDEX_APPROXIMATE_ABOVE": "0"}
    with running_server(knowledge_base, host=everywhere, env=env) as server:
        yield server


def non_loopback_address() -> str | None:
    """An address of this machine that is not loopback, if it has one."""
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        sock.connect(("192.0.2.254", 9))  # no packet is sent for a UDP connect
        address = str(sock.getsockname()[0])
        if not address.startswith("127."):
            return address
    return None

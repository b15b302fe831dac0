"""A production-shaped stack of our own that the fault tests may break: a PostgreSQL
cluster and a Redis server started here (private ports and data directories, so the
machine's shared services are never touched), `manage.py serve --workers 2` on them, and
a Celery worker (both queues) that a test may kill.

Runs as root (PostgreSQL's server runs as the `postgres` user through `runuser`); the
tests skip, saying why, on a machine without the PostgreSQL server binaries or
redis-server.
"""

from __future__ import annotations

import contextlib
import glob
import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.celery_worker import CeleryWorker
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer
from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    SEED_SCRIPT,
    KnowledgeBase,
    LiveServer,
    base_env,
    start_server,
)

# How long a multi-engine search may wait for its engines in the stack (seconds).
ENGINE_DEADLINE = 10
# Seconds an engine's circuit breaker stays open before a probe (engines/breaker.py).
BREAKER_RESET = 5


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def wait_for_port(port: int, *, up: bool, timeout: float = 30.0) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                listening = True
        except OSError:
            listening = False
        if listening == up:
            return
        time.sleep(0.1)
    raise AssertionError(f"port {port} still {'closed' if up else 'open'} after {timeout} s")


def _postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


def missing_services() -> str | None:
    """Why this machine cannot run the stack, or None."""
    if os.geteuid() != 0:
        return "the fault tests start their own PostgreSQL as the postgres user: run as root"
    if _postgres_bin() is None:
        return "no PostgreSQL server binaries (/usr/lib/postgresql/*/bin/initdb)"
    if shutil.which("redis-server") is None:
        return "no redis-server"
    return None


class PrivatePostgres:
    """A PostgreSQL cluster in a temporary directory, on a free loopback port."""

    def __init__(self, root: Path) -> None:
        bin_dir = _postgres_bin()
        assert bin_dir is not None
        self.bin = bin_dir
        self.port = free_port()
        self.data = root / "pgdata"
        self.log = root / "postgres.log"
        self.data.mkdir()
        shutil.chown(self.data, "postgres", "postgres")
        self.log.touch()
        shutil.chown(self.log, "postgres", "postgres")
        self._as_postgres(
            str(self.bin / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "--no-sync", "-E", "UTF8",
        )  # fmt: skip

    def _as_postgres(self, *command: str) -> None:
        done = subprocess.run(
            ["runuser", "-u", "postgres", "--", *command],
            capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert done.returncode == 0, f"{command[0]} failed:\n{done.stdout}\n{done.stderr}"

    @property
    def url(self) -> str:
        return f"postgres://postgres@127.0.0.1:{self.port}/faults"

    def start(self) -> None:
        options = f"-p {self.port} -c listen_addresses=127.0.0.1 -k {self.data}"
        self._as_postgres(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log),
            "-o", options, "-w", "-t", "60", "start",
        )  # fmt: skip

    def stop(self, mode: str = "fast") -> None:
        """`immediate` is a crash (no shutdown checkpoint; recovery replays the WAL)."""
        self._as_postgres(
            str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", mode, "-w", "-t", "60", "stop"
        )

    def create_database(self) -> None:
        import psycopg

        with psycopg.connect(
            f"postgres://postgres@127.0.0.1:{self.port}/postgres", autocommit=True
        ) as conn:
            conn.execute("CREATE DATABASE faults")

    def running(self) -> bool:
        return (self.data / "postmaster.pid").exists()


class PrivateRedis:
    """redis-server on a free loopback port, without persistence (as in CI): a restart
    loses whatever was queued."""

    def __init__(self, root: Path) -> None:
        self.port = free_port()
        self.log = root / "redis.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self) -> None:
        command = [
            "redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
            "--appendonly", "no", "--logfile", str(self.log),
        ]  # fmt: skip
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL)
        wait_for_port(self.port, up=True)

    def kill(self) -> None:
        assert self.process is not None
        self.process.send_signal(signal.SIGKILL)
        self.process.wait(10)
        wait_for_port(self.port, up=False)

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()
            self.process.wait(10)


@dataclass
class Stack:
    kb: KnowledgeBase
    postgres: PrivatePostgres
    redis: PrivateRedis
    worker: CeleryWorker
    server: LiveServer
    source: ReplayServer

    @property
    def url(self) -> str:
        return self.server.mcp_url

    def log(self) -> str:
        return self.server.log()


# Plugin engines of the stack, answering from the module's replay server.
FAST, SLOW, FLAKY, LIMITED = "ft_fast", "ft_slow", "ft_flaky", "ft_limited"


@pytest.fixture(scope="module")
def stack(source: ReplayServer) -> Iterator[Stack]:
    reason = missing_services()
    if reason:
        pytest.skip(reason)
    root = Path(tempfile.mkdtemp(prefix="research-mcp-faults-"))
    root.chmod(0o755)  # the postgres user must reach its data directory
    directory = root / "knowledge-base"
    directory.mkdir()
    postgres = PrivatePostgres(root)
    redis = PrivateRedis(root)
    worker: CeleryWorker | None = None
    server: LiveServer | None = None
    try:
        postgres.start()
        postgres.create_database()
        redis.start()
        for engine_id in (FAST, SLOW, FLAKY, LIMITED):
            write_plugin(
                directory / "engines", engine_id, f"{source.url}/{engine_id}", timeout=10,
                rate_limit="100/second", cache_ttl=0,
            )  # fmt: skip
        env = base_env(directory, postgres.url)
        env.update(
            REDIS_URL=redis.url,
            ENGINES_ENABLED=f"local,{FAST},{SLOW},{FLAKY},{LIMITED}",
            ENGINE_DEADLINE_SECONDS=str(ENGINE_DEADLINE),
            ENGINE_BREAKER_RESET_SECONDS=str(BREAKER_RESET),
            EMBEDDINGS_ENABLED="false",
        )
        seeded = subprocess.run(
            [PYTHON, str(SEED_SCRIPT)], env=env, cwd=ROOT, capture_output=True, text=True,
            timeout=180, check=False,
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        kb = KnowledgeBase(directory, env, json.loads(seeded.stdout.strip().splitlines()[-1]))
        worker = CeleryWorker(directory, env, queues="celery,engines", name="faults").start()
        server = start_server(kb, args=("--workers", "2"))
        yield Stack(kb, postgres, redis, worker, server, source)
    finally:
        if server is not None:
            server.stop()
        if worker is not None:
            worker.stop()
        redis.stop()
        if postgres.running():
            with contextlib.suppress(AssertionError):
                postgres.stop("immediate")
        if os.environ.get("FAULTS_KEEP"):  # to read the logs of a failed run
            print(f"\nfault stack kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)

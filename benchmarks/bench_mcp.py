"""`tools/call get_paper_details` on /mcp against the SDK's own Starlette app, same run.

Imports the corpus once into a throwaway knowledge base, then starts two servers on
loopback ports over that same database and the same registry (`build_server()`):

- ours: `manage.py serve --transport http` (one uvicorn process, `mcp_endpoint.asgi`);
- sdk:  the SDK's `streamable_http_app(stateless_http=True, json_response=True)` under
  uvicorn (`benchmarks/sdk_app.py`), which needs no `initialize` in stateless mode.

For each run and each concurrency level both servers get the same seeded sequence of
random paper ids for a fixed time; which server goes first alternates between runs, so
neither gets a warm-up advantage. Any answer that is not HTTP 200 with a JSON-RPC result
whose `isError` is false counts as an error. Prints medians over the runs as markdown.

    make bench-mcp   (or benchmarks/bench_mcp.py --corpus FILE [--limit 5000] [--seconds 10])

The load generator is a minimal HTTP/1.1 keep-alive client on asyncio (one connection per
simulated client): on a 2-core machine the client shares the CPU with the server, and a
full HTTP library would spend more of it than the servers being measured.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import random
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from mcp_server import STEADY_STATE_WAIT_MS

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"  # loopback only, by design
PROTOCOL_VERSION = "2025-06-18"
MAX_CONCURRENCY = 200
REQUEST_TIMEOUT = 30.0
WARMUP_REQUESTS = 50
SERVERS = ("ours", "sdk")


# --- the knowledge base -------------------------------------------------------------


def server_env(directory: Path) -> dict[str, str]:
    """Default settings on `directory`: SQLite, no token, no scope, every tool set."""
    dropped = {
        "DATABASE_URL", "REDIS_URL", "MCP_AUTH_TOKEN", "MCP_REQUIRE_COLLECTION", "MCP_READ_ONLY",
        "MCP_TOOLSETS", "MCP_ENABLED", "MCP_TRANSPORT", "MCP_DEFAULT_COLLECTIONS", "ALLOWED_HOSTS",
    }  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["DJANGO_SETTINGS_MODULE"] = "research_site.settings"
    env["RESEARCH_DIRECTORY"] = str(directory)
    env["LOG_LEVEL"] = "WARNING"
    env["SEARCH_START_WAIT_MS"] = STEADY_STATE_WAIT_MS  # searches wait for the start's load
    return env


def paper_ids(env: dict[str, str]) -> list[int]:
    script = (
        "import django; django.setup();"
        "from papers.models import Paper;"
        "print(' '.join(str(pk) for pk in Paper.objects.values_list('pk', flat=True)))"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    if done.returncode != 0:
        raise SystemExit(f"could not list papers:\n{done.stderr}")
    return [int(pk) for pk in done.stdout.split()]


def import_corpus(corpus: str, limit: int | None, env: dict[str, str]) -> float:
    """Import the corpus (or its first `limit` records) with `import_jsonl`; seconds taken."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    command = [sys.executable, "manage.py", "import_jsonl", "--no-progress"]
    if limit is None:
        done = subprocess.run([*command, corpus], cwd=ROOT, env=env, capture_output=True, text=True)
    else:
        opener = gzip.open if corpus.endswith(".gz") else open
        with opener(corpus, "rt", encoding="utf-8") as source:
            head = "".join(line for _, line in zip(range(limit), source, strict=False))
        done = subprocess.run(
            [*command, "-"], cwd=ROOT, env=env, input=head, capture_output=True, text=True
        )
    if done.returncode != 0:
        raise SystemExit(f"import failed:\n{done.stdout}\n{done.stderr}")
    print(done.stdout.strip().rsplit("\n", 1)[-1], file=sys.stderr)  # the summary line
    return time.perf_counter() - started


# --- the servers --------------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen[bytes]
    log: Path


def start_server(name: str, env: dict[str, str], logs: Path) -> Server:
    port = free_port()
    if name == "ours":
        command = [sys.executable, "manage.py", "serve", "--transport", "http",
                   "--host", HOST, "--port", str(port)]  # fmt: skip
    else:
        command = [sys.executable, "-m", "uvicorn", "benchmarks.sdk_app:app", "--host", HOST,
                   "--port", str(port), "--no-access-log", "--log-level", "warning"]  # fmt: skip
    log = logs / f"{name}.log"
    with log.open("wb") as handle:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=handle, stderr=handle)
    server = Server(name, port, process, log)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{name} server exited:\n{log.read_text()}")
        try:
            status, _ = asyncio.run(_one_ping(port))
            if status == 200:
                return server
        except (OSError, asyncio.IncompleteReadError, ValueError):
            pass  # not listening yet
        time.sleep(0.2)
    stop_server(server)
    raise SystemExit(f"{name} server did not answer on port {port}:\n{log.read_text()}")


def stop_server(server: Server) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(timeout=35)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


async def _one_ping(port: int) -> tuple[int, bytes]:
    connection = Connection(port)
    try:
        return await connection.post(b'{"jsonrpc":"2.0","id":0,"method":"ping"}')
    finally:
        connection.close()


# --- the load generator -------------------------------------------------------------


class Connection:
    """One keep-alive HTTP/1.1 connection that POSTs JSON to /mcp."""

    def __init__(self, port: int) -> None:
        self.port = port
        self.reader: asyncio.StreamReader | None = None
        self.writer: asyncio.StreamWriter | None = None
        self.head = (
            f"POST /mcp HTTP/1.1\r\nHost: {HOST}:{port}\r\n"
            "Content-Type: application/json\r\n"
            "Accept: application/json, text/event-stream\r\n"
            f"MCP-Protocol-Version: {PROTOCOL_VERSION}\r\n"
        ).encode()

    async def post(self, body: bytes) -> tuple[int, bytes]:
        if self.writer is None:
            self.reader, self.writer = await asyncio.open_connection(HOST, self.port)
        assert self.reader is not None
        self.writer.write(self.head + b"Content-Length: %d\r\n\r\n" % len(body) + body)
        head = await self.reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")
        status = int(lines[0].split(" ", 2)[1])
        headers = {}
        for line in lines[1:]:
            if line:
                key, _, value = line.partition(":")
                headers[key.strip().lower()] = value.strip()
        if "content-length" in headers:
            payload = await self.reader.readexactly(int(headers["content-length"]))
        elif headers.get("transfer-encoding", "").lower() == "chunked":
            payload = await self._read_chunked()
        else:
            payload = await self.reader.read()  # until the server closes
            self.close()
        if headers.get("connection", "").lower() == "close":
            self.close()
        return status, payload

    async def _read_chunked(self) -> bytes:
        assert self.reader is not None
        parts: list[bytes] = []
        while True:
            size = int((await self.reader.readline()).split(b";")[0], 16)
            if size == 0:
                await self.reader.readline()
                return b"".join(parts)
            parts.append(await self.reader.readexactly(size))
            await self.reader.readline()

    def close(self) -> None:
        if self.writer is not None:
            self.writer.close()
        self.reader = self.writer = None


def call_body(request_id: int, paper_id: int) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": "get_paper_details", "arguments": {"paper_id": paper_id}},
    }
    return json.dumps(message, separators=(",", ":")).encode()


def is_success(status: int, payload: bytes, paper_id: int) -> bool:
    if status != 200:
        return False
    try:
        message = json.loads(payload)
    except ValueError:
        return False
    result = message.get("result") if isinstance(message, dict) else None
    if not isinstance(result, dict) or result.get("isError") is not False:
        return False
    try:
        structured = json.loads(result["content"][0]["text"])
    except (KeyError, IndexError, TypeError, ValueError):
        return False
    return isinstance(structured, dict) and structured.get("paper_id") == paper_id


@dataclass
class Measurement:
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def percentile(self, fraction: float) -> float:
        if not self.latencies:
            return float("nan")
        ordered = sorted(self.latencies)
        return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000


async def drive(port: int, ids: Iterator[int], concurrency: int, seconds: float) -> Measurement:
    """`concurrency` clients call the tool back to back until `seconds` have passed."""
    measurement = Measurement()
    started = time.perf_counter()
    deadline = started + seconds
    counter = iter(range(1, 1 << 62))

    async def client() -> None:
        connection = Connection(port)
        try:
            while time.perf_counter() < deadline:
                paper_id = next(ids)
                body = call_body(next(counter), paper_id)
                sent = time.perf_counter()
                try:
                    async with asyncio.timeout(REQUEST_TIMEOUT):
                        status, payload = await connection.post(body)
                except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                    connection.close()
                    status, payload = 0, repr(exc).encode()
                elapsed = time.perf_counter() - sent
                if is_success(status, payload, paper_id):
                    measurement.latencies.append(elapsed)
                else:
                    measurement.errors += 1
                    measurement.first_error = measurement.first_error or (
                        f"HTTP {status}: {payload[:300].decode('utf-8', 'replace')}"
                    )
        finally:
            connection.close()

    await asyncio.gather(*(client() for _ in range(concurrency)))
    measurement.seconds = time.perf_counter() - started
    return measurement


def seeded_ids(all_ids: list[int], seed: int) -> Iterator[int]:
    chooser = random.Random(seed)
    while True:
        yield chooser.choice(all_ids)


# --- the report ---------------------------------------------------------------------


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def print_table(
    results: dict[tuple[str, int], list[Measurement]], levels: list[int], runs: int
) -> None:
    print(
        "| clients | ours req/s | SDK req/s | ours/SDK | ours p50 ms | SDK p50 ms "
        "| ours p95 ms | SDK p95 ms | errors ours / SDK | goal (ours ≥ SDK) |"
    )
    print("|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for level in levels:
        ours, sdk = results[("ours", level)], results[("sdk", level)]
        ours_rate = median([m.rate for m in ours])
        sdk_rate = median([m.rate for m in sdk])
        ratio = ours_rate / sdk_rate if sdk_rate else float("nan")
        print(
            f"| {level} | {ours_rate:,.0f} | {sdk_rate:,.0f} | {ratio:.2f} "
            f"| {median([m.percentile(0.5) for m in ours]):.1f} "
            f"| {median([m.percentile(0.5) for m in sdk]):.1f} "
            f"| {median([m.percentile(0.95) for m in ours]):.1f} "
            f"| {median([m.percentile(0.95) for m in sdk]):.1f} "
            f"| {median([m.errors for m in ours]):.0f} / {median([m.errors for m in sdk]):.0f} "
            f"| {'met' if ratio >= 1 else 'not met'} |"
        )
    print()
    print(f"Medians over {runs} run(s); errors are the median per run.")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True, help="ACL JSONL(.gz) to import once.")
    parser.add_argument("--limit", type=int, default=None, help="Import only N records.")
    parser.add_argument("--seconds", type=float, default=10.0, help="Per level and server.")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", default="1,10,50", help="Comma-separated levels.")
    parser.add_argument("--seed", type=int, default=20240815)
    parser.add_argument(
        "--directory",
        default=None,
        help="Keep the knowledge base here and reuse it if it already holds papers "
        "(default: a temporary directory, removed afterwards).",
    )
    args = parser.parse_args()
    levels = [int(level) for level in args.concurrency.split(",")]
    if not all(1 <= level <= MAX_CONCURRENCY for level in levels):
        parser.error(f"concurrency levels must be 1-{MAX_CONCURRENCY}")
    if args.seconds <= 0 or args.seconds > 600 or args.runs < 1:
        parser.error("--seconds must be in (0, 600] and --runs at least 1")

    with contextlib.ExitStack() as stack:
        if args.directory:
            directory = Path(args.directory).resolve()
            directory.mkdir(parents=True, exist_ok=True)
        else:
            directory = Path(tempfile.mkdtemp(prefix="bench-mcp-"))
            stack.callback(shutil.rmtree, directory, ignore_errors=True)
        env = server_env(directory)
        ids = paper_ids(env) if (directory / "research.db").exists() else []
        if not ids:
            seconds = import_corpus(args.corpus, args.limit, env)
            print(f"imported in {seconds:.1f} s", file=sys.stderr)
            ids = paper_ids(env)
        print(f"{len(ids):,} papers in {directory}", file=sys.stderr)

        logs = directory / "bench-logs"
        logs.mkdir(exist_ok=True)
        servers = {}
        for name in SERVERS:
            servers[name] = start_server(name, env, logs)
            stack.callback(stop_server, servers[name])
        for server in servers.values():  # first imports and queries, off the clock
            asyncio.run(_warm_up(server.port, ids))

        results: dict[tuple[str, int], list[Measurement]] = {}
        load = os.getloadavg()
        print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", file=sys.stderr)
        for run in range(args.runs):
            order = SERVERS if run % 2 == 0 else SERVERS[::-1]
            for level in levels:
                for name in order:
                    ids_stream = seeded_ids(ids, args.seed + run * 1000 + level)
                    measurement = asyncio.run(
                        drive(servers[name].port, ids_stream, level, args.seconds)
                    )
                    results.setdefault((name, level), []).append(measurement)
                    print(
                        f"run {run + 1} clients {level:>3} {name:>4}: "
                        f"{measurement.rate:7.1f} req/s  p50 {measurement.percentile(0.5):6.1f} ms"
                        f"  p95 {measurement.percentile(0.95):6.1f} ms  errors {measurement.errors}"
                        + (f"  first: {measurement.first_error}" if measurement.errors else ""),
                        file=sys.stderr,
                        flush=True,
                    )
        load = os.getloadavg()
        print(f"load average after: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", file=sys.stderr)

    print()
    print(
        f"{len(ids):,} papers, {args.seconds:g} s per level and server, "
        f"{os.cpu_count()} CPUs, load average {load[0]:.2f} at the end"
    )
    print()
    print_table(results, levels, args.runs)


async def _warm_up(port: int, ids: list[int]) -> None:
    connection = Connection(port)
    try:
        for request_id, paper_id in zip(range(WARMUP_REQUESTS), seeded_ids(ids, 1), strict=False):
            await connection.post(call_body(request_id, paper_id))
    finally:
        connection.close()


if __name__ == "__main__":
    main()

"""The endpoint's own cost: /mcp beside a minimal server on the SDK alone.

Imports the corpus once into a throwaway knowledge base (or reuses `--directory`), then
starts two single-process servers over that same research.db:

- ours: `manage.py serve --transport http` (uvicorn, `mcp_endpoint.asgi`, the registry);
- reference: `benchmarks/reference_server.py`, one SDK `MCPServer` with one FTS5 tool,
  served by the SDK's stateless JSON app under uvicorn;
- same-search: the same SDK-only server whose tool runs `search_papers`' own library search
  (`papers.search.local.local_search`, with its semantic re-rank): the same search work as
  ours, so ours/same-search is the endpoint's own cost and reference/same-search the price of
  the hybrid search itself.

For each run, operation and level of concurrent clients (one keep-alive connection each)
both servers get the same seeded sequence of requests for `--seconds`; which goes first
alternates between runs. Operations:

- `search`: ours `tools/call search_papers {query, engines: "local", max_results: 10}`, the
  reference `tools/call search {query, limit: 10}`: the same FTS5 index and queries;
  same-search `tools/call search {query, limit: 10}` with the query as an agent typed it;
- `ping`: nothing but the endpoint: transport, dispatch, serialisation.

Any answer that is not HTTP 200 with a JSON-RPC result (and `isError` false for tools) is an
error. Prints the side-by-side table, medians over the runs, and the fixed cost: ours' p50
for `ping` (what every request pays before any tool runs).

    benchmarks/bench_endpoint.py --corpus FILE [--limit 20000] [--seconds 8] [--runs 3]
        [--concurrency 1,10,50] [--operations search,ping] [--directory DIR]
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from bench_load import QUERIES
from bench_mcp import HOST, Connection, free_port, import_corpus, paper_ids, server_env

ROOT = Path(__file__).resolve().parent.parent
SERVERS = ("ours", "reference", "same-search")
OPERATIONS = ("search", "ping")
REQUEST_TIMEOUT = 30.0
WARMUP_REQUESTS = 100


@dataclass
class Server:
    name: str
    port: int
    process: subprocess.Popen[bytes]


def start(name: str, env: dict[str, str], logs: Path) -> Server:
    port = free_port()
    if name == "ours":
        command = [sys.executable, "manage.py", "serve", "--transport", "http",
                   "--host", HOST, "--port", str(port)]  # fmt: skip
    else:
        command = [sys.executable, "benchmarks/reference_server.py", "--port", str(port)]
        if name == "same-search":
            command += ["--search", "service"]
    with (logs / f"{name}.log").open("wb") as log:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=log, stderr=log)
    server = Server(name, port, process)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"{name} exited:\n{(logs / f'{name}.log').read_text()}")
        with contextlib.suppress(OSError, asyncio.IncompleteReadError, ValueError):
            if asyncio.run(_post(port, body(name, "ping", "", 0)))[0] == 200:
                return server
        time.sleep(0.2)
    stop(server)
    raise SystemExit(f"{name} did not answer on port {port}")


def stop(server: Server) -> None:
    if server.process.poll() is None:
        server.process.send_signal(signal.SIGTERM)
        try:
            server.process.wait(30)
        except subprocess.TimeoutExpired:
            server.process.kill()
            server.process.wait()


async def _post(port: int, payload: bytes) -> tuple[int, bytes]:
    connection = Connection(port)
    try:
        return await connection.post(payload)
    finally:
        connection.close()


def fts_query(query: str) -> str:
    """The words of `query` as an FTS5 AND of quoted terms (no operator can slip in)."""
    words = query.replace("-", " ").split()
    return " ".join('"' + word.replace('"', "") + '"' for word in words)


def body(server: str, operation: str, query: str, request_id: int) -> bytes:
    if operation == "ping":
        message: dict[str, object] = {"jsonrpc": "2.0", "id": request_id, "method": "ping"}
    else:
        if server == "ours":
            name, arguments = (
                "search_papers",
                {"query": query, "engines": "local", "max_results": 10},
            )
        elif server == "same-search":
            name, arguments = "search", {"query": query, "limit": 10}
        else:
            name, arguments = "search", {"query": fts_query(query), "limit": 10}
        message = {
            "jsonrpc": "2.0",
            "id": request_id,
            "method": "tools/call",
            "params": {"name": name, "arguments": arguments},
        }
    return json.dumps(message, separators=(",", ":")).encode()


def is_success(status: int, payload: bytes, operation: str) -> bool:
    if status != 200:
        return False
    try:
        result = json.loads(payload).get("result")
    except (ValueError, AttributeError):
        return False
    if not isinstance(result, dict):
        return False
    return operation == "ping" or result.get("isError") is False


@dataclass
class Measurement:
    seconds: float = 0.0
    latencies: list[float] = field(default_factory=list)
    errors: int = 0
    first_error: str = ""

    @property
    def rate(self) -> float:
        return len(self.latencies) / self.seconds if self.seconds else 0.0

    def p50(self) -> float:
        return statistics.median(self.latencies) * 1000 if self.latencies else float("nan")


async def drive(
    server: str, port: int, operation: str, queries: Iterator[str], clients: int, seconds: float
) -> Measurement:
    measurement = Measurement()
    started = time.perf_counter()
    deadline = started + seconds
    counter = iter(range(1, 1 << 62))

    async def client() -> None:
        connection = Connection(port)
        try:
            while time.perf_counter() < deadline:
                payload = body(server, operation, next(queries), next(counter))
                sent = time.perf_counter()
                try:
                    async with asyncio.timeout(REQUEST_TIMEOUT):
                        status, answer = await connection.post(payload)
                except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                    connection.close()
                    status, answer = 0, repr(exc).encode()
                if is_success(status, answer, operation):
                    measurement.latencies.append(time.perf_counter() - sent)
                else:
                    measurement.errors += 1
                    measurement.first_error = measurement.first_error or (
                        f"HTTP {status}: {answer[:300].decode('utf-8', 'replace')}"
                    )
        finally:
            connection.close()

    await asyncio.gather(*(client() for _ in range(clients)))
    measurement.seconds = time.perf_counter() - started
    return measurement


def seeded_queries(seed: int) -> Iterator[str]:
    chooser = random.Random(seed)
    while True:
        yield chooser.choice(QUERIES)


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def print_table(
    results: dict[tuple[str, str, int], list[Measurement]],
    operations: list[str],
    levels: list[int],
    runs: int,
) -> None:
    print("| operation | clients | ours req/s | reference req/s | same-search req/s "
          "| ours/reference | ours/same-search | ours p50 ms | reference p50 ms "
          "| same-search p50 ms | errors ours / ref / same |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|")
    for operation in operations:
        for level in levels:
            cells = {name: results[(name, operation, level)] for name in SERVERS}
            rate = {name: median([m.rate for m in cells[name]]) for name in SERVERS}
            p50 = {name: median([m.p50() for m in cells[name]]) for name in SERVERS}
            errors = " / ".join(f"{median([m.errors for m in cells[n]]):.0f}" for n in SERVERS)

            def ratio(other: str, rate: dict[str, float] = rate) -> str:
                return f"{rate['ours'] / rate[other]:.2f}×" if rate[other] else "n/a"

            print(
                f"| {operation} | {level} | {rate['ours']:,.0f} | {rate['reference']:,.0f} "
                f"| {rate['same-search']:,.0f} | {ratio('reference')} | {ratio('same-search')} "
                f"| {p50['ours']:.1f} | {p50['reference']:.1f} | {p50['same-search']:.1f} "
                f"| {errors} |"
            )
    print()
    if "ping" in operations:
        fixed = median([m.p50() for m in results[("ours", "ping", levels[0])]])
        print(f"Fixed cost (ours, ping p50 at {levels[0]} client): {fixed:.2f} ms (goal ≤ 5 ms)")
    print(
        f"Medians over {runs} run(s); errors are the median per run. Goal: ours ≥ 1.0× the "
        "reference; ours/same-search is the endpoint's own cost with the search work equal."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", help="ACL JSONL(.gz) to import (unless --directory has it).")
    parser.add_argument("--limit", type=int, default=20000, help="Import only N records.")
    parser.add_argument("--seconds", type=float, default=8.0)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", default="1,10,50")
    parser.add_argument("--operations", default=",".join(OPERATIONS))
    parser.add_argument("--seed", type=int, default=20261125)
    parser.add_argument("--directory", default=None, help="Keep/reuse the knowledge base here.")
    args = parser.parse_args()
    levels = [int(level) for level in args.concurrency.split(",")]
    operations = [op for op in args.operations.split(",") if op]
    if set(operations) - set(OPERATIONS):
        parser.error(f"operations: {', '.join(OPERATIONS)}")

    with contextlib.ExitStack() as stack:
        if args.directory:
            directory = Path(args.directory).resolve()
            directory.mkdir(parents=True, exist_ok=True)
        else:
            directory = Path(tempfile.mkdtemp(prefix="bench-endpoint-"))
            stack.callback(shutil.rmtree, directory, ignore_errors=True)
        env = server_env(directory)
        env["ENGINES_ENABLED"] = "local"
        ids = paper_ids(env) if (directory / "research.db").exists() else []
        if not ids:
            if not args.corpus:
                parser.error("--corpus is needed to fill a new knowledge base")
            print(
                f"imported in {import_corpus(args.corpus, args.limit, env):.1f} s", file=sys.stderr
            )
            ids = paper_ids(env)
        print(f"{len(ids):,} papers in {directory}", file=sys.stderr)
        logs = directory / "bench-logs"
        logs.mkdir(exist_ok=True)
        servers = {name: start(name, env, logs) for name in SERVERS}
        for server in servers.values():
            stack.callback(stop, server)
        for name, server in servers.items():  # imports, caches and first queries, unmeasured
            for operation in operations:
                asyncio.run(drive(name, server.port, operation, seeded_queries(0), 4, 2.0))

        results: dict[tuple[str, str, int], list[Measurement]] = {}
        for run in range(args.runs):
            order = SERVERS if run % 2 == 0 else SERVERS[::-1]
            for operation in operations:
                for level in levels:
                    for name in order:
                        queries = seeded_queries(args.seed + run * 1000 + level)
                        measurement = asyncio.run(
                            drive(name, servers[name].port, operation, queries, level, args.seconds)
                        )
                        results.setdefault((name, operation, level), []).append(measurement)
                        print(
                            f"run {run + 1} {operation:>6} clients {level:>3} {name:>9}: "
                            f"{measurement.rate:7.1f} req/s  p50 {measurement.p50():6.2f} ms  "
                            f"errors {measurement.errors}"
                            + (f"  first: {measurement.first_error}" if measurement.errors else ""),
                            file=sys.stderr,
                            flush=True,
                        )
        load = os.getloadavg()
    print()
    print(
        f"{len(ids):,} papers, {args.seconds:g} s per cell, {os.cpu_count()} CPUs, "
        f"load average {load[0]:.2f} at the end"
    )
    print()
    print_table(results, operations, levels, args.runs)


if __name__ == "__main__":
    main()

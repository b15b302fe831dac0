"""No network, under load: 50 MCP clients over the real /mcp server while every
default engine is unreachable; local-only tools must not queue behind the engines.

    nice .venv/bin/python benchmarks/bench_offline_load.py [--runs 3] [--seconds 40]

A temporary knowledge base (embedded default: SQLite, no broker; a few hundred synthetic
papers and a project) is served by `manage.py serve` (one uvicorn process). Every default
engine is enabled (SERP_API_KEY is a dummy so Google Scholar is tried too) and points at:

- `refused`: a loopback port nobody listens on (connection refused at once);
- `hang`: a loopback server that accepts connections and never answers (each request
  waits for its read timeout or the search's ENGINE_DEADLINE_SECONDS).

Clients are `bench_mcp.Connection`s (keep-alive HTTP/1.1), each pausing `--think` seconds
between calls as an agent does. Local clients cycle `search_papers engines:"local"`,
`get_paper_details` and `list_projects`; external clients call `search_papers` with the
default engines. Each run restarts the server (breakers closed, cold first wave), then
measures the local clients alone for `--seconds`, then local and external clients together
for `--seconds`. A call that gets no answer within `--client-timeout` is a client timeout.

Goals: 0 client timeouts, and each local-only tool's p95 under load within 2x its p95
alone. Prints a markdown table: medians over the runs (timeouts and errors: totals).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import random
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_mcp import (  # noqa: E402
    HOST,
    Connection,
    free_port,
    server_env,
    start_server,
    stop_server,
)
from benchmarks.bench_offline import URL_SETTINGS  # noqa: E402

LOCAL_TOOLS = ("search_papers_local", "get_paper_details", "list_projects")
EXTERNAL = "search_papers_default"
P95_RATIO_GOAL = 2.0
WORDS = (
    "attention transformer retrieval parsing translation summarization dialogue graph "
    "neural sparse dense entity relation question answering speech vision multilingual "
    "benchmark corpus embedding contrastive generation reasoning alignment decoding"
).split()

SEED_SCRIPT = """
import json, random, sys
import django
django.setup()
from core.bootstrap import prepare_knowledge_base
from papers.schemas import PaperRecord
from papers.services import papers_upsert
from projects.services import project_add_papers, project_create
prepare_knowledge_base()
words = sys.argv[1].split()
chooser = random.Random(7)
records = [
    PaperRecord.build(
        title=" ".join(chooser.sample(words, 5)).capitalize() + f" ({i})",
        authors=[f"Author {chooser.randint(1, 80)}", f"Writer {chooser.randint(1, 80)}"],
        year=chooser.randint(2010, 2024),
        abstract=" ".join(chooser.choices(words, k=60)),
    )
    for i in range(int(sys.argv[2]))
]
outcome = papers_upsert(records=records)
project = project_create(name="Load test")
project_add_papers(project=project, paper_ids=outcome.paper_ids[:50])
print(json.dumps(outcome.paper_ids))
"""


# --- the world outside: refused, or hanging ------------------------------------------


class Blackhole:
    """Accepts every connection and never answers (nor closes) it."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind((HOST, 0))
        self.sock.listen(1024)
        self.port = self.sock.getsockname()[1]
        self.held: list[socket.socket] = []
        self.closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self.closed:
            try:
                connection, _ = self.sock.accept()
            except OSError:
                return
            self.held.append(connection)

    def close(self) -> None:
        self.closed = True
        self.sock.close()
        for connection in self.held:
            connection.close()


def engine_env(base: dict[str, str], address: str) -> dict[str, str]:
    env = {**base, "SERP_API_KEY": "bench-dummy-key", "EMBEDDINGS_ENABLED": "false"}
    env.pop("ENGINES_ENABLED", None)  # every default engine
    for setting in URL_SETTINGS.values():
        env[setting] = address
    return env


# --- the clients ----------------------------------------------------------------------


@dataclass
class Phase:
    latencies: dict[str, list[float]] = field(default_factory=lambda: defaultdict(list))
    timeouts: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    errors: dict[str, int] = field(default_factory=lambda: defaultdict(int))
    first_error: str = ""

    def p(self, kind: str, fraction: float) -> float:
        values = sorted(self.latencies.get(kind, []))
        if not values:
            return float("nan")
        return values[min(len(values) - 1, int(fraction * len(values)))] * 1000


def tool_body(request_id: int, kind: str, chooser: random.Random, ids: list[int]) -> bytes:
    query = " ".join(chooser.sample(WORDS, 2))
    name, arguments = {
        "search_papers_local": ("search_papers", {"query": query, "engines": "local"}),
        "get_paper_details": ("get_paper_details", {"paper_id": chooser.choice(ids)}),
        "list_projects": ("list_projects", {}),
        EXTERNAL: ("search_papers", {"query": query}),
    }[kind]
    message = {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(message).encode()


def answered(status: int, payload: bytes) -> str:
    """'' for a successful tool answer, else what was wrong."""
    if status != 200:
        return f"HTTP {status}: {payload[:200]!r}"
    result = json.loads(payload).get("result")
    if not isinstance(result, dict) or result.get("isError"):
        return f"error: {payload[:200]!r}"
    return ""


async def client(
    port: int, kinds: list[str], ids: list[int], phase: Phase, until: float, options: Any
) -> None:
    chooser = random.Random(id(phase) ^ hash(tuple(kinds)) ^ random.getrandbits(32))
    connection = Connection(port)
    counter = 0
    await asyncio.sleep(chooser.uniform(0, options.think))  # clients do not start in step
    try:
        while time.monotonic() < until:
            kind = kinds[counter % len(kinds)]
            counter += 1
            body = tool_body(counter, kind, chooser, ids)
            sent = time.monotonic()
            try:
                async with asyncio.timeout(options.client_timeout):
                    status, payload = await connection.post(body)
            except TimeoutError:
                connection.close()  # the client gives up: its connection goes away
                phase.timeouts[kind] += 1
                continue
            except (OSError, asyncio.IncompleteReadError, ValueError) as exc:
                connection.close()
                status, payload = 0, repr(exc).encode()
            problem = answered(status, payload)
            if problem:
                phase.errors[kind] += 1
                phase.first_error = phase.first_error or f"{kind}: {problem}"
            else:
                phase.latencies[kind].append(time.monotonic() - sent)
            await asyncio.sleep(options.think)
    finally:
        connection.close()


async def drive(port: int, ids: list[int], external: int, options: Any) -> Phase:
    phase = Phase()
    until = time.monotonic() + options.seconds
    local_clients = [
        client(port, list(LOCAL_TOOLS[i % 3 :] + LOCAL_TOOLS[: i % 3]), ids, phase, until, options)
        for i in range(options.local_clients)
    ]
    external_clients = [
        client(port, [EXTERNAL], ids, phase, until, options) for _ in range(external)
    ]
    await asyncio.gather(*local_clients, *external_clients)
    return phase


# --- runs and report ------------------------------------------------------------------


def seed(env: dict[str, str], papers: int) -> list[int]:
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    done = subprocess.run(
        [sys.executable, "-c", SEED_SCRIPT, " ".join(WORDS), str(papers)],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"seeding failed:\n{done.stderr}")
    return [int(pk) for pk in json.loads(done.stdout.strip().splitlines()[-1])]


def one_run(
    mode: str, env: dict[str, str], ids: list[int], logs: Path, options: Any
) -> tuple[Phase, Phase]:
    server = start_server("ours", env, logs)
    try:
        asyncio.run(_warm_up(server.port, ids))
        alone = asyncio.run(drive(server.port, ids, 0, options))
        loaded = asyncio.run(drive(server.port, ids, options.external_clients, options))
    finally:
        stop_server(server)
    return alone, loaded


async def _warm_up(port: int, ids: list[int]) -> None:
    """The library's first searches and reads, off the clock (no engine is asked)."""
    connection = Connection(port)
    chooser = random.Random(1)
    try:
        for request_id in range(30):
            kind = LOCAL_TOOLS[request_id % 3]
            await connection.post(tool_body(request_id, kind, chooser, ids))
    finally:
        connection.close()


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def report(
    results: dict[str, list[tuple[Phase, Phase]]], options: Any, load: tuple[float, ...]
) -> None:
    print()
    print(
        f"{options.local_clients} local + {options.external_clients} external clients "
        f"(think {options.think:g} s, client timeout {options.client_timeout:g} s), "
        f"{options.seconds:g} s per phase, {options.runs} run(s), {os.cpu_count()} CPUs, "
        f"load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f} at the end"
    )
    print()
    print(
        "| engines | tool | calls alone / loaded | p50 alone ms | p50 loaded ms "
        "| p95 alone ms | p95 loaded ms | p95 ratio | timeouts | errors | goal met |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for mode, runs in results.items():
        for kind in (*LOCAL_TOOLS, EXTERNAL):
            alone = [a for a, _ in runs]
            loaded = [b for _, b in runs]
            timeouts = sum(p.timeouts.get(kind, 0) for p in alone + loaded)
            errors = sum(p.errors.get(kind, 0) for p in alone + loaded)
            calls_alone = median([len(p.latencies.get(kind, [])) for p in alone])
            calls_loaded = median([len(p.latencies.get(kind, [])) for p in loaded])
            p95_loaded = median([p.p(kind, 0.95) for p in loaded])
            if kind == EXTERNAL:
                p95_alone = ratio = float("nan")
                met = timeouts == 0
                label = "search_papers (default engines)"
                p50_alone = float("nan")
            else:
                p95_alone = median([p.p(kind, 0.95) for p in alone])
                ratio = p95_loaded / p95_alone if p95_alone else float("nan")
                met = timeouts == 0 and ratio <= P95_RATIO_GOAL
                label = kind.replace("search_papers_local", 'search_papers engines:"local"')
                p50_alone = median([p.p(kind, 0.5) for p in alone])
            print(
                f"| {mode} | {label} | {calls_alone:.0f} / {calls_loaded:.0f} "
                f"| {p50_alone:.1f} | {median([p.p(kind, 0.5) for p in loaded]):.1f} "
                f"| {p95_alone:.1f} | {p95_loaded:.1f} | {ratio:.2f} | {timeouts} | {errors} "
                f"| {'yes' if met else 'NO'} |"
            )
    print()
    print("Medians over the runs; timeouts and errors are totals over all runs and phases. "
          "Goal: 0 timeouts; local tools' p95 under load <= 2x alone.")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=40.0, help="Per phase.")
    parser.add_argument("--local-clients", type=int, default=25)
    parser.add_argument("--external-clients", type=int, default=25)
    parser.add_argument("--think", type=float, default=0.5, help="Seconds between calls.")
    parser.add_argument("--client-timeout", type=float, default=30.0)
    parser.add_argument("--papers", type=int, default=500)
    parser.add_argument("--modes", default="refused,hang")
    options = parser.parse_args()
    modes = [mode.strip() for mode in options.modes.split(",") if mode.strip()]
    if not set(modes) <= {"refused", "hang"} or options.runs < 1:
        parser.error("--modes takes refused and/or hang; --runs at least 1")

    with contextlib.ExitStack() as stack:
        directory = Path(tempfile.mkdtemp(prefix="bench-offline-load-"))
        stack.callback(shutil.rmtree, directory, ignore_errors=True)
        base = server_env(directory)
        ids = seed(base, options.papers)
        logs = directory / "bench-logs"
        logs.mkdir()
        blackhole = Blackhole()
        stack.callback(blackhole.close)
        addresses = {
            "refused": f"http://{HOST}:{free_port()}",  # nothing listens there
            "hang": f"http://{HOST}:{blackhole.port}",
        }
        load = os.getloadavg()
        print(f"load average before: {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}", file=sys.stderr)
        results: dict[str, list[tuple[Phase, Phase]]] = {}
        for run in range(options.runs):
            for mode in modes:
                env = engine_env(base, addresses[mode])
                alone, loaded = one_run(mode, env, ids, logs, options)
                results.setdefault(mode, []).append((alone, loaded))
                print(
                    f"run {run + 1} {mode}: local p95 alone "
                    + ", ".join(f"{k} {alone.p(k, 0.95):.0f}" for k in LOCAL_TOOLS)
                    + " ms; loaded "
                    + ", ".join(f"{k} {loaded.p(k, 0.95):.0f}" for k in (*LOCAL_TOOLS, EXTERNAL))
                    + f" ms; timeouts {dict(loaded.timeouts)}; errors {dict(loaded.errors)}"
                    + (f"; first error {loaded.first_error}" if loaded.first_error else ""),
                    file=sys.stderr,
                    flush=True,
                )
        load = os.getloadavg()
    report(results, options, load)


if __name__ == "__main__":
    main()

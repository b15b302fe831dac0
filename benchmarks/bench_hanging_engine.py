"""An engine that accepts connections and never answers, asked by 50 clients at once
through the real /mcp server: how many calls reach it and wait, and what the library's
own tools cost meanwhile (docs/RELIABILITY.md, "A source that never answers").

    nice .venv/bin/python benchmarks/bench_hanging_engine.py [--clients 50] [--waves 2]

A temporary knowledge base (SQLite, no broker, 500 synthetic papers) is served by
`manage.py serve`; OpenAlex, the only engine enabled, points at a loopback server that
accepts every connection and never answers (benchmarks/bench_offline_load.Blackhole).
Each wave: `--clients` clients send one `search_papers` (engines "openalex") at the same
moment, while `--local-clients` clients call `get_paper_details` on the library without
pause. Between waves nothing is reset. Prints, per wave: connections the engine received,
search latencies (p50 / p95 / max), searches that waited longer than
ENGINE_PROBE_WAIT_SECONDS + 3 s and over 10 s, each answer's latency and message, and
get_paper_details' p50 / p95, also alone (before the first wave) for comparison.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_mcp import HOST, Connection, server_env, start_server, stop_server  # noqa: E402
from benchmarks.bench_offline_load import Blackhole, seed  # noqa: E402


def body(request_id: int, name: str, arguments: dict[str, object]) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call",
               "params": {"name": name, "arguments": arguments}}  # fmt: skip
    return json.dumps(message).encode()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000 if ordered else 0.0


async def search(port: int, request_id: int, start: asyncio.Event) -> tuple[float, str]:
    connection = Connection(port)
    try:
        await start.wait()
        sent = time.monotonic()
        _, payload = await connection.post(
            body(request_id, "search_papers", {"query": "attention", "engines": "openalex"})
        )
        return time.monotonic() - sent, payload.decode(errors="replace")[:400]
    finally:
        connection.close()


async def local(port: int, ids: list[int], done: asyncio.Event, latencies: list[float]) -> None:
    connection = Connection(port)
    chooser = random.Random()
    request_id = 0
    try:
        while not done.is_set():
            request_id += 1
            sent = time.monotonic()
            status, _ = await connection.post(
                body(request_id, "get_paper_details", {"paper_id": chooser.choice(ids)})
            )
            if status == 200:
                latencies.append(time.monotonic() - sent)
    finally:
        connection.close()


async def wave(port: int, ids: list[int], options: argparse.Namespace) -> dict[str, object]:
    start, done = asyncio.Event(), asyncio.Event()
    local_latencies: list[float] = []
    searches = [asyncio.create_task(search(port, i, start)) for i in range(options.clients)]
    locals_ = [asyncio.create_task(local(port, ids, done, local_latencies))
               for _ in range(options.local_clients)]  # fmt: skip
    await asyncio.sleep(1.0)  # the local clients get going first
    if options.clients == 0:
        await asyncio.sleep(options.baseline_seconds)
    start.set()
    answers = await asyncio.gather(*searches)
    done.set()
    await asyncio.gather(*locals_)
    latencies = [seconds for seconds, _ in answers] or [0.0]
    return {
        "search_p50_ms": percentile(latencies, 0.5),
        "search_p95_ms": percentile(latencies, 0.95),
        "search_max_ms": max(latencies) * 1000,
        "within_1s": sum(seconds <= 1 for seconds in latencies),
        "within_probe_wait_plus_3s": sum(s <= options.probe_wait + 3 for s in latencies),
        "over_10s": sum(seconds > 10 for seconds in latencies),
        "local_calls": len(local_latencies),
        "local_p50_ms": percentile(local_latencies, 0.5),
        "local_p95_ms": percentile(local_latencies, 0.95),
        "messages": dict(Counter(_message(text) for _, text in answers)),
    }


def _message(text: str) -> str:
    found = re.search(r'message\\":\\"([^\\]*)', text)
    return found.group(1) if found else text[:80]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--local-clients", type=int, default=5)
    parser.add_argument("--waves", type=int, default=2)
    parser.add_argument("--papers", type=int, default=500)
    parser.add_argument("--probe-wait", type=float, default=5.0)
    parser.add_argument("--baseline-seconds", type=float, default=10.0)
    options = parser.parse_args()
    directory = Path(tempfile.mkdtemp(prefix="bench-hanging-"))
    blackhole = Blackhole()
    try:
        env = {**server_env(directory), "EMBEDDINGS_ENABLED": "false",
               "ENGINES_ENABLED": "local,openalex",
               "OPENALEX_API_URL": f"http://{HOST}:{blackhole.port}",
               "ENGINE_PROBE_WAIT_SECONDS": f"{options.probe_wait:g}"}  # fmt: skip
        ids = seed(env, options.papers)
        logs = directory / "logs"
        logs.mkdir()
        server = start_server("ours", env, logs)
        try:
            alone = argparse.Namespace(**{**vars(options), "clients": 0})
            baseline = asyncio.run(wave(server.port, ids, alone))
            print(json.dumps({"wave": "local tools alone", **{
                key: baseline[key] for key in ("local_calls", "local_p50_ms", "local_p95_ms")
            }}), flush=True)  # fmt: skip
            for number in range(1, options.waves + 1):
                before = len(blackhole.held)
                result = asyncio.run(wave(server.port, ids, options))
                reached = len(blackhole.held) - before
                print(json.dumps({"wave": number, "engine_connections": reached, **result}))
        finally:
            stop_server(server)
    finally:
        blackhole.close()
        shutil.rmtree(directory, ignore_errors=True)
    print(f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}", file=sys.stderr)


if __name__ == "__main__":
    main()

"""Saved searches: one run over five engines, one of them down.

    benchmarks/bench_saved_search.py [--repeats 20] [--quick]

A saved search over five plugin engines (written into a temporary knowledge base's
engines/ folder as a user would; each an HTTP client on engines/http.py, the path of the
built-in OpenAlex, Crossref and Semantic Scholar engines) of a local server, in its own
process, that answers after a latency like the real source's (SOURCES: arXiv slowest,
OpenAlex quickest) with 10 records each, half of them the same works as another
engine's; one new work per engine per run. The fifth engine is down: its port refuses
connections.

Each repeat runs the search through `saved_search_run`, the service `run_saved_search`
(the tool), the admin's "Run now", the command and the scheduler call: the engines in
parallel, the library's search, the upsert and de-duplication, the new-paper check
against the library and the earlier runs, the alert. Before each run the engines' circuit
breakers are closed again, as they would be for a scheduled run hours after the last one.

Two scenarios: the defaults (the down engine's refused connections are retried,
ENGINE_MAX_RETRIES, with backoff) and retries off. Printed: wall time per run (median, min,
max over the repeats), the slowest healthy engine's latency, the overhead of the run over
it (median wall time minus that latency), and how much of the run is the saved search's
own steps (outside `engines_search`, which search_papers shares). Embedded default
(SQLite, engine calls on threads of this process).
Nothing is asserted.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
# Engine -> seconds before it answers (typical of the real sources from this machine's
# network; arXiv's API is the slowest of them); None: down (connection refused).
SOURCES: dict[str, float | None] = {
    "bench_arxiv": 0.90,
    "bench_crossref": 0.50,
    "bench_semantic_scholar": 0.35,
    "bench_openalex": 0.25,
    "bench_scholar_down": None,
}
RECORDS_PER_ENGINE = 10

SERVER_SCRIPT = r"""
import json, sys, threading, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import urlsplit

delays = json.loads(sys.argv[1])
per_engine = int(sys.argv[2])
counts = {name: 0 for name in delays}
lock = threading.Lock()


def records(engine, run):
    # Half shared with the next engine (the same work found twice), half its own, and one
    # work new at every run.
    names = list(delays)
    partner = names[(names.index(engine) + 1) % len(names)]
    shared = [{"title": f"Shared work {min(engine, partner)} {i}", "authors": ["Grace Hopper"],
               "year": 2024, "doi": f"10.5555/{min(engine, partner)}.{i}"}
              for i in range(per_engine // 2)]
    own = [{"title": f"Work of {engine} number {i}", "authors": ["Ada Lovelace"], "year": 2024,
            "arxiv_id": f"2401.{abs(hash(engine)) % 9000 + 1000}{i}"}
           for i in range(per_engine // 2 - 1)]
    fresh = [{"title": f"Fresh work {engine} run {run}", "authors": ["Alan Turing"],
              "year": 2025, "doi": f"10.5555/fresh.{engine}.{run}"}]
    return fresh + shared + own


class Handler(BaseHTTPRequestHandler):
    def do_GET(self):
        engine = urlsplit(self.path).path.strip("/").split("/")[0]
        if engine not in delays:
            self.send_response(404); self.end_headers(); return
        with lock:
            counts[engine] += 1
            run = counts[engine]
        time.sleep(delays[engine])
        body = json.dumps(records(engine, run)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
server.daemon_threads = True
threading.Thread(target=server.serve_forever, daemon=True).start()
print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
sys.stdin.read()
server.shutdown()
"""

PLUGIN = '''
"""Benchmark engine ({engine_id}): a local server through engines/http.py."""

from engines.base import SEARCH, BaseSearchEngine
from engines.http import get_json
from papers.schemas import PaperRecord


class BenchEngine(BaseSearchEngine):
    id = {engine_id!r}
    name = {engine_id!r}
    operations = frozenset({{SEARCH}})
    rate_limit = "1000/second"
    cache_ttl = 0
    timeout = 10.0

    def search(self, request):
        items = get_json(
            {base_url!r} + "/search", params={{"q": request.query}}, headers={{}},
            timeout=self.timeout, engine_name=self.name,
        )
        return [PaperRecord.build(source=self.id, **item) for item in items]
'''


def configure() -> Path:
    """The embedded default in a temporary knowledge base (no broker, SQLite)."""
    for name in (
        "DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND",
        "ENGINES_ENABLED", "ENGINE_RATE_LIMITS", "ENGINE_CACHE_TTLS", "MCP_READ_ONLY",
        "ENGINE_MAX_RETRIES", "ALERT_EMAIL_TO",
    ):  # fmt: skip
        os.environ.pop(name, None)
    directory = Path(tempfile.mkdtemp(prefix="bench-saved-search-"))
    os.environ.update(
        DJANGO_SETTINGS_MODULE="research_site.settings",
        LOG_LEVEL="ERROR",
        RESEARCH_DIRECTORY=str(directory),
        SAVED_SEARCH_SCHEDULER="off",
    )
    return directory


def closed_port() -> int:
    """A port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@contextlib.contextmanager
def local_sources() -> Iterator[str]:
    delays = {name: delay for name, delay in SOURCES.items() if delay is not None}
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER_SCRIPT, json.dumps(delays), str(RECORDS_PER_ENGINE)],
        cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdin is not None and process.stdout is not None
    try:
        url = process.stdout.readline().strip()
        if not url:
            raise SystemExit("the local HTTP server did not start")
        yield url
    finally:
        process.stdin.close()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()


def write_engines(url: str) -> None:
    from django.conf import settings

    folder = Path(settings.ENGINES_DIR)
    folder.mkdir(parents=True, exist_ok=True)
    down = f"http://127.0.0.1:{closed_port()}"
    for engine_id, delay in SOURCES.items():
        base = f"{url}/{engine_id}" if delay is not None else down
        (folder / f"{engine_id}.py").write_text(PLUGIN.format(engine_id=engine_id, base_url=base))


def scenario(name: str, repeats: int, retries: int) -> dict[str, Any]:
    from django.conf import settings

    from engines import breaker
    from projects.models import SavedSearch
    from projects.watch import services
    from projects.watch.services import saved_search_run, saved_search_save

    # Time the part search_papers shares (the engines in parallel, the library's search,
    # the upsert): the rest of the run is the saved search's own work.
    in_search: list[float] = []
    engines_search = services.engines_search

    def timed_engines_search(**kwargs: Any) -> Any:
        started = time.perf_counter()
        try:
            return engines_search(**kwargs)
        finally:
            in_search.append(time.perf_counter() - started)

    services.engines_search = timed_engines_search  # type: ignore[assignment]

    settings.ENGINE_MAX_RETRIES = retries
    search, _ = saved_search_save(
        name=f"bench {name}", query="long context retrieval", engines=list(SOURCES),
        schedule="manual", max_results=RECORDS_PER_ENGINE,
    )  # fmt: skip
    search = SavedSearch.objects.get(pk=search.pk)
    walls: list[float] = []
    own: list[float] = []
    new: list[int] = []
    statuses: dict[str, str] = {}
    for number in range(repeats + 1):  # the first run fills the library: not counted
        breaker.reset_all()
        started = time.perf_counter()
        run = saved_search_run(search=search)
        elapsed = time.perf_counter() - started
        if number == 0:
            continue
        walls.append(elapsed)
        own.append(elapsed - in_search[-1])
        new.append(run.new)
        statuses = {engine: status["status"] for engine, status in run.engines.items()}
        print(f"{name} run {number}: {elapsed * 1000:.0f} ms, {run.new} new", file=sys.stderr)
    services.engines_search = engines_search  # type: ignore[assignment]
    return {
        "name": name, "retries": retries, "walls": walls, "own": own, "new": new,
        "statuses": statuses,
    }  # fmt: skip


def table(results: list[dict[str, Any]], repeats: int) -> str:
    slowest = max(delay for delay in SOURCES.values() if delay is not None)
    lines = [
        f"Saved search over {len(SOURCES)} engines (latencies "
        + ", ".join(
            f"{engine.removeprefix('bench_')} {delay * 1000:.0f} ms" if delay is not None
            else f"{engine.removeprefix('bench_')} down"
            for engine, delay in SOURCES.items()
        )
        + f"; {RECORDS_PER_ENGINE} records each), {repeats} runs per scenario after a first "
        "that fills the library; `saved_search_run`, the service `run_saved_search` calls. "
        "Overhead: wall time minus the slowest engine's latency; the saved-search steps "
        "(new-paper check, memory of earlier runs, alert) are the part of the run outside "
        "search_papers' own path (engines, library search, upsert).",
        "",
        "| scenario | wall p50 (ms) | min (ms) | max (ms) | slowest engine (ms) "
        "| overhead p50 (ms) | of which saved-search steps p50 (ms) | new papers per run "
        "| down engine |",
        "|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]  # fmt: skip
    for result in results:
        walls = [wall * 1000 for wall in result["walls"]]
        p50 = statistics.median(walls)
        down = next((s for e, s in result["statuses"].items() if SOURCES.get(e, 0) is None), "-")
        lines.append(
            f"| {result['name']} (ENGINE_MAX_RETRIES={result['retries']}) | {p50:.0f} "
            f"| {min(walls):.0f} | {max(walls):.0f} | {slowest * 1000:.0f} "
            f"| {p50 - slowest * 1000:.0f} | {statistics.median(result['own']) * 1000:.0f} "
            f"| {statistics.median(result['new']):.0f} | {down} |"
        )
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--quick", action="store_true", help="5 runs per scenario.")
    args = parser.parse_args()
    repeats = 5 if args.quick else args.repeats
    directory = configure()
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        with local_sources() as url:
            write_engines(url)
            from engines.registry import registry

            registry.refresh()
            results = [
                scenario("defaults", repeats, retries=3),
                scenario("retries off", repeats, retries=0),
            ]
        print(table(results, repeats))
    finally:
        shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()

"""Search engines: fan-out overhead, cache hits, de-duplication of mixed results.

    benchmarks/bench_engines.py [--repeats 30] [--cache-repeats 200] [--twins 14] [--seed 7]
    benchmarks/bench_engines.py --celery       (under scripts/with-celery-worker.sh, below)

1. Fan-out: plugin engines (tests/engines/plugins.py: real HTTP clients, written into the
   knowledge base's engines/ folder as a user would) of a local server that answers after
   50, 100 and 200 ms. Overhead = wall time of `run_calls` minus the slowest engine's
   delay; cache off (cache_ttl 0), rate limit 1000/second. Rows: one engine called
   directly with `call_engine` (what one call costs by itself), then 1, 3 and 6 engines
   through `run_calls`; the scenarios take turns within every repeat. The server runs in
   its own process, so its threads do not compete for this process's GIL.
2. Cache: `call_engine` answered from the cache (cache_ttl > 0), a miss (lookup, call,
   store) and an uncached call (cache_ttl 0), against a server answering at once; on the
   file cache and, when REDIS_URL is set, on Redis.
3. De-duplication: the recorded arXiv answers (tests/fixtures/arxiv) and SerpApi answers
   (tests/fixtures/serpapi), replayed from a local server through ArxivEngine and
   GoogleScholarEngine, plus Scholar twins of a seeded sample of the arXiv papers. The
   twins are DERIVED, not recorded: what Scholar shows for an arXiv paper (authors as
   initials + family name, title case changed, sometimes a trailing period, venue and
   snippet cut with '…', the journal's year when arXiv's differs, no arXiv id, sometimes
   an arxiv.org link), written as SerpApi organic results and parsed by the same engine.
   Everything is upserted with `papers_upsert` into an empty library (rolled back after
   each order) in three orders; prints the true duplicate pairs merged (recall), distinct
   papers merged (false merges), records in and papers out.

Embedded mode (default): a temporary knowledge base, SQLite, engine calls in threads of
this process (CELERY_TASK_ALWAYS_EAGER). `--celery`: `run_calls` sends the calls to Celery
workers on the `engines` queue. It needs REDIS_URL and the RESEARCH_DIRECTORY the workers
were started with (the plugins go into its engines/ folder, where the workers find them);
DATABASE_URL is used for part 3. scripts/with-celery-worker.sh gives its workers
test_<name> of DATABASE_URL (the pytest database); engine calls never touch a database.

    createdb -h 127.0.0.1 -U postgres benchengines
    DATABASE_URL=postgres://postgres@127.0.0.1:5432/benchengines \\
    REDIS_URL=redis://127.0.0.1:6379/13 RESEARCH_DIRECTORY=$(mktemp -d) \\
        scripts/with-celery-worker.sh .venv/bin/python benchmarks/bench_engines.py --celery

Prints one markdown table per part (progress on stderr). Times are wall-clock on this
machine: say what else was running when you paste them. Nothing is asserted.

One file because a benchmark is one command with one report: its local engine servers,
workloads and goals are read together, and no other module imports them.
"""

from __future__ import annotations

import argparse
import base64
import contextlib
import hashlib
import itertools
import json
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast
from urllib.parse import parse_qs, urlsplit

if TYPE_CHECKING:
    from papers.schemas import PaperRecord

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures"
OVERHEAD_GOAL_MS = 100.0  # fan-out overhead over the slowest engine, at p50
DEADLINE_SECONDS = 10.0
WARMUP_ROUNDS = 5
CACHE_TTL_SECONDS = 600
PAPER = {"title": "Attention Is All You Need", "authors": ["Ashish Vaswani"], "year": 2017}


# --- environment --------------------------------------------------------------------------


@dataclass
class Setup:
    directory: Path
    owned: bool  # a temporary knowledge base of ours, removed at the end
    redis_url: str  # REDIS_URL as given, also in embedded mode (for the Redis cache rows)


def configure(celery: bool) -> Setup:
    """The environment django.setup() reads: embedded defaults, or the workers' own."""
    redis_url = os.environ.get("REDIS_URL", "")
    # Settings that would change what is measured (disabled engines, other limits/TTLs).
    for name in ("ENGINES_ENABLED", "ENGINE_RATE_LIMITS", "ENGINE_CACHE_TTLS", "MCP_READ_ONLY"):
        os.environ.pop(name, None)
    os.environ.update(DJANGO_SETTINGS_MODULE="research_site.settings", LOG_LEVEL="WARNING")
    if celery:
        missing = [name for name in ("REDIS_URL", "RESEARCH_DIRECTORY") if not os.environ.get(name)]
        if missing:
            raise SystemExit(
                f"--celery needs {' and '.join(missing)}: the broker and the knowledge base "
                "the workers were started with (see scripts/with-celery-worker.sh)."
            )
        return Setup(Path(os.environ["RESEARCH_DIRECTORY"]), False, redis_url)
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND"):
        os.environ.pop(name, None)
    directory = Path(tempfile.mkdtemp(prefix="bench-engines-"))
    os.environ["RESEARCH_DIRECTORY"] = str(directory)
    return Setup(directory, True, redis_url)


def engine_workers() -> list[str]:
    """Workers consuming the `engines` queue."""
    from research_site.celery import app

    queues = app.control.inspect(timeout=3.0).active_queues() or {}
    return sorted(
        name for name, items in queues.items() if any(q.get("name") == "engines" for q in items)
    )


SERVER_SCRIPT = """
import json, sys
from tests.engines.replay import ReplayServer, Reply
server = ReplayServer()
body = json.loads(sys.argv[2])
for path, delay_ms in json.loads(sys.argv[1]):
    server.add(path, Reply(200, body, delay=delay_ms / 1000))
server.start()
print(server.url, flush=True)
sys.stdin.read()  # until the benchmark closes our stdin
server.stop()
"""


@contextlib.contextmanager
def local_source(delays_ms: list[int]) -> Iterator[str]:
    """A ReplayServer in its own process answering `/d<ms>/search` after <ms>; its URL."""
    routes = [(f"/d{delay}/search", delay) for delay in delays_ms]
    process = subprocess.Popen(
        [sys.executable, "-c", SERVER_SCRIPT, json.dumps(routes), json.dumps([PAPER])],
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


# An engine on engines/http.py, the HTTP path of the built-in OpenAlex, Crossref and
# Semantic Scholar engines (one pooled client per source since the per-request client was
# found to cost 25-60 ms here).
HTTP_MODULE_PLUGIN = '''
"""Benchmark engine ({engine_id}): papers from a local server through engines/http.py."""

from engines.base import SEARCH, BaseSearchEngine
from engines.http import get_json
from papers.schemas import PaperRecord


class HttpModuleEngine(BaseSearchEngine):
    id = {engine_id!r}
    name = {engine_id!r}
    operations = frozenset({{SEARCH}})
    rate_limit = "1000/second"
    cache_ttl = {cache_ttl!r}
    timeout = {timeout!r}

    def search(self, request):
        items = get_json(
            {base_url!r} + "/search", params={{"q": request.query}}, headers={{}},
            timeout=self.timeout, engine_name=self.name,
        )
        return [PaperRecord.build(source=self.id, **item) for item in items]
'''


def add_engine(engine_id: str, base_url: str, *, cache_ttl: int = 0) -> Path:
    """An engine using engines/http.py, as the built-in engines do."""
    from django.conf import settings

    path = Path(settings.ENGINES_DIR) / f"{engine_id}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        HTTP_MODULE_PLUGIN.format(
            engine_id=engine_id, base_url=base_url, cache_ttl=cache_ttl, timeout=DEADLINE_SECONDS
        )
    )
    return path


# The same engine keeping one httpx.Client for the life of the process: what the fan-out
# costs when no client (and no SSL context) is built per request.
SHARED_CLIENT_PLUGIN = '''
"""Benchmark engine ({engine_id}): papers from a local server, over one shared client."""

import httpx

from engines.base import SEARCH, BaseSearchEngine
from papers.schemas import PaperRecord

CLIENT = httpx.Client(timeout={timeout!r})


class SharedClientEngine(BaseSearchEngine):
    id = {engine_id!r}
    name = {engine_id!r}
    operations = frozenset({{SEARCH}})
    rate_limit = "1000/second"
    cache_ttl = 0

    def search(self, request):
        response = CLIENT.get({base_url!r} + "/search", params={{"q": request.query}})
        response.raise_for_status()
        return [PaperRecord.build(source=self.id, **item) for item in response.json()]
'''


def add_shared_client_engine(engine_id: str, base_url: str) -> Path:
    from django.conf import settings

    path = Path(settings.ENGINES_DIR) / f"{engine_id}.py"
    path.parent.mkdir(parents=True, exist_ok=True)
    source = SHARED_CLIENT_PLUGIN.format(
        engine_id=engine_id, base_url=base_url, timeout=DEADLINE_SECONDS
    )
    path.write_text(source)
    return path


def client_construction_ms(repeats: int = 30) -> tuple[float, float]:
    """p50 ms to build one httpx.Client, and one ssl.create_default_context(), here."""
    import ssl

    import httpx

    def p50(build: Any) -> float:
        times = []
        for _ in range(repeats):
            started = time.perf_counter()
            build()
            times.append((time.perf_counter() - started) * 1000)
        return statistics.median(times)

    return p50(httpx.Client), p50(ssl.create_default_context)


# --- statistics ---------------------------------------------------------------------------


def pct(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def median(values: list[float]) -> float:
    return statistics.median(values) if values else float("nan")


def span(values: list[float]) -> str:
    return f"{min(values):.1f}–{max(values):.1f}" if values else ""


# --- 1. fan-out -----------------------------------------------------------------------------


@dataclass
class Scenario:
    label: str
    path: str
    engines: list[tuple[str, int]]  # (engine id, delay in ms)
    direct: bool = False
    shared: bool = False  # one httpx.Client per engine instead of one per request
    wall: list[float] = field(default_factory=list)
    in_call: list[float] = field(default_factory=list)  # slowest call's own time - its delay
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def slowest(self) -> int:
        return max(delay for _, delay in self.engines)

    @property
    def overhead(self) -> list[float]:
        return [wall - self.slowest for wall in self.wall]

    def run(self, number: int, *, measured: bool) -> None:
        from engines.base import SearchRequest
        from engines.runner import EngineCall, call_engine, run_calls

        request = SearchRequest(query=f"fan-out {number}", max_results=5)
        calls = [EngineCall.search(engine_id, request) for engine_id, _ in self.engines]
        started = time.perf_counter()
        if self.direct:
            call = calls[0]
            outcomes = [
                call_engine(
                    call.engine, call.operation, call.arguments, timeout_seconds=DEADLINE_SECONDS
                )
            ]
        else:
            outcomes = run_calls(calls, deadline_seconds=DEADLINE_SECONDS)
        wall = (time.perf_counter() - started) * 1000
        failed = [outcome for outcome in outcomes if not outcome.ok]
        if not measured:
            return
        if failed:  # a failed round says nothing about overhead: counted, not timed
            self.errors.update(f"{o.status}: {o.message[:80]}" for o in failed)
            return
        self.wall.append(wall)
        self.in_call.append(max(outcome.elapsed_ms for outcome in outcomes) - self.slowest)


def bench_fanout(url: str, repeats: int, tag: str, via: str) -> list[Scenario]:
    from engines.registry import registry

    def engines(name: str, delays: list[int], *, shared: bool = False) -> list[tuple[str, int]]:
        found = []
        for index, delay in enumerate(delays):
            engine_id = f"bench_{tag}_{name}_{index}"
            add = add_shared_client_engine if shared else add_engine
            add(engine_id, f"{url}/d{delay}")
            found.append((engine_id, delay))
        return found

    three, six = [50, 100, 200], [50, 100, 200, 50, 100, 200]
    single, shared_single = engines("single", [200]), engines("shared1", [200], shared=True)
    fan_out, direct = f"run_calls, {via}", "call_engine, this thread"
    scenarios = [
        Scenario("1 engine (200 ms)", direct, single, direct=True),
        Scenario("1 engine (200 ms)", fan_out, single),
        Scenario("3 engines (50/100/200 ms)", fan_out, engines("three", three)),
        Scenario("6 engines (50/100/200 ms ×2)", fan_out, engines("six", six)),
        Scenario("1 engine (200 ms)", direct, shared_single, direct=True, shared=True),
        Scenario("3 engines (50/100/200 ms)", fan_out, engines("shared3", three, shared=True),
                 shared=True),
        Scenario("6 engines (50/100/200 ms ×2)", fan_out, engines("shared6", six, shared=True),
                 shared=True),
    ]  # fmt: skip
    registry.refresh()
    for number in range(WARMUP_ROUNDS):  # plugin discovery (also in the workers), connections
        for scenario in scenarios:
            scenario.run(-1 - number, measured=False)
    for number in range(repeats):
        for scenario in scenarios:
            scenario.run(number, measured=True)
        if (number + 1) % 10 == 0:
            print(f"fan-out: {number + 1}/{repeats} repeats", file=sys.stderr, flush=True)
    return scenarios


@dataclass
class ToolScenario:
    """`search_papers` over /mcp with the scenario's engines pinned: what a user waits for.
    Beyond `run_calls` it includes the library search, the upsert of every external result,
    the tool-call policy, JSON-RPC and HTTP."""

    label: str
    engines: list[tuple[str, int]]
    wall: list[float] = field(default_factory=list)
    errors: Counter[str] = field(default_factory=Counter)

    @property
    def slowest(self) -> int:
        return max(delay for _, delay in self.engines)

    @property
    def overhead(self) -> list[float]:
        return [wall - self.slowest for wall in self.wall]


def bench_fanout_tool(
    scenarios: list[Scenario], repeats: int, directory: Path
) -> list[ToolScenario]:
    """The fan-out scenarios again, as `tools/call search_papers` on `manage.py serve`."""
    from mcp_server import McpServer, ToolCallFailed, answer

    wanted = [s for s in scenarios if not s.direct and not s.shared]
    tool_scenarios = [ToolScenario(s.label, s.engines) for s in wanted]
    env = {k: v for k, v in os.environ.items() if k not in ("MCP_AUTH_TOKEN",)}
    env.update(RESEARCH_DIRECTORY=str(directory), MCP_REQUIRE_COLLECTION="false")
    with McpServer(env) as server:

        def call(scenario: ToolScenario, number: int) -> float:
            arguments = {"query": f"fan-out tool {number}", "limit": 5,
                         "engines": [engine_id for engine_id, _ in scenario.engines]}  # fmt: skip
            elapsed, result = server.call_tool("search_papers", arguments)
            statuses = answer(result)["engines"]
            if set(statuses) != {engine_id for engine_id, _ in scenario.engines}:
                raise ToolCallFailed(f"engines answered: {sorted(statuses)}")
            failed = {k: v for k, v in statuses.items() if v.get("status") != "ok"}
            if failed:
                raise ToolCallFailed(f"engines not ok: {failed}")
            return elapsed

        for number in range(WARMUP_ROUNDS):
            for scenario in tool_scenarios:
                with contextlib.suppress(ToolCallFailed):
                    call(scenario, -1 - number)
        for number in range(repeats):
            for scenario in tool_scenarios:
                try:
                    scenario.wall.append(call(scenario, number))
                except ToolCallFailed as error:
                    scenario.errors[str(error)[:120]] += 1
    from papers.models import Paper

    Paper.objects.all().delete()  # what the tool calls saved: part 3 starts from an empty library
    return tool_scenarios


def print_fanout_tool(scenarios: list[ToolScenario], repeats: int) -> None:
    print(
        f"\n### 1. Fan-out: `search_papers` over /mcp with the engines pinned, {repeats} "
        "repeats, ms (the user's path; the goal applies here)\n"
    )
    print("| engines | n | wall p50 | overhead p50 | overhead p90 | failed calls | goal |")
    print("|---|---:|---:|---:|---:|---:|---|")
    for s in scenarios:
        overhead = s.overhead
        goal = ""
        if overhead:
            met = median(overhead) <= OVERHEAD_GOAL_MS
            goal = f"p50 ≤ {OVERHEAD_GOAL_MS:g}: {'met' if met else '**not met**'}"
        p90 = f"{pct(overhead, 0.9):.1f}" if overhead else ""
        shown = f"{median(overhead):.1f}" if overhead else ""
        wall = f"{median(s.wall):.1f}" if s.wall else ""
        print(
            f"| {s.label} | {len(s.wall)} | {wall} | {shown} | {p90} "
            f"| {sum(s.errors.values())} | {goal} |"
        )
    for message, count in Counter(m for s in scenarios for m in s.errors.elements()).most_common(3):
        print(f"\nFailed calls: {count} × {message}")
    print(
        "\nOverhead = wall time of the tool call − the slowest engine's delay: `run_calls`, "
        "the library search (the engines' ids pinned, so `local` is not among them), the "
        "upsert of every result, the tool-call policy and the HTTP round trip."
    )


def print_fanout(
    scenarios: list[Scenario], repeats: int, heading: str, construction: tuple[float, float]
) -> None:
    print(
        f"\n### 1b. The runner alone (`run_calls`, {heading}), {repeats} repeats, ms: where the "
        "fan-out's time goes, not a user's path\n"
    )
    print(
        "| engines | path | HTTP client | n | wall p50 | overhead p50 | overhead p90 "
        "| overhead min–max | in the slowest call p50 | dispatch + gather p50 | failed rounds |"
    )
    print("|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for s in scenarios:
        overhead = s.overhead
        outside = [
            wall - s.slowest - inside for wall, inside in zip(s.wall, s.in_call, strict=True)
        ]
        p90 = f"{pct(overhead, 0.9):.1f}" if overhead else ""
        print(
            f"| {s.label} | {s.path} | {'plain shared client' if s.shared else 'engines/http.py'} "
            f"| {len(s.wall)} | {median(s.wall):.1f} | "
            f"{median(overhead):.1f} | {p90} | {span(overhead)} | {median(s.in_call):.1f} | "
            f"{median(outside):.1f} | {sum(s.errors.values())} |"
        )
    errors = Counter(message for s in scenarios for message in s.errors.elements())
    for message, count in errors.most_common(5):
        print(f"\nFailed calls: {count} × {message}")
    if any("Unknown or disabled search engine" in message for message in errors):
        print(
            "\nA worker did not know the benchmark's plugin engines: another set of workers, "
            "started with another RESEARCH_DIRECTORY, consumes the same broker's `engines` "
            "queue (worker names such as engines1@host are not unique between sessions)."
        )
    print(
        "\nOverhead = wall time − the slowest engine's delay. 'In the slowest call' is the "
        "longest `EngineOutcome.elapsed_ms` − that delay (HTTP client, local server, rate "
        "limit, precheck); 'dispatch + gather' is the rest (thread pool or Celery round trip). "
        "'engines/http.py': an engine on the built-in engines' HTTP module (pooled client per "
        "source, size and redirect limits, error mapping); 'plain shared client': a bare "
        "httpx.Client.get, for reference."
    )
    client_ms, context_ms = construction
    print(
        f"\nHere, building one httpx.Client takes {client_ms:.1f} ms (p50 of 30) in this process "
        f"and ssl.create_default_context() alone {context_ms:.1f} ms: httpx builds an SSL "
        "context with the CA bundle for every client, even for http:// URLs, which is why "
        "engines/http.py keeps one client per source."
    )


# --- 2. cache -------------------------------------------------------------------------------


@dataclass
class CacheRow:
    backend: str
    kind: str
    times: list[float] = field(default_factory=list)
    unexpected: int = 0  # a hit that was not served from the cache, a failed call, ...


def cache_backends(redis_url: str) -> list[tuple[str, dict[str, Any] | None]]:
    """(label, CACHES['engines'] to use, None = as configured) for every cache to measure."""
    from django.conf import settings

    engines_cache = cast(dict[str, Any], settings.CACHES["engines"])
    configured = str(engines_cache["BACKEND"])
    file_cache = {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(Path(settings.CACHE_DIR) / f"bench-engines-{uuid.uuid4().hex[:8]}"),
        "TIMEOUT": 24 * 3600,
        "OPTIONS": {"MAX_ENTRIES": 20_000},
    }
    redis_cache = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": redis_url,
        "KEY_PREFIX": "research-mcp",
        "TIMEOUT": 24 * 3600,
    }
    if configured.endswith("FileBasedCache"):
        backends: list[tuple[str, dict[str, Any] | None]] = [("file (embedded)", None)]
        return [*backends, ("Redis", redis_cache)] if redis_url else backends
    return [("file (embedded)", file_cache), ("Redis", None)]


def timed_search(engine_id: str, query: str, *, used: list[dict[str, Any]]) -> tuple[float, Any]:
    """One `call_engine` search: (milliseconds, outcome); its arguments go into `used`."""
    from engines.base import SEARCH, SearchRequest
    from engines.runner import call_engine

    arguments = {"request": SearchRequest(query=query, max_results=5).as_dict()}
    used.append(arguments)
    started = time.perf_counter()
    outcome = call_engine(engine_id, SEARCH, arguments, timeout_seconds=DEADLINE_SECONDS)
    return (time.perf_counter() - started) * 1000, outcome


def bench_cache(url: str, repeats: int, tag: str, redis_url: str) -> list[CacheRow]:
    from django.conf import settings
    from django.core.cache import caches
    from django.test.utils import override_settings

    from engines import cache
    from engines.base import SEARCH
    from engines.registry import registry

    cached_id, uncached_id = f"bench_{tag}_cached", f"bench_{tag}_uncached"
    add_engine(cached_id, f"{url}/d0", cache_ttl=CACHE_TTL_SECONDS)
    add_engine(uncached_id, f"{url}/d0", cache_ttl=0)
    registry.refresh()
    rows: list[CacheRow] = []
    for label, config in cache_backends(redis_url):
        override = (
            override_settings(CACHES={**settings.CACHES, "engines": config})
            if config
            else contextlib.nullcontext()
        )
        hit, miss, uncached = (CacheRow(label, kind) for kind in ("hit", "miss", "no cache"))
        used: list[dict[str, Any]] = []
        timed = partial(timed_search, used=used)

        with override:
            hit_query = f"cached {tag} {label}"
            for number in range(WARMUP_ROUNDS):  # stores the answer hit afterwards
                timed(cached_id, hit_query)
                timed(cached_id, f"warm-up {tag} {label} {number}")
                timed(uncached_id, "warm-up")
            for number in range(repeats):
                elapsed, outcome = timed(cached_id, hit_query)
                hit.times.append(elapsed)
                hit.unexpected += not (outcome.ok and outcome.cached)
                elapsed, outcome = timed(cached_id, f"miss {tag} {label} {number}")
                miss.times.append(elapsed)
                miss.unexpected += not outcome.ok or outcome.cached
                elapsed, outcome = timed(uncached_id, f"uncached {number}")
                uncached.times.append(elapsed)
                uncached.unexpected += not outcome.ok or outcome.cached
            keys = [cache.cache_key(cached_id, SEARCH, arguments) for arguments in used]
            keys += [cache._counter_key(cached_id, kind) for kind in ("hits", "misses")]
            caches["engines"].delete_many(keys)  # leave nothing behind in a shared Redis
            if config and config["BACKEND"].endswith("FileBasedCache"):
                shutil.rmtree(config["LOCATION"], ignore_errors=True)
        rows += [hit, miss, uncached]
        print(f"cache: {label} done", file=sys.stderr, flush=True)
    return rows


def print_cache(rows: list[CacheRow], repeats: int, ratelimit_storage: str) -> None:
    print(f"\n### 2. `call_engine` with and without the cache, {repeats} repeats each, ms\n")
    print("| cache | call | n | p50 | p90 | min–max | not as expected |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for row in rows:
        print(
            f"| {row.backend} | {row.kind} | {len(row.times)} | {median(row.times):.2f} | "
            f"{pct(row.times, 0.9):.2f} | {span(row.times)} | {row.unexpected} |"
        )
    by_backend: dict[str, dict[str, float]] = {}
    for row in rows:
        by_backend.setdefault(row.backend, {})[row.kind] = median(row.times)
    print()
    for backend, kinds in by_backend.items():
        print(
            f"- {backend}: a hit takes {kinds['hit']:.2f} ms at p50, "
            f"{kinds['miss'] / kinds['hit']:.0f}× faster than a miss ({kinds['miss']:.2f} ms)."
        )
    print(
        "\nhit: the same search again (answered from the cache); miss: a new search on an "
        "engine with cache_ttl > 0 (lookup, HTTP call to a server answering at once, store); "
        f"no cache: cache_ttl 0. Rate-limit windows: {ratelimit_storage}."
    )


# --- 3. de-duplication -----------------------------------------------------------------------

ARXIV_ORIGIN, SCHOLAR_ORIGIN, TWIN_ORIGIN = "arXiv", "Scholar", "Scholar twin (derived)"
ARXIV_API_PATH = "/api/query"
SCHOLAR_ANSWERS = {  # query -> recorded file (tests/fixtures/serpapi/SOURCE.txt)
    "math": "rezam7596_q-math_num20.json",
    "minecraft": "dimitryzub_scrape-google-scholar-py_README_organic_results_q-minecraft.json",
}
TWINS_QUERY = "derived scholar twins"
# Share of twins whose link is the arXiv abstract page (the rest: publisher or other pages).
ARXIV_LINK_SHARE = 0.3
# Share of twins listing an arxiv.org PDF among their resources, as Scholar often does.
ARXIV_PDF_SHARE = 0.5
SCHOLAR_PARTICLES = frozenset(
    {"van", "von", "der", "den", "de", "del", "della", "di", "da", "du", "la", "le", "dos", "ter"}
)
_YEAR = re.compile(r"(?<!\d)((?:19|20)\d{2})(?!\d)")
ELLIPSIS = "…"


@dataclass
class Item:
    """One record as an engine returned it, with the paper it really is."""

    record: PaperRecord
    truth: str  # 'arxiv:<id>' or 'scholar:<result_id>'
    origin: str
    answer: int  # which answer it came in
    rank: int
    variant: dict[str, Any] = field(default_factory=dict)


def scholar_name(name: str) -> str:
    """How Scholar writes an author: 'Mohit Kumar Ahuja' -> 'MK Ahuja',
    'Kees A. Schouhamer Immink' -> 'KAS Immink', 'Jan van der Berg' -> 'J van der Berg'."""
    parts = name.replace(".", ". ").split()
    start = len(parts) - 1
    while start > 1 and parts[start - 1].lower() in SCHOLAR_PARTICLES:
        start -= 1
    letters = "".join(
        piece[0].upper()
        for part in parts[:start]
        for piece in part.split("-")
        if piece[:1].isalpha()
    )
    return f"{letters} {' '.join(parts[start:])}".strip()


def cut(text: str, limit: int) -> str:
    """Scholar's truncation: whole words, then ' …'."""
    text = " ".join(text.split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(" ,;:") + f" {ELLIPSIS}"


def scholar_twin(
    record: PaperRecord, position: int, rng: random.Random
) -> tuple[dict[str, Any], dict[str, Any]]:
    """A DERIVED SerpApi organic result for this arXiv paper (what Scholar would show), and
    which variations it got. Not a recorded answer."""
    arxiv_id = record.arxiv_id or ""
    case = rng.choice(("as on arXiv", "sentence case", "Title Case"))
    title = record.title
    if case == "sentence case":
        title = title[:1] + title[1:].lower()
    elif case == "Title Case":
        title = " ".join(word[:1].upper() + word[1:] for word in title.split())
    period = rng.random() < 0.3
    if period:
        title = title.rstrip(".") + "."
    # Scholar shows the year of the version it ranks first: the journal's, when there is one.
    journal_years = [int(y) for y in _YEAR.findall(record.publication_info)]
    year = journal_years[-1] if journal_years else record.year
    venue_text = " ".join(_YEAR.sub("", record.publication_info).split()).strip(" ,;:@.")
    venue = cut(venue_text, 30) if venue_text else f"arXiv preprint arXiv:{arxiv_id}"
    names = [scholar_name(author.name) for author in record.authors]
    shown = ", ".join(names[:3]) + (ELLIPSIS if len(names) > 3 else "")
    digest = hashlib.sha256(arxiv_id.encode()).hexdigest()
    number = int(digest[:7], 16)
    if rng.random() < ARXIV_LINK_SHARE:
        link, host, link_kind = f"https://arxiv.org/abs/{arxiv_id}", "arxiv.org", "arxiv.org"
    elif record.doi and record.doi.startswith("10.1145/"):
        link, host = f"https://dl.acm.org/doi/abs/{record.doi}", "dl.acm.org"
        link_kind = "publisher, DOI in link"
    elif record.doi and record.doi.startswith("10.1109/"):
        link, host = (
            f"https://ieeexplore.ieee.org/abstract/document/{number}/",
            "ieeexplore.ieee.org",
        )
        link_kind = "other page, no id"
    else:
        link, host = f"https://www.researchgate.net/publication/{number}", "researchgate.net"
        link_kind = "other page, no id"
    cites_id = str(int(digest[8:23], 16))
    result: dict[str, Any] = {
        "position": position,
        "title": title,
        "result_id": base64.urlsafe_b64encode(bytes.fromhex(digest[24:33] + "0")).decode()[:12],
        "link": link,
        "snippet": cut(record.abstract, 160),
        "publication_info": {"summary": f"{shown} - {venue}, {year} - {host}"},
        "inline_links": {
            "cited_by": {"total": rng.randint(0, 400), "cites_id": cites_id},
            "versions": {"total": rng.randint(2, 9), "cluster_id": cites_id},
        },
    }
    pdf = rng.random() < ARXIV_PDF_SHARE
    if pdf:
        result["resources"] = [
            {
                "title": "arxiv.org",
                "file_format": "PDF",
                "link": f"https://arxiv.org/pdf/{arxiv_id}",
            }
        ]
    variant = {
        "case": case,
        "period": period,
        "year": "same year" if year == record.year else f"year {record.year} → {year}",
        "link": link_kind,
        "pdf": pdf,
    }
    return result, variant


def load_items(twins: int, seed: int) -> tuple[list[Item], dict[str, int]]:
    """Every record of the recorded answers, replayed through the real engines, and the
    derived twins. Also returns how many answers of each kind were read."""
    from django.test.utils import override_settings

    from engines.arxiv import ArxivEngine
    from engines.base import EngineError, SearchRequest
    from engines.google_scholar import GoogleScholarEngine
    from tests.engines.replay import ReplayServer, Reply

    server = ReplayServer().start()
    items: list[Item] = []
    counts: Counter[str] = Counter()
    overrides = override_settings(
        ARXIV_API_URL=server.url + ARXIV_API_PATH,
        SERPAPI_URL=server.url,
        SERP_API_KEY="bench-local-no-key",  # the local server asks for none
    )
    try:
        with overrides:
            arxiv, scholar = ArxivEngine(), GoogleScholarEngine()
            for path in sorted((FIXTURES / "arxiv").glob("*.json")):
                data = json.loads(path.read_text(encoding="utf-8"))
                sent = parse_qs(urlsplit(data["url"]).query, keep_blank_values=True)
                query = {key: values[0] for key, values in sent.items()}
                reply = Reply(
                    data["status_code"],
                    data["body"].encode("latin-1"),  # = the UTF-8 bytes arXiv sent (SOURCE.txt)
                    {"Content-Type": "application/atom+xml; charset=UTF-8"},
                )
                route = (
                    {"id_list": query["id_list"]}
                    if query["id_list"]
                    else {k: query[k] for k in ("search_query", "start", "max_results")}
                )
                server.add(ARXIV_API_PATH, reply, query=route)
                try:
                    if query["id_list"]:
                        records = [arxiv.get_paper_details(query["id_list"])]
                    else:
                        request = SearchRequest(
                            query["search_query"],
                            max_results=int(query["max_results"]),
                            offset=int(query["start"]),
                        )
                        records = arxiv.search(request)
                except EngineError:  # recorded unknown and malformed ids
                    counts["arXiv answers without papers"] += 1
                    continue
                counts["arXiv answers"] += 1
                answer = len({item.answer for item in items})
                items += [
                    Item(r, f"arxiv:{r.arxiv_id}", ARXIV_ORIGIN, answer, rank)
                    for rank, r in enumerate(records)
                ]

            for query_text, name in SCHOLAR_ANSWERS.items():
                body = json.loads((FIXTURES / "serpapi" / name).read_text(encoding="utf-8"))
                if isinstance(body, list):  # the README's organic_results array
                    body = {"search_metadata": {"status": "Success"}, "organic_results": body}
                server.add("/search", Reply(200, body), query={"q": query_text})
                records = scholar.search(SearchRequest(query_text, max_results=20))
                counts["Scholar answers"] += 1
                answer = len({item.answer for item in items})
                items += [
                    Item(r, f"scholar:{r.scholar.get('result_id') or r.title_key}",
                         SCHOLAR_ORIGIN, answer, rank)
                    for rank, r in enumerate(records)
                ]  # fmt: skip

            rng = random.Random(seed)
            papers = {item.truth: item.record for item in items if item.origin == ARXIV_ORIGIN}
            sample = rng.sample(sorted(papers), min(twins, len(papers)))
            derived = [scholar_twin(papers[truth], n + 1, rng) for n, truth in enumerate(sample)]
            body = {
                "search_metadata": {"status": "Success"},
                "organic_results": [result for result, _ in derived],
            }
            server.add("/search", Reply(200, body), query={"q": TWINS_QUERY})
            records = scholar.search(SearchRequest(TWINS_QUERY, max_results=20))
            answer = len({item.answer for item in items})
            for rank, (record, truth, (_, variant)) in enumerate(
                zip(records, sample, derived, strict=True)
            ):
                items.append(Item(record, truth, TWIN_ORIGIN, answer, rank, variant))
            counts["twins"] = len(records)
    finally:
        server.stop()
    return items, dict(counts)


def real_overlap(items: list[Item]) -> list[tuple[Item, Item, str]]:
    """Recorded arXiv and recorded Scholar records that name the same paper (same DOI,
    arXiv id or normalised title)."""
    arxiv = [item for item in items if item.origin == ARXIV_ORIGIN]
    scholar = [item for item in items if item.origin == SCHOLAR_ORIGIN]
    found = []
    for a, s in itertools.product(arxiv, scholar):
        ra, rs = a.record, s.record
        why = (
            "DOI" if ra.doi and ra.doi == rs.doi
            else "arXiv id" if ra.arxiv_id and ra.arxiv_id == rs.arxiv_id
            else "title" if ra.title_key == rs.title_key
            else ""
        )  # fmt: skip
        if why:
            found.append((a, s, why))
    return found


ORDERS = (
    "one batch, by rank (as engines_search)",
    "one upsert per answer, arXiv first",
    "one upsert per answer, Scholar first",
)


def upsert(items: list[Item], order: str) -> list[int]:
    """Upsert into an empty library in `order`; the paper each item landed on. Rolled back."""
    from django.db import transaction

    from papers.models import Paper
    from papers.services import papers_upsert

    paper_ids = [0] * len(items)
    with transaction.atomic():
        if Paper.objects.exists():
            raise SystemExit("part 3 needs an empty library: use a new database")
        if order == ORDERS[0]:
            groups = [sorted(range(len(items)), key=lambda i: (items[i].rank, items[i].answer))]
        else:
            origin = {item.answer: item.origin for item in items}
            arxiv_last = order == ORDERS[2]
            answers = sorted(origin, key=lambda a: ((origin[a] == ARXIV_ORIGIN) == arxiv_last, a))
            groups = [[i for i, item in enumerate(items) if item.answer == a] for a in answers]
        for group in groups:
            outcome = papers_upsert(records=[items[i].record for i in group])
            for index, paper_id in zip(group, outcome.paper_ids, strict=True):
                paper_ids[index] = paper_id
        transaction.set_rollback(True)  # the next order starts from an empty library again
    return paper_ids


@dataclass
class DedupResult:
    order: str
    papers_out: int
    pairs: Counter[str] = field(default_factory=Counter)  # kind -> true pairs
    merged: Counter[str] = field(default_factory=Counter)  # kind -> true pairs merged
    false_merges: list[tuple[Item, Item]] = field(default_factory=list)
    twin_merged: dict[int, bool] = field(default_factory=dict)  # item index -> merged


def evaluate(items: list[Item], paper_ids: list[int], order: str) -> DedupResult:
    result = DedupResult(order, len(set(paper_ids)))
    for i, j in itertools.combinations(range(len(items)), 2):
        same_paper = paper_ids[i] == paper_ids[j]
        if items[i].truth == items[j].truth:
            kind = " – ".join(sorted((items[i].origin, items[j].origin)))
            result.pairs[kind] += 1
            result.merged[kind] += same_paper
        elif same_paper:
            result.false_merges.append((items[i], items[j]))
    arxiv_paper = {
        item.truth: paper_ids[i] for i, item in enumerate(items) if item.origin == ARXIV_ORIGIN
    }
    for i, item in enumerate(items):
        if item.origin == TWIN_ORIGIN:
            result.twin_merged[i] = arxiv_paper.get(item.truth) == paper_ids[i]
    return result


def how_merged(twin: Item, original: PaperRecord) -> str:
    """Which de-duplication key can join the twin to its arXiv record."""
    if twin.record.doi and twin.record.doi == original.doi:
        return "DOI"
    if twin.record.arxiv_id and twin.record.arxiv_id == original.arxiv_id:
        return "arXiv id"
    if (twin.record.title_key, twin.record.year, twin.record.first_author_family) == (
        original.title_key, original.year, original.first_author_family,
    ):  # fmt: skip
        return "title + year + first author"
    return "none"


def print_dedup(items: list[Item], results: list[DedupResult], counts: dict[str, int]) -> None:
    from django.db import connection

    n_by_origin = Counter(item.origin for item in items)
    expected = len({item.truth for item in items})
    print(
        "\n### 3. De-duplication of a mixed arXiv + Google Scholar result set "
        f"({connection.vendor})\n"
    )
    print(
        f"Records in: {len(items)} = {n_by_origin[ARXIV_ORIGIN]} from "
        f"{counts.get('arXiv answers', 0)} recorded arXiv answers + "
        f"{n_by_origin[SCHOLAR_ORIGIN]} from "
        f"{counts.get('Scholar answers', 0)} recorded SerpApi answers + "
        f"{n_by_origin[TWIN_ORIGIN]} **derived** Scholar twins of arXiv papers (not recorded "
        f"answers: written by this benchmark, see its docstring). Distinct papers: {expected}.\n"
    )
    kinds = sorted({kind for r in results for kind in r.pairs})
    header = " | ".join(f"{kind} pairs merged" for kind in kinds)
    print(f"| order | records in | papers out | papers expected | {header} | recall (all pairs) "
          "| twins merged | false merges (pairs) |")  # fmt: skip
    print("|---|---:|---:|---:|" + "---:|" * len(kinds) + "---:|---:|---:|")
    for r in results:
        cells = " | ".join(f"{r.merged[k]}/{r.pairs[k]}" for k in kinds)
        total, merged = sum(r.pairs.values()), sum(r.merged.values())
        twins_merged = sum(r.twin_merged.values())
        print(
            f"| {r.order} | {len(items)} | {r.papers_out} | {expected} | {cells} | "
            f"{merged / total:.3f} ({merged}/{total}) | {twins_merged}/{len(r.twin_merged)} | "
            f"{len(r.false_merges)} |"
        )

    first = results[0]
    originals = {item.truth: item.record for item in items if item.origin == ARXIV_ORIGIN}
    print(f"\nTwins by variation ({first.order}):\n")
    print("| twin's link | year | twins | merged | joined by |")
    print("|---|---|---:|---:|---|")
    groups: dict[tuple[str, str], list[int]] = {}
    for index in first.twin_merged:
        variant = items[index].variant
        year = "same" if variant["year"] == "same year" else "journal's, ≠ arXiv's"
        groups.setdefault((variant["link"], year), []).append(index)
    for (link, year), indexes in sorted(groups.items()):
        joined = [i for i in indexes if first.twin_merged[i]]
        ways = Counter(how_merged(items[i], originals[items[i].truth]) for i in joined)
        print(
            f"| {link} | {year} | {len(indexes)} | {len(joined)} | "
            f"{', '.join(f'{way} {count}' for way, count in ways.most_common())} |"
        )
    cases = Counter(items[i].variant["case"] for i in first.twin_merged)
    periods = sum(items[i].variant["period"] for i in first.twin_merged)
    print(
        f"\nTitle variations among the twins: "
        f"{', '.join(f'{case} {count}' for case, count in sorted(cases.items()))}; "
        f"trailing period added to {periods}."
    )
    for index, merged in first.twin_merged.items():
        if merged:
            continue
        twin, original = items[index], originals[items[index].truth]
        pdf = " (an arxiv.org PDF among its resources)" if twin.variant["pdf"] else ""
        print(
            f"- missed: {twin.truth} {original.title[:60]!r}: arXiv {original.year}, Scholar "
            f"{twin.record.year}; link {twin.variant['link']}{pdf}; first author "
            f"{original.first_author_family!r} / {twin.record.first_author_family!r}"
        )
    for r in results:
        for a, b in r.false_merges:
            print(
                f"- false merge ({r.order}): {a.origin} {a.record.title[:50]!r} "
                f"({a.record.year}) + {b.origin} {b.record.title[:50]!r} ({b.record.year})"
            )
    if not any(r.false_merges for r in results):
        print("\nNo two distinct papers were merged in any order.")
    overlap = real_overlap(items)
    if overlap:
        print("\nReal overlap between the recorded arXiv and Scholar answers:")
        for a, s, why in overlap:
            print(f"- {why}: {a.record.title[:60]!r} ({a.truth}) / {s.truth}")
    else:
        print(
            "\nReal overlap between the recorded arXiv and the recorded Scholar answers: none "
            "(no shared DOI, arXiv id or normalised title), so every cross-source pair above "
            "is a derived twin."
        )


# --- main ------------------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=30, help="Fan-out repeats (≥ 30).")
    parser.add_argument("--cache-repeats", type=int, default=200, help="Cache repeats (≥ 200).")
    parser.add_argument("--twins", type=int, default=14, help="arXiv papers given a Scholar twin.")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument(
        "--celery", action="store_true", help="Fan out through Celery workers (see above)."
    )
    args = parser.parse_args()
    if args.repeats < 1 or args.cache_repeats < 1 or args.twins < 0:
        parser.error("--repeats and --cache-repeats must be at least 1, --twins at least 0")
    if args.repeats < 30 or args.cache_repeats < 200:
        print("note: the issue asks for ≥ 30 fan-out and ≥ 200 cache repeats", file=sys.stderr)

    setup = configure(args.celery)
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import django

    django.setup()
    from django.conf import settings
    from django.core.management import call_command

    from engines.registry import registry

    tag = uuid.uuid4().hex[:6]  # fresh engine ids: workers may know older plugins
    written: list[Path] = []
    try:
        call_command("migrate", verbosity=0)
        if args.celery:
            if settings.CELERY_TASK_ALWAYS_EAGER:
                raise SystemExit("--celery: no broker configured (REDIS_URL)")
            workers = engine_workers()
            if not workers:
                raise SystemExit("--celery: no worker consumes the `engines` queue")
            via = "Celery"
            heading = f"Celery workers on the `engines` queue: {', '.join(workers)}"
        else:
            via = "threads"
            heading = "threads in this process, embedded default"
        load_before = os.getloadavg()
        before = set(Path(settings.ENGINES_DIR).glob("*.py"))
        with local_source([0, 50, 100, 200]) as url:
            try:
                scenarios = bench_fanout(url, args.repeats, tag, via)
                tool_scenarios = (
                    []
                    if args.celery
                    else bench_fanout_tool(scenarios, args.repeats, setup.directory)
                )
                cache_rows = bench_cache(url, args.cache_repeats, tag, setup.redis_url)
            finally:
                written = sorted(set(Path(settings.ENGINES_DIR).glob("*.py")) - before)
        construction = client_construction_ms()
        items, counts = load_items(args.twins, args.seed)
        results = [evaluate(items, upsert(items, order), order) for order in ORDERS]
        load_after = os.getloadavg()

        print(
            f"\n{os.cpu_count()} CPUs, Python {sys.version.split()[0]}, "
            f"database {settings.DATABASES['default']['ENGINE'].rsplit('.', 1)[-1]}, "
            f"load average {load_before[0]:.2f} before, {load_after[0]:.2f} after"
        )
        if tool_scenarios:
            print_fanout_tool(tool_scenarios, args.repeats)
        print_fanout(scenarios, args.repeats, heading, construction)
        print_cache(cache_rows, args.cache_repeats, "Redis" if settings.REDIS_URL else "memory")
        print_dedup(items, results, counts)
    finally:
        for path in written:
            path.unlink(missing_ok=True)
        registry.refresh()
        if setup.owned:
            shutil.rmtree(setup.directory, ignore_errors=True)


if __name__ == "__main__":
    main()

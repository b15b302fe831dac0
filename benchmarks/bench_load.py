"""/mcp under 1-200 concurrent clients on the production setup.

Sets up what README's "Scale-out" section documents, on this machine and privately:

- a PostgreSQL database of its own (`--pg-url`, created with createdb; the corpus imported
  once with `import_jsonl`, without REDIS_URL so no embedding tasks are queued; dropped
  afterwards unless --keep-db; --reuse-db skips the import when it already holds papers);
- Redis database `--redis-url` (14 by default; only that database is flushed);
- `manage.py serve --transport http --workers N` and the two Celery workers README lists
  (`-Q celery`, and `-Q engines -P threads -c 16`), all with DATABASE_URL, REDIS_URL,
  ENGINES_ENABLED=local (no network engine can be called) and a temporary
  RESEARCH_DIRECTORY.

Then (after ANALYZE, which autovacuum would do in production) for each level of concurrent
clients (one keep-alive HTTP/1.1 connection each, connecting over the first `--ramp`
seconds of a short unmeasured warm-up) `--seconds` of back-to-back requests, each client
drawing from its own seeded RNG one of: `tools/call search_papers` (engines='local',
realistic NLP queries), `tools/call get_paper_details` (a random imported paper), `tools/call
list_top_facets` (a random category, over the whole library or over a query) and
`resources/read paper://{id}/metadata`. An answer is a success only if it is HTTP 200 with
a JSON-RPC result that is what was asked for (see `check`); anything else is an error,
counted by kind with its first texts kept.

Every ~5 s it samples the RSS and CPU time of each uvicorn worker and Celery process and
the client connections each worker holds (/proc), the database's PostgreSQL connections and
the machine's CPU. Prints markdown tables (throughput, p50/p95/p99 overall and per
operation, errors, CPU, memory per process and level, the goals) and writes everything as
JSON with --json. Stops everything it started and drops what it created on exit, also on
Ctrl-C and SIGTERM. Results and findings: benchmarks/README.md.

    benchmarks/bench_load.py --corpus FILE [--limit N] [--seconds 60] [--levels 1,10,50,200]
        [--workers 4] [--pg-url URL] [--redis-url URL] [--keep-db] [--reuse-db] [--json FILE]
        [--logs DIR] [--warmup 5] [--ramp SECONDS] [--mix op=weight,...] [--no-analyze]

One file because a benchmark is one command with one report: the production set-up it
starts, the clients it runs and the figures it prints are read together, and no other module
imports them.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import datetime
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from functools import partial
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from bench_mcp import HOST, Connection, free_port, import_corpus, paper_ids, server_env

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_CORPUS = ROOT.parent / "shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz"
DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/benchload"
DEFAULT_REDIS_URL = "redis://127.0.0.1:6379/14"
MAX_CLIENTS = 200
REQUEST_TIMEOUT = 60.0
SAMPLE_SECONDS = 5.0
KEPT_ERROR_TEXTS = 3
CLOCK_TICKS = os.sysconf("SC_CLK_TCK")
# A process "grows" in a level when its RSS at the end exceeds the start by both of these.
GROWTH_MIB = 10.0
GROWTH_FRACTION = 0.05
# p95 counts as flat while it stays within this factor of the 1-client p95.
FLAT_P95_FACTOR = 2.0

SEARCH = "search_papers"
DETAILS = "get_paper_details"
FACETS = "list_top_facets"
RESOURCE = "resources/read"
OPERATIONS = (SEARCH, DETAILS, FACETS, RESOURCE)
DEFAULT_MIX = "search_papers=4,get_paper_details=3,resources/read=2,list_top_facets=1"

QUERIES = (
    "machine translation", "neural machine translation", "named entity recognition", "BERT",
    "sentiment", "sentiment analysis", "question answering", "dependency parsing",
    "word embeddings", "low-resource languages", "summarization", "abstractive summarization",
    "dialogue systems", "coreference resolution", "transformer", "attention",
    "speech recognition", "semantic role labeling", "part-of-speech tagging",
    "relation extraction", "knowledge graph", "hate speech detection", "multilingual",
    "cross-lingual transfer", "large language models", "prompting", "hallucination",
    "text classification", "topic models", "morphological analysis", "code-switching",
    "sarcasm", "argument mining", "natural language inference", "reading comprehension",
    "paraphrase generation", "grammatical error correction", "information extraction",
    "entity linking", "event extraction", "lexical semantics", "discourse parsing",
    "evaluation metrics", "gender bias", "few-shot learning", "data augmentation",
    "contrastive learning", "graph neural networks", "speech translation",
    "semantic parsing", "text-to-SQL", "open-domain question answering",
    "retrieval-augmented generation", "chain-of-thought", "instruction tuning",
    "word sense disambiguation", "machine reading", "language modeling", "spelling correction",
    "clinical notes", "social media", "Twitter", "Arabic", "Chinese word segmentation",
    '"neural machine translation"', "BERT OR RoBERTa", "summar*", "parsing -dependency",
)  # fmt: skip
FACET_CATEGORIES = ("author", "venue", "keyword", "institution", "tag", "category", "year")


# --- helpers ------------------------------------------------------------------------------


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def now_utc() -> str:
    return datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def load_average() -> tuple[float, float, float]:
    return os.getloadavg()


def percentile(ordered: list[float], fraction: float) -> float:
    """Nearest-rank percentile of sorted seconds, in milliseconds (NaN when empty)."""
    if not ordered:
        return float("nan")
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))] * 1000


# --- PostgreSQL and Redis -----------------------------------------------------------------


@dataclass(frozen=True)
class Postgres:
    url: str
    host: str
    port: str
    user: str
    name: str

    @classmethod
    def parse(cls, url: str) -> Postgres:
        parts = urlsplit(url)
        name = parts.path.lstrip("/")
        if parts.scheme not in ("postgres", "postgresql") or not name:
            raise SystemExit(f"--pg-url must be postgres://user@host:port/name, not {url!r}")
        if not re.fullmatch(r"bench[a-z0-9_]*", name):
            # It is created and dropped here: never anybody else's database (and the name
            # can go into SQL as it is).
            raise SystemExit(f"--pg-url: the database name must match bench[a-z0-9_]*: {name!r}")
        return cls(
            url, parts.hostname or "127.0.0.1", str(parts.port or 5432),
            parts.username or "postgres", name,
        )  # fmt: skip

    def _client_args(self) -> list[str]:
        return ["-h", self.host, "-p", self.port, "-U", self.user]

    def query(self, sql: str, database: str | None = None) -> str:
        done = subprocess.run(
            ["psql", *self._client_args(), "-d", database or self.name, "-Atc", sql],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip()

    def exists(self) -> bool:
        sql = f"SELECT 1 FROM pg_database WHERE datname = '{self.name}'"  # noqa: S608
        return self.query(sql, database="postgres") == "1"

    def create(self) -> None:
        subprocess.run(["createdb", *self._client_args(), self.name], check=True)

    def drop(self) -> None:
        subprocess.run(
            ["dropdb", *self._client_args(), "--if-exists", "--force", self.name], check=False
        )

    async def connections(self) -> tuple[int, int]:
        """(connections to this database, connections to the whole server)."""
        sql = (
            f"SELECT count(*) FILTER (WHERE datname = '{self.name}'), count(*) "  # noqa: S608
            "FROM pg_stat_activity WHERE backend_type = 'client backend'"
        )
        process = await asyncio.create_subprocess_exec(
            "psql", *self._client_args(), "-d", "postgres", "-AtF", " ", "-c", sql,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL,
        )  # fmt: skip
        out, _ = await process.communicate()
        mine, total = [*out.decode().split(), "-1", "-1"][:2]
        return int(mine), int(total)


def redis_flush(url: str) -> None:
    """Flush the one Redis database of `url` (never db 0, which others are likely to use)."""
    import redis

    if urlsplit(url).path.strip("/") in ("", "0"):
        raise SystemExit("--redis-url must name a Redis database of its own, e.g. /14")
    client = redis.Redis.from_url(url)
    try:
        client.flushdb()
    finally:
        client.close()


# --- processes ----------------------------------------------------------------------------


@dataclass
class Started:
    """A process group this benchmark started (its own session, stopped as a whole)."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=40)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        with contextlib.suppress(ProcessLookupError):  # pool processes left behind
            os.killpg(self.process.pid, signal.SIGKILL)


def start(name: str, command: list[str], env: dict[str, str], logs: Path) -> Started:
    log_path = logs / f"{name}.log"
    with log_path.open("wb") as handle:
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT,
            start_new_session=True,
        )  # fmt: skip
    return Started(name, process, log_path)


def wait_until(started: Started, ready: Callable[[], bool], seconds: float = 120) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if started.process.poll() is not None:
            raise SystemExit(f"{started.name} exited:\n{started.log.read_text()[-4000:]}")
        if ready():
            return
        time.sleep(0.3)
    raise SystemExit(f"{started.name} was not ready in {seconds:.0f} s:\n{started.log.read_text()}")


def worker_ready(worker: Started) -> bool:
    return " ready." in worker.log.read_text(errors="replace")


def server_ready(port: int) -> bool:
    async def ping() -> int:
        connection = Connection(port)
        try:
            status, _ = await connection.post(b'{"jsonrpc":"2.0","id":0,"method":"ping"}')
            return status
        finally:
            connection.close()

    try:
        return asyncio.run(ping()) == 200
    except (OSError, asyncio.IncompleteReadError, ValueError):
        return False


def celery_command(name: str, *options: str) -> list[str]:
    return [
        str(Path(sys.executable).parent / "celery"), "-A", "research_site", "worker",
        "-n", f"benchload-{name}@%h", "--loglevel", "INFO", *options,
    ]  # fmt: skip


def children_of() -> dict[int, list[int]]:
    """Parent pid -> child pids, for every process on the machine (from /proc/*/stat)."""
    tree: dict[int, list[int]] = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
        except OSError:
            continue
        parent = int(stat.rsplit(")", 1)[1].split()[1])
        tree.setdefault(parent, []).append(int(entry.name))
    return tree


def cmdline(pid: int) -> str:
    try:
        return (Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ")).decode()
    except OSError:
        return ""


def rss_mib(pid: int) -> float | None:
    try:
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    except OSError:
        return None
    return None


def cpu_seconds(pid: int) -> float | None:
    """User + system CPU time of a process (all its threads), in seconds."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    except OSError:
        return None
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS


def machine_busy_seconds() -> float:
    """CPU seconds the whole machine spent busy (all cores) since boot, from /proc/stat."""
    values = [int(x) for x in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
    idle = values[3] + values[4]  # idle + iowait
    return (sum(values[:8]) - idle) / CLOCK_TICKS


def established(port: int) -> set[int]:
    """Socket inodes of the established TCP connections to local `port` (/proc/net/tcp)."""
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        with contextlib.suppress(OSError):
            for line in Path(table).read_text().splitlines()[1:]:
                fields = line.split()
                if fields[3] == "01" and int(fields[1].rsplit(":", 1)[1], 16) == port:
                    inodes.add(int(fields[9]))
    return inodes


def sockets_of(pid: int) -> set[int]:
    inodes = set()
    with contextlib.suppress(OSError):
        for fd in Path(f"/proc/{pid}/fd").iterdir():
            with contextlib.suppress(OSError):
                target = os.readlink(fd)
                if target.startswith("socket:["):
                    inodes.add(int(target[8:-1]))
    return inodes


@dataclass
class Processes:
    """The processes whose memory is watched, labelled."""

    server: Started
    celery_default: Started
    celery_engines: Started
    port: int
    restarts: list[str] = field(default_factory=list)
    _workers: list[int] = field(default_factory=list)

    def labelled(self) -> dict[str, int]:
        tree = children_of()
        workers = sorted(
            pid for pid in tree.get(self.server.process.pid, []) if "spawn_main" in cmdline(pid)
        )
        if self._workers and workers != self._workers:
            self.restarts.append(f"{now_utc()}: uvicorn workers {self._workers} -> {workers}")
        self._workers = workers
        labels = {f"uvicorn worker {i}": pid for i, pid in enumerate(workers, start=1)}
        labels["celery default (main)"] = self.celery_default.process.pid
        pool = sorted(tree.get(self.celery_default.process.pid, []))
        labels.update({f"celery default pool {i}": pid for i, pid in enumerate(pool, start=1)})
        labels["celery engines (threads)"] = self.celery_engines.process.pid
        return labels

    def sample(self) -> tuple[dict[str, float], dict[str, float], dict[str, int]]:
        """RSS (MiB) and CPU seconds so far of each watched process, and the client
        connections each uvicorn worker holds."""
        sizes, cpu, connections = {}, {}, {}
        clients = established(self.port)
        for label, pid in self.labelled().items():
            size, used = rss_mib(pid), cpu_seconds(pid)
            if size is not None and used is not None:
                sizes[f"{label} [{pid}]"] = size
                cpu[f"{label} [{pid}]"] = used
            if label.startswith("uvicorn"):
                connections[f"{label} [{pid}]"] = len(clients & sockets_of(pid))
        return sizes, cpu, connections


# --- requests and checks ------------------------------------------------------------------


@dataclass(frozen=True)
class Request:
    operation: str
    body: bytes
    paper_id: int | None = None
    uri: str | None = None
    category: str | None = None


def make_request(operation: str, request_id: int, rng: random.Random, ids: list[int]) -> Request:
    def rpc(method: str, params: dict[str, Any]) -> bytes:
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        return json.dumps(message, separators=(",", ":")).encode()

    def tool(name: str, arguments: dict[str, Any]) -> bytes:
        return rpc("tools/call", {"name": name, "arguments": arguments})

    if operation == SEARCH:
        arguments: dict[str, Any] = {
            "query": rng.choice(QUERIES),
            "engines": "local",
            "max_results": rng.choice((5, 10, 10, 20)),
        }
        if rng.random() < 0.2:
            arguments["offset"] = rng.choice((10, 20))
        return Request(SEARCH, tool(SEARCH, arguments))
    if operation == DETAILS:
        paper_id = rng.choice(ids)
        return Request(DETAILS, tool(DETAILS, {"paper_id": paper_id}), paper_id=paper_id)
    if operation == FACETS:
        category = rng.choice(FACET_CATEGORIES)
        arguments = {"category": category, "limit": rng.choice((10, 20))}
        if rng.random() < 0.5:
            arguments["query"] = rng.choice(QUERIES)
        return Request(FACETS, tool(FACETS, arguments), category=category)
    paper_id = rng.choice(ids)
    uri = f"paper://{paper_id}/metadata"
    return Request(RESOURCE, rpc("resources/read", {"uri": uri}), paper_id=paper_id, uri=uri)


def check(request: Request, status: int, payload: bytes) -> tuple[str, str] | None:
    """None for a correct answer, else (kind of error, text)."""
    text = payload[:400].decode("utf-8", "replace")
    if status != 200:
        return (f"HTTP {status}" if status else "transport"), text
    try:
        message = json.loads(payload)
    except ValueError:
        return "not JSON", text
    if not isinstance(message, dict):
        return "not a JSON-RPC object", text
    if "error" in message:
        error = message["error"] if isinstance(message["error"], dict) else {}
        return f"JSON-RPC error {error.get('code')}", str(error.get("message"))[:400]
    result = message.get("result")
    if not isinstance(result, dict):
        return "no result", text
    if request.operation == RESOURCE:
        contents = result.get("contents")
        if not isinstance(contents, list) or not contents or not isinstance(contents[0], dict):
            return "no contents", text
        if contents[0].get("uri") != request.uri:
            return "wrong resource", text
        try:
            record = json.loads(contents[0].get("text") or "")
        except ValueError:
            return "resource not JSON", text
        ok = isinstance(record, dict) and record.get("paper_id") == request.paper_id
        return None if ok else ("wrong paper", text)
    if result.get("isError") is not False:
        return "isError", text
    try:
        structured = json.loads(result["content"][0]["text"])
    except (KeyError, IndexError, TypeError, ValueError):
        structured = None
    if not isinstance(structured, dict):
        return "no JSON answer", text
    if request.operation == DETAILS:
        return None if structured.get("paper_id") == request.paper_id else ("wrong paper", text)
    if request.operation == FACETS:
        ok = structured.get("category") == request.category and isinstance(
            structured.get("values"), list
        )
        return None if ok else ("wrong facets", text)
    engines = structured.get("engines")
    if not isinstance(engines, dict) or set(engines) != {"local"}:
        return "engines other than local", text
    if engines["local"].get("status") != "ok" or not isinstance(structured.get("results"), list):
        return "local engine not ok", text
    return None


# --- the load -----------------------------------------------------------------------------


@dataclass
class ErrorKind:
    count: int = 0
    texts: list[str] = field(default_factory=list)


@dataclass
class Tally:
    latencies: dict[str, list[float]] = field(default_factory=lambda: {op: [] for op in OPERATIONS})
    errors: dict[str, int] = field(default_factory=lambda: dict.fromkeys(OPERATIONS, 0))
    kinds: dict[str, ErrorKind] = field(default_factory=dict)

    def record(self, request: Request, elapsed: float, problem: tuple[str, str] | None) -> None:
        if problem is None:
            self.latencies[request.operation].append(elapsed)
            return
        self.errors[request.operation] += 1
        kind = self.kinds.setdefault(f"{request.operation}: {problem[0]}", ErrorKind())
        kind.count += 1
        if len(kind.texts) < KEPT_ERROR_TEXTS:
            kind.texts.append(problem[1])


@dataclass
class Sample:
    at: float  # seconds since the level's measured start
    rss: dict[str, float]
    cpu: dict[str, float]  # CPU seconds used so far, per process
    connections: dict[str, int]  # client connections held, per uvicorn worker
    client_cpu: float  # CPU seconds this benchmark process used so far
    machine_busy: float  # busy CPU seconds of the whole machine so far
    pg_mine: int
    pg_total: int


@dataclass
class Level:
    clients: int
    started: str = ""
    seconds: float = 0.0
    warmup_requests: int = 0
    warmup_errors: int = 0
    tally: Tally = field(default_factory=Tally)
    samples: list[Sample] = field(default_factory=list)
    load_before: tuple[float, float, float] = (0.0, 0.0, 0.0)
    load_after: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def ok(self, operation: str | None = None) -> list[float]:
        if operation is not None:
            return sorted(self.tally.latencies[operation])
        return sorted(x for values in self.tally.latencies.values() for x in values)

    def errors(self, operation: str | None = None) -> int:
        if operation is not None:
            return self.tally.errors[operation]
        return sum(self.tally.errors.values())


def mix_parse(text: str) -> list[tuple[str, float]]:
    weights = []
    for part in text.split(","):
        name, _, weight = part.partition("=")
        if name.strip() not in OPERATIONS:
            raise SystemExit(f"--mix: unknown operation {name!r}; use {', '.join(OPERATIONS)}")
        weights.append((name.strip(), float(weight or 1)))
    return weights


async def run_level(
    port: int,
    clients: int,
    seconds: float,
    warmup: float,
    ids: list[int],
    mix: list[tuple[str, float]],
    seed: int,
    ramp: float,
    processes: Processes,
    postgres: Postgres,
) -> Level:
    level = Level(clients, started=now_utc(), load_before=load_average())
    names = [name for name, _ in mix]
    weights = [weight for _, weight in mix]
    loop_start = time.perf_counter()
    measured_from = loop_start + warmup
    deadline = measured_from + seconds
    warm = Tally()

    async def sample() -> None:
        mine, total = await postgres.connections()
        at = time.perf_counter() - measured_from
        rss, cpu, connections = processes.sample()
        sample = Sample(
            round(at, 3), rss, cpu, connections, time.process_time(), machine_busy_seconds(),
            mine, total,
        )  # fmt: skip
        level.samples.append(sample)

    async def sampler() -> None:
        await asyncio.sleep(max(0.0, measured_from - time.perf_counter()))
        while time.perf_counter() < deadline - SAMPLE_SECONDS / 2:
            await sample()
            await asyncio.sleep(SAMPLE_SECONDS)

    async def client(index: int) -> None:
        rng = random.Random(f"{seed}-{clients}-{index}")
        connection = Connection(port)
        request_ids: Iterator[int] = iter(range(1, 1 << 62))
        # Clients arrive spread over `ramp` seconds (within the warm-up), as real ones do:
        # uvicorn's workers share one listening socket, and the first to wake accepts every
        # connection waiting, so clients that all connect at once land on a single worker.
        await asyncio.sleep(index * ramp / clients)
        try:
            while (sent := time.perf_counter()) < deadline:
                operation = rng.choices(names, weights)[0]
                request = make_request(operation, next(request_ids), rng, ids)
                try:
                    async with asyncio.timeout(REQUEST_TIMEOUT):
                        status, payload = await connection.post(request.body)
                except (OSError, TimeoutError, asyncio.IncompleteReadError, ValueError) as exc:
                    connection.close()
                    status, payload = 0, repr(exc).encode()
                elapsed = time.perf_counter() - sent
                tally = level.tally if sent >= measured_from else warm
                tally.record(request, elapsed, check(request, status, payload))
        finally:
            connection.close()

    watcher = asyncio.create_task(sampler())
    await asyncio.gather(*(client(i) for i in range(clients)))
    level.seconds = time.perf_counter() - measured_from
    watcher.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await watcher
    await sample()  # the end of the level, after the last answer
    level.load_after = load_average()
    level.warmup_requests = sum(len(v) for v in warm.latencies.values()) + sum(warm.errors.values())
    level.warmup_errors = sum(warm.errors.values())
    for name, kind in warm.kinds.items():  # warm-up errors are errors too: keep them visible
        kept = level.tally.kinds.setdefault(f"{name} (warm-up)", ErrorKind())
        kept.count += kind.count
        kept.texts.extend(kind.texts[: KEPT_ERROR_TEXTS - len(kept.texts)])
    return level


# --- the report ---------------------------------------------------------------------------


def fmt(value: float, digits: int = 1) -> str:
    return "—" if value != value else f"{value:,.{digits}f}"  # NaN -> dash


def memory_rows(levels: list[Level]) -> list[dict[str, Any]]:
    """Per process and level: RSS at the level's measured start, end and max (MiB)."""
    rows = []
    labels = sorted({label for level in levels for s in level.samples for label in s.rss})
    for label in labels:
        for level in levels:
            series = [s.rss[label] for s in level.samples if label in s.rss]
            if not series:
                continue
            first, last, top = series[0], series[-1], max(series)
            grew = last - first > max(GROWTH_MIB, GROWTH_FRACTION * first)
            rows.append(
                {"process": label, "clients": str(level.clients), "start": first, "end": last,
                 "max": top, "delta": last - first, "grew": grew}
            )  # fmt: skip
        whole = [s.rss[label] for level in levels for s in level.samples if label in s.rss]
        if len(levels) > 1 and whole:
            rows.append(
                {"process": label, "clients": "whole run", "start": whole[0], "end": whole[-1],
                 "max": max(whole), "delta": whole[-1] - whole[0], "grew": False}
            )  # fmt: skip
    return rows


def cpu_use(level: Level) -> dict[str, float]:
    """Cores used on average over the level's samples: by the uvicorn workers, the Celery
    workers, this load generator and the rest of the machine (PostgreSQL, other sessions);
    and the workers' CPU milliseconds per answered request."""
    if len(level.samples) < 2:
        return {}
    first, last = level.samples[0], level.samples[-1]
    span = last.at - first.at
    if span <= 0:
        return {}

    def cores(prefix: str) -> float:
        labels = [k for k in last.cpu if k.startswith(prefix) and k in first.cpu]
        return sum(last.cpu[k] - first.cpu[k] for k in labels) / span

    use = {
        "uvicorn": cores("uvicorn"),
        "celery": cores("celery"),
        "client": (last.client_cpu - first.client_cpu) / span,
        "machine": (last.machine_busy - first.machine_busy) / span,
    }
    use["rest"] = use["machine"] - use["uvicorn"] - use["celery"] - use["client"]
    rate = (len(level.ok()) + level.errors()) / level.seconds
    use["worker_ms_per_request"] = use["uvicorn"] / rate * 1000 if rate else float("nan")
    return use


def spread_text(level: Level) -> str:
    """How the clients' connections were spread over the uvicorn workers (the sample
    holding the most), e.g. `50 / 0 / 0 / 0`."""
    if not level.samples:
        return "—"
    fullest = max(level.samples, key=lambda s: sum(s.connections.values()))
    counts = sorted(fullest.connections.values(), reverse=True)
    return " / ".join(str(count) for count in counts) or "—"


def connections_text(level: Level) -> str:
    """Most PostgreSQL connections of the database seen in a level's samples."""
    counts = [s.pg_mine for s in level.samples]
    seen = max((c for c in counts if c >= 0), default=None)
    refused = sum(1 for c in counts if c < 0)
    text = "—" if seen is None else str(seen)
    if refused:
        text += f" (psql refused {refused}/{len(counts)} samples)"
    return text


def report(levels: list[Level], context: dict[str, Any], processes: Processes) -> dict[str, Any]:
    out: list[str] = []
    out.append(
        f"{context['papers']:,} papers; {context['workers']} uvicorn workers (`serve --transport "
        f"http --workers {context['workers']}`) + Celery `-Q celery` (prefork) and `-Q engines "
        f"-P threads -c {context['engine_threads']}`, PostgreSQL `{context['pg_name']}`, Redis "
        f"`{context['redis_url']}`, ENGINES_ENABLED=local; {context['seconds']:g} s per level "
        f"after {context['warmup']:g} s of warm-up (clients connecting over its first "
        f"{context['ramp']:g} s); mix {context['mix']}; PostgreSQL max_connections "
        f"{context['pg_max_connections']}, autovacuum {context['pg_autovacuum']} (server shared "
        f"with other sessions); {'ANALYZE' if context['analyzed'] else '**no** ANALYZE'} before "
        "the load."
    )
    out.append(
        f"Machine: {os.cpu_count()} CPUs, shared with other work (the load generator runs on "
        f"it too); load average {' '.join(f'{x:.2f}' for x in context['load_start'])} at the "
        f"start, {' '.join(f'{x:.2f}' for x in context['load_end'])} at the end. "
        f"{context['started']} – {context['ended']}."
    )
    out.append("")
    out.append(
        "| clients | req/s | p50 ms | p95 ms | p99 ms | requests | errors "
        "| PG connections (max) | load avg 1 min before → after |"
    )
    out.append("|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for level in levels:
        ok = level.ok()
        out.append(
            f"| {level.clients} | {fmt(len(ok) / level.seconds)} | {fmt(percentile(ok, 0.5))} "
            f"| {fmt(percentile(ok, 0.95))} | {fmt(percentile(ok, 0.99))} "
            f"| {len(ok) + level.errors():,} | {level.errors()} | {connections_text(level)} "
            f"| {level.load_before[0]:.2f} → {level.load_after[0]:.2f} |"
        )
    out.append("")
    out.append("| clients | operation | req/s | p50 ms | p95 ms | p99 ms | errors |")
    out.append("|---:|---|---:|---:|---:|---:|---:|")
    for level in levels:
        for operation in OPERATIONS:
            ok = level.ok(operation)
            out.append(
                f"| {level.clients} | {operation} | {fmt(len(ok) / level.seconds)} "
                f"| {fmt(percentile(ok, 0.5))} | {fmt(percentile(ok, 0.95))} "
                f"| {fmt(percentile(ok, 0.99))} | {level.errors(operation)} |"
            )
    out.append("")
    out.append(
        "| clients | client connections per uvicorn worker | uvicorn workers | Celery "
        "| load generator | rest (PostgreSQL, other sessions) | machine busy "
        "| worker CPU ms / request |"
    )
    out.append("|---:|---|---:|---:|---:|---:|---:|---:|")
    for level in levels:
        use = cpu_use(level)
        if use:
            out.append(
                f"| {level.clients} | {spread_text(level)} | {use['uvicorn']:.2f} "
                f"| {use['celery']:.2f} "
                f"| {use['client']:.2f} | {use['rest']:.2f} | {use['machine']:.2f} "
                f"| {fmt(use['worker_ms_per_request'])} |"
            )
    out.append("")
    out.append(f"CPU in cores (of {os.cpu_count()}), averaged over each level's samples.")
    out.append("")
    out.append("| process | clients | RSS start MiB | end MiB | max MiB | Δ MiB | |")
    out.append("|---|---:|---:|---:|---:|---:|---|")
    memory = memory_rows(levels)
    for row in memory:
        out.append(
            f"| {row['process']} | {row['clients']} | {row['start']:.0f} | {row['end']:.0f} "
            f"| {row['max']:.0f} | {row['delta']:+.1f} | {'**grew**' if row['grew'] else ''} |"
        )
    out.append("")

    errors_total = sum(level.errors() + level.warmup_errors for level in levels)
    base = next((level for level in levels if level.clients == 1), None)
    flat_rows = []
    if base is not None:
        base_p95 = percentile(base.ok(), 0.95)
        for level in levels:
            if level.clients <= 50:
                ratio = percentile(level.ok(), 0.95) / base_p95 if base_p95 else float("nan")
                flat_rows.append(f"{level.clients}: {ratio:.1f}×")
        flat = all(
            percentile(level.ok(), 0.95) <= FLAT_P95_FACTOR * base_p95
            for level in levels
            if level.clients <= 50
        )
        flat_text = (
            f"{'met' if flat else '**not met**'} (p95 / 1-client p95: {', '.join(flat_rows)}; "
            f"flat = within {FLAT_P95_FACTOR:g}×)"
        )
    else:
        flat_text = "not measured (no 1-client level)"
    grew = sorted({row["process"] for row in memory if row["grew"]})
    out.append("| goal | result |")
    out.append("|---|---|")
    out.append(
        f"| zero errors | {'met' if not errors_total else '**not met**'} ({errors_total} errors"
        " incl. warm-up) |"
    )
    out.append(f"| p95 flat up to 50 clients | {flat_text} |")
    out.append(
        "| memory per worker stable | "
        + ("met (no process grew within a level)" if not grew else f"**grew**: {', '.join(grew)}")
        + (f"; worker restarts: {'; '.join(processes.restarts)}" if processes.restarts else "")
        + " |"
    )
    kinds = [
        (level.clients, name, kind) for level in levels for name, kind in level.tally.kinds.items()
    ]
    if kinds:
        out.append("")
        out.append("Errors (first texts per kind):")
        for clients, name, kind in kinds:
            out.append(f"- {clients} clients, {name}: {kind.count}")
            out.extend(f"    - `{text[:300]}`" for text in kind.texts)
    for line in context.get("log_findings", []):
        out.append(line)
    print("\n".join(out))
    return {
        "context": context,
        "levels": [
            {
                "clients": level.clients,
                "started": level.started,
                "seconds": level.seconds,
                "throughput": len(level.ok()) / level.seconds,
                "p50_ms": percentile(level.ok(), 0.5),
                "p95_ms": percentile(level.ok(), 0.95),
                "p99_ms": percentile(level.ok(), 0.99),
                "errors": level.errors(),
                "warmup_requests": level.warmup_requests,
                "warmup_errors": level.warmup_errors,
                "operations": {
                    op: {
                        "requests": len(level.ok(op)) + level.errors(op),
                        "throughput": len(level.ok(op)) / level.seconds,
                        "p50_ms": percentile(level.ok(op), 0.5),
                        "p95_ms": percentile(level.ok(op), 0.95),
                        "p99_ms": percentile(level.ok(op), 0.99),
                        "errors": level.errors(op),
                    }
                    for op in OPERATIONS
                },
                "error_kinds": {name: asdict(kind) for name, kind in level.tally.kinds.items()},
                "samples": [asdict(s) for s in level.samples],
                "cpu_cores": cpu_use(level),
                "load_before": level.load_before,
                "load_after": level.load_after,
            }
            for level in levels
        ],
        "memory": memory,
        "worker_restarts": processes.restarts,
    }


def log_findings(logs: Path) -> tuple[list[str], int]:
    """Error lines in the server's and workers' logs, and Celery tasks received."""
    findings: list[str] = []
    tasks = 0
    for path in sorted(logs.glob("*.log")):
        text = path.read_text(errors="replace")
        tasks += sum(1 for line in text.splitlines() if "Task " in line and " received" in line)
        bad = [
            line
            for line in text.splitlines()
            if any(mark in line for mark in ("ERROR", "CRITICAL", "Traceback", "incident"))
        ]
        if bad:
            findings.append(f"- {path.name}: {len(bad)} error line(s), first:")
            findings.extend(f"    - `{line[:300]}`" for line in bad[:KEPT_ERROR_TEXTS])
    if findings:
        findings.insert(0, "\nServer and worker logs:")
    return findings, tasks


# --- main ---------------------------------------------------------------------------------


def _stop_on_sigterm(signum: int, frame: Any) -> None:
    raise SystemExit(128 + signum)  # unwinds the ExitStack like Ctrl-C does


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", default=str(DEFAULT_CORPUS), help="ACL JSONL(.gz).")
    parser.add_argument("--limit", type=int, default=None, help="Import only N records.")
    parser.add_argument("--seconds", type=float, default=60.0, help="Measured, per level.")
    parser.add_argument("--warmup", type=float, default=5.0, help="Unmeasured, per level.")
    parser.add_argument(
        "--ramp",
        type=float,
        default=None,
        help="Seconds over which a level's clients connect (default: half the warm-up; "
        "0: all at once).",
    )
    parser.add_argument("--levels", default="1,10,50,200", help="Concurrent clients.")
    parser.add_argument("--workers", type=int, default=4, help="uvicorn worker processes.")
    parser.add_argument("--engine-threads", type=int, default=16)
    parser.add_argument("--mix", default=DEFAULT_MIX, help="operation=weight,...")
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL)
    parser.add_argument("--redis-url", default=DEFAULT_REDIS_URL)
    parser.add_argument("--keep-db", action="store_true", help="Do not drop the database.")
    parser.add_argument(
        "--reuse-db", action="store_true", help="Use the database as it is if it holds papers."
    )
    parser.add_argument(
        "--no-analyze", action="store_true", help="Do not ANALYZE the database before the load."
    )
    parser.add_argument("--seed", type=int, default=20241123)
    parser.add_argument("--json", default=None, help="Also write the results here.")
    parser.add_argument("--logs", default=None, help="Copy the server and worker logs here.")
    args = parser.parse_args()
    levels = [int(level) for level in args.levels.split(",")]
    if not all(1 <= level <= MAX_CLIENTS for level in levels):
        parser.error(f"levels must be 1-{MAX_CLIENTS}")
    if args.ramp is None:
        args.ramp = args.warmup / 2
    if not 0 < args.seconds <= 600 or args.warmup < 0 or args.workers < 1:
        parser.error("--seconds must be in (0, 600], --warmup >= 0, --workers >= 1")
    if not 0 <= args.ramp <= args.warmup:
        parser.error("--ramp must be between 0 and --warmup")
    mix = mix_parse(args.mix)
    postgres = Postgres.parse(args.pg_url)
    signal.signal(signal.SIGINT, signal.default_int_handler)  # even if started with it ignored
    signal.signal(signal.SIGTERM, _stop_on_sigterm)
    signal.signal(signal.SIGHUP, _stop_on_sigterm)
    run_started = time.monotonic()

    with contextlib.ExitStack() as stack:
        directory = Path(tempfile.mkdtemp(prefix="bench-load-"))
        stack.callback(shutil.rmtree, directory, ignore_errors=True)
        logs = directory / "logs"
        logs.mkdir()
        if args.logs:
            stack.callback(shutil.copytree, logs, Path(args.logs), dirs_exist_ok=True)
        base_env = server_env(directory)
        base_env["DATABASE_URL"] = postgres.url
        base_env["ENGINES_ENABLED"] = "local"

        reused = args.reuse_db and postgres.exists()
        if not reused and not Path(args.corpus).is_file():
            raise SystemExit(f"corpus not found: {args.corpus} (--corpus FILE)")
        if not args.keep_db:
            stack.callback(postgres.drop)
        ids: list[int] = []
        if reused:
            with contextlib.suppress(SystemExit):  # not migrated yet: import afresh
                ids = paper_ids(base_env)
        if not ids:
            postgres.drop()
            postgres.create()
            log(f"importing {args.corpus} into {postgres.name} (no REDIS_URL: nothing queued)")
            seconds = import_corpus(args.corpus, args.limit, base_env)
            log(f"imported in {seconds:.1f} s")
            ids = paper_ids(base_env)
        log(f"{len(ids):,} papers in PostgreSQL database {postgres.name}")
        autovacuum = postgres.query("SHOW autovacuum")
        if not args.no_analyze:
            # What autovacuum does a minute after an import in production; without table
            # statistics the planner seq-scans authors for every paper (README, finding 4).
            started = time.perf_counter()
            postgres.query("ANALYZE")
            log(f"ANALYZE in {time.perf_counter() - started:.1f} s (autovacuum: {autovacuum})")

        env = {**base_env, "REDIS_URL": args.redis_url}
        redis_flush(args.redis_url)
        stack.callback(redis_flush, args.redis_url)
        celery_default = start(
            "celery-default", celery_command("default", "-Q", "celery"), env, logs
        )
        stack.callback(celery_default.stop)
        celery_engines = start(
            "celery-engines",
            celery_command(
                "engines", "-Q", "engines", "-P", "threads", "-c", str(args.engine_threads)
            ),
            env,
            logs,
        )
        stack.callback(celery_engines.stop)
        port = free_port()
        serve = [sys.executable, "manage.py", "serve", "--transport", "http", "--host", HOST,
                 "--port", str(port), "--workers", str(args.workers)]  # fmt: skip
        server = start("serve", serve, env, logs)
        stack.callback(server.stop)
        for worker in (celery_default, celery_engines):
            wait_until(worker, partial(worker_ready, worker))
        wait_until(server, lambda: server_ready(port))
        processes = Processes(server, celery_default, celery_engines, port)
        for _ in range(100):  # every uvicorn worker is up (spawned, answering)
            spawned = [label for label in processes.labelled() if label.startswith("uvicorn")]
            if len(spawned) >= args.workers and server_ready(port):
                break
            time.sleep(0.3)
        log(f"serving on {HOST}:{port}; watching {', '.join(processes.labelled())}")

        context: dict[str, Any] = {
            "papers": len(ids),
            "workers": args.workers,
            "pg_name": postgres.name,
            "redis_url": args.redis_url,
            "seconds": args.seconds,
            "warmup": args.warmup,
            "ramp": args.ramp,
            "engine_threads": args.engine_threads,
            "mix": args.mix,
            "levels": levels,
            "cpus": os.cpu_count(),
            "started": now_utc(),
            "load_start": load_average(),
            "pg_max_connections": postgres.query("SHOW max_connections"),
            "pg_autovacuum": autovacuum,
            "analyzed": not args.no_analyze,
        }
        # Every worker's first requests (imports, caches, connections) off the clock: enough
        # connections that each worker accepts some, so memory starts from a warm baseline.
        warm = asyncio.run(
            run_level(
                port, 8 * args.workers, 0.0, max(2 * args.warmup, 10.0), ids, mix, args.seed - 1,
                args.ramp, processes, postgres,
            )
        )  # fmt: skip
        context["warmup_all"] = {
            "clients": warm.clients, "requests": warm.warmup_requests, "errors": warm.warmup_errors,
        }  # fmt: skip
        log(f"warm-up: {warm.warmup_requests} requests, {warm.warmup_errors} errors")
        log(f"load average at start: {context['load_start']}")
        results: list[Level] = []
        for clients in levels:
            level = asyncio.run(
                run_level(
                    port, clients, args.seconds, args.warmup, ids, mix, args.seed, args.ramp,
                    processes, postgres,
                )
            )  # fmt: skip
            results.append(level)
            ok = level.ok()
            log(
                f"{clients:>3} clients: {len(ok) / level.seconds:7.1f} req/s  "
                f"p50 {percentile(ok, 0.5):7.1f}  p95 {percentile(ok, 0.95):7.1f}  "
                f"p99 {percentile(ok, 0.99):7.1f} ms  errors {level.errors()} "
                f"(warm-up {level.warmup_errors})  PostgreSQL connections "
                f"{connections_text(level)}  "
                f"load {level.load_after[0]:.2f}"
            )
        context["ended"] = now_utc()
        context["load_end"] = load_average()
        findings, tasks = log_findings(logs)
        context["celery_tasks_received"] = tasks
        findings.append(f"\nCelery tasks received by the workers during the run: {tasks}.")
        context["log_findings"] = findings
        context["wall_seconds"] = time.monotonic() - run_started
        data = report(results, context, processes)
        if args.json:
            Path(args.json).parent.mkdir(parents=True, exist_ok=True)
            Path(args.json).write_text(json.dumps(data, indent=1, default=str))
    log(f"done in {time.monotonic() - run_started:.0f} s (cleanup included)")


if __name__ == "__main__":
    try:
        main()
    except KeyboardInterrupt:
        log("interrupted; everything started was stopped and removed")
        sys.exit(130)

"""No network: how long the tools take when no engine can be reached.

    .venv/bin/python benchmarks/bench_offline.py [--runs 5] [--open-calls 10]

Embedded default (SQLite, no broker), a temporary knowledge base with a few papers. Every
default engine is enabled (SERP_API_KEY set to a dummy so Google Scholar is tried too) and
points at a host under `.invalid`, which never resolves (RFC 6761): what a laptop without
network sees. The calls go through the MCP tools' own functions (the adapters `/mcp` runs,
called in-process; tests/mcp/test_offline_engines.py checks they answer what `/mcp` answers).

1. `search_papers` with the default engines: the first call (breakers closed; each engine
   fails name resolution once), then `--open-calls` calls while the breakers are open.
   Goals: first call <= 1.5 s, calls while open <= 100 ms.
2. The review tools with wait_seconds=5: `start_review`, `decide(approve)` at the plan
   (the search step: one engine is a local server answering after 12 s, the others do not
   resolve, so the step outlasts the wait) and `decide(approve)` at screening (completes).
   Goal: each returns within 6 s.

Each run starts from closed breakers. Prints a markdown table: median (and max) over runs.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, cast

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

FIRST_CALL_GOAL_S = 1.5
OPEN_CALL_GOAL_MS = 100.0
REVIEW_WAIT_SECONDS = 5
REVIEW_GOAL_S = 6.0
SLOW_SOURCE_SECONDS = 12.0
UNRESOLVABLE = "https://{engine}.research-mcp-bench.invalid"
URL_SETTINGS = {
    "arxiv": "ARXIV_API_URL",
    "google_scholar": "SERPAPI_URL",
    "openalex": "OPENALEX_API_URL",
    "crossref": "CROSSREF_API_URL",
    "semantic_scholar": "SEMANTIC_SCHOLAR_API_URL",
    "pubmed": "NCBI_EUTILS_URL",
    "openreview": "OPENREVIEW_API_URL",
    "dblp": "DBLP_API_URL",
    "europepmc": "EUROPEPMC_API_URL",
    # medRxiv shares bioRxiv's API and searches through Europe PMC.
    "biorxiv": "BIORXIV_API_URL",
}


def environment(directory: Path) -> None:
    """The embedded default with every engine offline (before django.setup())."""
    for name in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL", "ENGINES_ENABLED"):
        os.environ.pop(name, None)
    os.environ.update(
        DJANGO_SETTINGS_MODULE="research_site.settings",
        RESEARCH_DIRECTORY=str(directory),
        LOG_LEVEL="ERROR",
        SERP_API_KEY="bench-dummy-key",
        EMBEDDINGS_ENABLED="false",
        # The slow source's empty answer must not be served from the cache to later runs.
        ENGINE_CACHE_TTLS="crossref=0",
    )
    for engine, setting in URL_SETTINGS.items():
        os.environ[setting] = UNRESOLVABLE.format(engine=engine.replace("_", "-"))


class _Answer(dict[str, Any]):
    """A tool's JSON answer; null fields are left out of answers, so absent reads None."""

    def __missing__(self, key: str) -> None:
        return None


def tools() -> dict[str, Callable[..., Any]]:
    """The MCP tools as the /mcp server registers them (write mode): each call returns the
    JSON answer an agent reads (an isError answer raises)."""
    from mcp_endpoint.registry import build_registry

    registry = build_registry(toolsets=["search", "review"], read_only=False)

    def calling(fn: Callable[..., Any]) -> Callable[..., Any]:
        def call(**arguments: Any) -> dict[str, Any]:
            result = fn(**arguments)
            answer = json.loads(result.content[0].text, object_hook=_Answer)
            if result.is_error:
                raise RuntimeError(answer["error"])
            return cast(dict[str, Any], answer)

        return call

    return {name: calling(tool.fn) for name, tool in registry.tools.items()}


def fresh_engines() -> None:
    """Closed breakers, no remembered failures, probes or pauses: a run's start."""
    from engines import breaker, probe, ratelimit
    from engines.registry import registry

    breaker.reset_all()
    probe.forget()
    for engine in registry.engines().values():
        ratelimit.reset(engine)


def search_once(call: Callable[..., Any]) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    page = call(query="transformers for long documents", limit=5)
    return time.perf_counter() - started, page


def bench_search(fns: dict[str, Callable[..., Any]], runs: int, open_calls: int) -> list[str]:
    # The library's own first search in a fresh process loads its indexes; that is not
    # the engines' doing, so it is measured apart, before the runs.
    started = time.perf_counter()
    fns["search_papers"](query="transformers for long documents", engines=["local"])
    library_cold = time.perf_counter() - started
    first: list[float] = []
    opened: list[float] = []
    outcomes: dict[str, str] = {}
    for run in range(runs):
        fresh_engines()
        seconds, page = search_once(fns["search_papers"])
        first.append(seconds)
        if run == 0:
            outcomes = {
                name: f"{status.get('outcome')}/{status.get('reason', '-')}"
                for name, status in page["engines"].items()
            }
        for _ in range(open_calls):
            seconds, page = search_once(fns["search_papers"])
            opened.append(seconds)
        print(f"run {run + 1}: first {first[-1]:.3f} s", file=sys.stderr)
    open_ms = sorted(value * 1000 for value in opened)
    p95 = open_ms[max(0, round(0.95 * len(open_ms)) - 1)]
    rows = [
        _row(
            "search_papers engines=local, first call of the process (library cold; no engine)",
            f"{library_cold:.3f} s",
            f"{library_cold:.3f} s",
            "-",
            True,
        ),
        _row(
            "search_papers, first call (breakers closed; run 1 has cold HTTP clients)",
            f"{statistics.median(first):.3f} s",
            f"{max(first):.3f} s",
            f"<= {FIRST_CALL_GOAL_S} s",
            statistics.median(first) <= FIRST_CALL_GOAL_S,
        ),
        _row(
            f"search_papers while breakers open ({len(opened)} calls; p95 {p95:.0f} ms)",
            f"{statistics.median(open_ms):.0f} ms",
            f"{max(open_ms):.0f} ms",
            f"<= {OPEN_CALL_GOAL_MS:.0f} ms",
            statistics.median(open_ms) <= OPEN_CALL_GOAL_MS,
        ),
    ]
    print("engines on the first call: " + ", ".join(f"{k}={v}" for k, v in outcomes.items()))
    return rows


class _Slow(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        time.sleep(SLOW_SOURCE_SECONDS)
        body = b'{"message-type": "work-list", "message": {"items": []}}'
        try:
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except OSError:
            pass  # the client gave up first

    def log_message(self, *args: Any) -> None:
        pass


def bench_review(fns: dict[str, Callable[..., Any]], runs: int) -> list[str]:
    from django.conf import settings

    from engines.registry import registry

    server = ThreadingHTTPServer(("127.0.0.1", 0), _Slow)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    settings.CROSSREF_API_URL = f"http://127.0.0.1:{server.server_port}"
    registry.refresh()
    times: dict[str, list[float]] = {"start": [], "plan": [], "screen": []}
    states: dict[str, str] = {}
    for run in range(runs):
        fresh_engines()
        started = time.perf_counter()
        state = fns["start_review"](
            query="How do transformers handle long documents?",
            domain="cs",
            wait_seconds=REVIEW_WAIT_SECONDS,
        )
        times["start"].append(time.perf_counter() - started)
        states["start"] = state["state"]
        plan = state["checkpoint"]["payload"]["plan"]
        engines = list(dict.fromkeys(["local", "crossref", *plan["engines"]]))[:5]
        started = time.perf_counter()
        state = fns["decide"](
            session_id=state["session_id"],
            action="edit",
            data={"engines": engines},
            wait_seconds=REVIEW_WAIT_SECONDS,
        )
        times["plan"].append(time.perf_counter() - started)
        states["plan"] = state["state"]
        deadline = time.monotonic() + 60
        while state["state"] == "running" and time.monotonic() < deadline:
            time.sleep(0.5)
            state = fns["get_session"](session_id=state["session_id"])
        started = time.perf_counter()
        state = fns["decide"](
            session_id=state["session_id"], action="approve", wait_seconds=REVIEW_WAIT_SECONDS
        )
        times["screen"].append(time.perf_counter() - started)
        states["screen"] = state["state"]
        print(f"run {run + 1}: " + ", ".join(f"{k} {v[-1]:.2f} s" for k, v in times.items()),
              file=sys.stderr)  # fmt: skip
    server.shutdown()
    labels = {
        "start": "start_review (plan step)",
        "plan": f"decide edit+approve at plan (search step, a {SLOW_SOURCE_SECONDS:g} s source)",
        "screen": "decide approve at screen (completes)",
    }
    return [
        _row(
            f"{labels[key]}, wait_seconds={REVIEW_WAIT_SECONDS} -> {states[key]}",
            f"{statistics.median(values):.2f} s",
            f"{max(values):.2f} s",
            f"<= {REVIEW_GOAL_S:g} s",
            max(values) <= REVIEW_GOAL_S,
        )
        for key, values in times.items()
    ]


def _row(label: str, median: str, worst: str, goal: str, met: bool) -> str:
    return f"| {label} | {median} | {worst} | {goal} | {'yes' if met else 'NO'} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--open-calls", type=int, default=10)
    parser.add_argument("--review-runs", type=int, default=3)
    options = parser.parse_args()

    directory = Path(tempfile.mkdtemp(prefix="bench-offline-"))
    environment(directory)
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    from papers.schemas import PaperRecord
    from papers.services import papers_upsert

    papers_upsert(
        records=[
            PaperRecord.build(
                title="Longformer: The Long-Document Transformer",
                authors=["Iz Beltagy"],
                year=2020,
                abstract="A transformer for long documents with sparse attention.",
            ),
            PaperRecord.build(
                title="Big Bird: Transformers for Longer Sequences",
                authors=["Manzil Zaheer"],
                year=2020,
                abstract="Sparse attention makes transformers scale to long sequences.",
            ),
        ]
    )
    fns = tools()
    rows = bench_search(fns, options.runs, options.open_calls)
    rows += bench_review(fns, options.review_runs)
    print()
    print(f"runs: search {options.runs}, review {options.review_runs}; median and worst")
    print()
    print("| measurement | median | worst | goal | met |")
    print("|---|---|---|---|---|")
    print("\n".join(rows))


if __name__ == "__main__":
    main()

"""No stalls after a start (issue 37, goal 4): the first calls a server answers beside the
tenth, over `/mcp` with the MCP SDK's own client.

    benchmarks/bench_stalls.py --corpus ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz
        [--limit 3000] [--runs 3] [--directory DIR] [--baseline CHECKOUT]
    (--limit 0: the whole corpus, the 95k ACL library; an hour or more with the embeddings;
    --baseline: every start made twice, from CHECKOUT's code then from this one, on the same
    library, one table each: a before/after measured in one run under the same load)

Builds a library once (`import_jsonl` of the corpus's first `--limit` records, then
`reindex_embeddings`, as the README tells a user to, so questions take the default hybrid
path), then `--runs` times: start `manage.py serve --transport http`, connect the SDK's
client as soon as the port accepts, and time

- `initialize` (the SDK client's handshake), and from `serve` being started to its answer;
- `tools/list`, right after (or after the warm-up), as an agent lists the tools before it
  calls one (the SDK's client otherwise sends it inside its first `call_tool`, to check
  answers against output schemas: that round trip would count as the first query's);
- typo queries: `search_papers` (engines `local`) with one title word misspelt (one letter
  dropped; a word the library does not hold, so fewer than 3 exact hits and typo tolerance
  runs), the first right after `initialize`, then nine others; whether each was corrected
  (its hits hold the word spelt right) or answered "typo tolerance is still loading";
- questions: `search_papers` with a natural-language question (the hybrid path: full text
  fused with the semantic ranking, the embedding model encoding the query), the first
  right after the typo queries, then nine others; whether each was ranked by the words
  alone because the server was still loading the models and vectors after
  SEARCH_START_WAIT_MS (its note says so; papers/search/startup.py).

Each query set runs in a rotated order per start, so the first and the tenth are not
always the same text. Printed: medians over the starts, the tenth against the first.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
TYPOS = 10
QUESTIONS = (
    "how can machine translation handle rare words",
    "what methods detect sentiment in product reviews",
    "how do parsers resolve syntactic ambiguity",
    "which corpora are used to evaluate speech recognition",
    "how is word meaning represented in a lexicon",
    "can dialogue systems answer questions about a database",
    "what makes automatic summarization of documents hard",
    "how are named entities recognised in news text",
    "how do grammars describe the structure of sentences",
    "which features help classify text by topic",
)
_WORD = re.compile(r"[A-Za-z]+")


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def server_env(directory: Path) -> dict[str, str]:
    """Default settings on `directory`: SQLite, no token, local engine only."""
    dropped = {
        "DATABASE_URL", "REDIS_URL", "MCP_AUTH_TOKEN", "MCP_REQUIRE_COLLECTION", "MCP_READ_ONLY",
        "MCP_TOOLSETS", "MCP_ENABLED", "MCP_TRANSPORT", "MCP_DEFAULT_COLLECTIONS", "ALLOWED_HOSTS",
    }  # fmt: skip
    env = {k: v for k, v in os.environ.items() if k not in dropped}
    env["DJANGO_SETTINGS_MODULE"] = "research_site.settings"
    env["RESEARCH_DIRECTORY"] = str(directory)
    env["ENGINES_ENABLED"] = "local"
    env["LOG_LEVEL"] = "INFO"
    return env


def read_records(corpus: str, limit: int) -> list[dict[str, Any]]:
    opener = gzip.open if corpus.endswith(".gz") else open
    records = []
    with opener(corpus, "rt", encoding="utf-8") as source:
        for line in source:
            if line.strip():
                records.append(json.loads(line))
            if limit and len(records) >= limit:
                break
    return records


def build_library(records: list[dict[str, Any]], env: dict[str, str]) -> None:
    started = time.perf_counter()
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    text = "".join(json.dumps(record) + "\n" for record in records)
    for command in (
        ["import_jsonl", "--no-progress", "-"],
        ["reindex_embeddings", "--no-progress"],
    ):
        done = subprocess.run(
            [sys.executable, "manage.py", *command], cwd=ROOT, env=env, capture_output=True,
            text=True, input=text if "-" in command else None,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"{command[0]} failed:\n{done.stdout}\n{done.stderr}")
    log(f"library of {len(records):,} papers built in {time.perf_counter() - started:.0f} s")


def typo_queries(records: list[dict[str, Any]]) -> list[tuple[str, str]]:
    """(misspelt word, the word): a title word of 8+ letters with one inner
    letter dropped, such that no title or author in the library holds the misspelling."""
    known: set[str] = set()
    for record in records:
        text = f"{record.get('title') or ''} {' '.join(record.get('authors') or [])}"
        known.update(word.lower() for word in _WORD.findall(text))
    found: list[tuple[str, str]] = []
    used: set[str] = set()
    for record in records[len(records) // 3 :]:
        title = record.get("title") or ""
        for word in _WORD.findall(title):
            word = word.lower()
            typo = word[:3] + word[4:]
            if len(word) >= 8 and word not in used and typo not in known:
                found.append((typo, word))
                used.add(word)
                break
        if len(found) == TYPOS:
            return found
    raise SystemExit("the library has too few long title words for the typo queries")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind((HOST, 0))
        return int(probe.getsockname()[1])


WARM_UP_DONE = ("Search warm-up done",)
STILL_LOADING = "still loading semantic search"  # the note of papers/search/local.py
# The kinds of start: which queries come first, and whether the client waits for the
# server's warm-up to log that it is done before its first call.
STARTS = (("typo", False), ("question", False), ("typo", True))


def one_start(
    env: dict[str, str],
    typos: list[tuple[str, str]],
    questions: list[str],
    logs: Path,
    *,
    first: str,
    after_warm_up: bool,
    root: Path = ROOT,
) -> dict[str, Any]:
    """Start a server, time its first calls (`first` kind first), stop it."""
    import anyio
    import httpx2
    import mcp
    from mcp.client.streamable_http import streamable_http_client

    port = free_port()
    log_path = logs / f"serve-{port}.log"
    with log_path.open("w") as log_file:
        started = time.perf_counter()
        process = subprocess.Popen(
            [sys.executable, "manage.py", "serve", "--transport", "http", "--host", HOST,
             "--port", str(port)],
            cwd=root, env=env, stdout=log_file, stderr=subprocess.STDOUT,
        )  # fmt: skip
        try:
            while True:
                if process.poll() is not None:
                    raise SystemExit(f"serve exited:\n{log_path.read_text()[-2000:]}")
                try:
                    socket.create_connection((HOST, port), timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.02)

            async def run() -> dict[str, Any]:
                figures: dict[str, Any] = {
                    "typo_ms": [], "typo_corrected": [], "question_ms": [], "question_words": []
                }  # fmt: skip

                async def typo_queries() -> None:
                    for typo, word in typos:
                        ms, body = await call(client, typo)
                        figures["typo_ms"].append(ms)
                        titles = [hit.get("title") or "" for hit in body.get("results", [])]
                        figures["typo_corrected"].append(any(word in t.lower() for t in titles))

                async def question_queries() -> None:
                    for question in questions:
                        ms, body = await call(client, question)
                        figures["question_ms"].append(ms)
                        notes = body.get("notes") or []
                        figures["question_words"].append(any(STILL_LOADING in n for n in notes))

                async with httpx2.AsyncClient(timeout=120) as http_client:
                    transport = streamable_http_client(
                        f"http://{HOST}:{port}/mcp", http_client=http_client
                    )
                    before = time.perf_counter()
                    async with mcp.Client(transport, mode="legacy") as client:
                        figures["initialize_ms"] = (time.perf_counter() - before) * 1000
                        figures["start_to_initialize_ms"] = (time.perf_counter() - started) * 1000
                        if after_warm_up:
                            deadline = time.monotonic() + 600
                            while not all(line in log_path.read_text() for line in WARM_UP_DONE):
                                if time.monotonic() > deadline:
                                    raise SystemExit(f"no warm-up:\n{log_path.read_text()}")
                                await anyio.sleep(0.05)
                            figures["warm_up_ms"] = (time.perf_counter() - started) * 1000
                        before = time.perf_counter()
                        await client.list_tools()
                        figures["list_tools_ms"] = (time.perf_counter() - before) * 1000
                        order = [typo_queries, question_queries]
                        for step in order if first == "typo" else reversed(order):
                            await step()
                return figures

            async def call(client: Any, query: str) -> tuple[float, dict[str, Any]]:
                before = time.perf_counter()
                result = await client.call_tool(
                    "search_papers", {"query": query, "engines": "local", "max_results": 10}
                )
                ms = (time.perf_counter() - before) * 1000
                if result.is_error:
                    raise SystemExit(f"search_papers({query!r}) failed: {result.content}")
                return ms, json.loads(result.content[0].text)

            return anyio.run(run)
        finally:
            process.terminate()
            process.wait(60)


def median(values: list[float]) -> float:
    return statistics.median(values)


def print_table(
    runs: list[dict[tuple[str, bool], dict[str, Any]]], papers: int, title: str | None = None
) -> None:
    def of(kind: tuple[str, bool]) -> list[dict[str, Any]]:
        return [run[kind] for run in runs]

    if title:
        print(f"**{title}**\n")
    print(
        f"{papers:,} ACL papers (SQLite, first-tier vectors after `reindex_embeddings`), "
        f"{len(runs)} rounds of three starts of `manage.py serve --transport http`; the MCP "
        "SDK's client over `/mcp`, calls one after another; medians over the rounds. Typo "
        "query: `search_papers` (engines `local`) with one title word misspelt (fewer than 3 "
        "exact hits: typo tolerance runs); question: a natural-language question (the "
        "default hybrid path, the query encoded by the embedding model). Each start lists "
        "the tools (`tools/list`, as an agent does before its first call), then runs 10 "
        "of one kind, then 10 of the other.\n"
    )
    print(
        "| start | call | first (ms) | tenth (ms) | median of 2nd-10th (ms) | first / tenth "
        "| typo queries corrected; questions by the words alone (still loading) |"
    )
    print("|---|---|---:|---:|---:|---:|---:|")
    rows = (
        (("typo", False), "typo queries first, at once after `initialize`"),
        (("question", False), "questions first, at once after `initialize`"),
        (("typo", True), "after the warm-up logged it was done"),
    )
    for kind, label in rows:
        figures = of(kind)
        for call, key in (("typo query", "typo_ms"), ("question", "question_ms")):
            first = median([f[key][0] for f in figures])
            tenth = median([f[key][9] for f in figures])
            rest = median([median(f[key][1:]) for f in figures])
            corrected = ""
            if key == "typo_ms":
                firsts = sum(f["typo_corrected"][0] for f in figures)
                every = sum(sum(f["typo_corrected"]) for f in figures)
                corrected = f"first {firsts}/{len(figures)}; all {every}/{TYPOS * len(figures)}"
            else:
                firsts = sum(f["question_words"][0] for f in figures)
                every = sum(sum(f["question_words"]) for f in figures)
                total = sum(len(f["question_words"]) for f in figures)
                corrected = f"first {firsts}/{len(figures)}; all {every}/{total}"
            print(
                f"| {label} | {call} | {first:.1f} | {tenth:.1f} | {rest:.1f} "
                f"| {first / tenth:.2f}× | {corrected} |"
            )
    every_start = [f for run in runs for f in run.values()]
    initialize = median([f["initialize_ms"] for f in every_start])
    since = median([f["start_to_initialize_ms"] for f in every_start])
    warm = median([f["warm_up_ms"] for f in of(("typo", True))])
    listed = median([f["list_tools_ms"] for f in every_start])
    print()
    print(
        f"- `initialize` (the SDK client's handshake, the server's first request): "
        f"{initialize:.1f} ms, median of {len(every_start)} starts; from `serve` started to "
        f"its answer {since / 1000:.1f} s (Python, Django, the checks, uvicorn starting "
        f"and the search warm-up, which the port waits for up to 2 s); "
        f"then `tools/list` {listed:.1f} ms (median)."
    )
    print(
        f"- The warm-up (typo-tolerance vocabulary and embedding models, in background "
        f"threads) logged it was done {warm / 1000:.1f} s after `serve` started (median)."
    )
    warm_rows = of(("typo", True))
    ratios = [
        median([f[key][0] for f in warm_rows]) / median([f[key][9] for f in warm_rows])
        for key in ("typo_ms", "question_ms")
    ]
    goal = "met" if max(ratios) <= 1.5 else "not met"
    print(
        "- Goal (issue 37: the first query after a start as fast as the tenth, here within "
        f"1.5×, once the warm-up is done): **{goal}** (first / tenth "
        f"{ratios[0]:.2f}× typo, {ratios[1]:.2f}× question)."
    )


def rotated(items: list[Any], by: int) -> list[Any]:
    by %= len(items)
    return items[by:] + items[:by]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="ACL JSONL(.gz).")
    parser.add_argument(
        "--limit", type=int, default=3000, help="Its first N records (0: all, ~95k)."
    )
    parser.add_argument("--runs", type=int, default=3, help="Rounds of starts (medians).")
    parser.add_argument("--directory", help="Keep the library here (reused when it exists).")
    parser.add_argument(
        "--baseline",
        help="Another checkout (e.g. `git archive` of an older commit): each start is made "
        "from it too, just before this code's; a second table.",
    )
    args = parser.parse_args()
    if args.runs < 1 or args.limit < 0:
        parser.error("--runs must be >= 1 and --limit >= 0")
    records = read_records(args.corpus, args.limit)
    typos = typo_queries(records)
    scratch = None
    if args.directory:
        directory = Path(args.directory).resolve()  # also for --baseline's cwd
        directory.mkdir(parents=True, exist_ok=True)
    else:
        (ROOT / "benchmarks" / ".work").mkdir(parents=True, exist_ok=True)
        scratch = tempfile.mkdtemp(prefix="stalls-", dir=ROOT / "benchmarks" / ".work")
        directory = Path(scratch)
    env = server_env(directory)
    roots = [ROOT]
    if args.baseline:
        baseline = Path(args.baseline).resolve()
        if not (baseline / "manage.py").exists():
            parser.error(f"--baseline {baseline} holds no manage.py")
        roots = [baseline, ROOT]
    try:
        if not (directory / "research.db").exists():
            build_library(records, env)
        logs = directory / "logs"
        logs.mkdir(exist_ok=True)
        runs: dict[Path, list[dict[tuple[str, bool], dict[str, Any]]]] = {r: [] for r in roots}
        for index in range(args.runs):
            run: dict[Path, dict[tuple[str, bool], dict[str, Any]]] = {r: {} for r in roots}
            for first, after_warm_up in STARTS:
                for root in roots:
                    figures = one_start(
                        env, rotated(typos, 3 * index), rotated(list(QUESTIONS), 3 * index),
                        logs, first=first, after_warm_up=after_warm_up, root=root,
                    )  # fmt: skip
                    run[root][(first, after_warm_up)] = figures
                    which = f" ({root})" if len(roots) > 1 else ""
                    log(
                        f"round {index + 1}{which}, {first} first"
                        f"{', after warm-up' if after_warm_up else ''}: initialize "
                        f"{figures['initialize_ms']:.0f} ms; tools/list "
                        f"{figures['list_tools_ms']:.0f} ms; typo first "
                        f"{figures['typo_ms'][0]:.0f} / tenth {figures['typo_ms'][9]:.0f} ms; "
                        f"question first {figures['question_ms'][0]:.0f} / tenth "
                        f"{figures['question_ms'][9]:.0f} ms"
                    )
            for root in roots:
                runs[root].append(run[root])
        if len(roots) > 1:
            print_table(runs[roots[0]], len(records), f"Baseline: {roots[0]}")
            print()
            print_table(runs[ROOT], len(records), f"This checkout: {ROOT}")
        else:
            print_table(runs[ROOT], len(records))
    finally:
        if scratch is not None:
            shutil.rmtree(scratch, ignore_errors=True)


if __name__ == "__main__":
    main()

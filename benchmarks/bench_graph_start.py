"""Searches after a start at 300k-1M papers: the approximate vector graph built by the
process, or loaded from the file the import's last step saved (papers/search/approximate.py).

    benchmarks/bench_graph_start.py --directory KNOWLEDGE_BASE [--directory ...]
        [--queries 100] [--seed 7] [--max-minutes 40] [--starts unsaved,command]
        [--wait-ms 1000,600000]

On each kept SQLite library (bench_search_scale.py --keep made it: papers, postings and
first-tier vectors, as `import_jsonl` leaves them), up to three starts, each a new process
as a server's start is:

- **unsaved**: what the knowledge base's cache holds is deleted first (saved graphs, the
  terms held in memory at the last exit), as a library had after an import until the
  imports saved its graph (and has after `--no-embeddings`, or with a Celery broker, whose
  workers embed after the command): the process builds the graph on one core;
- **command**: the cache deleted, then `manage.py reindex_embeddings` runs (in its own
  process, timed): with every vector present it does what `import_jsonl` now ends with,
  the graph built on every core and saved; then the start loads it;
- **imported**: the library as the import left it (its graph saved, nothing deleted): a
  user's first start after `import_jsonl`;
- **restart**: a start after the one before (its graph, and the posting lists' terms it
  held at exit, saved): what a server's restart finds.

`--wait-ms`: SEARCH_START_WAIT_MS for each start in turn (one value: for all; unset:
the setting's default), e.g. `--starts command,restart,restart --wait-ms 1000,600000,1000`
to compare a restart whose first searches wait for the models and vectors (as every
search did before the setting) with one whose searches do not.

Each start runs the server's warm-up (`warmup.start_in_background()`: the models, the
vector index and its graph's build or load on a background thread, the posting lists held
at the last exit, two rehearsed searches) and at once, as clients would, `local_search`
(what `search_papers` with engines `local` calls) with `--queries` queries of
bench_search_scale's growth-curve mix, one after another, round and round until the graph
is ready and the queries have run twice with it (or --max-minutes pass). Each search is
marked by whether the graph was held when it started, and by whether it was answered by
the words alone because the warm-up was still loading the models and vectors after
SEARCH_START_WAIT_MS (papers/search/startup.py; its note says so). Printed: seconds from
the start to the warm-up's end and to the graph ready, the first search, how many were
answered by the words alone and the first one ranked by meaning too, and p50 / p95 of
the searches before the graph, of the first round with it and of the second; the
command's time and its line; the log lines of the build or load and of the warm-up.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "benchmarks"))
DEFAULT_QUERY_CORPUS = ROOT.parent / "shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz"
STARTS = {
    "imported": "the first start after the import (its graph saved)",
    "unsaved": "nothing saved: the graph built by the process",
    "command": "the graph the import's last step saved",
    "restart": "a restart (the graph and the held terms saved)",
}
STILL_LOADING = "still loading semantic search"  # the note of papers/search/local.py


def worker(spec: dict[str, Any]) -> dict[str, Any]:
    import django

    django.setup()
    from bench_search_scale import make_queries

    from papers.search import warmup
    from papers.search.embedding import load_model
    from papers.search.local import local_search
    from papers.search.vector_index import vector_index

    queries = [
        q for _, q in make_queries(Path(spec["query_corpus"]), spec["queries"], spec["seed"])
    ]
    started = time.perf_counter()
    warmup.start_in_background()
    warm_at: float | None = None
    deadline = started + spec["max_minutes"] * 60
    ready_at: float | None = None
    rows: list[tuple[bool, float, bool, bool]] = []
    with_graph = 0
    while with_graph < 2 * len(queries) and time.perf_counter() < deadline:
        query = queries[len(rows) % len(queries)]
        graph = vector_index().graph_ready
        if graph and ready_at is None:
            ready_at = time.perf_counter() - started
        if warm_at is None and warmup.state() != "loading":
            warm_at = time.perf_counter() - started
        began = time.perf_counter()
        page = local_search(query=query, limit=20)
        took = (time.perf_counter() - began) * 1000
        alone = any(STILL_LOADING in note for note in page.notes)
        rows.append((graph, took, alone, page.mode == "hybrid"))
        with_graph += graph
    return {
        "papers": int(vector_index().snapshot(load_model()).count),
        "warm_s": warm_at,
        "graph_s": ready_at,
        "rows": rows,
        "load": os.getloadavg(),
    }


def p50_p95(values: list[float]) -> str:
    if not values:
        return "n/a"
    ordered = sorted(values)
    return (
        f"{statistics.median(ordered):.1f} / {ordered[max(0, round(0.95 * len(ordered)) - 1)]:.1f}"
    )


def knowledge_base_env(directory: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DATABASE_URL", "REDIS_URL", "CELERY_BROKER_URL")
    }
    env.update(
        RESEARCH_DIRECTORY=str(directory),
        DJANGO_SETTINGS_MODULE="research_site.settings",
        LOG_LEVEL="INFO",
    )
    return env


TIME = Path("/usr/bin/time")  # GNU time: the command's peak memory (left out without it)


def saved_graph_by_the_command(directory: Path) -> tuple[float, str, str]:
    """`manage.py reindex_embeddings` on `directory`: its wall seconds, the line it
    printed about the graph and its peak memory."""
    command = [sys.executable, "manage.py", "reindex_embeddings", "--no-progress"]
    if TIME.exists():
        command = [str(TIME), "-f", "peak RSS %M KiB", *command]
    began = time.perf_counter()
    done = subprocess.run(
        command, cwd=ROOT, env=knowledge_base_env(directory), capture_output=True, text=True
    )
    seconds = time.perf_counter() - began
    if done.returncode != 0:
        raise SystemExit(f"{directory}: reindex_embeddings failed:\n{done.stderr[-3000:]}")
    line = next((x for x in done.stdout.splitlines() if x.startswith("vector graph")), "")
    if "saved, so" not in line:
        raise SystemExit(f"{directory}: reindex_embeddings saved no graph:\n{done.stdout}")
    peak = next((x for x in done.stderr.splitlines() if x.startswith("peak RSS")), "")
    if peak:
        peak = f"{int(peak.split()[2]) / 1024**2:.2f} GiB peak memory"
    return seconds, line, peak or "peak memory not measured"


def one_start(
    args: argparse.Namespace, directory: Path, wait_ms: str | None
) -> tuple[dict[str, Any], list[str]]:
    """One start on `directory` in a new process (SEARCH_START_WAIT_MS `wait_ms` when
    given): what `worker` measured, and the vector index's log lines."""
    env = knowledge_base_env(directory)
    if wait_ms is not None:
        env["SEARCH_START_WAIT_MS"] = wait_ms
    with tempfile.TemporaryDirectory() as scratch:
        spec_path, result = Path(scratch) / "spec.json", Path(scratch) / "result.json"
        spec_path.write_text(json.dumps({**vars(args), "result": str(result)}))
        done = subprocess.run(
            [sys.executable, __file__, "--directory", str(directory), "--worker", str(spec_path)],
            cwd=ROOT, env=env, capture_output=True, text=True,
        )  # fmt: skip
        if done.returncode != 0:
            raise SystemExit(f"{directory}: a start failed:\n{done.stderr[-3000:]}")
        measured = json.loads(result.read_text())
    logs = [
        line.split(" INFO ")[-1]
        for line in done.stderr.splitlines()
        if "pproximate vector index" in line or "Posting lists" in line or "warm-up done" in line
    ]
    return measured, logs


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--directory", action="append", required=True, help="A kept SQLite knowledge base."
    )
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--max-minutes", type=float, default=40.0)
    parser.add_argument("--query-corpus", default=str(DEFAULT_QUERY_CORPUS))
    parser.add_argument(
        "--starts", default=",".join(STARTS), help=f"Which starts, of {', '.join(STARTS)}."
    )
    parser.add_argument(
        "--wait-ms", help="SEARCH_START_WAIT_MS per start (comma-separated), or one for all."
    )
    parser.add_argument("--worker", help=argparse.SUPPRESS)
    args = parser.parse_args()
    starts = args.starts.split(",")
    waits: list[str | None] = [None] * len(starts)
    if args.wait_ms:
        waits = args.wait_ms.split(",")
        waits = waits * len(starts) if len(waits) == 1 else waits
        if len(waits) != len(starts) or not all(w.isdigit() for w in waits):
            raise SystemExit("--wait-ms: one number of milliseconds, or one per start")
    if args.worker:
        spec = json.loads(Path(args.worker).read_text())
        Path(spec["result"]).write_text(json.dumps(worker(spec)))
        return
    lines = [
        f"SQLite; {args.queries} queries (bench_search_scale's mix, seed {args.seed}), "
        "`local_search`, top 20, one at a time.",
        "",
        "| vectors | start | warm-up done s | graph ready s | first search ms "
        "| by the words alone while loading | first by meaning too, ms "
        "| searches before the graph | p50 / p95 ms "
        "| with it: first round p50 / p95 ms | second round p50 / p95 ms | load |",
        "|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    logs: list[str] = []
    for directory in (Path(d).resolve() for d in args.directory):
        if not (directory / "research.db").exists():
            logs.append(f"{directory}: not run (no library there; bench_search_scale makes it)")
            continue
        for number, (start, wait_ms) in enumerate(zip(starts, waits, strict=True)):
            if start not in STARTS:
                raise SystemExit(f"--starts: {start!r} is not one of {', '.join(STARTS)}")
            if start in ("unsaved", "command"):
                for saved in [
                    *(directory / "cache" / "vectors").glob("*"),
                    *(directory / "cache" / "postings").glob("*"),
                ]:
                    saved.unlink()
            if start == "command":
                seconds, line, peak = saved_graph_by_the_command(directory)
                logs.append(
                    f"{directory.parent.name}, reindex_embeddings: {seconds:.1f} s, {peak}; {line}"
                )
            measured, log_lines = one_start(args, directory, wait_ms)
            logs += [f"{directory.parent.name}, start {number + 1}: {line}" for line in log_lines]
            rows = measured["rows"]
            before = [ms for graph, ms, _, _ in rows if not graph]
            after = [ms for graph, ms, _, _ in rows if graph]
            words_only = sum(alone for _, _, alone, _ in rows)
            by_meaning = next((f"{ms:.0f}" for _, ms, _, hybrid in rows if hybrid), "none")
            ready = measured["graph_s"]
            shown_ready = "not ready" if ready is None else f"{ready:.1f}"
            warm = measured["warm_s"]
            shown_warm = "not done" if warm is None else f"{warm:.1f}"
            first_ms = rows[0][1] if rows else float("nan")
            load = " / ".join(f"{value:.1f}" for value in measured["load"])
            waiting = (
                "" if wait_ms is None else f", searches wait for the load up to {int(wait_ms):,} ms"
            )
            lines.append(
                f"| {measured['papers']:,} | {number + 1}: {STARTS[start]}{waiting} "
                f"| {shown_warm} | {shown_ready} | {first_ms:.0f} | {words_only} | {by_meaning} "
                f"| {len(before)} "
                f"| {p50_p95(before)} "
                f"| {p50_p95(after[: args.queries])} | {p50_p95(after[args.queries :])} "
                f"| {load} |"
            )
    print("\n".join([*lines, "", *(f"- {line}" for line in logs)]))


if __name__ == "__main__":
    main()

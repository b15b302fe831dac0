"""Filtered searches with the filters' papers kept between searches, beside the same
searches reading them at each search (as before papers/search/kept_filters.py), in one
process on a library `bench_search_scale.py --keep` left (its project included).

Each query runs with every filter (none, a year range, a venue glob, the project) once
with the kept lists and once without (none kept or taken: `kept_filters.kept` and `keep`
replaced for those searches), the two modes alternating query by query, through
`local_search` as `search_papers` with engines `local` calls it. The same pages either
way (checked on every query).

    benchmarks/bench_kept_filters.py --directory SCALE_DIR/sqlite-1m/sqlite [--queries 100]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


def pct(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--directory", required=True, help="the library's RESEARCH_DIRECTORY")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--project-size", type=int, default=2000)
    args = parser.parse_args()
    if not (Path(args.directory) / "research.db").exists() and "DATABASE_URL" not in os.environ:
        print(f"No library at {args.directory}: not run (bench_search_scale.py --keep makes one).")
        return
    os.environ.update(
        DJANGO_SETTINGS_MODULE="research_site.settings",
        RESEARCH_DIRECTORY=str(Path(args.directory).resolve()),
        LOG_LEVEL="WARNING",
    )
    sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]
    import django

    django.setup()
    import bench_search_scale as scale
    from django.core.management import call_command

    from papers.models import Paper
    from papers.search import kept_filters
    from papers.search.local import local_search, search_filters_build

    call_command("migrate", verbosity=0)
    project = scale.make_project(args.project_size, args.seed)  # bench_search_scale's
    filters: dict[str, Any] = {
        "none": None,
        "year ≥ 2018": search_filters_build(date_from="2018"),
        "venue Findings*": search_filters_build(payload={"venue": "Findings*"}),
        "project": search_filters_build(project=project.id),
    }
    corpus = scale.DEFAULT_QUERY_CORPUS
    queries = [query for _, query in scale.make_queries(corpus, args.queries, args.seed)]
    warmup = [query for _, query in scale.make_queries(corpus, scale.WARMUP, args.seed + 1000)]
    kept_and_keep = (kept_filters.kept, kept_filters.keep)

    def nothing(*_: Any) -> None:
        return None

    def kept(on: bool) -> None:
        """Off: no list is kept or answers (those kept stay for the next search on)."""
        kept_filters.kept, kept_filters.keep = kept_and_keep if on else (nothing, nothing)

    def search(query: str, name: str) -> tuple[float, list[Any]]:
        started = time.perf_counter()
        page = local_search(query=query, filters=filters[name], limit=20)
        elapsed = (time.perf_counter() - started) * 1000
        return elapsed, [hit.record["paper_id"] for hit in page.hits]

    for query in warmup:
        for on in (True, False):
            kept(on)
            for name in filters:
                search(query, name)
    times: dict[tuple[str, bool], list[float]] = {
        (n, on): [] for n in filters for on in (True, False)
    }
    differ = 0
    for number, query in enumerate(queries):
        pages = {}
        for on in (True, False) if number % 2 else (False, True):
            kept(on)
            for name in filters:
                ms, ids = search(query, name)
                times[(name, on)].append(ms)
                pages[(name, on)] = ids
        differ += sum(pages[(name, True)] != pages[(name, False)] for name in filters)
    papers = Paper.objects.count()
    print(
        f"{papers:,} papers (SQLite unless DATABASE_URL), {len(queries)} queries a filter "
        f"and mode, modes alternating query by query; load average "
        f"{os.getloadavg()[0]:.2f} at the end. Pages that differed between the modes: "
        f"{differ}."
    )
    print()
    print(
        "| filter | kept p50 ms | kept p95 ms | read each search p50 ms | "
        "read each search p95 ms | p95 / unfiltered p95, kept | read each search | goal |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---|")
    base = {on: pct(times[("none", on)], 0.95) for on in (True, False)}
    for name in filters:
        on, off = times[(name, True)], times[(name, False)]
        ratio = pct(on, 0.95) / base[True]
        goal = "" if name == "none" else f"≤ 1.5×: {'met' if ratio <= 1.5 else '**not met**'}"
        print(
            f"| {name} | {statistics.median(on):.1f} | {pct(on, 0.95):.1f} | "
            f"{statistics.median(off):.1f} | {pct(off, 0.95):.1f} | {ratio:.2f}× | "
            f"{pct(off, 0.95) / base[False]:.2f}× | {goal} |"
        )


if __name__ == "__main__":
    main()

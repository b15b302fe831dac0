"""Import throughput and peak memory of `import_jsonl` on SQLite and PostgreSQL: the
command as a user runs it, so the papers, their full-text postings and (on the embedded
default) their first-tier vectors; with a broker the workers embed, outside the timing.

Each run imports the corpus into an empty database in a fresh process, then imports it
again (which must create nothing). Prints medians over the runs.

    make bench-import   (or benchmarks/bench_import.py --corpus FILE --runs 3)
"""

from __future__ import annotations

import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SUMMARY = re.compile(r"(\d+) records: (\d+) created, (\d+) updated, (\d+) skipped")


# A wrapper interpreter runs each import, so RUSAGE_CHILDREN holds that one import's peak.
_WRAPPER = (
    "import resource, subprocess, sys;"
    "done = subprocess.run(sys.argv[1:], capture_output=True, text=True);"
    "sys.stdout.write(done.stdout); sys.stderr.write(done.stderr);"
    "usage = resource.getrusage(resource.RUSAGE_CHILDREN);"
    "print('PEAK_KIB', usage.ru_maxrss, 'CPU_S', usage.ru_utime + usage.ru_stime);"
    "sys.exit(done.returncode)"
)


def run_import(corpus: str, env: dict[str, str]) -> tuple[float, float, float, tuple[int, ...]]:
    """(seconds, peak RSS MiB, CPU seconds, (records, created, updated, skipped)) of one
    import process. CPU seconds (user + system, every thread) say what the import costs
    whatever else the shared machine is doing; the wall clock does not."""
    started = time.perf_counter()
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, sys.executable, "manage.py", "import_jsonl", corpus,
         "--no-progress"],
        cwd=ROOT, env=env, capture_output=True, text=True, check=False,
    )  # fmt: skip
    seconds = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"import failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    usage = re.search(r"PEAK_KIB (\d+) CPU_S ([\d.]+)", done.stdout)
    assert usage is not None, done.stdout[-500:]
    peak, cpu = int(usage.group(1)) / 1024, float(usage.group(2))
    match = SUMMARY.search(done.stdout)
    counts = tuple(int(g) for g in match.groups()) if match else ()
    return seconds, peak, cpu, counts


def prepare(backend: str, work: Path, pg_url: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "REDIS_URL")}
    env["DJANGO_SETTINGS_MODULE"] = "research_site.settings"
    env["RESEARCH_DIRECTORY"] = str(work)
    if backend == "postgresql":
        import psycopg

        admin_url = pg_url.rsplit("/", 1)[0] + "/postgres"
        with psycopg.connect(admin_url, autocommit=True) as connection:
            connection.execute("DROP DATABASE IF EXISTS bench_import WITH (FORCE)")
            connection.execute("CREATE DATABASE bench_import")
        env["DATABASE_URL"] = pg_url.rsplit("/", 1)[0] + "/bench_import"
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--backends", default="sqlite,postgresql")
    parser.add_argument("--pg-url", default="postgres://postgres@127.0.0.1:5432/test")
    args = parser.parse_args()

    rows = []
    for backend in args.backends.split(","):
        firsts, seconds_again, peaks, cpus = [], [], [], []
        counts: tuple[int, ...] = ()
        for run in range(args.runs):
            with tempfile.TemporaryDirectory(prefix="bench-import-") as work:
                env = prepare(backend, Path(work), args.pg_url)
                elapsed, peak, cpu, counts = run_import(args.corpus, env)
                again, _, _, again_counts = run_import(args.corpus, env)
                peaks.append(peak)
                cpus.append(cpu)
                firsts.append(elapsed)
                seconds_again.append(again)
                print(f"{backend} run {run + 1}: {elapsed:.1f} s, re-run {again:.1f} s "
                      f"{counts} / {again_counts}", file=sys.stderr, flush=True)  # fmt: skip
        records = counts[0] if counts else 0
        first = statistics.median(firsts)
        rows.append((backend, records, first, records / first, min(firsts), max(firsts),
                     statistics.median(peaks), statistics.median(seconds_again),
                     statistics.median(cpus)))  # fmt: skip

    print()
    print(
        "| backend | records | import s (median) | CPU s (median) | records/s | min–max s "
        "| peak RSS MiB | re-run s |"
    )
    print("|---|---|---|---|---|---|---|---|")
    for backend, records, first, rate, low, high, peak, again, cpu in rows:
        print(f"| {backend} | {records:,} | {first:.1f} | {cpu:.1f} | {rate:,.0f} "
              f"| {low:.1f}–{high:.1f} | {peak:.0f} | {again:.1f} |")  # fmt: skip
    print()
    print("The import: papers, their full-text postings and first-tier vectors (the "
          "command's default). CPU s: user + system of the import process, every thread; "
          "the wall clock depends on the machine's load (the header's load average).")  # fmt: skip


if __name__ == "__main__":
    main()

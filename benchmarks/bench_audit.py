"""What the audit log costs a write (core/audit.py, docs/AUTH.md "The audit log").

    nice .venv/bin/python benchmarks/bench_audit.py [--rounds 3] [--database-url URL]

In one process, on one database (a fresh SQLite file, or `--database-url`, whose tables
are created by migrate), each workload runs with the audit log on and off in alternating
rounds (on, off, on, off, ...), so load on the machine falls on both alike; printed: the
median seconds of each and their ratio (on / off), and the audit entries one run writes.

- screening: 1,000 decisions on a review at its screen checkpoint, as `screen_decide`
  calls of 100 (the most one call takes) by a person with an API token;
- import: 1,000 papers through `papers_upsert` in batches of 200 (what an import's batch
  does), by the system;
- single saves: 1,000 projects created one by one outside a transaction, each its own
  commit (the worst case: every save is followed by its own audit insert).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from benchmarks.bench_search_quality import setup_django  # noqa: E402

COUNT = 1000


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--database-url", default=None)
    args = parser.parse_args()
    directory = tempfile.mkdtemp(prefix="bench-audit-")
    setup_django(directory, args.database_url)

    from django.conf import settings
    from django.contrib.auth.models import User

    from core.identity import Principal, acting_as
    from core.models import AuditEntry
    from papers.schemas import PaperRecord
    from papers.services import papers_upsert
    from projects.models import Project, ReviewCandidate, ReviewCheckpoint, ReviewSession
    from projects.review.screening import screening_decide

    alice = User.objects.create_user("alice")
    principal = Principal.for_user(alice, "api-token", client="API token bench")
    runs = {"n": 0}

    def records(tag: str) -> list[Any]:
        return [
            PaperRecord.build(title=f"Bench {tag} paper {n} on sparse attention",
                              authors=[f"Author {n % 97}"], year=2000 + n % 25,
                              doi=f"10.9999/bench.{tag}.{n}")
            for n in range(COUNT)
        ]  # fmt: skip

    paper_ids = sorted(papers_upsert(records=records("library")).paper_ids)[:COUNT]

    session = ReviewSession.objects.create(
        query="bench", domain="general", max_results=COUNT, stage="screen", status="waiting"
    )
    ReviewCheckpoint.objects.create(session=session, sequence=1, kind="screen", round=1)
    ReviewCandidate.objects.bulk_create(
        ReviewCandidate(session=session, paper_id=pk, source="search", round=1, rank=n + 1)
        for n, pk in enumerate(paper_ids)
    )

    def screening() -> None:
        ReviewCandidate.objects.filter(session=session).update(
            status="pending", votes={}, voters={}, screened_order=None, screened_by=""
        )
        with acting_as(principal):
            start = time.perf_counter()
            for first in range(0, COUNT, 100):
                decisions = [
                    {"paper": pk, "decision": "include" if pk % 3 else "exclude", "reason": "x"}
                    for pk in paper_ids[first : first + 100]
                ]
                screening_decide(session_id=session.pk, decisions=decisions)
            timings["screening"][settings.AUDIT_ENABLED].append(time.perf_counter() - start)

    def imports() -> None:
        runs["n"] += 1
        batch = records(f"import{runs['n']}")
        start = time.perf_counter()
        for first in range(0, COUNT, 200):
            papers_upsert(records=batch[first : first + 200])
        timings["import"][settings.AUDIT_ENABLED].append(time.perf_counter() - start)

    def single_saves() -> None:
        runs["n"] += 1
        tag = runs["n"]
        with acting_as(principal):
            start = time.perf_counter()
            for n in range(COUNT):
                Project.objects.create(pk=f"bench-{tag}-{n}", name=f"Bench {tag} {n}")
            timings["single saves"][settings.AUDIT_ENABLED].append(time.perf_counter() - start)

    workloads: dict[str, Callable[[], None]] = {
        "screening": screening, "import": imports, "single saves": single_saves,
    }  # fmt: skip
    timings: dict[str, dict[bool, list[float]]] = {
        name: {True: [], False: []} for name in workloads
    }
    written: dict[str, int] = {}
    for name, run in workloads.items():
        run()  # warm-up, not counted
        timings[name] = {True: [], False: []}
        for _ in range(args.rounds):
            for enabled in (True, False):
                settings.AUDIT_ENABLED = enabled
                before = AuditEntry.objects.count()
                run()
                if enabled:
                    written[name] = AuditEntry.objects.count() - before
        settings.AUDIT_ENABLED = True

    vendor = "PostgreSQL" if args.database_url else "SQLite"
    print(f"audit log cost, {vendor}, {args.rounds} rounds each, median seconds")
    print(f"{'workload':<14} {'on':>8} {'off':>8} {'ratio':>7} {'entries/run':>12}")
    for name, by in timings.items():
        on, off = statistics.median(by[True]), statistics.median(by[False])
        print(f"{name:<14} {on:>8.3f} {off:>8.3f} {on / off:>7.2f} {written[name]:>12}")


if __name__ == "__main__":
    main()

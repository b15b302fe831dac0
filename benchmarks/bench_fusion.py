"""The hybrid fusion's full-text weight, chosen by leave-one-set-out cross-validation.

    .venv/bin/python benchmarks/bench_fusion.py [--sets scifact-train,...] [--limit-queries N]
    .venv/bin/python benchmarks/bench_fusion.py --from-work

Hybrid search (papers/search/semantic.py) fuses the full-text ranking and the semantic
ranking of a query by a convex combination of their min-max normalised scores, the full
text weighted LEXICAL_WEIGHT. This benchmark records, for every query of every set, what
the product ranks: `local_search(query)` with default arguments (what `search_papers`
returns for the library: tests/papers/search/test_quality_path.py holds the two equal),
and, for the queries it ranked by hybrid, the two scored rankings it fused
(`semantic.hybrid_rankings` of the query as query understanding read it). The fusion is
then replayed with the product's own `min_max_fusion` at every weight of a grid; at the
current weight the replay must give the product's own top 10 (`agree` column: a replay
that disagrees is not the product's path, and the run says so).

Sets and documents as benchmarks/bench_lexical.py builds them (SciFact train and test,
Cranfield, acl-lead and acl-title: documents imported through the importers' service, the
first embedding tier built as `import_jsonl` builds it). The weight is chosen on the
training sets only (scifact-test is never used to choose): for each training set, the
weight best on the mean nDCG@10 of the others, scored on it; then the weight best on all
training sets, scored on scifact-test. Each set's recordings are kept in
benchmarks/.work/fusion (`--from-work` tabulates them).
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

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_lexical as lexical_bench
import bench_search_quality as quality

ROOT = quality.ROOT
WORK = ROOT / "benchmarks" / ".work" / "fusion"
SETS = lexical_bench.SETS
TRAINING_SETS = lexical_bench.TRAINING_SETS
GRID = [round(0.30 + 0.025 * step, 3) for step in range(29)]  # 0.30 .. 1.00
PREVIOUS = 0.675  # the weight before this cross-validation (chosen on SciFact train alone)


def record_set(set_name: str, limit_queries: int) -> dict[str, Any]:
    """In a fresh knowledge base: the product's ranking of each query and, for the
    hybrid ones, the two rankings it fused."""
    with tempfile.TemporaryDirectory(prefix="bench-fusion-") as directory:
        quality.setup_django(directory, None)
        from papers.search import semantic
        from papers.search.local import local_search
        from papers.search.understanding import read_query

        docs, queries, qrels = lexical_bench.load(set_name)
        qrels = {qid: rel for qid, rel in qrels.items() if qid in queries}
        if limit_queries:
            qrels = dict(list(qrels.items())[:limit_queries])
        mapping = quality.import_docs(docs)
        quality.embed_everything()
        recorded: dict[str, Any] = {}
        for qid in qrels:
            text = quality.query_text(queries[qid])
            page = local_search(query=text, limit=quality.DEPTH)
            entry: dict[str, Any] = {
                "mode": page.mode,
                "product": [h.record["paper_id"] for h in page.hits],
            }
            if page.mode == "hybrid":
                reading = read_query(text)
                lexical, meaning = semantic.hybrid_rankings(
                    query=reading.query, filters=reading.filters
                )
                entry["lexical"] = [lexical[0], lexical[1]]
                entry["semantic"] = [meaning[0], meaning[1]]
            recorded[qid] = entry
        return {
            "set": set_name,
            "weight": semantic.LEXICAL_WEIGHT,
            "mapping": {str(pk): key for pk, key in mapping.items()},
            "qrels": qrels,
            "queries": recorded,
        }


def replay(recorded: dict[str, Any], weight: float) -> dict[str, list[str]]:
    """Each query's top 10 (document keys) with the full text weighted `weight`."""
    from papers.search.semantic import min_max_fusion

    mapping = recorded["mapping"]
    ranked: dict[str, list[str]] = {}
    for qid, entry in recorded["queries"].items():
        if entry["mode"] == "hybrid":
            lexical = (entry["lexical"][0], entry["lexical"][1])
            meaning = (entry["semantic"][0], entry["semantic"][1])
            fused = min_max_fusion([lexical, meaning], [weight, 1.0 - weight])
            ids = [pk for pk, _ in fused]
        else:
            ids = entry["product"]
        ranked[qid] = [mapping[str(pk)] for pk in ids[:10] if str(pk) in mapping]
    return ranked


def ndcg(recorded: dict[str, Any], weight: float) -> float:
    ranked = replay(recorded, weight)
    qrels = recorded["qrels"]
    return statistics.fmean(quality.ndcg_at_10(ranked[qid], qrels[qid]) for qid in qrels)


def agreement(recorded: dict[str, Any]) -> tuple[int, int]:
    """Queries whose replay at the product's weight gives the product's own top 10."""
    mapping = recorded["mapping"]
    ranked = replay(recorded, recorded["weight"])
    same = 0
    for qid, entry in recorded["queries"].items():
        product = [mapping[str(pk)] for pk in entry["product"][:10] if str(pk) in mapping]
        same += ranked[qid] == product
    return same, len(recorded["queries"])


def best_weight(sets: list[dict[str, Any]]) -> float:
    """The grid's weight with the best mean nDCG@10 over `sets` (the lower on a tie)."""
    return max(GRID, key=lambda w: (statistics.fmean(ndcg(s, w) for s in sets), -w))


def tabulate(recordings: dict[str, dict[str, Any]]) -> list[str]:
    current = next(iter(recordings.values()))["weight"]
    shown = sorted({0.5, 0.6, PREVIOUS, 0.75, current, 0.9, 1.0})

    def label(weight: float) -> str:
        said = {current: " (current)", PREVIOUS: " (before)"}.get(weight, "")
        return f"w {weight:g}{said}"

    lines = [
        "nDCG@10 at each full-text weight w (hybrid queries replayed; the others as the "
        "product ranked them)",
        "",
        "| set | queries | hybrid | agree | " + " | ".join(map(label, shown)) + " |",
        "|---|---|---|---|" + "---|" * len(shown),
    ]
    for name, recorded in recordings.items():
        same, total = agreement(recorded)
        hybrid = sum(e["mode"] == "hybrid" for e in recorded["queries"].values())
        cells = " | ".join(f"{ndcg(recorded, w):.3f}" for w in shown)
        lines.append(f"| {name} | {total} | {hybrid} | {same}/{total} | {cells} |")
    training = {n: r for n, r in recordings.items() if n in TRAINING_SETS}
    if len(training) >= 2:
        lines += [
            "",
            "Leave-one-set-out: each training set scored at the weight best on the others",
            "",
            f"| held out | weight chosen on the others | nDCG@10 there | at w {PREVIOUS:g} |",
            "|---|---|---|---|",
        ]
        held, before = [], []
        for name, recorded in training.items():
            weight = best_weight([r for n, r in training.items() if n != name])
            held.append(ndcg(recorded, weight))
            before.append(ndcg(recorded, PREVIOUS))
            lines.append(f"| {name} | {weight:g} | {held[-1]:.3f} | {before[-1]:.3f} |")
        lines.append(f"| mean | | {statistics.fmean(held):.3f} | {statistics.fmean(before):.3f} |")
        chosen = best_weight(list(training.values()))
        lines.append(f"\nweight best on all training sets: {chosen:g} (configured: {current:g})")
        if "scifact-test" in recordings:
            test = recordings["scifact-test"]
            lines.append(
                f"scifact-test (never used to choose) at {chosen:g}: {ndcg(test, chosen):.3f}; "
                f"at {PREVIOUS:g}: {ndcg(test, PREVIOUS):.3f}"
            )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--limit-queries", type=int, default=0)
    parser.add_argument("--from-work", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    WORK.mkdir(parents=True, exist_ok=True)
    if args.child:
        recorded = record_set(args.child, args.limit_queries)
        (WORK / f"{args.child}.json").write_text(json.dumps(recorded), encoding="utf-8")
        return
    names = args.sets.split(",")
    if not args.from_work:
        for name in names:
            started = time.perf_counter()
            command = [sys.executable, __file__, "--child", name,
                       "--limit-queries", str(args.limit_queries)]  # fmt: skip
            subprocess.run(command, check=True)
            print(f"{name}: recorded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    recordings = {
        name: json.loads((WORK / f"{name}.json").read_text(encoding="utf-8")) for name in names
    }
    with tempfile.TemporaryDirectory(prefix="bench-fusion-") as directory:
        # The product's fusion function is replayed: Django is set up, no database is used.
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
        os.environ["RESEARCH_DIRECTORY"] = directory
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        print("\n".join(tabulate(recordings)))


if __name__ == "__main__":
    main()

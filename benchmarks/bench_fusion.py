"""The hybrid fusion's weights, chosen by leave-one-set-out cross-validation.

    .venv/bin/python benchmarks/bench_fusion.py [--tier first|strong] [--sets scifact-train,...]
        [--limit-queries N]
    .venv/bin/python benchmarks/bench_fusion.py [--tier strong] --from-work

Hybrid search (papers/search/semantic.py) fuses the full-text ranking and the semantic
ranking of a query by a convex combination of their min-max normalised scores, the full
text weighted LEXICAL_WEIGHT. This benchmark records, for every query of every set, what
the product ranks: `local_search(query)` with default arguments (what `search_papers`
returns for the library: tests/papers/search/test_quality_path.py holds the two equal),
and, for the queries it ranked by hybrid, the two scored rankings it fused
(`semantic.hybrid_inputs` of the query as query understanding read it). The fusion is
then replayed with the product's own `min_max_fusion` at every weight of a grid; at the
current weight the replay must give the product's own top 10 (`agree` column: a replay
that disagrees is not the product's path, and the run says so).

`--tier strong`: the same once every paper also has its second-tier vector
(`bench_search_quality.fill_strong_tier`, as the background writer fills it), when hybrid
fuses three rankings (full text, the semantic ranking merged over both tiers, the first
tier's own: `semantic.hybrid_inputs`) weighted TIERED_WEIGHTS; the grid is every
(full text, semantic, first tier) triple of STRONG_GRID.

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
Weights = tuple[float, ...]
# Weights (full text, semantic) of the first tier's fusion: full text 0.30 .. 1.00.
GRID: list[Weights] = [
    (round(0.30 + 0.025 * step, 3), round(0.70 - 0.025 * step, 3)) for step in range(29)
]
PREVIOUS: Weights = (0.675, 0.325)  # the weights before this cross-validation (SciFact train alone)
# Weights (full text, semantic, first tier's own) with the second tier filled: full text
# 0.30 .. 0.90, first tier 0 .. 0.40, by 0.05, the semantic ranking the rest (at least 0.05).
STRONG_GRID: list[Weights] = [
    (round(0.30 + 0.05 * a, 2), round(0.70 - 0.05 * a - 0.05 * b, 2), round(0.05 * b, 2))
    for a in range(13)
    for b in range(9)
    if 0.70 - 0.05 * a - 0.05 * b >= 0.049
]
STRONG_PREVIOUS: Weights = (0.50, 0.30, 0.20)  # chosen on SciFact train alone


def record_set(set_name: str, limit_queries: int, tier: str) -> dict[str, Any]:
    """In a fresh knowledge base (`tier` strong: every paper's second-tier vector built):
    the product's ranking of each query and, for the hybrid ones, the rankings it fused."""
    with tempfile.TemporaryDirectory(prefix="bench-fusion-") as directory:
        quality.setup_django(directory, None)
        from papers.search import semantic
        from papers.search.local import local_search
        from papers.search.understanding import read_query, unmatched_note

        docs, queries, qrels = lexical_bench.load(set_name)
        qrels = {qid: rel for qid, rel in qrels.items() if qid in queries}
        if limit_queries:
            qrels = dict(list(qrels.items())[:limit_queries])
        mapping = quality.import_docs(docs)
        quality.embed_everything()
        if tier == "strong":
            quality.fill_strong_tier()
        weights: tuple[float, ...] = (semantic.LEXICAL_WEIGHT, semantic.SEMANTIC_WEIGHT)
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
                searched, filters = reading.query, reading.filters
                if reading.understood and page.notes[:1] == [unmatched_note(reading)]:
                    searched, filters = text, None  # what it read left nothing: as typed
                lexical, meaning, first, coverage = semantic.hybrid_inputs(
                    query=searched, filters=filters
                )
                entry["rankings"] = [[lexical[0], lexical[1]], [meaning[0], meaning[1]]]
                if first is not None:
                    entry["rankings"].append([first[0], first[1]])
                    weights = semantic.tiered_weights(coverage)
            recorded[qid] = entry
        return {
            "set": set_name,
            "tier": tier,
            "weights": list(weights),
            "mapping": {str(pk): key for pk, key in mapping.items()},
            "qrels": qrels,
            "queries": recorded,
        }


def replay(recorded: dict[str, Any], weights: Weights) -> dict[str, list[str]]:
    """Each query's top 10 (document keys) with the rankings fused at `weights`."""
    from papers.search.semantic import min_max_fusion

    mapping = recorded["mapping"]
    ranked: dict[str, list[str]] = {}
    for qid, entry in recorded["queries"].items():
        if entry["mode"] == "hybrid":
            # A ranking weighted 0 is not fused (the product does not make it).
            pairs = [
                ((ids, scores), w)
                for (ids, scores), w in zip(entry["rankings"], weights, strict=False)
                if w
            ]
            fused = min_max_fusion([r for r, _ in pairs], [w for _, w in pairs])
            ids = [pk for pk, _ in fused]
        else:
            ids = entry["product"]
        ranked[qid] = [mapping[str(pk)] for pk in ids[:10] if str(pk) in mapping]
    return ranked


def ndcg(recorded: dict[str, Any], weights: Weights) -> float:
    ranked = replay(recorded, weights)
    qrels = recorded["qrels"]
    return statistics.fmean(quality.ndcg_at_10(ranked[qid], qrels[qid]) for qid in qrels)


def agreement(recorded: dict[str, Any]) -> tuple[int, int]:
    """Queries whose replay at the product's weights gives the product's own top 10."""
    mapping = recorded["mapping"]
    ranked = replay(recorded, tuple(recorded["weights"]))
    same = 0
    for qid, entry in recorded["queries"].items():
        product = [mapping[str(pk)] for pk in entry["product"][:10] if str(pk) in mapping]
        same += ranked[qid] == product
    return same, len(recorded["queries"])


def best_weights(sets: list[dict[str, Any]], grid: list[Weights]) -> Weights:
    """The grid's weights with the best mean nDCG@10 over `sets` (on a tie, the one with
    the most weight on the full text)."""
    return max(grid, key=lambda w: (statistics.fmean(ndcg(s, w) for s in sets), w[0]))


def _label(weights: Weights) -> str:
    return " / ".join(f"{w:g}" for w in weights)


def tabulate(recordings: dict[str, dict[str, Any]], tier: str) -> list[str]:
    grid = GRID if tier == "first" else STRONG_GRID
    previous = PREVIOUS if tier == "first" else STRONG_PREVIOUS
    current = tuple(round(w, 3) for w in next(iter(recordings.values()))["weights"])
    training = {n: r for n, r in recordings.items() if n in TRAINING_SETS}
    chosen = best_weights(list(training.values()), grid) if training else current
    extra: list[Weights]
    if tier == "first":
        extra = [(0.5, 0.5), (0.6, 0.4), (0.75, 0.25), (0.9, 0.1), (1.0, 0.0)]
    else:
        extra = [(0.4, 0.4, 0.2), (0.6, 0.25, 0.15), (0.7, 0.2, 0.1), (0.8, 0.15, 0.05)]
    shown = sorted({previous, current, chosen, *extra}, key=lambda w: w[0])

    def label(weights: Weights) -> str:
        said = [
            name
            for name, value in (("current", current), ("before", previous), ("chosen", chosen))
            if weights == value
        ]
        return _label(weights) + (f" ({', '.join(said)})" if said else "")

    names = "full text / semantic" + (" / first tier's own" if tier == "strong" else "")
    lines = [
        f"nDCG@10 at each weighting ({names}; hybrid queries replayed; the others as the "
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
    if len(training) >= 2:
        lines += [
            "",
            "Leave-one-set-out: each training set scored at the weights best on the others",
            "",
            f"| held out | weights chosen on the others | nDCG@10 there | at {_label(current)} "
            f"(current) | at {_label(previous)} (before) |",
            "|---|---|---|---|---|",
        ]
        held, now, before = [], [], []
        for name, recorded in training.items():
            weights = best_weights([r for n, r in training.items() if n != name], grid)
            held.append(ndcg(recorded, weights))
            now.append(ndcg(recorded, current))
            before.append(ndcg(recorded, previous))
            lines.append(
                f"| {name} | {_label(weights)} | {held[-1]:.3f} | {now[-1]:.3f} | "
                f"{before[-1]:.3f} |"
            )
        lines.append(
            f"| mean | | {statistics.fmean(held):.3f} | {statistics.fmean(now):.3f} | "
            f"{statistics.fmean(before):.3f} |"
        )
        lines.append(
            f"\nweights best on all training sets: {_label(chosen)} (configured: {_label(current)})"
        )
        if "scifact-test" in recordings:
            test = recordings["scifact-test"]
            scored = "; ".join(
                f"at {_label(w)}: {ndcg(test, w):.3f}"
                for w in dict.fromkeys((chosen, current, previous))
            )
            lines.append(f"scifact-test (never used to choose) {scored}")
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--tier", choices=("first", "strong"), default="first")
    parser.add_argument("--limit-queries", type=int, default=0)
    parser.add_argument("--from-work", action="store_true")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    args = parser.parse_args()
    work = WORK / args.tier
    work.mkdir(parents=True, exist_ok=True)
    if args.child:
        recorded = record_set(args.child, args.limit_queries, args.tier)
        (work / f"{args.child}.json").write_text(json.dumps(recorded), encoding="utf-8")
        return
    names = args.sets.split(",")
    if not args.from_work:
        for name in names:
            started = time.perf_counter()
            command = [sys.executable, __file__, "--child", name, "--tier", args.tier,
                       "--limit-queries", str(args.limit_queries)]  # fmt: skip
            subprocess.run(command, check=True)
            print(f"{name}: recorded in {time.perf_counter() - started:.0f} s", file=sys.stderr)
    recordings = {
        name: json.loads((work / f"{name}.json").read_text(encoding="utf-8")) for name in names
    }
    with tempfile.TemporaryDirectory(prefix="bench-fusion-") as directory:
        # The product's fusion function is replayed: Django is set up, no database is used.
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
        os.environ["RESEARCH_DIRECTORY"] = directory
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        print("\n".join(tabulate(recordings, args.tier)))


if __name__ == "__main__":
    main()

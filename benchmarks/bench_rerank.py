"""The reranking stage (papers/search/reranker.py): quality and cost, through local_search.

    .venv/bin/python benchmarks/bench_rerank.py [--sets scifact-test,cranfield-test,...]
        [--tiers first,strong] [--ks 20,50] [--weights 0.3,0.5,0.7,1.0]
        [--models minilm-l6-int8,wordllama-l2-256]
        [--limit-queries N] [--timing-queries 30]

Each set runs in a child process on a fresh SQLite knowledge base (documents imported
through `papers_upsert`, first tier embedded; with `strong` in --tiers the second tier
too, on two threads). Per query:

- quality: `local_search(query, limit=100)` with the stage off (what `search_papers`
  returns by default), then the reranker's scores of its first max(ks) papers
  (reranker.score) and the order reranker.reorder gives at each k and weight; nDCG@10
  of each. The same functions the stage runs, so the order is the product's (checked
  on the timed queries below: `identical`).
- cost: on the first --timing-queries queries, `local_search` with SEARCH_RERANK_TOP_K
  0, then each k, alternating, the passage cache emptied before each call (cold: the
  price of a query whose papers were not reranked before); p50 / p95 of the whole call
  and of the time added over the same query with the stage off.

Sets: scifact-train (development: SciFact's train claims), scifact-test (held out),
cranfield-dev / cranfield-test (odd / even questions), acl-lead / acl-title
(benchmarks/bench_lexical.py: 300 known-item queries over 10,000 ACL abstracts).
Weights are chosen on the development sets only.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_lexical as lexical
import bench_search_quality as quality

ROOT = quality.ROOT
DEV_SETS = ("scifact-train", "cranfield-dev")


def load(name: str) -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]]]:
    if name.startswith("cranfield-"):
        return quality.load_set("cranfield", name.split("-", 1)[1])
    return lexical.load(name)


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    if not ordered:
        return math.nan
    return ordered[min(len(ordered) - 1, max(0, math.ceil(share * len(ordered)) - 1))]


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="bench-rerank-") as directory:
        quality.setup_django(directory, None)
        return _evaluate(args)


def _evaluate(args: argparse.Namespace) -> dict[str, Any]:
    from django.conf import settings

    from papers.models import Paper
    from papers.search import reranker, strong_tier, vector_index
    from papers.search.local import local_search

    docs, queries, qrels = load(args.set)
    if args.limit_queries:
        qrels = dict(list(qrels.items())[: args.limit_queries])
    mapping = quality.import_docs(docs)
    quality.embed_everything()
    ks = [int(k) for k in args.ks.split(",")]
    models = args.models.split(",")
    deepest = max(ks)
    result: dict[str, Any] = {
        "set": args.set, "queries": len(qrels), "qrels": qrels, "tiers": {},
    }  # fmt: skip
    texts = dict(Paper.objects.values_list("pk", "title").order_by())
    abstracts = dict(Paper.objects.values_list("pk", "abstract").order_by())
    strong_key = "minilm-l6-int8"
    for tier in args.tiers.split(","):
        if tier == "strong":
            settings.EMBEDDING_MODEL_STRONG = strong_key
            started = time.perf_counter()
            strong_tier.embed_papers_strong(list(mapping), force=True, threads=2)
            result["strong_embed_s"] = time.perf_counter() - started
        else:
            settings.EMBEDDING_MODEL_STRONG = ""
        vector_index.vector_index().reset()
        vector_index.strong_vector_index().reset()
        settings.SEARCH_RERANK_TOP_K = 0
        local_search(query="warm up the models", limit=10)
        for key in models:
            reranker.score("warm up", [(0, "a title", "An abstract. Two sentences.")], key)
        raw: dict[str, Any] = {}
        orders: dict[str, dict[str, list[int]]] = {}
        for qid in qrels:
            text = quality.query_text(queries[qid])
            page = local_search(query=text, limit=quality.DEPTH)
            ranked = [(h.record["paper_id"], float(h.score or 0.0)) for h in page.hits]
            head = ranked[:deepest]
            papers = [(pk, texts.get(pk) or "", abstracts.get(pk) or "") for pk, _ in head]
            entry: dict[str, Any] = {
                "docs": [mapping[pk] for pk, _ in ranked],
                "fused": [s for _, s in head],
                "scores": {},
            }
            for m in models:
                scores = reranker.score(text, papers, m)
                entry["scores"][m] = [float(x) for x in scores]
                for k in ks:
                    order = reranker.reorder(head[:k], scores[:k]) + ranked[k:]
                    orders.setdefault(f"{m}/{k}", {})[qid] = [pk for pk, _ in order]
            raw[qid] = entry
        timing: dict[str, Any] = {
            f"{m}/{k}": {"total": [], "added": [], "identical": 0} for m in models for k in ks
        }
        timing["0"] = {"total": []}
        for qid in list(qrels)[: args.timing_queries]:
            text = quality.query_text(queries[qid])
            settings.SEARCH_RERANK_TOP_K = 0
            started = time.perf_counter()
            local_search(query=text, limit=quality.DEPTH)
            off = (time.perf_counter() - started) * 1000
            timing["0"]["total"].append(off)
            for m in models:
                settings.SEARCH_RERANK_MODEL = m
                for k in ks:
                    settings.SEARCH_RERANK_TOP_K = k
                    reranker.reset()
                    started = time.perf_counter()
                    page = local_search(query=text, limit=quality.DEPTH)
                    on = (time.perf_counter() - started) * 1000
                    cell = timing[f"{m}/{k}"]
                    cell["total"].append(on)
                    cell["added"].append(on - off)
                    cell["identical"] += [h.record["paper_id"] for h in page.hits] == orders[
                        f"{m}/{k}"
                    ][qid]
            settings.SEARCH_RERANK_TOP_K = 0
        result["tiers"][tier] = {
            "raw": raw,
            "timing": {
                k: {
                    "p50": percentile(t["total"], 0.5),
                    "p95": percentile(t["total"], 0.95),
                    **(
                        {
                            "added_p50": percentile(t["added"], 0.5),
                            "added_p95": percentile(t["added"], 0.95),
                            "identical": t["identical"],
                        }
                        if "added" in t
                        else {}
                    ),
                    "n": len(t["total"]),
                }
                for k, t in timing.items()
            },
        }
    return result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="scifact-train,cranfield-dev,scifact-test,cranfield-test")
    parser.add_argument("--tiers", default="first")
    parser.add_argument("--ks", default="20,50")
    parser.add_argument("--weights", default="0.3,0.5,0.7,1.0")
    parser.add_argument("--models", default="minilm-l6-int8,wordllama-l2-256")
    parser.add_argument("--limit-queries", type=int, default=0)
    parser.add_argument("--timing-queries", type=int, default=30)
    parser.add_argument("--out", help="also write the results (JSON) here")
    parser.add_argument("--from-json", help="tabulate results written by --out")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--set", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(args)))
        return
    if args.from_json:
        os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        results = [json.loads(line) for line in Path(args.from_json).read_text().splitlines()]
        print_tables(results, args)
        return
    started = time.time()
    load_before = os.getloadavg()
    results = []
    for name in args.sets.split(","):
        command = [sys.executable, __file__, "--child", "--set", name, "--tiers", args.tiers,
                   "--ks", args.ks, "--weights", args.weights, "--models", args.models,
                   "--limit-queries", str(args.limit_queries),
                   "--timing-queries", str(args.timing_queries)]  # fmt: skip
        output = subprocess.run(command, check=True, capture_output=True, text=True, cwd=ROOT)
        results.append(json.loads(output.stdout.strip().splitlines()[-1]))
        if args.out:
            with open(args.out, "a", encoding="utf-8") as out:
                out.write(json.dumps(results[-1]) + "\n")
        print(f"{name}: done ({(time.time() - started) / 60:.1f} min)", file=sys.stderr)
    load_after = os.getloadavg()
    print(f"load average before {load_before[0]:.2f}, after {load_after[0]:.2f}")
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
    sys.path.insert(0, str(ROOT))
    django.setup()
    print_tables(results, args)


def summarise(result: dict[str, Any], tier: str, args: argparse.Namespace) -> dict[str, Any]:
    """nDCG@10 with the stage off and at each (model, k, weight), from the stored scores,
    through reranker.reorder (the stage's own blend); wins / losses per query."""
    from papers.search import reranker

    ks = [int(k) for k in args.ks.split(",")]
    weights = [float(w) for w in args.weights.split(",")]
    base: list[float] = []
    cells: dict[str, list[float]] = {}
    for qid, entry in result["tiers"][tier]["raw"].items():
        relevant = result["qrels"][qid]
        docs = entry["docs"]
        base.append(quality.ndcg_at_10(docs, relevant))
        head = list(zip(range(len(entry["fused"])), entry["fused"], strict=True))
        for m, scores in entry["scores"].items():
            for k in ks:
                for w in weights:
                    order = [i for i, _ in reranker.reorder(head[:k], scores[:k], w)]
                    ranked = [docs[i] for i in order] + docs[len(order) :]
                    cells.setdefault(f"{m}/{k}@{w}", []).append(
                        quality.ndcg_at_10(ranked, relevant)
                    )
    return {
        "base": statistics.fmean(base),
        "cells": {key: statistics.fmean(values) for key, values in cells.items()},
        "wins": {
            key: [
                sum(v > b + 1e-9 for v, b in zip(values, base, strict=True)),
                sum(v < b - 1e-9 for v, b in zip(values, base, strict=True)),
            ]
            for key, values in cells.items()
        },
    }


def print_tables(results: list[dict[str, Any]], args: argparse.Namespace) -> None:
    ks = [int(k) for k in args.ks.split(",")]
    weights = [float(w) for w in args.weights.split(",")]
    models = args.models.split(",")
    print("\nnDCG@10, stage off and at each k x weight (wins / losses per query vs off)\n")
    header = " | ".join(f"k {k}, w {w}" for k in ks for w in weights)
    print(f"| set | tier | model | queries | off | {header} |")
    print("|---|---|---|---|---|" + "---|" * (len(ks) * len(weights)))
    for result in results:
        for tier in result["tiers"]:
            figures = summarise(result, tier, args)
            for m in models:
                cells = " | ".join(
                    f"{figures['cells'][f'{m}/{k}@{w}']:.3f} "
                    f"({figures['wins'][f'{m}/{k}@{w}'][0]}/{figures['wins'][f'{m}/{k}@{w}'][1]})"
                    for k in ks
                    for w in weights
                )
                dev = " (dev)" if result["set"] in DEV_SETS else ""
                print(
                    f"| {result['set']}{dev} | {tier} | {m} | {result['queries']} | "
                    f"{figures['base']:.3f} | {cells} |"
                )
    print("\nCost through local_search (limit 100), ms; cold passage cache; added = the same "
          "query with the stage on minus off\n")  # fmt: skip
    print("| set | tier | model | queries timed | off p50 / p95 | " + " | ".join(
        f"k {k}: p50 / p95 (added p50 / p95), order identical" for k in ks) + " |")  # fmt: skip
    print("|---|---|---|---|---|" + "---|" * len(ks))
    for result in results:
        for tier, figures in result["tiers"].items():
            t = figures["timing"]
            for m in models:
                cells = " | ".join(
                    f"{t[f'{m}/{k}']['p50']:.0f} / {t[f'{m}/{k}']['p95']:.0f} "
                    f"(+{t[f'{m}/{k}']['added_p50']:.0f} / +{t[f'{m}/{k}']['added_p95']:.0f}), "
                    f"{t[f'{m}/{k}']['identical']}/{t[f'{m}/{k}']['n']}"
                    for k in ks
                )
                print(
                    f"| {result['set']} | {tier} | {m} | {t['0']['n']} | "
                    f"{t['0']['p50']:.0f} / {t['0']['p95']:.0f} | {cells} |"
                )


if __name__ == "__main__":
    main()

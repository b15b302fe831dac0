"""Prioritised screening on judged collections: WSS@95, RRF@10 and the stopping rule.

    nice .venv/bin/python benchmarks/bench_screening.py [--sets cranfield,scifact]
        [--seeds 3] [--model naive_bayes|logistic] [--features tfidf|embeddings|both,...]
        [--batch 10] [--limit-topics N] [--corpus DIR] [--plot DIR] [--json]

Each question of a judged collection is taken as a review topic: the whole collection is
the set of records to screen and the question's relevant documents are the inclusions.
Cranfield: the 225 questions over the 1,400 abstracts (any graded relevance counts).
SciFact: the test claims (BEIR test qrels) with at least 3 relevant abstracts, over the
5,183 abstracts. A topic needs an inclusion beyond the prior one, so Cranfield's
questions with a single relevant document are skipped (and counted).

Every topic runs through `projects.review.simulation.simulate_seeds`, the function behind
`manage.py simulate_screening`, which ranks and stops with the code the screening tools
use. Printed per set: the median over topics of the per-topic medians over seeds of
WSS@95, WSS@100 and RRF@10; random screening beside them (WSS@95 = 0 and RRF@10 = 0.10 in
expectation) and the published ASReview range (WSS@95 63.9-91.7 % over six review
datasets, Ferdinands et al. 2023); and in what share of topics the stopping rule stopped
at >= 95 % recall (per run, over all runs).

`--features` takes one or more feature sets, comma-separated (one table row per set and
feature set): TF-IDF, the library's MiniLM embeddings, or both. A collection is encoded
once and kept in benchmarks/.work/screening-embeddings/ (the encoding time is printed the
first time). The corpus is ../shared/corpus beside the project (`--corpus` overrides).
`--scifact-sample N` screens N of SciFact's records instead (every record relevant
to a topic, the rest a seeded random draw): encoding all 5,183 with MiniLM takes about
ten minutes of one core. `--plot DIR` writes the recall curve of the first topic's first
run per set and feature set as SVG (the path is printed).
"""

from __future__ import annotations

import argparse
import csv
import hashlib
import json
import random
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

import numpy as np  # noqa: E402

from projects.review.prioritise import (  # noqa: E402
    DEFAULT_FEATURES,
    DEFAULT_MODEL,
    EMBEDDING_MODEL,
    FEATURES,
    MODELS,
    TFIDF,
    encode_texts,
)
from projects.review.recall_plot import recall_curve_svg  # noqa: E402
from projects.review.simulation import LabelledRecord, simulate_seeds  # noqa: E402
from projects.review.stopping import CONSECUTIVE_EXCLUSIONS  # noqa: E402

CORPUS = ROOT.parent / "shared" / "corpus"
EMBEDDINGS_CACHE = ROOT / "benchmarks" / ".work" / "screening-embeddings"
ASREVIEW_WSS95 = (0.639, 0.917)


def cranfield_topics(corpus: Path) -> tuple[list[tuple[str, str, str]], dict[str, set[str]]]:
    folder = corpus / "cranfield"
    docs = []
    with (folder / "cranfield_for_import.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            docs.append((row["id"], row.get("title") or "", row.get("abstract") or ""))
    relevant: dict[str, set[str]] = defaultdict(set)
    with (folder / "cranfield_qrels.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            relevant[row["query-id"]].add(row["corpus-id"])
    return docs, relevant


def scifact_topics(corpus: Path) -> tuple[list[tuple[str, str, str]], dict[str, set[str]]]:
    folder = corpus / "scifact"
    docs = []
    with (folder / "corpus.jsonl").open() as handle:
        for line in handle:
            row = json.loads(line)
            docs.append((row["_id"], row.get("title") or "", row.get("text") or ""))
    relevant: dict[str, set[str]] = defaultdict(set)
    with (folder / "qrels" / "test.tsv").open() as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            if int(row["score"]) > 0:
                relevant[row["query-id"]].add(row["corpus-id"])
    return docs, {query: ids for query, ids in relevant.items() if len(ids) >= 3}


SETS = {"cranfield": cranfield_topics, "scifact": scifact_topics}


def sampled(
    docs: list[tuple[str, str, str]], relevant: dict[str, set[str]], size: int
) -> list[tuple[str, str, str]]:
    """At most `size` records: every one relevant to a topic, the rest a seeded random
    draw, in the collection's order (so encoding a big collection stays affordable)."""
    if not size or size >= len(docs):
        return docs
    needed = set().union(*relevant.values())
    others = [doc_id for doc_id, _, _ in docs if doc_id not in needed]
    kept = needed | set(random.Random(0).sample(others, max(0, size - len(needed))))
    return [doc for doc in docs if doc[0] in kept]


def collection_vectors(name: str, docs: list[tuple[str, str, str]]) -> np.ndarray:
    """The collection's embeddings, encoded once and then read from the cache."""
    texts = [f"{title}. {abstract}" for _, title, abstract in docs]
    key = hashlib.sha256("\n".join(texts).encode()).hexdigest()[:16]
    path = EMBEDDINGS_CACHE / f"{name}-{EMBEDDING_MODEL}-{key}.npy"
    if path.is_file():
        return np.load(path)
    started = time.monotonic()
    vectors = encode_texts(texts)
    seconds = time.monotonic() - started
    print(f"encoded {len(texts)} {name} records in {seconds:.0f} s", file=sys.stderr)
    path.parent.mkdir(parents=True, exist_ok=True)
    np.save(path, vectors)
    return vectors


def run_set(name: str, features: str, args: argparse.Namespace) -> dict[str, Any]:
    docs, relevant = SETS[name](args.corpus)
    corpus_size = len(docs)
    docs = sampled(docs, relevant, args.scifact_sample if name == "scifact" else 0)
    vectors = None if features == TFIDF else collection_vectors(name, docs)
    topics = sorted(relevant, key=lambda q: int(q) if q.isdigit() else q)
    skipped = [q for q in topics if len(relevant[q]) < 2]
    topics = [q for q in topics if len(relevant[q]) >= 2][: args.limit_topics or None]
    per_topic = []
    started = time.monotonic()
    for query in topics:
        records = [
            LabelledRecord(doc_id, title, abstract, doc_id in relevant[query])
            for doc_id, title, abstract in docs
        ]
        result = simulate_seeds(
            records, seeds=range(args.seeds), model=args.model, batch=args.batch,
            features=features, vectors=vectors,
        )  # fmt: skip
        runs = result["runs"]
        if args.plot and not per_topic:
            path = args.plot / f"recall-{name}-{features}-topic{query}.svg"
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(
                recall_curve_svg(
                    [records[i].included for i in runs[0].order],
                    total=len(records),
                    stopped_at=runs[0].stopped_at,
                    title=f"{name} topic {query}, {features}, seed 0",
                ),
                encoding="utf-8",
            )
            print(f"recall curve: {path}", file=sys.stderr)
        per_topic.append(
            {
                "topic": query,
                "relevant": len(relevant[query]),
                **result["median"],
                "heuristic_ok": [
                    (run.metrics["consecutive_recall"] or 0.0) >= 0.95 for run in runs
                ],
                "stopped_ok": [
                    run.recall_at_stop is not None and run.recall_at_stop >= 0.95 for run in runs
                ],
            }
        )
        if args.progress:
            print(f"  {name} {query}: {per_topic[-1]['wss@95']}", file=sys.stderr)

    def median(key: str) -> float | None:
        values = [t[key] for t in per_topic if t[key] is not None]
        return statistics.median(values) if values else None

    runs_ok = [ok for t in per_topic for ok in t["stopped_ok"]]
    heuristic_ok = [ok for t in per_topic for ok in t["heuristic_ok"]]
    topics_ok = [statistics.mean(t["stopped_ok"]) >= 0.5 for t in per_topic]
    return {
        "set": name,
        "features": features,
        "records": len(docs),
        "corpus_records": corpus_size,
        "topics": len(per_topic),
        "skipped_single_relevant": len(skipped),
        "median_wss@95": median("wss@95"),
        "median_wss@100": median("wss@100"),
        "median_rrf@10": median("rrf@10"),
        "median_stopped_at_share": statistics.median(
            t["stopped_at"] / len(docs) for t in per_topic if t["stopped_at"]
        ),
        "median_recall_at_stop": median("recall_at_stop"),
        "stop_at_95_runs": sum(runs_ok) / len(runs_ok),
        "heuristic_at_95_runs": sum(heuristic_ok) / len(heuristic_ok),
        "median_heuristic_stop_share": median("consecutive_stop") / len(docs)
        if median("consecutive_stop")
        else None,
        "stop_at_95_topics": sum(topics_ok) / len(topics_ok),
        "seconds": round(time.monotonic() - started, 1),
        "per_topic": per_topic,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sets", default="cranfield,scifact")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--model", choices=MODELS, default=DEFAULT_MODEL)
    parser.add_argument(
        "--features", default=DEFAULT_FEATURES, help=f"One or more of {', '.join(FEATURES)}."
    )
    parser.add_argument("--batch", type=int, default=10)
    parser.add_argument("--limit-topics", type=int, default=0)
    parser.add_argument("--corpus", type=Path, default=CORPUS)
    parser.add_argument(
        "--scifact-sample",
        type=int,
        default=0,
        metavar="N",
        help="SciFact: N records (every relevant one and a seeded random draw); 0 = all.",
    )
    parser.add_argument("--plot", type=Path, help="Write one recall curve per set here.")
    parser.add_argument("--json", action="store_true", help="Print every topic as JSON.")
    parser.add_argument("--progress", action="store_true")
    args = parser.parse_args()
    kinds = args.features.split(",")
    if unknown := [kind for kind in kinds if kind not in FEATURES]:
        parser.error(f"unknown --features {', '.join(unknown)}; use {', '.join(FEATURES)}")
    results = [run_set(name, kind, args) for name in args.sets.split(",") for kind in kinds]
    if args.json:
        print(json.dumps(results, indent=1))
        return
    print(f"model {args.model}, batch {args.batch}, {args.seeds} seeds per topic, prior 1+1")
    print("set        features    topics  WSS@95  WSS@100  RRF@10  stop>=95%(runs/topics)", end="")
    print("  recall@stop  screened@stop")
    for r in results:
        cells = [
            f"{r['set']:<10} {r['features']:<10} {r['topics']:>6}",
            f"{r['median_wss@95']:.3f}",
            f"{r['median_wss@100']:.3f} ",
            f"{r['median_rrf@10']:.3f}",
            f"{r['stop_at_95_runs']:>6.1%} / {r['stop_at_95_topics']:.1%}     ",
            f"{r['median_recall_at_stop']:.3f}      ",
            f"{r['median_stopped_at_share']:.1%}   ({r['seconds']} s)",
        ]
        print("  ".join(cells))
    print("random     -           -       0.000    0.000    0.100   (expected values)")
    for r in results:
        share = r["median_heuristic_stop_share"]
        print(
            f"{r['set']} ({r['features']}): {CONSECUTIVE_EXCLUSIONS} consecutive exclusions "
            f"(a heuristic, no guarantee) would stop after {share:.1%} of the records, at "
            f">= 95 % recall in {r['heuristic_at_95_runs']:.1%} of runs"
        )
    low, high = ASREVIEW_WSS95
    print(f"ASReview published WSS@95 {low:.1%}-{high:.1%} (six review datasets, Ferdinands 2023)")
    for r in results:
        if r["records"] < r["corpus_records"] and r["features"] == kinds[0]:
            print(
                f"{r['set']}: a sample of {r['records']:,} of its {r['corpus_records']:,} "
                "records (every relevant one, the rest a seeded random draw)"
            )
    per_set = {r["set"]: r["skipped_single_relevant"] for r in results}
    skipped = ", ".join(f"{name}: {count}" for name, count in per_set.items())
    print(f"topics skipped (a single relevant document, nothing left to find): {skipped}")


if __name__ == "__main__":
    main()

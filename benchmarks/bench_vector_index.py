"""Vector search at 100k-1M papers: exact numpy beside quantised and approximate indexes.

    benchmarks/bench_vector_index.py \\
        --corpus ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz
        [--sizes 100000,300000,1000000] [--queries 100] [--ef 128,256,512] [--dtypes i8,f16]
        [--connectivity 32] [--budget-minutes 30] [--scaled ../scale-data/acl_scaled_1m.jsonl.gz]
        [--quick]

What it answers (issue #37, goal 1): which way of finding a query's nearest paper vectors
keeps p95 <= 50 ms with recall@10 >= 0.95 against exact search at up to 1M papers, and at
what memory. A component benchmark (the vectors and the index alone, no database, no
/mcp): it chooses the index that `papers/search/vector_index.py` keeps; the search path
through `search_papers_semantic` adds the query's encoding and the records' read, the same
for every row here.

Vectors: the first tier's model (`papers.search.embedding.load_model()`, WordLlama 256-d),
title + abstract as the product embeds them (`paper_text`). The 95,336 ACL Anthology papers
are real. Above that the papers are synthetic: with `--scaled FILE` (what
`make_scaled_corpus.py` writes) its papers are embedded; without it (the default) each
synthetic paper is composed from a real template: its title, and for each sentence of its
abstract, with equal odds, that sentence or a random sentence of another random paper's
abstract (make_scaled_corpus's recipe without its word substitutions). WordLlama's vector is
the mean of the text's token vectors, so the synthetic paper's vector is composed from the
encodings of its title and sentences (each encoded once), weighted by their word counts; for
real papers composed from their own parts this gives cosine >= 0.996 with the encoding of
the whole text (1st percentile over 300 papers). Vectors are cached in
benchmarks/.work/vector_index/.

Queries: `bench_search_scale.make_queries` (titles, title n-grams, common words, questions
built around title topics: the scale benchmark's mix), encoded by the same model's
`encode_query`. Truth: the exact top 10 by float32 cosine.

Methods (each returns ids; "re-scored" means the top candidates are scored again exactly
from the float32 matrix, so the returned scores are exact cosines):
- exact f32: matrix @ query, argpartition (what semantic.py does today);
- exact i8 + re-score: usearch's brute-force kernels over int8 vectors (exact=True), top
  RESCORE candidates re-scored in float32;
- HNSW (usearch) f16 / i8 storage, connectivity M, expansion_add 128, at expansion_search
  ef, top max(RESCORE, k) candidates re-scored in float32.

Graphs are built once per size and kept in benchmarks/.work/vector_index/ with their build
time (a later run reuses them and reports that time); `--budget-minutes` skips a build
estimated, from this run's rate at the previous size, to take longer, and says so in the
table (the shared machine cannot always afford a 1M build).

Timings: one query at a time, as a search runs it, `nice -n 10` under run_all; the machine
is shared, so read the load average and compare rows of one run (ratios), not runs.
Memory: the bytes the vectors (and the graph) take in this process (usearch's
`memory_usage`); build: adding every vector on all cores; save / view: writing the index
to a file and opening it memory-mapped (the start cost of a second process that reuses a
file instead of building).
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import re
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
WORK = ROOT / "benchmarks" / ".work" / "vector_index"
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

K = 10
DEEP = 100  # hybrid search reads the semantic ranking this deep (semantic.HYBRID_DEPTH)
RESCORE = 100
SENTENCE = re.compile(r"(?<=[.!?])\s+")
RECALL_GOAL = 0.95
P95_GOAL_MS = 50.0


def setup_django() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
    os.environ.setdefault("RESEARCH_DIRECTORY", tempfile.mkdtemp(prefix="bench-vi-"))
    import django

    django.setup()


def read_corpus(path: Path, limit: int | None = None) -> list[dict[str, Any]]:
    records = []
    with gzip.open(path, "rt", encoding="utf-8") as handle:
        for line in handle:
            if line.strip():
                record = json.loads(line)
                records.append({"title": record.get("title"), "abstract": record.get("abstract")})
                if limit and len(records) >= limit:
                    break
    return records


def _units(records: list[dict[str, Any]]) -> tuple[list[str], list[int], list[list[int]]]:
    """Every title and abstract sentence as a unit of text: (texts, title unit of each
    record, abstract sentence units of each record)."""
    texts: list[str] = []
    titles: list[int] = []
    sentences: list[list[int]] = []
    for record in records:
        titles.append(len(texts))
        texts.append(" ".join((record["title"] or "").split()))
        own = []
        for sentence in SENTENCE.split(" ".join((record["abstract"] or "").split())):
            if sentence:
                own.append(len(texts))
                texts.append(sentence)
        sentences.append(own)
    return texts, titles, sentences


def synthetic_vectors(records: list[dict[str, Any]], count: int, seed: int, log: Any) -> np.ndarray:
    """`count` synthetic papers' vectors, templates taken in turn (see the docstring).

    WordLlama's vector of a text is the mean of its token vectors, so the vector of a text
    made of units (title, sentences) is their token sums added and divided by the token
    count: composed here from each unit's mean weighted by its word count (an
    approximation of its token count), then normalised as the product does."""
    from papers.search.embedding import load_model

    model = load_model()
    texts, titles, sentences = _units(records)
    weights = np.asarray([max(1, len(t.split())) for t in texts], dtype=np.float32)
    cache = WORK / f"units-{re.sub(r'[^a-z0-9]+', '-', model.name.lower())}-{len(texts)}.npy"
    if cache.exists():
        means = np.load(cache)
    else:
        started = time.perf_counter()
        means = np.empty((len(texts), model.dimensions), dtype=np.float32)
        for start in range(0, len(texts), 50_000):
            chunk = texts[start : start + 50_000]
            means[start : start + 50_000] = model._encode_documents(chunk, 1)
        log(f"encoded {len(texts)} titles and sentences in {time.perf_counter() - started:.0f} s")
        np.save(cache, means)
    sums = means * weights[:, None]
    rng = np.random.default_rng(seed)
    out = np.empty((count, model.dimensions), dtype=np.float32)
    for i in range(count):
        t = i % len(records)
        own = sentences[t]
        other = sentences[int(rng.integers(len(records)))]
        chosen = [titles[t]]
        for unit in own:
            chosen.append(
                unit if (not other or rng.random() < 0.5) else other[int(rng.integers(len(other)))]
            )
        vector = sums[chosen].sum(axis=0) / weights[chosen].sum()
        out[i] = vector / (np.linalg.norm(vector) or 1.0)
    return out


def vectors(args: argparse.Namespace, size: int, log: Any) -> tuple[np.ndarray, str]:
    """The first `size` papers' vectors (real first, then synthetic), cached."""
    from papers.search.embedding import load_model, paper_text

    model = load_model()
    WORK.mkdir(parents=True, exist_ok=True)
    source = "scaled" if args.scaled else "composed"
    tag = re.sub(r"[^a-z0-9]+", "-", model.name.lower())
    cache = WORK / f"{tag}-{source}-{size}.npy"
    if cache.exists():
        return np.load(cache), source
    if args.scaled:
        records = read_corpus(Path(args.scaled), limit=size)
        matrix = model.encode_documents([paper_text(r["title"], r["abstract"]) for r in records])
        np.save(cache, matrix)
        return matrix, source
    real_cache = WORK / f"{tag}-real.npy"
    records = read_corpus(Path(args.corpus))
    if real_cache.exists():
        real = np.load(real_cache)
    else:
        started = time.perf_counter()
        real = model.encode_documents([paper_text(r["title"], r["abstract"]) for r in records])
        log(f"embedded {len(records)} real papers in {time.perf_counter() - started:.0f} s")
        np.save(real_cache, real)
    if size <= len(real):
        return real[:size], "real"
    matrix = np.concatenate([real, synthetic_vectors(records, size - len(real), size, log)])
    np.save(cache, matrix)
    return matrix, source


def queries(args: argparse.Namespace) -> np.ndarray:
    from bench_search_scale import make_queries

    from papers.search.embedding import load_model

    model = load_model()
    pairs = make_queries(Path(args.corpus), args.queries, seed=37)
    return np.stack([model.encode_query(q) for _, q in pairs])


def top_exact(matrix: np.ndarray, query: np.ndarray, k: int) -> np.ndarray:
    scores = matrix @ query
    top = np.argpartition(-scores, k - 1)[:k]
    return top[np.argsort(-scores[top], kind="stable")]


def rescored(matrix: np.ndarray, query: np.ndarray, candidates: np.ndarray, k: int) -> np.ndarray:
    scores = matrix[candidates] @ query
    order = np.argsort(-scores, kind="stable")[:k]
    return candidates[order]


def pct(values: list[float], q: float) -> float:
    return float(np.percentile(np.asarray(values), q)) if values else float("nan")


def measure(run: Any, qs: np.ndarray, truth: list[np.ndarray]) -> dict[str, float]:
    """p50 / p95 of `run` (a query's DEEP best rows, best first), recall@K and @DEEP."""
    times, hits, deep = [], 0, 0
    for _ in range(3):  # warm-up
        run(qs[0])
    for i, q in enumerate(qs):
        started = time.perf_counter()
        found = np.asarray(run(q))
        times.append((time.perf_counter() - started) * 1000)
        hits += len(set(truth[i][:K].tolist()) & set(found[:K].tolist()))
        deep += len(set(truth[i].tolist()) & set(found[:DEEP].tolist()))
    return {
        "p50": pct(times, 50),
        "p95": pct(times, 95),
        "recall": hits / (K * len(qs)),
        "recall_deep": deep / (DEEP * len(qs)),
    }


def bench_size(
    matrix: np.ndarray, qs: np.ndarray, args: argparse.Namespace, log: Any
) -> list[dict[str, Any]]:
    from usearch.index import Index, search

    n, d = matrix.shape
    rows: list[dict[str, Any]] = []
    truth = [top_exact(matrix, q, DEEP) for q in qs]
    keys = np.arange(n, dtype=np.uint64)

    r = measure(lambda q: top_exact(matrix, q, DEEP), qs, truth)
    rows.append({"method": "exact f32 (numpy, today)", "memory": matrix.nbytes, "build": 0.0, **r})
    log(f"  exact f32: p50 {r['p50']:.2f} p95 {r['p95']:.2f}")

    i8 = np.clip(np.rint(matrix * 127), -127, 127).astype(np.int8)

    def exact_i8(q: np.ndarray) -> np.ndarray:
        q8 = np.clip(np.rint(q * 127), -127, 127).astype(np.int8)
        found = search(i8, q8, RESCORE, metric="cos", exact=True, threads=1)
        return rescored(matrix, q, found.keys.astype(np.int64), DEEP)

    r = measure(exact_i8, qs, truth)
    log(f"  exact i8: recall {r['recall']:.3f} p50 {r['p50']:.2f} p95 {r['p95']:.2f}")
    rows.append(
        {
            "method": f"exact i8 (usearch) + f32 re-score of {RESCORE}",
            "memory": i8.nbytes,
            "build": 0.0,
            **r,
        }
    )

    for dtype in args.dtypes:
        for m in args.connectivity:
            cached = WORK / f"graph-{args.source}-{n}-{dtype}-M{m}.usearch"
            estimate = args.rates.get((dtype, m), 0.0) * n * 1.2
            if not cached.exists() and args.budget and estimate > args.budget * 60:
                log(f"  hnsw {dtype} M={m}: not built, estimated {estimate / 60:.0f} min")
                rows.append({"method": f"HNSW {dtype} M={m}", "skipped": estimate})
                continue
            if cached.exists():  # built by an earlier run of the same vectors: its time
                index = Index.restore(str(cached))
                assert index is not None
                build = json.loads(cached.with_suffix(".json").read_text())["build"]
                args.cached.add((n, dtype, m))
            else:
                index = Index(ndim=d, metric="cos", dtype=dtype, connectivity=m, expansion_add=128)
                started = time.perf_counter()
                index.add(keys, matrix, threads=os.cpu_count() or 2)
                build = time.perf_counter() - started
                index.save(str(cached))
                cached.with_suffix(".json").write_text(json.dumps({"build": build}))
            args.rates[(dtype, m)] = build / n
            log(f"  hnsw {dtype} M={m}: built {n} in {build:.1f} s")
            with tempfile.TemporaryDirectory(dir=WORK) as tmp:
                path = os.path.join(tmp, "index.usearch")
                started = time.perf_counter()
                index.save(path)
                save = time.perf_counter() - started
                size = os.path.getsize(path)
                started = time.perf_counter()
                viewed = Index.restore(path, view=True)
                assert viewed is not None
                viewed.search(qs[0], K)
                view = time.perf_counter() - started
                del viewed
            for ef in args.ef:
                index.expansion_search = ef  # type: ignore[misc]  # it has a setter

                def approximate(q: np.ndarray, index: Any = index) -> np.ndarray:
                    found = index.search(q, max(RESCORE, DEEP))
                    return rescored(matrix, q, found.keys.astype(np.int64), DEEP)

                r = measure(approximate, qs, truth)
                rows.append(
                    {
                        "method": f"HNSW {dtype} M={m} ef={ef} + re-score",
                        "memory": index.memory_usage,
                        "build": build,
                        "save": save,
                        "file": size,
                        "view": view,
                        "cached": (n, dtype, m) in args.cached,
                        **r,
                    }
                )
                log(
                    f"    ef={ef}: recall {r['recall']:.3f} / {r['recall_deep']:.3f} "
                    f"p50 {r['p50']:.2f} p95 {r['p95']:.2f}"
                )
            del index
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--scaled", default=None, help="a make_scaled_corpus.py file")
    parser.add_argument("--sizes", default="100000,300000,1000000")
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--dtypes", default="i8")
    parser.add_argument("--connectivity", default="32")
    parser.add_argument("--ef", default="128,256,512")
    parser.add_argument(
        "--budget-minutes",
        dest="budget",
        type=float,
        default=0.0,
        help="skip a graph whose build is estimated (from the last size's) to take longer",
    )
    parser.add_argument("--quick", action="store_true", help="100k only, 50 queries")
    args = parser.parse_args()
    if args.quick:
        args.sizes, args.queries = "100000", 50
    args.dtypes = args.dtypes.split(",")
    args.connectivity = [int(x) for x in args.connectivity.split(",")]
    args.ef = [int(x) for x in args.ef.split(",")]
    sizes = [int(x) for x in args.sizes.split(",")]
    args.rates = {}
    args.cached = set()

    def log(message: str) -> None:
        print(f"[{time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)

    setup_django()
    from papers.search.embedding import load_model

    model = load_model()
    qs = queries(args)
    log(f"{len(qs)} queries encoded by {model.name}")
    results: list[tuple[int, str, list[dict[str, Any]]]] = []
    for size in sizes:
        matrix, source = vectors(args, size, log)
        args.source = source
        log(f"size {size}: {matrix.shape}")
        results.append((size, source, bench_size(matrix, qs, args, log)))
        del matrix

    load = os.getloadavg()
    print(
        f"First tier `{model.name}` ({model.dimensions}-d), {len(qs)} queries "
        f"(`bench_search_scale.make_queries`), one at a time; recall@{K} against exact "
        f"float32; load average {load[0]:.1f} at the end (2 cores, shared).\n"
    )
    print(
        "Vectors: the 95,336 ACL papers are real; above that synthetic papers "
        + (
            "from `--scaled`"
            if args.scaled
            else "made from real templates (the docstring says how)"
        )
        + ", embedded by the same model. A component benchmark: no database, no /mcp.\n"
    )
    print(
        "| papers | method | recall@10 | recall@100 | p50 ms | p95 ms | memory MiB | build s "
        "| file MiB | open (view) ms | goal |"
    )
    print("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|---|")
    for size, _, rows in results:
        base = rows[0]["p50"]
        for row in rows:
            if "skipped" in row:
                print(
                    f"| {size:,} | {row['method']}: not built (estimated "
                    f"{row['skipped'] / 60:.0f} min at this run's rate > the "
                    f"{args.budget:.0f}-minute budget) | | | | | | | | | |"
                )
                continue
            met = row["recall"] >= RECALL_GOAL and row["p95"] <= P95_GOAL_MS
            print(
                f"| {size:,} | {row['method']} | {row['recall']:.3f} | {row['recall_deep']:.3f} "
                f"| {row['p50']:.2f} ({row['p50'] / base:.2f}x) | {row['p95']:.2f} "
                f"| {row['memory'] / 2**20:.0f} | {row['build']:.1f}"
                f"{' (earlier run)' if row.get('cached') else ''} | "
                + (
                    f"{row['file'] / 2**20:.0f} | {row['view'] * 1000:.0f}"
                    if "file" in row
                    else "- | -"
                )
                + f" | {'met' if met else 'not met'} |"
            )
    print(
        f"\nGoal (issue #37): p95 <= {P95_GOAL_MS:.0f} ms with recall@10 >= {RECALL_GOAL} "
        "against exact search; 'memory' is what the vectors (and the graph) take in a "
        "process, beside which exact search keeps its float32 matrix for re-scoring. Ratios "
        "in brackets: p50 against exact f32 at the same size, same run."
    )


if __name__ == "__main__":
    main()

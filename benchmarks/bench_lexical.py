"""The lexical ranker against bm25s (Lucene BM25): nDCG@10 and per-query wins and losses on
every set, and the leave-one-set-out cross-validation that chose its parameters.

    make bench BENCH_ONLY=lexical
    .venv/bin/python benchmarks/bench_lexical.py [--sets scifact-train,...] [--backends sqlite]
        [--modes bm25,default] [--cv] [--limit-queries N]

What is compared, on the same documents and queries, in one run:
- `bm25`: the product's lexical path, `papers.search.local.local_search(query, limit=100,
  rerank=False)`, the service function `search_papers` (engine `local`, `rerank=false`)
  calls (tests/papers/search/test_quality_path.py holds the two rankings equal over /mcp);
- `default`: the same with default arguments (hybrid with the first embedding tier);
- bm25s 0.3.16 (requirements-dev.txt), `BM25(method="lucene", k1=1.5, b=0.75)` over title +
  abstract, its English stop words, the Snowball English stemmer (PyStemmer): the baseline.

Sets (documents go in through the importers' service, as a user's papers do):
- scifact-train (809 claims), scifact-test (300 claims): BEIR SciFact, 5,183 abstracts;
- cranfield (225 questions, graded judgments), 1,400 abstracts with authors;
- acl-lead, acl-title: built here from the ACL Anthology sample (10,000 papers with
  abstracts, ../shared/corpus/acl): 300 papers drawn with a fixed seed among those with a
  title of 4+ words and an abstract of 3+ sentences whose first sentence has 8+ words.
  acl-lead: the query is the paper's first abstract sentence, and that sentence is removed
  from the paper (title, authors, venue and the rest of the abstract stay); acl-title: the
  query is the paper's title, and the paper's title is replaced by its first abstract
  sentence (the abstract then holds the rest), so the title's words are found only where the
  abstract uses them. The one judged paper is the query's source (known-item search).
  Fair because both rankers see exactly the same texts and queries, neither was built
  from or tuned on these pairs, and a query never matches its own text verbatim.
  (bm25s reads title + abstract as configured above; the product also indexes authors and
  venue, as it does for a user's papers.)

With `--cv`, each set's child also sweeps the product's formula (postings.py: BM25 with
field-weighted term frequencies) over a grid of k1, b, field weights and two length
normalisations, on the same analyzer and the same texts, simulated in numpy (checked
against the product at its current parameters in the same run), and the driver prints
leave-one-set-out cross-validation: for each training set, the parameters best on the mean
nDCG@10 of the other training sets, scored on it. scifact-test is never used to choose.
`--sweep-only` runs the sweep (and bm25s) without a library, on the fields as the import
writes them; each set's results are kept in benchmarks/.work/lexical (`--from-work`
tabulates them, e.g. after running the sets in parallel).
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bench_search_quality as quality

ROOT = quality.ROOT
CORPUS = quality.CORPUS
DEPTH = quality.DEPTH
SETS = ("scifact-train", "scifact-test", "cranfield", "acl-lead", "acl-title")
# The sets parameters may be chosen on (scifact-test is held out from every choice).
TRAINING_SETS = ("scifact-train", "cranfield", "acl-lead", "acl-title")
WORK = ROOT / "benchmarks" / ".work" / "lexical"
BM25S = quality.BM25S
# The parameters the product had when the cross-validation was added (chosen on SciFact
# train and Cranfield's odd questions), simulated beside the current ones in every --cv run.
PREVIOUS = {"k1": 1.4, "b": 0.6, "weights": (4.0, 1.0, 2.0, 3.0, 1.0), "length": "all"}


# --- the sets ------------------------------------------------------------------------------


def load(name: str) -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]]]:
    if name.startswith("acl-"):
        return quality.load_acl(name)
    base, _, split = name.partition("-")
    return quality.load_set(base, {"train": "dev", "test": "test", "": "all"}[split])


# --- the product's formula, simulated for the parameter sweep -------------------------------


def _grid() -> list[dict[str, Any]]:
    grid = []
    # Keywords weigh as much as the title (no set here has keywords); venue 1.
    for title, authors, venue, length, k1, b in itertools.product(
        (1.0, 2.0, 3.0, 4.0, 5.0),
        (0.0, 1.0, 2.0),
        (1.0,),
        ("all", "weighted"),
        (0.9, 1.2, 1.5, 1.8),
        (0.6, 0.75, 0.9),
    ):
        grid.append(
            {"k1": k1, "b": b, "weights": (title, 1.0, authors, title, venue), "length": length}
        )
    return grid


def sweep(
    rows: Sequence[tuple[Any, ...]],
    mapping: dict[int, str],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    grid: Sequence[dict[str, Any]],
) -> list[float]:
    """Mean nDCG@10 of the product's formula (postings.py) for each parameter set of the
    grid, on the papers' five search fields (`rows`: postings._texts), in numpy.

    `length`: "all" = a paper's length is its number of terms in all fields (postings.py),
    "weighted" = each field's terms counted with its weight (BM25F's length: a variant
    measured here, not an option of the product)."""
    import numpy as np
    from scipy import sparse

    from papers.search import analysis, postings
    from papers.search import query as q

    vocabulary: dict[str, int] = {}
    fields: list[list[tuple[int, int, int]]] = [[] for _ in range(5)]
    order = []
    for row_index, row in enumerate(rows):
        order.append(mapping.get(row[0], ""))
        for field, text in enumerate(row[1:6]):
            for term, count in analysis.term_counts(text or "").items():
                column = vocabulary.setdefault(term, len(vocabulary))
                fields[field].append((row_index, column, count))
    shape = (len(rows), max(len(vocabulary), 1))
    counts = []
    for entries in fields:
        r, c, v = zip(*entries, strict=True) if entries else ((), (), ())
        counts.append(sparse.csr_matrix((v, (r, c)), shape=shape, dtype=np.float64))
    plain_lengths = [np.asarray(m.sum(axis=1)).ravel() for m in counts]
    present = (sum(counts) > 0).astype(np.float64)
    df = np.asarray(present.sum(axis=0)).ravel()
    n = len(rows)
    idf = np.log(1.0 + (n - df + 0.5) / (df + 0.5))
    judged = [qid for qid in qrels if qid in queries]
    query_columns = []
    for qid in judged:
        words = q.understand(quality.query_text(queries[qid])).words
        ids = postings.query_term_ids(words)  # distinct stems, stop words dropped
        stems = dict.fromkeys(analysis.stems(" ".join(words)))
        columns = [vocabulary[s] for s in stems if s in vocabulary]
        query_columns.append(columns[: len(ids)])
    qr, qc = [], []
    for i, columns in enumerate(query_columns):
        qr += [i] * len(columns)
        qc += columns
    selector = (
        sparse.csr_matrix((np.ones(len(qr)), (qr, qc)), shape=(len(judged), shape[1]))
        .multiply(idf.reshape(1, -1))
        .tocsr()
    )
    # Graded gains by (query, document) and each query's ideal DCG@10, as ndcg_at_10.
    position = {doc: i for i, doc in enumerate(order) if doc}
    gr, gc, gv = [], [], []
    ideal = np.zeros(len(judged))
    discounts = 1.0 / np.log2(np.arange(10) + 2)
    for i, qid in enumerate(judged):
        for doc, gain in qrels[qid].items():
            if doc in position and gain:
                gr.append(i)
                gc.append(position[doc])
                gv.append(float(gain))
        best = sorted(qrels[qid].values(), reverse=True)[:10]
        ideal[i] = sum(g * discounts[k] for k, g in enumerate(best))
    gains = sparse.csr_matrix((gv, (gr, gc)), shape=(len(judged), n))
    results = []
    cache: dict[tuple[Any, ...], Any] = {}
    for params in grid:
        weights, k1, b = params["weights"], params["k1"], params["b"]
        key = (weights, params["length"])
        if key not in cache:
            tf = sum(w * m for w, m in zip(weights, counts, strict=True)).tocsr()
            if params["length"] == "weighted":
                lengths = sum(w * x for w, x in zip(weights, plain_lengths, strict=True))
            else:
                lengths = sum(plain_lengths)
            cache = {key: (tf, lengths)}
        tf, lengths = cache[key]
        average = lengths.mean() or 1.0
        norm = k1 * (1 - b + b * lengths / average)
        part = tf.copy()
        row_norm = np.repeat(norm, np.diff(part.indptr))
        part.data = part.data * (k1 + 1) / (part.data + row_norm)
        scores = (selector @ part.T).toarray()
        depth = min(10, n)
        tops = np.sort(np.argpartition(-scores, depth - 1, axis=1)[:, :depth], axis=1)
        top_scores = np.take_along_axis(scores, tops, axis=1)
        by_score = np.argsort(-top_scores, axis=1, kind="stable")  # ties: by document order
        tops = np.take_along_axis(tops, by_score, axis=1)
        top_scores = np.take_along_axis(top_scores, by_score, axis=1)
        found = np.asarray(gains[np.arange(len(judged))[:, None], tops].todense())
        found[top_scores <= 0] = 0.0
        dcg = (found * discounts[: found.shape[1]]).sum(axis=1)
        results.append(
            float(np.mean(np.divide(dcg, ideal, out=np.zeros_like(dcg), where=ideal > 0)))
        )
    return results


# --- one (set, backend) in a child process -------------------------------------------------


def per_query(rankings: dict[str, list[str]], qrels: dict[str, dict[str, int]]) -> dict[str, float]:
    return {qid: quality.ndcg_at_10(rankings[qid], qrels[qid]) for qid in qrels}


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    database_url = None
    admin = None
    if args.backend == "postgres":
        import psycopg

        name = f"bench_lexical_{os.getpid()}"
        admin = psycopg.connect(quality.PG_URL, autocommit=True)
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
        database_url = quality.PG_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        with tempfile.TemporaryDirectory(prefix="bench-lexical-") as directory:
            quality.setup_django(directory, database_url)
            return _evaluate(args)
    finally:
        if admin is not None:
            admin.execute(f'DROP DATABASE IF EXISTS "bench_lexical_{os.getpid()}" WITH (FORCE)')


def _evaluate(args: argparse.Namespace) -> dict[str, Any]:
    docs, queries, qrels = load(args.set)
    qrels = {qid: rel for qid, rel in qrels.items() if qid in queries}
    if args.limit_queries:
        qrels = dict(list(qrels.items())[: args.limit_queries])
    started = time.perf_counter()
    mapping = quality.import_docs(docs)
    result: dict[str, Any] = {"import_s": time.perf_counter() - started, "queries": len(qrels)}
    modes = args.modes.split(",")
    if "default" in modes:
        quality.embed_everything()
    rankers = quality.service_rankers(mapping)
    baseline = quality.score(quality.bm25s_lucene(docs), queries, qrels)
    baseline_ndcg = per_query(baseline.pop("rankings"), qrels)
    result["bm25s"] = baseline
    result["modes"] = {}
    for mode in modes:
        figures = quality.score(rankers[mode], queries, qrels)
        ndcg = per_query(figures.pop("rankings"), qrels)
        figures["wins"] = sum(ndcg[q] > baseline_ndcg[q] + 1e-9 for q in qrels)
        figures["losses"] = sum(ndcg[q] < baseline_ndcg[q] - 1e-9 for q in qrels)
        result["modes"][mode] = figures
    if args.cv:
        from django.db import connection

        from papers.search import postings

        with connection.cursor() as cursor:
            cursor.execute(f"SELECT paper_id FROM {postings.DOC_TABLE} ORDER BY paper_id")  # noqa: S608
            ids = [row[0] for row in cursor.fetchall()]
            rows = [
                row
                for s in range(0, len(ids), 500)
                for row in postings._texts(cursor, ids[s : s + 500])
            ]
        current = {
            "k1": postings.K1, "b": postings.B, "weights": tuple(postings.FIELD_WEIGHTS),
            "length": getattr(postings, "LENGTH", "all"),
        }  # fmt: skip
        grid = _grid()
        scores = sweep(rows, mapping, queries, qrels, [current, PREVIOUS, *grid])
        result["cv"] = {"current": scores[0], "previous": scores[1], "grid": scores[2:]}
    return result


# --- the driver ----------------------------------------------------------------------------


def sweep_texts(set_name: str) -> dict[str, Any]:
    """The sweep on a set's five search fields built from its documents as import_docs
    gives them to the library (no venue short name, no keywords), without a library."""
    import django

    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")
    os.environ.setdefault("RESEARCH_DIRECTORY", tempfile.mkdtemp(prefix="bench-lexical-"))
    sys.path.insert(0, str(ROOT))
    django.setup()  # the analyzer and the formula only: no database is opened
    from papers.search import postings

    docs, queries, qrels = load(set_name)
    qrels = {qid: rel for qid, rel in qrels.items() if qid in queries}
    rows = [
        (i, d["title"] or f"Document {d['id']}", d["text"], ", ".join(d.get("authors") or []),
         "", d.get("venue") or "")
        for i, d in enumerate(docs)
    ]  # fmt: skip
    mapping = {i: d["id"] for i, d in enumerate(docs)}
    current = {
        "k1": postings.K1, "b": postings.B, "weights": tuple(postings.FIELD_WEIGHTS),
        "length": getattr(postings, "LENGTH", "all"),
    }  # fmt: skip
    scores = sweep(rows, mapping, queries, qrels, [current, PREVIOUS, *_grid()])
    baseline = quality.score(quality.bm25s_lucene(docs), queries, qrels)
    baseline.pop("rankings")
    baseline["queries"] = len(qrels)
    return {
        "bm25s": baseline,
        "cv": {"current": scores[0], "previous": scores[1], "grid": scores[2:]},
    }


def print_sweep(swept: dict[str, dict[str, Any]]) -> None:
    """Per set: bm25s, the product's formula at its current parameters and at bm25s's
    (title 1, no authors: the analyzer alone), and the grid's best (chosen on that set)."""
    grid = _grid()
    same = next(
        i
        for i, p in enumerate(grid)
        if (p["k1"], p["b"], p["weights"][0], p["weights"][2], p["length"])
        == (BM25S["k1"], BM25S["b"], 1.0, 0.0, "all")
    )
    print(
        "\nnDCG@10, the product's formula simulated on the set's texts (the product's analyzer;"
        " equal to the product's own figure at the current parameters) beside bm25s-Lucene:"
    )
    print(
        "\n| set | bm25s-Lucene | current parameters | same parameters as bm25s | "
        "best of the grid on this set (not a choice) |"
    )
    print("|---|---|---|---|---|")
    for name, result in swept.items():
        cv = result["cv"]
        base = result.get("bm25s", {}).get("ndcg", float("nan"))
        best = max(cv["grid"])
        print(
            f"| {name} | {base:.3f} | "
            f"{cv['current']:.3f} ({cv['current'] / base:.3f}x) | "
            f"{cv['grid'][same]:.3f} ({cv['grid'][same] / base:.3f}x) | "
            f"{best:.3f} ({best / base:.3f}x) |"
        )


def _label(params: dict[str, Any]) -> str:
    t, _, a, _, v = params["weights"]
    return (
        f"k1 {params['k1']}, b {params['b']}, title {t:g}, authors {a:g}, venue {v:g}, "
        f"length {params['length']}"
    )


def cross_validate(results: dict[str, dict[str, Any]]) -> list[str]:
    """Leave-one-set-out over the training sets present: a markdown table."""
    grid = _grid()
    training = [s for s in TRAINING_SETS if s in results and "cv" in results[s]]
    lines = [
        "\nLeave-one-set-out cross-validation (simulated product formula, nDCG@10): parameters"
        " chosen on the mean of the other training sets, scored on the held-out one.",
        "\n| held-out set | chosen on the others | held-out nDCG@10 | current parameters |",
        "|---|---|---|---|",
    ]
    for held in training:
        others = [s for s in training if s != held]
        if not others:
            continue
        means = [
            statistics.fmean(results[s]["cv"]["grid"][i] for s in others) for i in range(len(grid))
        ]
        best = max(range(len(grid)), key=lambda i: (means[i], -i))
        lines.append(
            f"| {held} | {_label(grid[best])} | {results[held]['cv']['grid'][best]:.3f} | "
            f"{results[held]['cv']['current']:.3f} |"
        )
    held_out = [
        line.split(" | ")[2] for line in lines if line.startswith("| ") and "held-out" not in line
    ]
    if held_out and len(held_out) == len(training):
        current = statistics.fmean(results[s]["cv"]["current"] for s in training)
        chosen = statistics.fmean(float(value) for value in held_out)
        lines.append(f"| mean | | {chosen:.3f} | {current:.3f} |")
    if training:
        means = [
            statistics.fmean(results[s]["cv"]["grid"][i] for s in training)
            for i in range(len(grid))
        ]
        best = max(range(len(grid)), key=lambda i: (means[i], -i))
        lines.append(f"\nChosen on all training sets ({', '.join(training)}): {_label(grid[best])}")
        for name, result in results.items():
            if "cv" in result:
                lines.append(
                    f"- {name}: simulated {result['cv']['grid'][best]:.3f} with it, "
                    f"{result['cv']['current']:.3f} with the current parameters"
                )
        ranked = sorted(range(len(grid)), key=lambda i: -means[i])[:8]
        lines.append("\nBest on all training sets (mean nDCG@10):")
        lines += [f"- {means[i]:.4f}: {_label(grid[i])}" for i in ranked]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--backends", default="sqlite")
    parser.add_argument("--modes", default="bm25,default")
    parser.add_argument("--cv", action="store_true", help="sweep and cross-validate parameters")
    parser.add_argument("--limit-queries", type=int, default=0)
    parser.add_argument("--save", help="also write the children's results (JSON) here")
    parser.add_argument(
        "--from-work",
        action="store_true",
        help="print the tables from the sets' results kept in benchmarks/.work/lexical",
    )
    parser.add_argument(
        "--sweep-only",
        action="store_true",
        help="only the cross-validation, on the sets' texts as they would be imported",
    )
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--set", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        result = run_child(args)
        # Kept beside the logs too, so a long run's finished sets survive an interrupted one.
        WORK.mkdir(parents=True, exist_ok=True)
        (WORK / f"{args.set}-{args.backend}.json").write_text(json.dumps(result), encoding="utf-8")
        print(json.dumps(result))
        return
    results: dict[tuple[str, str], dict[str, Any]] = {}
    if args.sweep_only:
        swept = {}
        WORK.mkdir(parents=True, exist_ok=True)
        for set_name in args.sets.split(","):
            kept = WORK / f"sweep-{set_name}.json"
            if args.from_work:
                swept[set_name] = json.loads(kept.read_text(encoding="utf-8"))
                continue
            swept[set_name] = sweep_texts(set_name)
            kept.write_text(json.dumps(swept[set_name]), encoding="utf-8")
            print(f"{set_name}: swept", file=sys.stderr)
        print_sweep(swept)
        print("\n".join(cross_validate(swept)))
        return
    if args.from_work:
        for set_name in args.sets.split(","):
            for backend in args.backends.split(","):
                path = WORK / f"{set_name}-{backend}.json"
                results[(set_name, backend)] = json.loads(path.read_text(encoding="utf-8"))
                sweep_file = WORK / f"sweep-{set_name}.json"
                if sweep_file.exists() and "cv" not in results[(set_name, backend)]:
                    kept = json.loads(sweep_file.read_text(encoding="utf-8"))
                    results[(set_name, backend)]["cv"] = kept["cv"]
                    args.cv = True
        print_table(results, args)
        return
    for set_name in args.sets.split(","):
        for backend in args.backends.split(","):
            command = [
                sys.executable, __file__, "--child", "--set", set_name, "--backend", backend,
                "--modes", args.modes, "--limit-queries", str(args.limit_queries),
                *(["--cv"] if args.cv else []),
            ]  # fmt: skip
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"{set_name} on {backend} failed")
            results[(set_name, backend)] = json.loads(done.stdout.strip().splitlines()[-1])
            print(
                f"{set_name} on {backend}: {time.perf_counter() - started:.0f} s", file=sys.stderr
            )
    if args.save:
        Path(args.save).write_text(
            json.dumps({f"{s}|{b}": r for (s, b), r in results.items()}), encoding="utf-8"
        )
    print_table(results, args)


def print_table(results: dict[tuple[str, str], dict[str, Any]], args: argparse.Namespace) -> None:
    print(
        "\nnDCG@10 of the product and of bm25s-Lucene (k1 1.5, b 0.75, English stop words, "
        "Snowball, title + abstract) on the same documents and queries, in the same run; "
        "wins / losses: queries where the product's nDCG@10 is above / below bm25s's."
    )
    print("\n| set | backend | run | nDCG@10 | vs bm25s | wins / ties / losses | ms |")
    print("|---|---|---|---|---|---|---|")
    for (set_name, backend), result in results.items():
        base = result["bm25s"]
        print(
            f"| {set_name} ({result['queries']} q) | {backend} | bm25s-Lucene | "
            f"{base['ndcg']:.3f} | 1.00x | | {base['ms']:.1f} |"
        )
        for mode, figures in result["modes"].items():
            label = {"bm25": "product, rerank=false", "default": "product, default (hybrid)"}
            ties = result["queries"] - figures["wins"] - figures["losses"]
            ratio = figures["ndcg"] / base["ndcg"] if base["ndcg"] else float("nan")
            print(
                f"| {set_name} | {backend} | {label.get(mode, mode)} | {figures['ndcg']:.3f} | "
                f"{ratio:.3f}x | {figures['wins']} / {ties} / {figures['losses']} | "
                f"{figures['ms']:.1f} |"
            )
    by_set = {s: r for (s, b), r in results.items() if b == args.backends.split(",")[0]}
    if args.cv:
        print(
            "\nThe product's formula simulated (numpy, same analyzer and texts) at its current "
            "parameters (checked against the product's own figure, same run) and at the "
            "parameters before the cross-validation (k1 1.4, b 0.6, title 4, keywords 3, "
            "authors 2, "
            "abstract and venue 1, length = all terms unweighted):"
        )
        print("\n| set | product, rerank=false | simulated, current | simulated, before | bm25s |")
        print("|---|---|---|---|---|")
        for name, result in by_set.items():
            product = result["modes"].get("bm25", {}).get("ndcg", float("nan"))
            cv, base = result["cv"], result["bm25s"]["ndcg"]
            print(
                f"| {name} | {product:.3f} | {cv['current']:.3f} ({cv['current'] / base:.3f}x) | "
                f"{cv.get('previous', float('nan')):.3f} "
                f"({cv.get('previous', float('nan')) / base:.3f}x) | {base:.3f} |"
            )
        print("\n".join(cross_validate(by_set)))
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

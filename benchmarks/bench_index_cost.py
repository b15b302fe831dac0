"""What the database engine's full-text index (FTS5 / tsvector) costs beside the BM25
postings, and what it would rank like in their place.

    .venv/bin/python benchmarks/bench_index_cost.py --corpus ACL.jsonl.gz
        [--limit N] [--backends sqlite,postgres] [--sets scifact,cranfield]
        [--limit-queries N] [--queries 200]

Three parts, each (set or corpus, backend) in a child process on a fresh knowledge base
(on PostgreSQL a private database `bench_index_cost_<pid>` on BENCH_PG_URL's server):

1. Quality, SciFact test and Cranfield test (all their queries unless --limit-queries),
   documents imported through `papers_upsert`: the product's BM25 over its postings
   (`local_search(rerank=False)`, what `search_papers` ranks by full text) beside the
   engine's own ranking over the product's own engine index, matched as the search
   matches a natural query (any non-stop word: `native.rank`, FTS5 `bm25()` with the
   column weights native.py uses on SQLite, `ts_rank` on PostgreSQL), and the plain FTS5
   reference of bench_search_quality.py.
2. Cost, the ACL corpus (`--limit N`: its first N records) imported with
   `manage.py import_jsonl` (in-process, timed): the size on disk of the engine's index,
   of the postings and of the paper table (SQLite `dbstat`, PostgreSQL
   `pg_total_relation_size`, indexes included); each index rebuilt alone over the same
   papers (`fulltext.rebuild_index`, `postings.rebuild_postings`, in one transaction each,
   as `reindex_fulltext` does), as a share of the import's time; and what a positions
   table (one row per indexed token: term, paper, position) would hold: its rows are the
   library's tokens (the postings' document lengths summed), its bytes per row measured
   by building it for a sample of papers.
3. Speed on the same library: natural queries of bench_search.py's generator (rare,
   medium, common words, two words, author names), top 20 with the total, ranked by our
   postings (`fulltext.paper_search_scored`) and by the engine (`native.rank`), in-process.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import bench_search_quality as quality

ROOT = Path(__file__).resolve().parent.parent
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres")
NATURAL_KINDS = ("rare word", "medium word", "common word", "two words", "author")
POSITION_SAMPLE = 5_000
WARMUP = 10


# --- the engine's ranking of a natural query ---------------------------------------------


def engine_node(text: str) -> Any:
    """The query as the engine would match it alone: any non-stop word of a natural query
    (as fulltext.raw_search_ms builds it), the boolean query as written."""
    from papers.search import query as q
    from papers.search.analysis import is_stop_word

    understood = q.understand(text)
    if understood.mode == "strict" and understood.constraint is not None:
        return understood.constraint
    words = [w for w in dict.fromkeys(understood.words) if not is_stop_word(w.lower())]
    terms = tuple(q.Term(w) for w in words or understood.words)
    if not terms:
        return None
    return terms[0] if len(terms) == 1 else q.Or(terms)


def engine_ranker(mapping: dict[int, str]) -> Any:
    from papers.search import native

    def rank(text: str) -> list[str]:
        node = engine_node(quality.query_text(text))
        if node is None:
            return []
        ranked = native.rank(node, [], quality.DEPTH, 0)
        return [mapping[i] for i in ranked.ids if i in mapping]

    return rank


def quality_child(args: argparse.Namespace) -> dict[str, Any]:
    docs, queries, qrels = quality.load_set(args.set, "test")
    if args.limit_queries:
        qrels = dict(list(qrels.items())[: args.limit_queries])
    mapping = quality.import_docs(docs)
    ours = quality.service_rankers(mapping)["bm25"]
    runs = {
        "plain FTS5 BM25 (bench_search_quality's reference)": quality.plain_fts5(docs),
        "BM25 over our postings (`local_search`, rerank off)": ours,
        "engine's own ranking of the product index (`native.rank`)": engine_ranker(mapping),
    }
    result: dict[str, Any] = {"queries": len(qrels), "runs": {}}
    for label, rank in runs.items():
        figures = quality.score(rank, queries, qrels)
        figures.pop("rankings")
        result["runs"][label] = figures
    return result


# --- cost ------------------------------------------------------------------------------


def import_corpus(corpus: str, limit: int, directory: str) -> float:
    from django.core.management import call_command

    if limit:
        opener = gzip.open if corpus.endswith(".gz") else open
        with opener(corpus, "rt") as source:  # type: ignore[operator]
            head = "".join(line for _, line in zip(range(limit), source, strict=False))
        corpus = str(Path(directory) / "corpus-head.jsonl")
        Path(corpus).write_text(head)
    started = time.perf_counter()
    # The search indexes' cost alone: the vectors the import also builds are not theirs.
    call_command(
        "import_jsonl", corpus, no_progress=True, no_embeddings=True, stdout=open(os.devnull, "w")
    )
    return time.perf_counter() - started


def sizes(postgres: bool) -> dict[str, int]:
    """Bytes on disk of the engine index, the postings, the paper table, and the whole
    database (indexes included)."""
    from django.db import connection

    groups = {
        "engine index (FTS5 / tsvector)": ["papers_paper_fts"],
        "BM25 postings": ["papers_lex_posting", "papers_lex_doc", "papers_lex_word"],
        "paper table": ["papers_paper"],
    }
    found: dict[str, int] = {}
    with connection.cursor() as cursor:
        if postgres:
            for label, tables in groups.items():
                total = 0
                for table in tables:
                    cursor.execute("SELECT pg_total_relation_size(%s)", [table])
                    total += int(cursor.fetchone()[0])
                found[label] = total
            cursor.execute("SELECT pg_database_size(current_database())")
            found["whole database"] = int(cursor.fetchone()[0])
            return found
        cursor.execute(
            "SELECT m.tbl_name, sum(d.pgsize) FROM dbstat d JOIN sqlite_master m "
            "ON m.name = d.name GROUP BY m.tbl_name"
        )
        by_table = dict(cursor.fetchall())
        for label, tables in groups.items():
            found[label] = sum(
                int(size)
                for name, size in by_table.items()
                if any(name == t or (name.startswith(f"{t}_") and "fts" in t) for t in tables)
            )
        content = int(by_table.get("papers_paper_fts_content", 0))
        found["  of which the engine's copy of the text (FTS5 content)"] = content
        cursor.execute("PRAGMA page_count")
        pages = int(cursor.fetchone()[0])
        cursor.execute("PRAGMA page_size")
        found["whole database"] = pages * int(cursor.fetchone()[0])
    return found


def rebuild_seconds() -> dict[str, float]:
    from django.db import transaction

    from papers.search import fulltext, postings

    found = {}
    for label, rebuild in (
        ("engine index (FTS5 / tsvector)", fulltext.rebuild_index),
        ("BM25 postings", postings.rebuild_postings),
    ):
        started = time.perf_counter()
        with transaction.atomic():
            rebuild()
        found[label] = time.perf_counter() - started
    return found


def positions_estimate(postgres: bool) -> dict[str, float]:
    """Rows and bytes a positions table would take: rows = tokens in the library (the
    postings' document lengths summed); bytes per row from building it for a sample."""
    from django.db import connection, transaction

    from papers.search import analysis
    from papers.search.postings import DOC_TABLE, POSTING_TABLE
    from papers.search.postings import _texts as texts

    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*), coalesce(sum(length), 0) FROM {DOC_TABLE}")  # noqa: S608
        papers, tokens = (int(v) for v in cursor.fetchone())
        cursor.execute(f"SELECT count(*) FROM {POSTING_TABLE}")  # noqa: S608
        posting_rows = int(cursor.fetchone()[0])
        cursor.execute(f"SELECT paper_id FROM {DOC_TABLE} ORDER BY paper_id")  # noqa: S608
        ids = [row[0] for row in cursor.fetchall()]
    step = max(1, len(ids) // POSITION_SAMPLE)
    sample = ids[::step][:POSITION_SAMPLE]
    rows: list[tuple[int, int, int]] = []
    with connection.cursor() as cursor:
        for start in range(0, len(sample), 500):
            for row in texts(cursor, sample[start : start + 500]):
                position = 0
                for text in row[1:6]:  # positions run on across fields, a gap between them
                    for word in analysis.words(text or ""):
                        if not analysis.is_stop_word(word):
                            rows.append((analysis.term_id(analysis.stem(word)), row[0], position))
                        position += 1
                    position += 100
    table = "bench_positions"
    with transaction.atomic(), connection.cursor() as cursor:
        kind = "bigint" if postgres else "INTEGER"
        cursor.execute(
            f"CREATE TABLE {table} (term_id {kind} NOT NULL, paper_id {kind} NOT NULL, "
            f"position integer NOT NULL, PRIMARY KEY (term_id, paper_id, position))"
            + ("" if postgres else " WITHOUT ROWID")
        )
        cursor.execute(f"CREATE INDEX {table}_paper ON {table} (paper_id)")
        cursor.executemany(f"INSERT INTO {table} VALUES (%s, %s, %s)", rows)  # noqa: S608
    with connection.cursor() as cursor:
        if postgres:
            cursor.execute("VACUUM ANALYZE bench_positions")
            cursor.execute(f"SELECT pg_total_relation_size('{table}')")
        else:
            cursor.execute(
                f"SELECT sum(pgsize) FROM dbstat WHERE name IN ('{table}', '{table}_paper')"  # noqa: S608
            )
        sample_bytes = int(cursor.fetchone()[0])
        cursor.execute(f"DROP TABLE {table}")
    per_row = sample_bytes / max(len(rows), 1)
    return {
        "papers": papers,
        "posting rows": posting_rows,
        "tokens (positions rows)": tokens,
        "sample rows": len(rows),
        "bytes per row": per_row,
        "estimated bytes": per_row * tokens,
    }


def speed(queries: list[tuple[str, str]]) -> dict[str, dict[str, list[float]]]:
    from papers.search import fulltext, native

    times: dict[str, dict[str, list[float]]] = {"ours": {}, "engine": {}}
    natural = [(kind, text) for kind, text in queries if kind in NATURAL_KINDS]
    for index, (kind, text) in enumerate(natural[:WARMUP] + natural):
        for label in ("ours", "engine"):
            started = time.perf_counter()
            if label == "ours":
                fulltext.paper_search_scored(query=text, limit=20)
            else:
                node = engine_node(text)
                if node is not None:
                    native.rank(node, [], 20, 0)
            elapsed = (time.perf_counter() - started) * 1000
            if index >= WARMUP:
                times[label].setdefault(kind, []).append(elapsed)
    return times


def cost_child(args: argparse.Namespace, directory: str) -> dict[str, Any]:
    import bench_search

    postgres = args.backend == "postgres"
    result: dict[str, Any] = {}
    result["import_s"] = import_corpus(args.corpus, args.limit, directory)
    if postgres:
        from django.db import connection

        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    result["sizes"] = sizes(postgres)
    result["rebuild_s"] = rebuild_seconds()
    result["sizes_after_rebuild"] = sizes(postgres)
    result["positions"] = positions_estimate(postgres)
    result["speed"] = speed(bench_search.make_queries(args.queries, 7))
    return result


# --- the driver ------------------------------------------------------------------------


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    database_url = None
    admin = None
    name = f"bench_index_cost_{os.getpid()}"
    if args.backend == "postgres":
        import psycopg

        admin = psycopg.connect(PG_URL, autocommit=True)
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
        database_url = PG_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        with tempfile.TemporaryDirectory(prefix="bench-index-cost-") as directory:
            quality.setup_django(directory, database_url)
            if args.child == "quality":
                return quality_child(args)
            return cost_child(args, directory)
    finally:
        if admin is not None:
            from django.db import connections

            connections.close_all()
            admin.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def child(args: argparse.Namespace, kind: str, **extra: str) -> dict[str, Any]:
    command = [sys.executable, __file__, "--child", kind, "--backend", args.backend_now,
               "--corpus", args.corpus, "--limit", str(args.limit), "--queries", str(args.queries),
               "--limit-queries", str(args.limit_queries)]  # fmt: skip
    for key, value in extra.items():
        command += [f"--{key}", value]
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        print(done.stderr[-3000:], file=sys.stderr)
        raise SystemExit(f"{kind} {extra} on {args.backend_now} failed")
    print(f"{kind} {extra} on {args.backend_now}: {time.perf_counter() - started:.0f} s",
          file=sys.stderr, flush=True)  # fmt: skip
    return json.loads(done.stdout.strip().splitlines()[-1])


def mib(value: float) -> str:
    return f"{value / 2**20:,.1f}"


def pct(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpus", required=True)
    parser.add_argument("--limit", type=int, default=0, help="ACL: the first N records only.")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--sets", default="scifact,cranfield")
    parser.add_argument("--limit-queries", type=int, default=0)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--parts", default="quality,cost")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--set", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(args)))
        return
    parts = args.parts.split(",")
    backends = args.backends.split(",")
    quality_results: dict[tuple[str, str], dict[str, Any]] = {}
    cost_results: dict[str, dict[str, Any]] = {}
    for backend in backends:
        args.backend_now = backend
        if "quality" in parts:
            for set_name in args.sets.split(","):
                quality_results[(set_name, backend)] = child(args, "quality", set=set_name)
        if "cost" in parts:
            cost_results[backend] = child(args, "cost")
    if quality_results:
        print_quality(quality_results)
    if cost_results:
        print_cost(cost_results)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


def print_quality(results: dict[tuple[str, str], dict[str, Any]]) -> None:
    print("### Ranking: our BM25 postings beside the engine's own ranking (test splits)\n")
    print("| set | backend | ranking | nDCG@10 | Recall@100 | ms per query (median) |")
    print("|---|---|---|---|---|---|")
    for (set_name, backend), result in results.items():
        for label, figures in result["runs"].items():
            if label.startswith("plain") and backend != "sqlite":
                continue  # the same in-memory SQLite table whatever the backend
            print(
                f"| {set_name} ({result['queries']} q) | {backend} | {label} | "
                f"{figures['ndcg']:.3f} | {figures['recall']:.3f} | {figures['ms']:.1f} |"
            )
    print()


def print_cost(results: dict[str, dict[str, Any]]) -> None:
    for backend, result in results.items():
        positions = result["positions"]
        papers = positions["papers"]
        print(f"### Cost of each index: {backend}, {papers:,} ACL papers\n")
        print(f"`import_jsonl`: {result['import_s']:.1f} s (both indexes written as it goes).\n")
        print("| what | MiB on disk after import | after a rebuild | rebuild alone, s "
              "| rebuild / import time |")  # fmt: skip
        print("|---|---|---|---|---|")
        for label, size in result["sizes"].items():
            again = result["sizes_after_rebuild"].get(label, 0)
            seconds = result["rebuild_s"].get(label)
            timing = (f"{seconds:.1f} | {seconds / result['import_s']:.0%}"
                      if seconds is not None else " | ")  # fmt: skip
            print(f"| {label} | {mib(size)} | {mib(again)} | {timing} |")
        tokens = positions["tokens (positions rows)"]
        print(
            f"| positions table (estimate: {tokens:,} rows x {positions['bytes per row']:.1f} "
            f"bytes, measured on {positions['sample rows']:,} rows) "
            f"| {mib(positions['estimated bytes'])} | | | |"
        )
        rows = positions["posting rows"]
        print(f"\nPostings: {rows:,} rows; tokens per posting {tokens / max(rows, 1):.2f}.\n")
        print("Natural queries, top 20 with the total, in-process, ms (p50 / p95):\n")
        print("| kind | queries | our postings (`paper_search_scored`) | engine (`native.rank`) |")
        print("|---|---|---|---|")
        speed = result["speed"]
        every: dict[str, list[float]] = {"ours": [], "engine": []}
        for kind in NATURAL_KINDS:
            ours, engine = speed["ours"].get(kind, []), speed["engine"].get(kind, [])
            if not ours:
                continue
            every["ours"] += ours
            every["engine"] += engine
            print(f"| {kind} | {len(ours)} | {statistics.median(ours):.1f} / {pct(ours, 0.95):.1f} "
                  f"| {statistics.median(engine):.1f} / {pct(engine, 0.95):.1f} |")  # fmt: skip
        ours, engine = every["ours"], every["engine"]
        print(f"| all | {len(ours)} | {statistics.median(ours):.1f} / {pct(ours, 0.95):.1f} "
              f"| {statistics.median(engine):.1f} / {pct(engine, 0.95):.1f} |\n")  # fmt: skip


if __name__ == "__main__":
    main()

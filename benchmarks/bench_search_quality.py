"""Search quality through the path users take: nDCG@10 and Recall@100 per set x backend x mode.

    make bench-search-quality            (both sets, SQLite and PostgreSQL, every mode)
    .venv/bin/python benchmarks/bench_search_quality.py [--sets scifact,cranfield]
        [--backends sqlite,postgres] [--modes default,bm25,semantic,hybrid]
        [--split test|dev|all] [--mcp] [--limit-queries N]

Each (set, backend) runs in a child process of its own on a fresh knowledge base (a
temporary folder; on PostgreSQL a private database `bench_quality_<pid>` on
127.0.0.1:5432). The documents go in through the importers' service (`papers_upsert`),
so they are indexed exactly as a user's papers are. Every mode calls the service
function behind the interface a user calls:

- default:  `papers.search.local.local_search(query, limit=100)`: what `search_papers`
            (engine `local`, default arguments) and REST /api/search return;
- bm25:     the same with `rerank=False`;  hybrid: with `rerank=True`;
- semantic: `papers.search.semantic.semantic_search(query, top_k=100)`, what
            `search_papers_semantic` returns.

With `--mcp` the default and bm25 modes are also run through `search_papers` over `/mcp`
(bm25 as `rerank=false`) with the MCP SDK client against `manage.py serve` on the same
knowledge base, and the rankings of the tool and of the service function are compared
query by query (tests/papers/search/test_quality_path.py holds them equal on a small
sample in CI).

Beside them, in the same run: a plain SQLite FTS5 BM25 over the OR of the query's words
(title weight 2, abstract 1, unicode61 tokenizer; the reference Cranfield's SOURCE.txt
gives, 0.334 there) and the published BEIR BM25 figure for SciFact.

Sets and splits: SciFact (BEIR; 5,183 abstracts): `test` = its 300 test claims, `dev` =
its 809 train claims (the only ones anything was tuned on). Cranfield (1,400 abstracts,
225 questions, graded judgments): `dev` = odd-numbered questions, `test` = even ones.
nDCG@10 uses graded gains (BEIR's definition); Recall@100 is the share of a query's
relevant documents in its top 100, averaged over queries. Queries longer than the
500-character limit are cut at a word boundary (none are in these sets).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from mcp_server import STEADY_STATE_WAIT_MS

ROOT = Path(__file__).resolve().parent.parent
CORPUS = Path(os.environ.get("BENCH_SHARED") or ROOT.parent / "shared") / "corpus"
PG_URL = os.environ.get("BENCH_PG_URL", "postgres://postgres@127.0.0.1:5432/postgres")
MODES = ("default", "bm25", "semantic", "hybrid")
DEPTH = 100
# BEIR (Thakur et al., NeurIPS 2021 Datasets & Benchmarks), SciFact test, BM25 (Elastic).
PUBLISHED = {"scifact": ("BM25, BEIR (published)", 0.665, 0.908)}


# --- the judged sets ---------------------------------------------------------------------


def load_set(name: str, split: str) -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]]]:
    """(documents {id, title, text, authors}, queries {id: text}, qrels {query: {doc: gain}})."""
    if name == "scifact":
        base = CORPUS / "scifact"
        docs = [json.loads(line) for line in (base / "corpus.jsonl").open(encoding="utf-8")]
        docs = [{"id": d["_id"], "title": d["title"], "text": d["text"]} for d in docs]
        queries = {}
        for line in (base / "queries.jsonl").open(encoding="utf-8"):
            item = json.loads(line)
            queries[item["_id"]] = item["text"]
        files = {"test": ["test"], "dev": ["train"], "all": ["test"]}[split]
        qrels: dict[str, dict[str, int]] = {}
        for file in files:
            for line in (base / "qrels" / f"{file}.tsv").open(encoding="utf-8"):
                parts = line.strip().split("\t")
                if parts[-1].isdigit():
                    qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
        return docs, queries, qrels
    base = CORPUS / "cranfield"
    docs = []
    for line in (base / "cranfield_for_import.jsonl").open(encoding="utf-8"):
        item = json.loads(line)
        docs.append(
            {
                "id": item["id"],
                "title": item.get("title") or "",
                "text": item.get("abstract") or "",
                "authors": item.get("authors") or [],
                "year": item.get("year"),
            }
        )
    queries = {}
    for line in (base / "cranfield_queries.jsonl").open(encoding="utf-8"):
        item = json.loads(line)
        queries[str(item["id"])] = item["text"]
    qrels = {}
    for line in (base / "cranfield_qrels.tsv").open(encoding="utf-8"):
        parts = line.strip().split("\t")
        if not parts[-1].isdigit():
            continue
        number = int(parts[0])
        if split == "all" or (split == "dev") == (number % 2 == 1):
            qrels.setdefault(parts[0], {})[parts[1]] = int(parts[2])
    return docs, queries, qrels


def ndcg_at_10(ranked: Sequence[str], relevant: dict[str, int]) -> float:
    dcg = sum(relevant.get(doc, 0) / math.log2(i + 2) for i, doc in enumerate(ranked[:10]))
    ideal = sorted(relevant.values(), reverse=True)[:10]
    idcg = sum(g / math.log2(i + 2) for i, g in enumerate(ideal))
    return dcg / idcg if idcg else 0.0


def recall_at_100(ranked: Sequence[str], relevant: dict[str, int]) -> float:
    wanted = {doc for doc, grade in relevant.items() if grade > 0}
    return len(wanted & set(ranked[:DEPTH])) / len(wanted) if wanted else 0.0


def score(
    rank: Callable[[str], list[str]], queries: dict[str, str], qrels: dict[str, dict[str, int]]
) -> dict[str, Any]:
    """nDCG@10, Recall@100, median ms and the number of empty results, over the queries."""
    ndcgs, recalls, times, empty, rankings = [], [], [], 0, {}
    for qid, relevant in qrels.items():
        started = time.perf_counter()
        ranked = rank(queries[qid])
        times.append((time.perf_counter() - started) * 1000)
        rankings[qid] = ranked
        empty += not ranked
        ndcgs.append(ndcg_at_10(ranked, relevant))
        recalls.append(recall_at_100(ranked, relevant))
    return {
        "ndcg": statistics.fmean(ndcgs),
        "recall": statistics.fmean(recalls),
        "ms": statistics.median(times),
        "empty": empty,
        "rankings": rankings,
    }


def query_text(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0]


# --- the plain FTS5 reference ------------------------------------------------------------


def plain_fts5(docs: list[dict]) -> Callable[[str], list[str]]:
    """SQLite FTS5 bm25(title 2, abstract 1) over the OR of the query's words, in memory."""
    db = sqlite3.connect(":memory:")
    db.execute("CREATE VIRTUAL TABLE ref USING fts5(doc_id UNINDEXED, title, abstract)")
    db.executemany(
        "INSERT INTO ref VALUES (?, ?, ?)", [(d["id"], d["title"], d["text"]) for d in docs]
    )

    def rank(query: str) -> list[str]:
        words = dict.fromkeys(re.findall(r"\w+", query.lower()))
        if not words:
            return []
        match = " OR ".join('"' + w.replace('"', '""') + '"' for w in words)
        rows = db.execute(
            "SELECT doc_id FROM ref WHERE ref MATCH ? ORDER BY bm25(ref, 0, 2, 1) LIMIT ?",
            (match, DEPTH),
        )
        return [row[0] for row in rows]

    return rank


# --- one (set, backend) in a child process -------------------------------------------------


def setup_django(directory: str, database_url: str | None) -> None:
    os.environ["DJANGO_SETTINGS_MODULE"] = "research_site.settings"
    os.environ["RESEARCH_DIRECTORY"] = directory
    os.environ["EMBEDDINGS_ENABLED"] = "false"  # embedded below, explicitly
    os.environ["ENGINES_ENABLED"] = "local"
    for name in (
        "REDIS_URL",
        "SEARCH_RERANK",
        "SEARCH_UNDERSTAND",
        "MCP_READ_ONLY",
        "MCP_TOOLSETS",
    ):
        os.environ.pop(name, None)
    os.environ.pop("DATABASE_URL", None)
    if database_url:
        os.environ["DATABASE_URL"] = database_url
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def import_docs(docs: list[dict]) -> dict[int, str]:
    """Upsert every document (its venue when the set has one) through the importers'
    service; paper id -> document id."""
    from papers.models import PaperIdentifier
    from papers.schemas import PaperRecord
    from papers.services import papers_upsert

    for start in range(0, len(docs), 1000):
        records = [
            PaperRecord.build(
                title=d["title"] or f"Document {d['id']}",
                abstract=d["text"],
                authors=d.get("authors") or [],
                year=d.get("year"),
                venue=d.get("venue") or "",
                identifiers={"bench": d["id"]},
            )
            for d in docs[start : start + 1000]
        ]
        papers_upsert(records=records)
    return dict(PaperIdentifier.objects.filter(scheme="bench").values_list("paper_id", "value"))


def embed_everything() -> None:
    from papers.models import Paper
    from papers.search import semantic

    semantic.embed_papers(list(Paper.objects.values_list("pk", flat=True)), force=True)
    semantic.vector_index().reset()


def service_rankers(mapping: dict[int, str]) -> dict[str, Callable[[str], list[str]]]:
    from papers.search import semantic
    from papers.search.local import local_search

    def ids(page: Any) -> list[str]:
        return [mapping[h.record["paper_id"]] for h in page.hits if h.record["paper_id"] in mapping]

    return {
        "default": lambda text: ids(local_search(query=query_text(text), limit=DEPTH)),
        "bm25": lambda text: ids(local_search(query=query_text(text), limit=DEPTH, rerank=False)),
        "hybrid": lambda text: ids(local_search(query=query_text(text), limit=DEPTH, rerank=True)),
        "semantic": lambda text: ids(semantic.semantic_search(query=query_text(text), top_k=DEPTH)),
    }


def mcp_ranker(directory: str, database_url: str | None, mapping: dict[int, str]) -> Any:
    """A context manager giving a ranker that calls `search_papers` over /mcp."""
    import contextlib
    import socket

    @contextlib.contextmanager
    def running() -> Any:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        env = {k: v for k, v in os.environ.items() if k != "DJANGO_SETTINGS_MODULE"}
        env.update({"RESEARCH_DIRECTORY": directory, "ENGINES_ENABLED": "local"})
        env["SEARCH_START_WAIT_MS"] = STEADY_STATE_WAIT_MS  # rankings as the steady state's
        if database_url:
            env["DATABASE_URL"] = database_url
        log = Path(directory) / "bench-server.log"
        with log.open("wb") as out:
            process = subprocess.Popen(
                [sys.executable, "manage.py", "serve", "--transport", "http",
                 "--host", "127.0.0.1", "--port", str(port)],
                cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
            )  # fmt: skip
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                with contextlib.suppress(OSError):
                    socket.create_connection(("127.0.0.1", port), 0.2).close()
                    break
                time.sleep(0.2)
            yield lambda queries, **extra: mcp_rankings(
                f"http://127.0.0.1:{port}/mcp", queries, mapping, **extra
            )
        finally:
            process.terminate()
            process.wait(30)

    return running()


def mcp_rankings(
    url: str, queries: dict[str, str], mapping: dict[int, str], **extra: Any
) -> dict[str, list[str]]:
    """search_papers(query, engines='local', max_results=100, **extra) for each query, with
    the SDK (extra: `rerank=False` for the full-text ranking)."""
    import anyio
    import httpx2
    import mcp
    from mcp.client.streamable_http import streamable_http_client

    async def run() -> dict[str, list[str]]:
        found = {}
        async with httpx2.AsyncClient(timeout=60) as http_client:
            transport = streamable_http_client(url, http_client=http_client)
            async with mcp.Client(transport, mode="legacy") as client:
                for qid, text in queries.items():
                    result = await client.call_tool(
                        "search_papers",
                        {
                            "query": query_text(text),
                            "engines": "local",
                            "max_results": DEPTH,
                            **extra,
                        },
                    )
                    body = json.loads(getattr(result.content[0], "text", "{}"))
                    found[qid] = [
                        mapping[r["paper_id"]] for r in body["results"] if r["paper_id"] in mapping
                    ]
        return found

    return anyio.run(run)


def run_child(args: argparse.Namespace) -> dict[str, Any]:
    database_url = None
    admin = None
    if args.backend == "postgres":
        import psycopg

        name = f"bench_quality_{os.getpid()}"
        admin = psycopg.connect(PG_URL, autocommit=True)
        admin.execute(f'DROP DATABASE IF EXISTS "{name}"')
        admin.execute(f'CREATE DATABASE "{name}"')
        database_url = PG_URL.rsplit("/", 1)[0] + f"/{name}"
    try:
        with tempfile.TemporaryDirectory(prefix="bench-quality-") as directory:
            setup_django(directory, database_url)
            return _evaluate(args, directory, database_url)
    finally:
        if admin is not None:
            admin.execute(f'DROP DATABASE IF EXISTS "bench_quality_{os.getpid()}" WITH (FORCE)')


def _evaluate(args: argparse.Namespace, directory: str, database_url: str | None) -> dict[str, Any]:
    docs, queries, qrels = load_set(args.set, args.split)
    if args.limit_queries:
        qrels = dict(list(qrels.items())[: args.limit_queries])
    started = time.perf_counter()
    mapping = import_docs(docs)
    result: dict[str, Any] = {"import_s": time.perf_counter() - started, "queries": len(qrels)}
    modes = args.modes.split(",")
    if {"semantic", "hybrid"} & set(modes):
        started = time.perf_counter()
        embed_everything()
        result["embed_s"] = time.perf_counter() - started
    rankers = service_rankers(mapping)
    reference = score(plain_fts5(docs), queries, qrels)
    result["reference"] = {k: v for k, v in reference.items() if k != "rankings"}
    reference_empty = {q for q, r in reference["rankings"].items() if not r}
    result["modes"] = {}
    service_rankings: dict[str, dict[str, list[str]]] = {}
    for mode in modes:
        figures = score(rankers[mode], queries, qrels)
        empty_where_reference_finds = sum(
            1 for q, r in figures["rankings"].items() if not r and q not in reference_empty
        )
        rankings = figures.pop("rankings")
        figures["empty_vs_reference"] = empty_where_reference_finds
        result["modes"][mode] = figures
        service_rankings[mode] = rankings
    # Over /mcp: `default` as search_papers' default arguments, `bm25` as rerank=false.
    over_modes = {"default": ("mcp", {}), "bm25": ("mcp_bm25", {"rerank": False})}
    wanted = [mode for mode in over_modes if mode in modes] if args.mcp else []
    if wanted:
        with mcp_ranker(directory, database_url, mapping) as rank_over_mcp:
            for mode in wanted:
                key, extra = over_modes[mode]
                over_mcp = rank_over_mcp({q: queries[q] for q in qrels}, **extra)
                same = sum(1 for q in qrels if over_mcp[q] == service_rankings[mode][q])
                result[key] = {
                    "ndcg": statistics.fmean(ndcg_at_10(over_mcp[q], qrels[q]) for q in qrels),
                    "recall": statistics.fmean(recall_at_100(over_mcp[q], qrels[q]) for q in qrels),
                    "identical_rankings": same,
                }
    return result


# --- the driver ----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default="scifact,cranfield")
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--modes", default=",".join(MODES))
    parser.add_argument("--split", choices=("test", "dev", "all"), default="test")
    parser.add_argument("--mcp", action="store_true", help="also run `default` over /mcp")
    parser.add_argument("--limit-queries", type=int, default=0)
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--set", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(args)))
        return
    results = {}
    for set_name in args.sets.split(","):
        for backend in args.backends.split(","):
            command = [
                sys.executable, __file__, "--child", "--set", set_name, "--backend", backend,
                "--modes", args.modes, "--split", args.split,
                "--limit-queries", str(args.limit_queries), *(["--mcp"] if args.mcp else []),
            ]  # fmt: skip
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"{set_name} on {backend} failed")
            results[(set_name, backend)] = json.loads(done.stdout.strip().splitlines()[-1])
            seconds = time.perf_counter() - started
            print(f"{set_name} on {backend}: {seconds:.0f} s", file=sys.stderr)
    print_table(results, args)


def print_table(results: dict[tuple[str, str], dict[str, Any]], args: argparse.Namespace) -> None:
    print(f"\nsplit: {args.split}; nDCG@10 / Recall@100 / median ms per query / empty results")
    print("\n| set | backend | run | nDCG@10 | Recall@100 | ms | empty | vs reference |")
    print("|---|---|---|---|---|---|---|---|")
    for (set_name, backend), result in results.items():
        reference = result["reference"]
        rows = [("plain FTS5 BM25 (reference)", reference)]
        rows += [(mode, figures) for mode, figures in result["modes"].items()]
        for label, figures in rows:
            ratio = figures["ndcg"] / reference["ndcg"] if reference["ndcg"] else float("nan")
            print(
                f"| {set_name} ({result['queries']} q) | {backend} | {label} | "
                f"{figures['ndcg']:.3f} | {figures['recall']:.3f} | {figures['ms']:.1f} | "
                f"{figures['empty']} | {ratio:.2f}x |"
            )
        for key, label in (("mcp", "default"), ("mcp_bm25", "bm25 (rerank=false)")):
            if key in result:
                mcp = result[key]
                print(
                    f"| {set_name} | {backend} | {label} over /mcp (search_papers) | "
                    f"{mcp['ndcg']:.3f} | {mcp['recall']:.3f} | | | "
                    f"{mcp['identical_rankings']}/{result['queries']} rankings identical |"
                )
        if set_name in PUBLISHED and args.split == "test":
            label, ndcg, recall = PUBLISHED[set_name]
            print(f"| {set_name} | | {label} | {ndcg:.3f} | {recall:.3f} | | | |")
    for (set_name, _), result in results.items():
        for mode, figures in result["modes"].items():
            if figures.get("empty_vs_reference"):
                print(
                    f"\n{set_name}: {mode} returned nothing for {figures['empty_vs_reference']} "
                    "queries where the reference found something"
                )
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()

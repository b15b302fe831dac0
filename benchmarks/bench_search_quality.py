"""Search quality through the path users take: nDCG@10, Recall@100 per set, backend, tier, mode.

    make bench-search-quality            (every set, SQLite and PostgreSQL, both tiers)
    .venv/bin/python benchmarks/bench_search_quality.py
        [--sets scifact,cranfield,acl-lead,acl-title]
        [--backends sqlite,postgres] [--tiers first,strong] [--modes default,bm25,semantic,hybrid]
        [--split test|dev|all] [--mcp] [--limit-queries N] [--out F.jsonl] [--from-json F ...]

Each (set, backend) runs in a child process of its own on a fresh knowledge base (a
temporary folder; on PostgreSQL a private database `bench_quality_<pid>` on
127.0.0.1:5432). The documents go in through the importers' service (`papers_upsert`),
so they are indexed exactly as a user's papers are, and get their first-tier vectors.
Every mode calls the service function behind the interface a user calls:

- default:  `papers.search.local.local_search(query, limit=100)`: what `search_papers`
            (engine `local`, default arguments) and REST /api/search return;
- bm25:     the same with `rerank=False`;  hybrid: with `rerank=True`;
- semantic: `papers.search.semantic.semantic_search(query, top_k=100)`, what
            `search_papers_semantic` returns.

Tiers: `first` is a new library (WordLlama vectors only, as the import leaves it);
`strong` is the same library once every paper has its second-tier vector
(`strong_tier.embed_papers_strong` on `writer_threads()`, as the background writer and
`reindex_embeddings --tier strong` fill it), when the default fuses both tiers. The bm25
mode uses no vectors and runs once.

With `--mcp` the default and bm25 modes also run through `search_papers` over `/mcp`
(bm25 as `rerank=false`), in each tier, with the MCP SDK client against `manage.py serve`
on the same knowledge base, and the rankings of the tool and of the service function are
compared query by query (tests/papers/search/test_quality_path.py holds them equal on a
small sample in CI).

Beside them, in the same run, two references over title + abstract: bm25s 0.3.16 as Lucene
BM25 (k1 1.5, b 0.75, English stop words, Snowball stemmer; a dev requirement), the
stronger open baseline #38's goals are stated against; and a plain SQLite FTS5 BM25 over
the OR of the query's words (title weight 2, abstract 1, unicode61 tokenizer; the
reference Cranfield's SOURCE.txt gives, 0.334 there); and the published BEIR BM25 figure
for SciFact. A last table states #38's goal for the default per backend and tier: at least
1.1x bm25s on every natural-language set (SciFact, Cranfield, acl-lead; acl-title's
queries are titles, shown but not counted) and SciFact test >= 0.75.

Sets and splits: SciFact (BEIR; 5,183 abstracts): `test` = its 300 test claims, `dev` =
its 809 train claims. Cranfield (1,400 abstracts, 225 questions, graded judgments): `dev` =
odd-numbered questions, `test` = even ones. acl-lead, acl-title (10,000 ACL abstracts; no
split): 300 papers drawn with a fixed seed, the query their first abstract sentence (removed
from the paper) or their title (the paper's title replaced by that first sentence), the
paper itself the one relevant document. How the ranker's parameters and the fusion weight
were chosen on these sets (leave-one-set-out; SciFact test never used): bench_lexical.py
and bench_fusion.py, docs/SEARCH.md. nDCG@10 uses graded gains (BEIR's definition);
Recall@100 is the share of a query's relevant documents in its top 100, averaged over
queries. Queries longer than the 500-character limit are cut at a word boundary (none are
in these sets).
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
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
TIERS = ("first", "strong")
SETS = ("scifact", "cranfield", "acl-lead", "acl-title")
# The sets whose queries are sentences or questions (#38's goal for the default counts these).
NATURAL_LANGUAGE = ("scifact", "cranfield", "acl-lead")
GOAL_RATIO = 1.1
GOAL_SCIFACT = 0.75
DEPTH = 100
# The ACL sets (load_acl): 300 papers drawn with this seed.
ACL_QUERIES = 300
ACL_SEED = 38
# The stronger open lexical baseline: bm25s's Lucene BM25 at Lucene's defaults.
BM25S = {"k1": 1.5, "b": 0.75}
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z(])")
# BEIR (Thakur et al., NeurIPS 2021 Datasets & Benchmarks), SciFact test, BM25 (Elastic).
PUBLISHED = {"scifact": ("BM25, BEIR (published)", 0.665, 0.908)}


# --- the judged sets ---------------------------------------------------------------------


def load_set(name: str, split: str) -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]]]:
    """(documents {id, title, text, authors}, queries {id: text}, qrels {query: {doc: gain}});
    the ACL sets have no split (all 300 queries)."""
    if name.startswith("acl-"):
        return load_acl(name)
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


def _acl_sentences(text: str) -> list[str]:
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def load_acl(kind: str) -> tuple[list[dict], dict[str, str], dict[str, dict[str, int]]]:
    """acl-lead or acl-title (see the module's docstring)."""
    path = CORPUS / "acl" / "acl_anthology_sample10k_with_abstracts.jsonl"
    papers = [json.loads(line) for line in path.open(encoding="utf-8")]
    docs = [
        {
            "id": p["id"],
            "title": p.get("title") or "",
            "text": p.get("abstract") or "",
            "authors": p.get("authors") or [],
            "year": p.get("year"),
            "venue": p.get("venue") or "",
        }
        for p in papers
    ]
    eligible = []
    for index, doc in enumerate(docs):
        sentences = _acl_sentences(doc["text"])
        if (
            len(doc["title"].split()) >= 4
            and len(sentences) >= 3
            and len(sentences[0].split()) >= 8
        ):
            eligible.append(index)
    chosen = sorted(random.Random(ACL_SEED).sample(eligible, ACL_QUERIES))
    queries, qrels = {}, {}
    for index in chosen:
        doc = docs[index]
        sentences = _acl_sentences(doc["text"])
        if kind == "acl-lead":
            queries[doc["id"]] = sentences[0]
            doc["text"] = " ".join(sentences[1:])
        else:
            queries[doc["id"]] = doc["title"]
            doc["title"], doc["text"] = sentences[0], " ".join(sentences[1:])
        qrels[doc["id"]] = {doc["id"]: 1}
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


def bm25s_lucene(docs: list[dict]) -> Callable[[str], list[str]]:
    """bm25s, Lucene BM25 (k1 1.5, b 0.75), English stop words, Snowball stemmer, title +
    abstract; the top DEPTH documents scoring above zero (ties: corpus order)."""
    import bm25s
    import numpy as np
    import Stemmer

    stemmer = Stemmer.Stemmer("english")
    corpus = [f"{d['title']} {d['text']}" for d in docs]
    tokens = bm25s.tokenize(corpus, stopwords="en", stemmer=stemmer, show_progress=False)
    retriever = bm25s.BM25(method="lucene", **BM25S)
    retriever.index(tokens, show_progress=False)
    ids = [d["id"] for d in docs]

    def rank(text: str) -> list[str]:
        words = bm25s.tokenize(
            [text], stopwords="en", stemmer=stemmer, show_progress=False, return_ids=False
        )[0]
        if not words:
            return []
        scores = retriever.get_scores(words)
        best = np.argsort(-scores, kind="stable")[:DEPTH]
        return [ids[i] for i in best if scores[i] > 0]

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


def fill_strong_tier() -> float:
    """Every paper's second-tier vector, as `reindex_embeddings --tier strong` and the
    background writer make them (`writer_threads`: every core); seconds taken."""
    from papers.models import Paper
    from papers.search import semantic, strong_tier, vector_index

    started = time.perf_counter()
    ids = list(Paper.objects.values_list("pk", flat=True))
    outcome = strong_tier.embed_papers_strong(ids, force=True, threads=strong_tier.writer_threads())
    if not outcome.embedded:
        raise SystemExit("the second tier is off: nothing was embedded (EMBEDDING_MODEL_STRONG)")
    semantic.vector_index().reset()
    vector_index.strong_vector_index().reset()
    return time.perf_counter() - started


def _evaluate(args: argparse.Namespace, directory: str, database_url: str | None) -> dict[str, Any]:
    docs, queries, qrels = load_set(args.set, args.split)
    if args.limit_queries:
        qrels = dict(list(qrels.items())[: args.limit_queries])
    started = time.perf_counter()
    mapping = import_docs(docs)
    result: dict[str, Any] = {
        "import_s": time.perf_counter() - started,
        "queries": len(qrels),
        "papers": len(mapping),
    }
    modes = args.modes.split(",")
    tiers = args.tiers.split(",")
    started = time.perf_counter()
    embed_everything()
    result["embed_s"] = time.perf_counter() - started
    rankers = service_rankers(mapping)
    result["references"] = {}
    reference_empty: set[str] = set()
    for name, ranker in (("fts5", plain_fts5(docs)), ("bm25s", bm25s_lucene(docs))):
        figures = score(ranker, queries, qrels)
        if name == "fts5":
            reference_empty = {q for q, r in figures["rankings"].items() if not r}
        result["references"][name] = {k: v for k, v in figures.items() if k != "rankings"}
    result["rows"] = []
    for tier in tiers:
        if tier == "strong":
            result["strong_s"] = fill_strong_tier()
        service_rankings: dict[str, dict[str, list[str]]] = {}
        for mode in modes:
            if tier == "strong" and mode == "bm25":
                continue  # full text alone: no vectors, the same ranking in either tier
            figures = score(rankers[mode], queries, qrels)
            rankings = figures.pop("rankings")
            figures["empty_vs_reference"] = sum(
                1 for q, r in rankings.items() if not r and q not in reference_empty
            )
            result["rows"].append({"tier": tier, "mode": mode, **figures})
            service_rankings[mode] = rankings
        if args.mcp:
            result["rows"] += [
                {"tier": tier, **row}
                for row in compare_over_mcp(directory, database_url, mapping, queries, qrels,
                                            service_rankings)
            ]  # fmt: skip
    return result


# Over /mcp: `default` as search_papers' default arguments, `bm25` as rerank=false.
OVER_MCP: dict[str, tuple[str, dict[str, Any]]] = {
    "default": ("search_papers over /mcp", {}),
    "bm25": ("search_papers(rerank=false) over /mcp", {"rerank": False}),
}


def compare_over_mcp(
    directory: str,
    database_url: str | None,
    mapping: dict[int, str],
    queries: dict[str, str],
    qrels: dict[str, dict[str, int]],
    service: dict[str, dict[str, list[str]]],
) -> list[dict[str, Any]]:
    """`search_papers` over /mcp (one server) for each mode of OVER_MCP the service ran,
    query by query beside the service function's ranking."""
    rows = []
    with mcp_ranker(directory, database_url, mapping) as rank_over_mcp:
        for mode, (label, extra) in OVER_MCP.items():
            if mode not in service:
                continue
            over_mcp = rank_over_mcp({q: queries[q] for q in qrels}, **extra)
            rows.append(
                {
                    "mode": label,
                    "same_as": mode,
                    "ndcg": statistics.fmean(ndcg_at_10(over_mcp[q], qrels[q]) for q in qrels),
                    "recall": statistics.fmean(recall_at_100(over_mcp[q], qrels[q]) for q in qrels),
                    "identical_rankings": sum(1 for q in qrels if over_mcp[q] == service[mode][q]),
                }
            )
    return rows


# --- the driver ----------------------------------------------------------------------------


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", default=",".join(SETS))
    parser.add_argument("--backends", default="sqlite,postgres")
    parser.add_argument("--modes", default="default,bm25,semantic", help=",".join(MODES))
    parser.add_argument("--tiers", default=",".join(TIERS))
    parser.add_argument("--split", choices=("test", "dev", "all"), default="test")
    parser.add_argument("--mcp", action="store_true", help="also run `default` over /mcp")
    parser.add_argument("--limit-queries", type=int, default=0)
    parser.add_argument("--out", type=Path, help="also write the results here (JSON lines)")
    parser.add_argument("--from-json", type=Path, nargs="+", help="tabulate earlier --out files")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--set", help=argparse.SUPPRESS)
    parser.add_argument("--backend", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(run_child(args)))
        return
    results: dict[tuple[str, str], dict[str, Any]] = {}
    for path in args.from_json or []:
        for line in path.read_text().splitlines():
            item = json.loads(line)
            results[(item["set"], item["backend"])] = item
    for set_name in args.sets.split(",") if not args.from_json else []:
        for backend in args.backends.split(","):
            command = [
                sys.executable, __file__, "--child", "--set", set_name, "--backend", backend,
                "--modes", args.modes, "--tiers", args.tiers, "--split", args.split,
                "--limit-queries", str(args.limit_queries), *(["--mcp"] if args.mcp else []),
            ]  # fmt: skip
            started = time.perf_counter()
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            if done.returncode != 0:
                print(done.stderr[-3000:], file=sys.stderr)
                raise SystemExit(f"{set_name} on {backend} failed")
            result = json.loads(done.stdout.strip().splitlines()[-1])
            result.update(set=set_name, backend=backend, split=args.split)
            results[(set_name, backend)] = result
            if args.out:
                with args.out.open("a") as out:
                    out.write(json.dumps(result) + "\n")
            seconds = time.perf_counter() - started
            print(f"{set_name} on {backend}: {seconds:.0f} s", file=sys.stderr)
    print_table(results)


def print_table(results: dict[tuple[str, str], dict[str, Any]]) -> None:
    split = next(iter(results.values()), {}).get("split", "test")
    print(
        f"\nsplit: {split} (the ACL sets have none); nDCG@10 / Recall@100 / median ms per query"
        " / empty results; first tier: WordLlama vectors only (a new library); strong: every"
        " paper's second-tier vector as well (after the background writer has filled it)"
    )
    print(
        "\n| set | backend | tier | run | nDCG@10 | Recall@100 | ms | empty | vs bm25s | vs FTS5 |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for (set_name, backend), result in results.items():
        fts5, bm25s = result["references"]["fts5"], result["references"]["bm25s"]
        rows = [
            ("", "FTS5 BM25 any-word (reference)", fts5),
            ("", "bm25s-Lucene (reference)", bm25s),
        ]
        rows += [(row["tier"], row["mode"], row) for row in result["rows"]]
        for tier, label, figures in rows:
            label = "bm25 (rerank=false)" if label == "bm25" else label
            ndcg = figures["ndcg"]
            if "identical_rankings" in figures:
                same = f"{figures['identical_rankings']}/{result['queries']} rankings identical"
                tail = f"| | | {same} | |"
            else:
                tail = (
                    f"| {figures['ms']:.1f} | {figures['empty']} | "
                    f"{ndcg / bm25s['ndcg']:.3f}x | {ndcg / fts5['ndcg']:.2f}x |"
                )
            print(
                f"| {set_name} ({result['queries']} q) | {backend} | {tier} | {label} | "
                f"{ndcg:.3f} | {figures['recall']:.3f} {tail}"
            )
        if set_name in PUBLISHED and split == "test":
            label, ndcg, recall = PUBLISHED[set_name]
            print(f"| {set_name} | | | {label} | {ndcg:.3f} | {recall:.3f} | | | | |")
    for (set_name, backend), result in results.items():
        for row in result["rows"]:
            if row.get("empty_vs_reference"):
                print(
                    f"\n{set_name} on {backend}, {row['tier']} tier: {row['mode']} returned nothing"
                    f" for {row['empty_vs_reference']} queries where the FTS5 reference found some"
                )
    print("\nSeconds per set: import (the importers' service), first-tier, second-tier vectors")
    for (set_name, backend), result in results.items():
        spent = [
            f"{result[key]:.0f}" if key in result else "-"
            for key in ("import_s", "embed_s", "strong_s")
        ]
        papers = result.get("papers")
        print(f"- {set_name} on {backend} ({papers} papers): {' / '.join(spent)} s")
    print_goal(results)
    print(f"\nload average at the end: {os.getloadavg()[0]:.1f}")


def print_goal(results: dict[tuple[str, str], dict[str, Any]]) -> None:
    """#38's goal for the default: >= GOAL_RATIO x bm25s on every natural-language set and
    SciFact test >= GOAL_SCIFACT, per backend and tier."""
    sets = list(dict.fromkeys(set_name for set_name, _ in results))
    print(
        f"\nThe default (`search_papers`' ranking) against bm25s-Lucene: goal >= {GOAL_RATIO}x on"
        f" every natural-language set ({', '.join(s for s in sets if s in NATURAL_LANGUAGE)};"
        f" acl-title's queries are titles, shown but not counted) and SciFact test >= "
        f"{GOAL_SCIFACT}\n"
    )
    print(f"| backend | tier | {' | '.join(sets)} | lowest | SciFact nDCG@10 | goal |")
    print(f"|---|---|{'---|' * len(sets)}---|---|---|")
    pairs = dict.fromkeys(
        (backend, row["tier"]) for (_, backend), r in results.items() for row in r["rows"]
    )
    for backend, tier in pairs:
        ratios: dict[str, float] = {}
        scifact = None
        for set_name in sets:
            result = results.get((set_name, backend))
            row = next(
                (r for r in (result or {}).get("rows", [])
                 if r["tier"] == tier and r["mode"] == "default"),
                None,
            )  # fmt: skip
            if result is None or row is None:
                continue
            ratios[set_name] = row["ndcg"] / result["references"]["bm25s"]["ndcg"]
            if set_name == "scifact" and result.get("split") == "test":
                scifact = row["ndcg"]
        counted = [ratios[s] for s in ratios if s in NATURAL_LANGUAGE]
        lowest = min(counted) if counted else float("nan")
        met = (
            bool(counted)
            and lowest >= GOAL_RATIO
            and scifact is not None
            and scifact >= GOAL_SCIFACT
        )
        cells = " | ".join(f"{ratios[s]:.3f}x" if s in ratios else "" for s in sets)
        scifact_cell = f"{scifact:.3f}" if scifact is not None else "not run"
        print(
            f"| {backend} | {tier} | {cells} | {lowest:.3f}x | {scifact_cell} | "
            f"{'**met**' if met else '**not met**'} |"
        )


if __name__ == "__main__":
    main()

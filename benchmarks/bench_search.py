"""Search speed on a real corpus through the search tools over `/mcp`, with the raw engine
beside as a reference.

    benchmarks/bench_search.py --corpus ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz \\
        [--backend sqlite|postgresql] [--queries 200] [--seed 7] [--directory DIR] [--limit N]

1. Imports the corpus with `manage.py import_jsonl` into a knowledge base (a temporary one,
   or `--directory DIR`, reused when it already holds papers; `--limit N`: the first N
   records). PostgreSQL uses the database named by `--pg-url` (created if missing).
2. Generates `--queries` varied queries from the corpus itself with a seeded RNG: rare,
   medium and common words, two-word queries, two-word phrases from titles, prefixes,
   AND/OR/NOT, author family names and misspelled title words (the fuzzy path).
3. Starts `manage.py serve --transport http` on the knowledge base and times, from one
   client on a keep-alive connection (benchmarks/mcp_server.py), after a warm-up:
   `search_papers` with `engines: "local"` pinned (the library only: the default engines
   would fan out to the network) and `limit: 20`, over these queries and again over the
   growth curve's mix (`bench_search_scale.make_queries` over the same corpus file:
   titles, topics, common words, natural-language questions and Cranfield-style requests,
   the queries that take the hybrid path and the longest posting lists); `search_papers_by_keyword`,
   `search_papers_by_payload` and `search_papers_semantic` (after `manage.py
   reindex_embeddings` with `--embed-first`); `list_top_facets` **cold**
   (every call a category and query the server has not answered before, so no cache
   hit) and **warm** (the same 20 calls again, answered from the facet cache).
4. The raw engine (`raw_search_ms`: FTS5 / tsvector top 20 ids in this process, no tool,
   no records) is printed beside `search_papers` as a reference only: no user takes it.

Prints markdown tables. Times are wall-clock milliseconds on this machine.
"""

from __future__ import annotations

import argparse
import gzip
import itertools
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import bench_search_scale
from mcp_server import McpServer, ToolCallFailed

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
WARMUP = 20
DEFAULT_PG_URL = "postgres://postgres@127.0.0.1:5432/bench_search"
WHOLE_COLD = "list_top_facets, whole library, cold"
WHOLE_WARM = "list_top_facets, whole library, warm (cache hit)"
GOALS = {  # tool call: (p50 goal, p95 goal) in ms; the 95k library's
    "search_papers": (15.0, None),
    "list_top_facets, cold": (50.0, 50.0),
    "list_top_facets, warm (cache hit)": (50.0, 50.0),
    "search_papers_semantic": (20.0, None),
}
# Issue 37's goals at 1M papers (--goals 1m): search_papers p95 <= 100 ms on SQLite (150 on
# PostgreSQL), search_papers_semantic p95 <= 50 ms, list_top_facets cold p95 <= 300 ms.
GOALS_1M = {
    "search_papers": (None, 100.0),
    "search_papers, growth-curve mix": (None, 100.0),
    "search_papers_semantic": (None, 50.0),
    "list_top_facets, cold": (None, 300.0),
    WHOLE_COLD: (None, 300.0),
}


# --- the knowledge base ----------------------------------------------------------------


def environment(args: argparse.Namespace, directory: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "MCP_AUTH_TOKEN")}
    env.update(
        DJANGO_SETTINGS_MODULE="research_site.settings",
        RESEARCH_DIRECTORY=str(directory),
        LOG_LEVEL="WARNING",
        MCP_REQUIRE_COLLECTION="false",
    )
    if args.backend == "postgresql":
        env["DATABASE_URL"] = args.pg_url
    return env


def ensure_pg_database(url: str) -> None:
    import psycopg

    name = url.rsplit("/", 1)[-1]
    admin = url.rsplit("/", 1)[0] + "/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        exists = connection.execute(
            "SELECT 1 FROM pg_database WHERE datname = %s", [name]
        ).fetchone()
        if not exists:
            connection.execute(f'CREATE DATABASE "{name}"')


def paper_count(env: dict[str, str]) -> int:
    script = (
        "import django; django.setup(); from papers.models import Paper; "
        "print(Paper.objects.count())"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=ROOT, env=env, capture_output=True, text=True
    )
    return int(done.stdout.strip() or 0) if done.returncode == 0 else 0


def import_corpus(corpus: str, env: dict[str, str], limit: int | None = None) -> float:
    subprocess.run([sys.executable, "manage.py", "migrate", "-v0"], cwd=ROOT, env=env, check=True)
    if paper_count(env):
        print("reusing the papers already in the knowledge base", file=sys.stderr)
        return 0.0
    started = time.perf_counter()
    if limit:  # the first `limit` records, as a file of their own
        with gzip.open(corpus, "rt") if corpus.endswith(".gz") else open(corpus) as source:
            head = "".join(line for _, line in zip(range(limit), source, strict=False))
        sliced = Path(env["RESEARCH_DIRECTORY"]) / "corpus-head.jsonl"
        sliced.write_text(head)
        corpus = str(sliced)
    done = subprocess.run(
        [sys.executable, "manage.py", "import_jsonl", "--no-progress", corpus],
        cwd=ROOT, env=env, capture_output=True, text=True,
    )  # fmt: skip
    if done.returncode != 0:
        raise SystemExit(f"import failed:\n{done.stdout}\n{done.stderr}")
    print(done.stdout.strip().rsplit("\n", 1)[-1], file=sys.stderr)
    seconds = time.perf_counter() - started
    if env.get("DATABASE_URL"):
        # Planner statistics, as autovacuum would gather them a little later: right after
        # a bulk import they still describe empty tables, and plans are wrong by 10-40x.
        import psycopg

        with psycopg.connect(env["DATABASE_URL"], autocommit=True) as connection:
            connection.execute("ANALYZE")
    return seconds


# --- queries -----------------------------------------------------------------------------

WORD = re.compile(r"[^\W\d_]{3,}")
MIX = (  # kind, share of the queries
    ("rare word", 0.12), ("medium word", 0.12), ("common word", 0.12), ("two words", 0.14),
    ("phrase", 0.10), ("prefix", 0.10), ("boolean", 0.12), ("author", 0.10), ("typo", 0.08),
)  # fmt: skip


def _misspell(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    return (
        word[:i] + word[i + 1] + word[i] + word[i + 2 :]
        if rng.random() < 0.5
        else (word[:i] + word[i + 1 :])
    )


def make_queries(count: int, seed: int) -> list[tuple[str, str]]:
    """(kind, query) pairs drawn from the corpus, the same for the same corpus and seed."""
    from papers.models import Author, Paper

    rng = random.Random(seed)
    ids = sorted(Paper.objects.values_list("pk", flat=True))
    sample_ids = sorted(rng.sample(ids, min(3000, len(ids))))
    texts = list(
        Paper.objects.filter(pk__in=sample_ids).order_by("pk").values_list("title", "abstract")
    )
    document_frequency: Counter[str] = Counter()
    for title, abstract in texts:
        document_frequency.update({w.lower() for w in WORD.findall(f"{title} {abstract}")})
    n = len(texts)
    words = sorted(document_frequency)
    rare = [w for w in words if document_frequency[w] == 1 and w.isascii()]
    medium = [w for w in words if n * 0.003 <= document_frequency[w] <= n * 0.03]
    common = [w for w in words if document_frequency[w] >= n * 0.08]
    title_pairs = []
    for title, _ in texts:
        tokens = [t for t in re.findall(r"\w+", title) if WORD.fullmatch(t)]
        title_pairs += [f"{a} {b}" for a, b in itertools.pairwise(tokens)]
    title_words = [w for title, _ in texts for w in WORD.findall(title) if len(w) >= 6]
    families = list(
        Author.objects.filter(paper_links__paper_id__in=sample_ids[:500])
        .exclude(family_name="")
        .order_by("family_name")
        .values_list("family_name", flat=True)
        .distinct()
    )

    makers: dict[str, Callable[[], str]] = {
        "rare word": lambda: rng.choice(rare),
        "medium word": lambda: rng.choice(medium),
        "common word": lambda: rng.choice(common),
        "two words": lambda: f"{rng.choice(medium + common)} {rng.choice(medium)}",
        "phrase": lambda: f'"{rng.choice(title_pairs)}"',
        "prefix": lambda: rng.choice(medium)[: rng.randint(4, 6)] + "*",
        "boolean": lambda: rng.choice(
            [
                f"{rng.choice(medium)} OR {rng.choice(medium)}",
                f"{rng.choice(common)} AND {rng.choice(medium)}",
                f"{rng.choice(medium + common)} NOT {rng.choice(medium)}",
                f"({rng.choice(medium)} OR {rng.choice(medium)}) {rng.choice(common)}",
            ]
        ),
        "author": lambda: rng.choice(families),
        "typo": lambda: _misspell(rng.choice(title_words), rng),
    }
    queries = []
    for kind, share in MIX:
        queries += [(kind, makers[kind]()) for _ in range(max(1, round(count * share)))]
    rng.shuffle(queries)
    return queries[:count] if len(queries) >= count else queries


# --- timing through /mcp ---------------------------------------------------------------


# The growth curve's query mix (bench_search_scale.make_queries over the corpus file), timed
# as a second search_papers row: its questions are what the hybrid path and PostgreSQL's
# aggregate cost most on.
MIX_LABEL = "search_papers, growth-curve mix"
MIX_KINDS = "growth-curve mix"


def pct(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def summary(values: list[float]) -> tuple[float, float]:
    return statistics.median(values), pct(values, 0.95)


def library_values() -> tuple[list[str], list[dict[str, str]]]:
    """Keywords for the keyword tool and payload filters (venue, years) for the payload tool."""
    from papers.models import Keyword, Paper, Venue

    keywords = list(Keyword.objects.order_by("name").values_list("name", flat=True)[:500])
    venues = list(Venue.objects.exclude(short_name="").values_list("short_name", flat=True))
    years = sorted({y for y in Paper.objects.values_list("year", flat=True).distinct() if y})
    payloads: list[dict[str, str]] = []
    rng = random.Random(11)
    for _ in range(200 if venues and years else 0):
        choice = rng.random()
        if choice < 0.4:
            payloads.append({"venue": rng.choice(venues)})
        elif choice < 0.7:
            start = rng.choice(years)
            payloads.append({"year": f"{start}-{start + rng.randint(0, 3)}"})
        else:
            payloads.append({"venue": rng.choice(venues)[:3] + "*", "year": str(rng.choice(years))})
    return keywords, payloads


def bench_tools(
    server: McpServer,
    queries: list[tuple[str, str]],
    seed: int,
    mix: list[tuple[str, str]],
) -> dict[str, list[float] | None]:
    """Milliseconds per tool call, by row of the table; `mix`: the growth curve's queries
    (bench_search_scale: titles, topics, questions, Cranfield-style requests)."""
    rng = random.Random(seed + 1)
    words = [q for kind, q in queries if kind in ("medium word", "common word", "two words")]
    results: dict[str, list[float] | None] = {}

    def run(label: str, calls: list[tuple[str, dict[str, Any]]], warm: int = 0) -> None:
        try:
            for name, arguments in calls[:warm]:
                server.call_tool(name, arguments)
            results[label] = [server.call_tool(name, arguments)[0] for name, arguments in calls]
        except ToolCallFailed as error:
            print(f"{label}: {error}", file=sys.stderr)
            results[label] = None

    def search(query: str) -> tuple[str, dict[str, Any]]:
        return "search_papers", {"query": query, "engines": "local", "limit": 20}

    run("search_papers", [search(q) for _, q in queries], warm=WARMUP)
    by_kind: dict[str, list[float]] = {}
    for (kind, _), elapsed in zip(queries, results["search_papers"] or [], strict=False):
        by_kind.setdefault(kind, []).append(elapsed)
    results.update({f"kind:{kind}": values for kind, values in by_kind.items()})
    run(MIX_LABEL, [search(q) for _, q in mix], warm=WARMUP)
    for (kind, _), elapsed in zip(mix, results[MIX_LABEL] or [], strict=False):
        results.setdefault(f"kind:{kind} ({MIX_KINDS})", []).append(elapsed)  # type: ignore[union-attr]

    keywords, payloads = library_values()
    run("search_papers_by_keyword", [
        ("search_papers_by_keyword", {"keyword": rng.choice(keywords), "limit": 20})
        for _ in range(200 if keywords else 0)
    ])  # fmt: skip
    run("search_papers_by_payload",
        [("search_papers_by_payload", {"payload": p, "limit": 20}) for p in payloads])  # fmt: skip
    run("search_papers_semantic",
        [("search_papers_semantic", {"query": q, "limit": 20}) for q in words], warm=5)  # fmt: skip

    categories = ("venue", "year", "author", "keyword")
    seen: set[tuple[str, str]] = set()
    cold: list[tuple[str, dict[str, Any]]] = []
    for index, query in enumerate(dict.fromkeys(words)):
        key = (categories[index % len(categories)], query)
        if key not in seen:
            seen.add(key)
            cold.append(("list_top_facets", {"category": key[0], "query": key[1]}))
    run("list_top_facets, cold", cold)
    run("list_top_facets, warm (cache hit)", cold[:20] * 10)
    # Over the whole library (no query): each category at three limits, each call a request
    # the server has not answered (its own cache key), then the same again. Not at the
    # default limit (20): the server's warm-up counted those at its start.
    whole = [
        ("list_top_facets", {"category": category, "limit": limit})
        for limit in (10, 30, 50)
        for category in ("author", "venue", "venue_short", "year", "keyword", "institution")
    ]
    run(WHOLE_COLD, whole)
    for (_, arguments), elapsed in zip(whole, results[WHOLE_COLD] or [], strict=False):
        results.setdefault(f"whole:{arguments['category']}", []).append(elapsed)  # type: ignore[union-attr]
    run(WHOLE_WARM, whole)
    return results


def raw_engine(queries: list[tuple[str, str]]) -> list[float]:
    """The engine alone, in this process: a reference, not a path any interface takes.
    Queries the raw FTS5 syntax refuses (the tools parse them first) are left out."""
    from django.db import DatabaseError

    from papers.search import fulltext

    times = []
    for _, query in queries[:WARMUP] + queries:
        try:
            times.append(fulltext.raw_search_ms(query))
        except DatabaseError:
            continue
    return times[WARMUP:]


# --- the report ------------------------------------------------------------------------------


def verdict(label: str, p50: float, p95: float, goals: dict[str, Any]) -> str:
    goal = goals.get(label)
    if goal is None:
        return ""
    p50_goal, p95_goal = goal
    ok = (p50_goal is None or p50 <= p50_goal) and (p95_goal is None or p95 <= p95_goal)
    wanted = ", ".join(
        f"{name} ≤ {value:g}"
        for name, value in (("p50", p50_goal), ("p95", p95_goal))
        if value is not None
    )
    return f"{wanted}: {'met' if ok else '**not met**'}"


def goals_for(args: argparse.Namespace) -> dict[str, Any]:
    if args.goals == "95k":
        return GOALS
    if args.backend == "postgresql":  # 150 ms for search_papers there
        return {k: (None, 150.0) if k.startswith("search_papers,") or k == "search_papers"
                else v for k, v in GOALS_1M.items()}  # fmt: skip
    return GOALS_1M


def print_report(
    args: argparse.Namespace, papers: int, tools: dict[str, Any], raw: list[float]
) -> None:
    print(f"\n{papers:,} papers, {args.backend}, {len(tools['search_papers'] or [])} queries "
          f"(seed {args.seed}); "
          "tool calls over /mcp from one client; milliseconds\n")  # fmt: skip
    print("| tool call | calls | p50 | p95 | goal |")
    print("|---|---:|---:|---:|---|")
    labels = ("search_papers", MIX_LABEL, "search_papers_by_keyword", "search_papers_by_payload",
              "search_papers_semantic", "list_top_facets, cold",
              "list_top_facets, warm (cache hit)", WHOLE_COLD, WHOLE_WARM)  # fmt: skip
    goals = goals_for(args)
    for label in labels:
        values = tools.get(label)
        shown = label + (' (engines "local")' if label == "search_papers" else "")
        if not values:
            print(f"| {shown} | n/a | | | |")
            continue
        p50, p95 = summary(values)
        goal = verdict(label, p50, p95, goals)
        print(f"| {shown} | {len(values)} | {p50:.1f} | {p95:.1f} | {goal} |")
    p50, p95 = summary(raw)
    print(f"| raw engine top 20 ids, in-process (reference, no tool) | {len(raw)} | {p50:.1f} "
          f"| {p95:.1f} | |")  # fmt: skip

    print("\n`list_top_facets` over the whole library, cold, by category (limits 10, 30, "
          "50), ms:\n")  # fmt: skip
    print("| category | calls | p50 | max |")
    print("|---|---:|---:|---:|")
    for label, values in tools.items():
        if label.startswith("whole:") and values:
            print(f"| {label[6:]} | {len(values)} | {statistics.median(values):.1f} "
                  f"| {max(values):.1f} |")  # fmt: skip

    print('\n`search_papers` (engines "local") by query kind, ms:\n')
    print("| kind | calls | p50 | p95 |")
    print("|---|---:|---:|---:|")
    for label, values in sorted(tools.items()):
        if label.startswith("kind:") and values:
            p50, p95 = summary(values)
            print(f"| {label[5:]} | {len(values)} | {p50:.1f} | {p95:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--corpus", required=True, help="ACL JSONL(.gz) to import.")
    parser.add_argument("--backend", choices=("sqlite", "postgresql"), default="sqlite")
    parser.add_argument("--pg-url", default=DEFAULT_PG_URL)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--limit", type=int, help="Import only the first N records.")
    parser.add_argument("--directory", help="Knowledge base to use and keep (reused if full).")
    parser.add_argument(
        "--embed-first",
        action="store_true",
        help="Also time `manage.py reindex_embeddings` after the import (which builds the "
        "first tier's vectors itself now, so this finds little to do).",
    )
    parser.add_argument(
        "--goals",
        choices=("95k", "1m"),
        default="95k",
        help="Whose goals the table shows: the 95k library's, or issue 37's at 1M papers.",
    )
    args = parser.parse_args()

    directory = (
        Path(args.directory) if args.directory else Path(tempfile.mkdtemp(prefix="bench-search-"))
    )
    directory.mkdir(parents=True, exist_ok=True)
    env = environment(args, directory)
    if args.backend == "postgresql":
        ensure_pg_database(args.pg_url)
    try:
        seconds = import_corpus(args.corpus, env, args.limit)
        if seconds:
            print(f"import: {seconds:.1f} s", file=sys.stderr)
        if args.embed_first:
            started = time.perf_counter()
            subprocess.run([sys.executable, "manage.py", "reindex_embeddings"], cwd=ROOT, env=env,
                           check=True, capture_output=True)  # fmt: skip
            print(f"reindex_embeddings: {time.perf_counter() - started:.1f} s", file=sys.stderr)
        os.environ.update(env)
        if args.backend == "sqlite":
            os.environ.pop("DATABASE_URL", None)
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from papers.models import Paper, PaperStrongEmbedding

        queries = make_queries(args.queries, args.seed)
        mix = bench_search_scale.make_queries(Path(args.corpus), args.queries, args.seed)
        strong_before = PaperStrongEmbedding.objects.count()
        with McpServer(env) as server:
            tools = bench_tools(server, queries, args.seed, mix)
        raw = raw_engine(queries)
        print_report(args, Paper.objects.count(), tools, raw)
        # The server fills the second tier in the background (papers/search/strong_tier.py);
        # once it holds any vectors a hybrid or semantic query is also encoded by its model.
        strong_after = PaperStrongEmbedding.objects.count()
        print(f"\nSecond semantic tier: {strong_before:,} papers' vectors when the server "
              f"started, {strong_after:,} at the end (filled in the background while it "
              "serves; with any, each query is also encoded by its model).")  # fmt: skip
    finally:
        if not args.directory:
            shutil.rmtree(directory, ignore_errors=True)


if __name__ == "__main__":
    main()

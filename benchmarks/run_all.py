"""Regenerate every published figure: run the kept benchmarks and write their tables into
benchmarks/RESULTS.md, the one file README.md and docs/ quote or link to.

    make bench                       # every benchmark, full size (hours; bench-scale alone several)
    make bench-quick                 # the same on small inputs (~20 min on a busy 2-core machine)
    benchmarks/run_all.py [--quick] [--only pdf,search] [--skip scale] [--list]

`BENCH_QUICK=1` in the environment means `--quick`. Each benchmark runs in a child process
under `nice -n 10` (the machine is shared), its markdown on stdout, its progress into
benchmarks/.work/logs/<name>.log. Its section of RESULTS.md (between `<!-- bench:<name> -->`
markers) is replaced with the tables it printed, headed by the command, the date, the
commit, the mode (full or quick: quick runs are labelled as such, never passed off as
full ones), the machine's cores and the load average before and after. Sections of
benchmarks not run this time are kept as they were, with their own dates. A benchmark that
fails leaves its section saying so (exit status and the end of its log), not its old
figures. Goals come out of the benchmarks themselves as "met" / "not met".

Every benchmark here goes through a path a user takes: a tool over `/mcp`
(benchmarks/mcp_server.py starts `manage.py serve`), an admin view, a management command;
where a table also shows a component alone (the raw engine, `run_calls`) it says so and
carries no goal.
"""

from __future__ import annotations

import argparse
import datetime
import os
import platform
import re
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "benchmarks" / "RESULTS.md"
LOGS = ROOT / "benchmarks" / ".work" / "logs"
PY = sys.executable
SHARED = Path(os.environ.get("BENCH_SHARED") or ROOT.parent / "shared")
ACL = str(SHARED / "corpus" / "acl" / "acl_anthology_2024-08_all.jsonl.gz")
SCALE_DIR = os.environ.get("SCALE_DIR", str(ROOT.parent / "scale-data"))
# SCALE_SIZES=95k,300k: the `scale` and `scale-pg` sections at these sizes only (the
# command in the section says which).
SCALE_SIZES = tuple(size for size in os.environ.get("SCALE_SIZES", "").split(",") if size)


def scale_command(backend: str, sizes: tuple[str, ...]) -> tuple[str, ...]:
    """bench_search_scale over the ACL corpus (95k) and the scaled ones of SCALE_DIR
    (`make bench-scale` writes them), one kept library each: SCALE_DIR/acl95k for the ACL
    corpus, SCALE_DIR/<backend>-<size> for the others; --reuse keeps a library already
    imported (its import figures are those of the run that imported it)."""
    command = [PY, "benchmarks/bench_search_scale.py", "--backend", backend, "--reuse"]
    command += ["--queries", "150"]
    if backend == "postgres":
        command += ["--chunk", "25000"]
    for size in sizes:
        corpus = ACL if size == "95k" else f"{SCALE_DIR}/acl_scaled_{size}.jsonl.gz"
        directory = f"{SCALE_DIR}/acl95k" if size == "95k" else f"{SCALE_DIR}/{backend}-{size}"
        command += ["--corpus", corpus, "--directory", directory]
        if backend == "postgres":
            command += ["--pg-url", f"postgres://postgres@127.0.0.1:5432/bench_scale_{size}"]
    return tuple(command)


# bench_graph_start's kept libraries (bench_search_scale --keep makes them; missing: skipped)
GRAPH_START_LIBRARIES = ("--directory", f"{SCALE_DIR}/sqlite-300k/sqlite")
GRAPH_START_LIBRARIES += ("--directory", f"{SCALE_DIR}/sqlite-1m/sqlite")


@dataclass(frozen=True)
class Benchmark:
    name: str
    title: str
    path: str  # the user's path it measures
    full: tuple[str, ...]
    quick: tuple[str, ...] | None  # None: too big for the quick mode
    feeds: str  # the docs that quote or link to it


BENCHMARKS = (
    Benchmark(
        "search",
        "Search speed through the search tools",
        "`search_papers` (engines pinned to `local`), keyword, payload, semantic and "
        "`list_top_facets` (cold and warm) over /mcp",
        (PY, "benchmarks/bench_search.py", "--corpus", ACL, "--embed-first"),
        (
            PY,
            "benchmarks/bench_search.py",
            "--corpus",
            ACL,
            "--embed-first",
            "--limit",
            "5000",
            "--queries",
            "100",
        ),
        "docs/SEARCH.md",
    ),
    Benchmark(
        "stalls",
        "No stalls after a start",
        "`manage.py serve` started afresh, then `initialize` and `tools/list`, the first and "
        "the tenth `search_papers` (engines `local`) typo query and question over /mcp with "
        "the SDK's client; 3,000 ACL papers (`--limit 0`: the 95k library)",
        (PY, "benchmarks/bench_stalls.py", "--corpus", ACL, "--runs", "3"),
        (PY, "benchmarks/bench_stalls.py", "--corpus", ACL, "--runs", "1"),
        "docs/SEARCH.md",
    ),
    Benchmark(
        "search-quality",
        "Search quality (SciFact, Cranfield, ACL sets): both tiers, beside bm25s and FTS5",
        "the service behind `search_papers` / `search_papers_semantic` on a new library (first "
        "tier) and once the second tier is filled, and `search_papers` over /mcp compared query "
        "by query (`--mcp`)",
        (PY, "benchmarks/bench_search_quality.py", "--mcp"),
        (
            PY,
            "benchmarks/bench_search_quality.py",
            "--sets",
            "scifact,cranfield",
            "--backends",
            "sqlite",
            "--limit-queries",
            "40",
            "--mcp",
        ),
        "docs/SEARCH.md",
    ),
    Benchmark(
        "lexical",
        "Lexical ranker against bm25s (SciFact, Cranfield, ACL sets)",
        "the service behind `search_papers` with `rerank=false` (and default arguments) beside "
        "bm25s-Lucene, with the leave-one-set-out cross-validation of its parameters (`--cv`)",
        (PY, "benchmarks/bench_lexical.py", "--cv", "--backends", "sqlite,postgres"),
        (
            PY,
            "benchmarks/bench_lexical.py",
            "--sets",
            "cranfield,acl-lead",
            "--limit-queries",
            "100",
        ),
        "docs/SEARCH.md",
    ),
    Benchmark(
        "fusion",
        "Hybrid fusion weight by leave-one-set-out cross-validation (SciFact, Cranfield, ACL)",
        "`local_search` with default arguments (what `search_papers` returns), its two fused "
        "rankings recorded and the product's `min_max_fusion` replayed at each full-text "
        "weight; at the configured weight the replay must give the product's own top 10",
        (PY, "benchmarks/bench_fusion.py"),
        (
            PY,
            "benchmarks/bench_fusion.py",
            "--sets",
            "cranfield,acl-title",
            "--limit-queries",
            "50",
        ),
        "docs/SEARCH.md",
    ),
    Benchmark(
        "fusion-strong",
        "Hybrid fusion weights with the second tier filled, by leave-one-set-out cross-validation",
        "`local_search` with default arguments once every paper has its second-tier vector, the "
        "rankings it fuses recorded (`semantic.hybrid_inputs`: full text, the semantic ranking "
        "merged over both tiers, the first tier's own) and the product's `min_max_fusion` "
        "replayed at each weighting; at the configured weights the replay must give the "
        "product's own top 10",
        (PY, "benchmarks/bench_fusion.py", "--tier", "strong"),
        (
            PY,
            "benchmarks/bench_fusion.py",
            "--tier",
            "strong",
            "--sets",
            "cranfield,acl-title",
            "--limit-queries",
            "50",
        ),
        "docs/SEARCH.md",
    ),
    Benchmark(
        "rerank",
        "Reranking stage: quality and cost (Cranfield, SciFact)",
        "`local_search` (what `search_papers` returns) with the reranking stage off and on "
        "(SEARCH_RERANK_TOP_K 20, 50; both shipped models), first tier",
        (
            PY,
            "benchmarks/bench_rerank.py",
            "--sets",
            "cranfield-dev,cranfield-test,scifact-train,scifact-test",
            "--limit-queries",
            "100",
        ),
        (
            PY,
            "benchmarks/bench_rerank.py",
            "--sets",
            "cranfield-dev,cranfield-test",
            "--limit-queries",
            "20",
            "--timing-queries",
            "5",
        ),
        "docs/SEARCH.md",
    ),
    Benchmark(
        "pdf",
        "PDF tools",
        "`get_pdf_outline`, `read_pdf_pages`, `create_highlight` over /mcp",
        (PY, "benchmarks/bench_pdf.py", "--repeats", "20"),
        (PY, "benchmarks/bench_pdf.py", "--repeats", "5"),
        "docs/PDF.md",
    ),
    Benchmark(
        "evidence",
        "Evidence: passages and quotes",
        "the service functions behind `search_passages` and `find_quote` (held equal to the "
        "tools over /mcp by tests/mcp/test_passages_tools.py)",
        (PY, "benchmarks/bench_evidence.py"),
        (PY, "benchmarks/bench_evidence.py", "--quick"),
        "docs/EVIDENCE.md",
    ),
    Benchmark(
        "extraction",
        "Extraction: quotes anchored to their page",
        "`extract_record`, the service the extraction tools call, on the real fixture PDFs "
        "attached through the attach service",
        (PY, "benchmarks/bench_extraction_anchoring.py"),
        (PY, "benchmarks/bench_extraction_anchoring.py", "--quick"),
        "docs/EXTRACTION.md",
    ),
    Benchmark(
        "engines",
        "Engines: fan-out, cache, de-duplication",
        "`search_papers` over /mcp with plugin engines pinned (fan-out goal); `call_engine` "
        "(cache) and `papers_upsert` (de-duplication) as breakdowns",
        (PY, "benchmarks/bench_engines.py"),
        (PY, "benchmarks/bench_engines.py", "--repeats", "10", "--cache-repeats", "50"),
        "docs/ENGINES.md",
    ),
    Benchmark(
        "saved-search",
        "Saved searches: one run over five engines, one down",
        "`saved_search_run`, the service `run_saved_search` (and the admin, the command, the "
        "scheduler) calls, over plugin engines of a local server with per-source latencies",
        (PY, "benchmarks/bench_saved_search.py", "--repeats", "20"),
        (PY, "benchmarks/bench_saved_search.py", "--quick"),
        "README.md",
    ),
    Benchmark(
        "offline",
        "No network: tools while no engine resolves",
        "the MCP tool functions `/mcp` runs, called in-process (bench_offline.py)",
        (PY, "benchmarks/bench_offline.py"),
        (
            PY,
            "benchmarks/bench_offline.py",
            "--runs",
            "1",
            "--open-calls",
            "5",
            "--review-runs",
            "1",
        ),
        "docs/ENGINES.md",
    ),
    Benchmark(
        "offline-load",
        "No network: 50 clients over /mcp",
        "25 clients calling local tools and 25 calling `search_papers` with every default "
        "engine refused or hanging, over /mcp (`manage.py serve`)",
        (PY, "benchmarks/bench_offline_load.py", "--runs", "3", "--seconds", "40"),
        (PY, "benchmarks/bench_offline_load.py", "--runs", "1", "--seconds", "15"),
        "docs/ENGINES.md",
    ),
    Benchmark(
        "mcp",
        "/mcp beside the SDK's own app (get_paper_details)",
        "`tools/call get_paper_details` over /mcp",
        (PY, "benchmarks/bench_mcp.py", "--corpus", ACL, "--runs", "3"),
        (
            PY,
            "benchmarks/bench_mcp.py",
            "--corpus",
            ACL,
            "--limit",
            "5000",
            "--runs",
            "1",
            "--seconds",
            "3",
        ),
        "benchmarks/README.md",
    ),
    Benchmark(
        "endpoint",
        "The endpoint's own cost beside a minimal SDK server",
        "`tools/call search_papers` (engines `local`) and `ping` over /mcp",
        (PY, "benchmarks/bench_endpoint.py", "--corpus", ACL),
        (
            PY,
            "benchmarks/bench_endpoint.py",
            "--corpus",
            ACL,
            "--limit",
            "5000",
            "--runs",
            "1",
            "--seconds",
            "3",
        ),
        "benchmarks/README.md",
    ),
    Benchmark(
        "import",
        "Import throughput",
        "`manage.py import_jsonl`",
        (PY, "benchmarks/bench_import.py", "--corpus", ACL),
        (PY, "benchmarks/bench_import.py", "--corpus", ACL, "--runs", "1", "--backends", "sqlite"),
        "benchmarks/README.md",
    ),
    Benchmark(
        "index-cost",
        "Full-text indexes: the engine's index beside the BM25 postings",
        "`local_search` (rerank off) beside the engine's own ranking (`native.rank`) on "
        "SciFact and Cranfield; `import_jsonl` of the ACL corpus, each index's size and "
        "rebuild time, natural queries ranked each way",
        (PY, "benchmarks/bench_index_cost.py", "--corpus", ACL),
        (
            PY,
            "benchmarks/bench_index_cost.py",
            "--corpus",
            ACL,
            "--limit",
            "20000",
            "--limit-queries",
            "40",
            "--backends",
            "sqlite",
        ),
        "docs/SEARCH.md, docs/DECISIONS.md",
    ),
    Benchmark(
        "admin",
        "Admin pages",
        "the admin views through Django's test client, logged in (server-side time)",
        (PY, "benchmarks/bench_admin.py", "--corpus", ACL),
        None,
        "docs/ADMIN.md",
    ),
    Benchmark(
        "understanding",
        "Query understanding: authors, years and venues read from 100 labelled ACL queries",
        "`local_search` (what `search_papers` runs on the library) with query understanding "
        "on and off, over an `import_jsonl` library",
        (PY, "benchmarks/bench_understanding.py", "--corpus", ACL, "--limit", "0"),
        (PY, "benchmarks/bench_understanding.py", "--corpus", ACL, "--limit", "4000"),
        "docs/SEARCH.md",
    ),
    Benchmark(
        "pages",
        "Page timings in the browser (home, search, reading page, review page)",
        "Debian's Chromium driven by Playwright on `manage.py serve`, signed in as a curator: "
        "first byte, load, first PDF page drawn, first screening record shown",
        (PY, "benchmarks/bench_pages.py", "--corpus", ACL, "--limit", "0"),
        (PY, "benchmarks/bench_pages.py", "--corpus", ACL, "--limit", "3000"),
        "benchmarks/README.md",
    ),
    Benchmark(
        "load",
        "/mcp under 1-200 clients (production setup)",
        "`serve --workers 4` + PostgreSQL + Redis + Celery, tools over /mcp",
        (PY, "benchmarks/bench_load.py", "--corpus", ACL),
        (
            PY,
            "benchmarks/bench_load.py",
            "--corpus",
            ACL,
            "--limit",
            "5000",
            "--seconds",
            "10",
            "--levels",
            "1,10",
        ),
        "docs/RELIABILITY.md",
    ),
    Benchmark(
        "semantic-tiers",
        "The two semantic tiers on SciFact",
        "the service behind `search_papers` / `search_papers_semantic` at each second-tier "
        "coverage",
        (PY, "benchmarks/bench_semantic_tiers.py"),
        None,
        "docs/SEARCH.md",
    ),
    Benchmark(
        "strong-writer",
        "How fast the second semantic tier fills",
        "the second tier's background writer (in-process thread) and `reindex_embeddings "
        "--tier strong`, the packaged int8 model and the re-quantised default alternating; "
        "`local_search` full text vs hybrid",
        (
            PY,
            "benchmarks/bench_strong_writer.py",
            "--corpus",
            str(SHARED / "corpus" / "scifact"),
            "--papers",
            "96",
            "--rounds",
            "2",
            "--queries",
            "100",
        ),
        (
            PY,
            "benchmarks/bench_strong_writer.py",
            "--corpus",
            str(SHARED / "corpus" / "scifact"),
            "--papers",
            "32",
            "--rounds",
            "1",
            "--queries",
            "30",
        ),
        "docs/SEARCH.md",
    ),
    Benchmark(
        "related",
        "find_related_papers' threshold",
        "the selector behind `find_related_papers` on 20k ACL papers",
        (PY, "benchmarks/bench_related_threshold.py"),
        None,
        "docs/SEARCH.md",
    ),
    Benchmark(
        "scale",
        "Search and import at 95k, 100k, 300k and 1M papers (SQLite, filters)",
        "`manage.py import_jsonl`'s work (papers, postings, first-tier vectors) into an empty "
        "library, then `local_search` as `search_papers` with engines `local` calls it",
        scale_command("sqlite", SCALE_SIZES or ("95k", "100k", "300k", "1m")),
        None,
        "docs/SEARCH.md, docs/SCALE.md",
    ),
    Benchmark(
        "scale-pg",
        "Search and import at 100k-1M papers (PostgreSQL, filters; SCALE_SIZES picks them)",
        "`manage.py import_jsonl`'s work in 25k slices (papers, postings, first-tier vectors), "
        "then `local_search` as `search_papers` with engines `local` calls it",
        scale_command("postgres", SCALE_SIZES or ("100k", "300k")),
        None,
        "docs/SCALE.md",
    ),
    Benchmark(
        "scale-1m",
        "Search at 1M papers with the vector graph the import saved (SQLite, filters)",
        "a library as `import_jsonl` leaves it (papers, postings, first-tier vectors, their "
        "graph saved), then `local_search` as `search_papers` with engines `local` calls it",
        scale_command("sqlite", ("1m",)),
        None,
        "docs/SCALE.md",
    ),
    Benchmark(
        "kept-filters",
        "Filtered searches at 1M papers: the filters' papers kept between searches, or read "
        "at each search",
        "`local_search` as `search_papers` with engines `local` calls it, on the library "
        "`import_jsonl` left (the `scale-1m` section's)",
        (
            PY,
            "benchmarks/bench_kept_filters.py",
            "--directory",
            f"{SCALE_DIR}/sqlite-1m/sqlite",
        ),
        None,
        "docs/SCALE.md",
    ),
    Benchmark(
        "tools-1m",
        "Search tools over /mcp at 1M papers (SQLite)",
        "`search_papers` (engines `local`), keyword, payload, semantic and `list_top_facets` "
        "(over a query and over the whole library, cold and warm) over /mcp, on the library "
        "`import_jsonl` left (the `scale-1m` section's)",
        (
            PY,
            "benchmarks/bench_search.py",
            "--corpus",
            ACL,
            "--directory",
            f"{SCALE_DIR}/sqlite-1m/sqlite",
            "--goals",
            "1m",
        ),
        None,
        "docs/SCALE.md",
    ),
    Benchmark(
        "tools-1m-pg",
        "Search tools over /mcp on the large PostgreSQL library (scale-pg's; its size in the "
        "table)",
        "`search_papers` (engines `local`), keyword, payload, semantic and `list_top_facets` "
        "(over a query and over the whole library, cold and warm) over /mcp, on the library "
        "`import_jsonl` left (the `scale-pg` section's at 1M: `SCALE_SIZES=1m`)",
        (
            PY,
            "benchmarks/bench_search.py",
            "--corpus",
            ACL,
            "--backend",
            "postgresql",
            "--pg-url",
            "postgres://postgres@127.0.0.1:5432/bench_scale_1m",
            "--directory",
            f"{SCALE_DIR}/postgres-1m/postgres",
            "--goals",
            "1m",
        ),
        None,
        "docs/SCALE.md",
    ),
    Benchmark(
        "admin-1m",
        "Admin pages at 1M papers (SQLite)",
        "the admin views through Django's test client, logged in (server-side time), on the "
        "library `import_jsonl` left (the `scale-1m` section's)",
        (
            PY,
            "benchmarks/bench_admin.py",
            "--corpus",
            ACL,
            "--directory",
            f"{SCALE_DIR}/sqlite-1m/sqlite",
            "--goal-ms",
            "1000",
        ),
        None,
        "docs/SCALE.md",
    ),
    Benchmark(
        "graph-start",
        "Searches after a start at 300k and 1M papers: the vector graph built, or loaded "
        "from the file the import saved",
        "`manage.py reindex_embeddings` (the graph step `import_jsonl` ends with), then "
        "`local_search` (what `search_papers` with engines `local` calls) in a new process "
        "running the server's warm-up",
        (PY, "benchmarks/bench_graph_start.py", "--max-minutes", "10", *GRAPH_START_LIBRARIES),
        None,
        "docs/SEARCH.md, docs/SCALE.md",
    ),
    Benchmark(
        "start-wait",
        "The first searches after a start at 300k and 1M papers: answered by the words alone "
        "while the models and vectors load, or waiting for them",
        "`local_search` (what `search_papers` with engines `local` calls) in a new process "
        "running the server's warm-up, on the library as `import_jsonl` left it, then restarts",
        (
            PY,
            "benchmarks/bench_graph_start.py",
            "--max-minutes",
            "10",
            "--starts",
            "imported,restart,restart",
            "--wait-ms",
            "1000,600000,1000",
            *GRAPH_START_LIBRARIES,
        ),
        None,
        "docs/SEARCH.md, docs/SCALE.md",
    ),
    Benchmark(
        "vector-index",
        "Vector search at 100k-1M papers: exact, quantised, approximate (HNSW)",
        "the vectors and the index alone (a component, no database, no /mcp): it chose the "
        "approximate index behind `search_papers_semantic` and hybrid `search_papers`",
        (PY, "benchmarks/bench_vector_index.py", "--corpus", ACL, "--budget-minutes", "30"),
        (PY, "benchmarks/bench_vector_index.py", "--corpus", ACL, "--quick"),
        "docs/SEARCH.md",
    ),
    Benchmark(
        "screening",
        "Prioritised screening and the stopping rule (Cranfield, SciFact)",
        "`manage.py simulate_screening`'s code: the ranking and stopping rule that "
        "`screen_next` / `screen_decide` use",
        (PY, "benchmarks/bench_screening.py", "--seeds", "3"),
        (PY, "benchmarks/bench_screening.py", "--seeds", "1", "--limit-topics", "30"),
        "docs/SCREENING.md",
    ),
    Benchmark(
        "citations",
        "Citation check: precision and recall of each flag",
        "`check_citations` over /mcp on drafts built from the fixture PDFs and ACL records, "
        "Crossref replayed locally; then wrong citations (shifted years, swapped titles) of "
        "ACL records with abstracts",
        (PY, "benchmarks/bench_citations.py", "--drafts", "40"),
        (PY, "benchmarks/bench_citations.py", "--drafts", "12", "--mismatch-drafts", "10"),
        "docs/CITATION-CHECK.md",
    ),
    Benchmark(
        "screening-features",
        "Screening features: TF-IDF, MiniLM embeddings, both (Cranfield, SciFact sample)",
        "`manage.py simulate_screening --features`: what the screening model reads",
        (
            PY,
            "benchmarks/bench_screening.py",
            "--seeds",
            "1",
            "--features",
            "tfidf,embeddings,both",
            "--scifact-sample",
            "1000",
        ),
        (
            PY,
            "benchmarks/bench_screening.py",
            "--seeds",
            "1",
            "--features",
            "tfidf,embeddings,both",
            "--scifact-sample",
            "1000",
            "--limit-topics",
            "15",
        ),
        "docs/SCREENING.md",
    ),
    Benchmark(
        "conformance",
        "MCP conformance (Inspector CLI, conformance suite, strictness)",
        "`manage.py serve` over HTTP, stdio and SSE",
        ("scripts/mcp-conformance",),
        ("scripts/mcp-conformance",),
        "docs/CONFORMANCE.md",
    ),
)

HEADER = """# Benchmark results

Generated by `benchmarks/run_all.py` (`make bench`; `make bench-quick` for the quick mode).
Do not edit by hand: every table below is a benchmark's own output, headed by the command,
date, commit and machine of its run. Quick-mode sections are labelled; they show that the
benchmark works and roughly where the figures lie, on smaller inputs than the full run.
What each benchmark measures and how: [README.md](README.md). Tests hold the figures quoted
in README.md and docs/ to this file (tests/test_published_figures.py).
"""


def section_marker(name: str) -> tuple[str, str]:
    return f"<!-- bench:{name} -->", f"<!-- /bench:{name} -->"


def git(*args: str) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True)
    return done.stdout.strip()


def commit_label() -> str:
    commit = git("rev-parse", "--short", "HEAD") or "unknown"
    # RESULTS.md itself changes as run_all writes it: not a change to what is measured.
    dirty = git(
        "status", "--porcelain", "--untracked-files=no", "--", ".", ":!benchmarks/RESULTS.md"
    )
    return f"{commit}{' + uncommitted changes' if dirty else ''}"


def machine() -> str:
    memory = ""
    meminfo = Path("/proc/meminfo")
    if meminfo.exists():
        kib = int(meminfo.read_text().split("\n", 1)[0].split()[1])
        memory = f", {kib / 1024 / 1024:.0f} GiB RAM"
    return f"{os.cpu_count()} cores{memory}, Python {platform.python_version()}"


def load() -> str:
    return "{:.2f} / {:.2f} / {:.2f}".format(*os.getloadavg())


def run(benchmark: Benchmark, quick: bool) -> tuple[str, bool]:
    """Run one benchmark: its section of RESULTS.md (markers included), whether it passed."""
    command = benchmark.quick if quick else benchmark.full
    assert command is not None
    LOGS.mkdir(parents=True, exist_ok=True)
    log = LOGS / f"{benchmark.name}.log"
    started = datetime.datetime.now(datetime.UTC)
    load_before = load()
    commit = commit_label()  # what ran: taken before, the tree may change during a long run
    clock = time.monotonic()
    with log.open("w") as stderr:
        done = subprocess.run(
            ["nice", "-n", "10", *command], cwd=ROOT, stdout=subprocess.PIPE, stderr=stderr,
            text=True, env={**os.environ, "PYTHONUNBUFFERED": "1"},
        )  # fmt: skip
    minutes = (time.monotonic() - clock) / 60
    shown = " ".join(
        ".venv/bin/python" if c == PY else c.replace(str(ROOT.parent), "..") for c in command
    )
    begin, end = section_marker(benchmark.name)
    lines = [
        begin,
        f"## {benchmark.title}",
        "",
        f"- **Run**: {started:%Y-%m-%d %H:%M} UTC, {minutes:.1f} min, commit {commit}, "
        f"**{'quick mode' if quick else 'full'}**",
        f"- **Machine**: {machine()}; load average (1 / 5 / 15 min) {load_before} before, "
        f"{load()} after (shared with other work)",
        f"- **Path**: {benchmark.path}",
        f"- **Command**: `nice -n 10 {shown}`",
        f"- **Quoted by**: {benchmark.feeds}",
        "",
    ]
    output = done.stdout.strip()
    if done.returncode != 0 and not output:
        tail = log.read_text()[-1500:].strip()
        lines += [f"**FAILED** (exit status {done.returncode}); no figures from this run.", ""]
        lines += ["```", tail, "```", ""]
    elif done.returncode != 0:
        # Some benchmarks (bench_admin, mcp-conformance) exit 1 when a goal or a check fails:
        # the table stands, and says which.
        lines += [f"**Exit status {done.returncode}**: a goal or a check failed, or the run "
                  "stopped part way; the output as printed:", "", output, ""]  # fmt: skip
    else:
        lines += [output, ""]
    lines.append(end)
    return "\n".join(lines), done.returncode == 0


def merge(sections: dict[str, str]) -> str:
    """RESULTS.md with `sections` replaced and the others kept, in BENCHMARKS' order."""
    old = RESULTS.read_text() if RESULTS.exists() else ""
    parts = [HEADER]
    for benchmark in BENCHMARKS:
        begin, end = section_marker(benchmark.name)
        if benchmark.name in sections:
            parts.append(sections[benchmark.name])
            continue
        found = re.search(re.escape(begin) + r".*?" + re.escape(end), old, re.S)
        if found:
            parts.append(found.group(0))
        else:
            parts.append(f"{begin}\n## {benchmark.title}\n\nNot run yet: `make bench`.\n{end}")
    return "\n\n".join(parts).rstrip() + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--quick", action="store_true", default=os.environ.get("BENCH_QUICK") == "1"
    )
    parser.add_argument("--only", default="", help="Comma-separated names (see --list).")
    parser.add_argument("--skip", default="", help="Comma-separated names to leave out.")
    parser.add_argument("--list", action="store_true", help="Print the benchmarks and exit.")
    args = parser.parse_args()
    names = {b.name for b in BENCHMARKS}
    only = {n for n in args.only.split(",") if n}
    skip = {n for n in args.skip.split(",") if n}
    if unknown := (only | skip) - names:
        parser.error(f"unknown benchmark(s): {', '.join(sorted(unknown))}; known: {sorted(names)}")
    if args.list:
        for b in BENCHMARKS:
            sizes = "full" + (", quick" if b.quick else " only")
            print(f"{b.name:16} {sizes:12} {b.title}")
        return
    chosen = [b for b in BENCHMARKS if (not only or b.name in only) and b.name not in skip]
    sections: dict[str, str] = {}
    failed = []
    for benchmark in chosen:
        if args.quick and benchmark.quick is None:
            print(f"[{benchmark.name}] no quick mode: not run (make bench runs it)", flush=True)
            continue
        print(f"[{benchmark.name}] running ({'quick' if args.quick else 'full'}) ...", flush=True)
        sections[benchmark.name], passed = run(benchmark, args.quick)
        if not passed:
            failed.append(benchmark.name)
        RESULTS.write_text(merge(sections))  # after each one: a long run keeps what it has
        print(f"[{benchmark.name}] done; {RESULTS.relative_to(ROOT)} updated", flush=True)
    if failed:
        print(f"failed: {', '.join(failed)} (logs in {LOGS.relative_to(ROOT)})", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()

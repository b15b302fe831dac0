"""The quality benchmark measures what an agent gets (issue 16): its default-mode ranking
(benchmarks/bench_search_quality.py, through papers.search.local.local_search) and the
ranking of `search_papers` over /mcp with the MCP SDK client, against a real server on the
same knowledge base, must be the same list for every query. Runs the benchmark's own child
process on the Cranfield collection (1,400 abstracts), on the test run's database kind."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[3]
BENCH = ROOT / "benchmarks" / "bench_search_quality.py"
SHARED = Path(os.environ.get("BENCH_SHARED") or ROOT.parent / "shared")  # as the benchmark
CRANFIELD = SHARED / "corpus" / "cranfield" / "cranfield_queries.jsonl"


def bench_child(*options: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """The benchmark's child process on Cranfield, on the test run's database kind: its
    result."""
    database_url = os.environ.get("DATABASE_URL", "")
    backend = "postgres" if database_url.startswith(("postgres://", "postgresql://")) else "sqlite"
    child_env = {k: v for k, v in os.environ.items() if k not in ("DJANGO_SETTINGS_MODULE",)}
    child_env.update(env or {})
    if backend == "postgres":
        child_env["BENCH_PG_URL"] = database_url.rsplit("/", 1)[0] + "/postgres"
    command = [
        sys.executable, str(BENCH), "--child", "--set", "cranfield", "--backend", backend,
        "--split", "all", *options,
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=ROOT, env=child_env, capture_output=True, text=True, timeout=900,
        check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def row(result: dict[str, Any], mode: str, tier: str = "first") -> dict[str, Any]:
    """The benchmark's row for this mode (a service mode, or `... over /mcp`) and tier."""
    (found,) = [r for r in result["rows"] if r["mode"] == mode and r["tier"] == tier]
    return found


@pytest.fixture(scope="module")
def default_and_bm25() -> dict[str, Any]:
    """One child for both modes: one import of the collection and one server, whose
    `search_papers` answers both (default arguments, then rerank=false)."""
    if not CRANFIELD.exists():
        pytest.skip("needs ../shared/corpus/cranfield")
    return bench_child(
        "--modes", "default,bm25", "--tiers", "first", "--limit-queries", "12", "--mcp"
    )


def test_benchmark_ranking_is_the_tool_ranking_over_mcp(default_and_bm25: dict[str, Any]) -> None:
    result = default_and_bm25
    assert result["queries"] == 12
    over_mcp, default = row(result, "search_papers over /mcp"), row(result, "default")
    assert over_mcp["identical_rankings"] == 12
    assert over_mcp["ndcg"] == pytest.approx(default["ndcg"])
    # Natural-language questions: none comes back empty where plain BM25 finds something.
    assert default["empty_vs_reference"] == 0
    assert default["ndcg"] > 0.2
    # Both references ranked the same questions (the figures the table divides by).
    assert result["references"]["bm25s"]["ndcg"] > 0.2
    assert result["references"]["fts5"]["ndcg"] > 0.2


def test_lexical_benchmark_ranking_is_the_tool_ranking_with_rerank_false(
    default_and_bm25: dict[str, Any],
) -> None:
    """benchmarks/bench_lexical.py scores `local_search(rerank=False)`: it must be what
    `search_papers(rerank=false)` returns over /mcp, query by query."""
    result = default_and_bm25
    over_mcp, bm25 = row(result, "search_papers(rerank=false) over /mcp"), row(result, "bm25")
    assert over_mcp["identical_rankings"] == 12
    assert over_mcp["ndcg"] == pytest.approx(bm25["ndcg"])
    assert bm25["ndcg"] > 0.2


@pytest.mark.skipif(not CRANFIELD.exists(), reason="needs ../shared/corpus/cranfield")
def test_search_papers_over_mcp_is_the_service_ranking_with_the_reranking_stage_on() -> None:
    """With SEARCH_RERANK_TOP_K set (papers/search/reranker.py), `search_papers` over /mcp
    and the service the benchmarks call return the same list for every query, and the
    stage did change the ranking (nDCG@10 differs from the same run with it off)."""
    results = {}
    for top_k in ("0", "10"):
        # The agreement holds whatever model scores; WordLlama's costs milliseconds a
        # query where MiniLM's costs seconds (test_reranker.py tries MiniLM itself).
        env = {"SEARCH_RERANK_TOP_K": top_k, "SEARCH_RERANK_MODEL": "wordllama-l2-256"}
        # With the stage off only the service's nDCG is compared: no server for it.
        over_mcp = ("--mcp",) if top_k != "0" else ()
        results[top_k] = bench_child(
            "--modes", "default,hybrid", "--tiers", "first", "--limit-queries", "8", *over_mcp,
            env=env,
        )  # fmt: skip
    on, off = results["10"], results["0"]
    over_mcp = row(on, "search_papers over /mcp")
    assert over_mcp["identical_rankings"] == 8
    assert over_mcp["ndcg"] == pytest.approx(row(on, "default")["ndcg"])
    assert row(on, "default")["ndcg"] != pytest.approx(row(off, "default")["ndcg"])

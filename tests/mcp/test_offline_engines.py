"""benchmarks/bench_offline.py measures what an agent gets: its in-process path (the MCP
tool's own function) answers what `/mcp` answers when no engine can be reached."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest

from engines import breaker
from engines.registry import registry
from tests.mcp.conftest import ROOT, KnowledgeBase, call_tool_raw, result_json, running_server

pytestmark = [pytest.mark.server]

BENCH = ROOT / "benchmarks" / "bench_offline.py"
DEFAULT_ENGINES = ("arxiv", "google_scholar", "openalex", "crossref", "semantic_scholar")


def bench_module() -> Any:
    spec = importlib.util.spec_from_file_location("bench_offline", BENCH)
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outcomes(page: dict[str, Any]) -> dict[str, tuple[str, str]]:
    return {
        name: (status.get("outcome", ""), status.get("reason", ""))
        for name, status in page["engines"].items()
    }


def test_the_offline_benchmark_path_answers_what_mcp_answers(
    knowledge_base: KnowledgeBase, settings: Any, transactional_db: None
) -> None:
    bench = bench_module()
    offline = {
        setting: bench.UNRESOLVABLE.format(engine=engine.replace("_", "-"))
        for engine, setting in bench.URL_SETTINGS.items()
    }
    env = {**offline, "SERP_API_KEY": "dummy", "ENGINES_ENABLED": ",".join(DEFAULT_ENGINES)}
    # The benchmark's runtime, the embedded default (engine calls in the server process),
    # also on the PostgreSQL + Redis run, whose workers have settings of their own.
    env |= {"REDIS_URL": "", "CELERY_BROKER_URL": "", "CELERY_RESULT_BACKEND": ""}
    arguments = {"query": "transformers for long documents", "max_results": 5}
    with running_server(knowledge_base, env=env) as server:
        over_mcp = []
        for _ in range(2):
            answer = call_tool_raw(server.mcp_url, "search_papers", arguments).json()
            over_mcp.append(result_json(answer["result"]))
    breaker.reset_all()  # the server's breakers, when Redis shares them

    for setting, value in offline.items():
        setattr(settings, setting, value)
    settings.SERP_API_KEY = "dummy"
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ENGINES_ENABLED = list(DEFAULT_ENGINES)
    registry.refresh()
    in_process = [bench.search_once(bench.tools()["search_papers"])[1] for _ in range(2)]

    unreachable = {engine: ("unreachable", "dns") for engine in DEFAULT_ENGINES}
    refused = {engine: ("unreachable", "circuit_open") for engine in DEFAULT_ENGINES}
    for first, second in (over_mcp, in_process):
        # The library answers in both (its papers differ: the server's is seeded).
        assert first["engines"].pop("local")["status"] == "ok"
        assert second["engines"].pop("local")["status"] == "ok"
        assert outcomes(first) == unreachable
        assert outcomes(second) == refused
    assert set(over_mcp[0]) == set(in_process[0])
    assert all(s.get("retry_after_seconds", 0) > 0 for s in over_mcp[1]["engines"].values()
               if s["outcome"] == "unreachable")  # fmt: skip

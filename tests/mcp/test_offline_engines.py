"""benchmarks/bench_offline.py measures what an agent gets: its in-process path (the MCP
tool's own function) answers what `/mcp` answers when no engine can be reached."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from typing import Any

import pytest

from engines import breaker
from engines.registry import registry
from tests.mcp.conftest import (
    ROOT,
    KnowledgeBase,
    LiveServer,
    call_tool_raw,
    mcp_client,
    result_json,
    running_server,
    tool_data,
    tool_error,
)

pytestmark = [pytest.mark.server]

BENCH = ROOT / "benchmarks" / "bench_offline.py"
DEFAULT_ENGINES = (
    "arxiv",
    "google_scholar",
    "openalex",
    "crossref",
    "semantic_scholar",
)  # asked by a search naming none; the field sources (pubmed, openreview...) only when named


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


def skipped(page: dict[str, Any]) -> list[str]:
    return [note.split(" ")[0] for note in page["notes"] if " skipped: " in note]


def offline_env() -> dict[str, str]:
    """Every default engine at a host that never resolves; calls in the server process
    (its breakers in its memory, also on the PostgreSQL + Redis run)."""
    bench = bench_module()
    env = {
        setting: bench.UNRESOLVABLE.format(engine=engine.replace("_", "-"))
        for engine, setting in bench.URL_SETTINGS.items()
    }
    env |= {"SERP_API_KEY": "dummy", "ENGINES_ENABLED": ",".join(DEFAULT_ENGINES)}
    return env | {"REDIS_URL": "", "CELERY_BROKER_URL": "", "CELERY_RESULT_BACKEND": ""}


@pytest.fixture
def offline_server(knowledge_base: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(knowledge_base, env=offline_env()) as server:
        yield server


@pytest.mark.anyio
async def test_with_engines_down_each_failure_is_said_once_and_down_engines_are_skipped(
    offline_server: LiveServer,
) -> None:
    arguments = {"query": "attention transformer", "limit": 5}
    async with mcp_client(offline_server.mcp_url) as client:
        first = await client.call_tool("search_papers", arguments)
        default = await client.call_tool("search_papers", arguments)
        named = await client.call_tool(
            "search_papers", {**arguments, "engines": ["local", *DEFAULT_ENGINES]}
        )
    for result in (first, default, named):
        assert not result.is_error, result.content  # the library answered
        # One line per failed engine in the whole answer (not again in the notes).
        text = result.content[0].text
        assert text.count("name resolution failed") == len(DEFAULT_ENGINES), text
    # Not asked again while known down: the library only, and a line for each left out.
    assert list(tool_data(default)["engines"]) == ["local"]
    assert sorted(skipped(tool_data(default))) == sorted(DEFAULT_ENGINES)
    # One condition, one status: unreachable, whether the network or the breaker said so.
    for result, reason in ((first, "dns"), (named, "circuit_open")):
        statuses = tool_data(result)["engines"]
        assert {(s["status"], s["outcome"], s["reason"]) for n, s in statuses.items()
                if n != "local"} == {("unavailable", "unreachable", reason)}  # fmt: skip


@pytest.mark.anyio
async def test_no_results_with_every_engine_down_is_an_error_naming_them(
    offline_server: LiveServer,
) -> None:
    nothing = {"query": "zqxvw jjkqpz", "limit": 5}
    async with mcp_client(offline_server.mcp_url) as client:
        first = await client.call_tool("search_papers", nothing)
        skipped_all = await client.call_tool("search_papers", nothing)
        by_author = await client.call_tool(
            "search_by_author", {"author_name": "Zqxvw", "engines": list(DEFAULT_ENGINES)}
        )
        library_only = await client.call_tool("search_papers", {**nothing, "engines": "local"})
    for result in (first, skipped_all, by_author):
        error = tool_error(result)
        assert error["code"] == "engines_unavailable", error
        assert sorted(error["engines"]) == sorted(DEFAULT_ENGINES)
        assert all(why for why in error["engines"].values())
    # Nothing found where nothing failed is an empty answer, not an error.
    assert not library_only.is_error and tool_data(library_only)["results"] == []


def test_the_offline_benchmark_path_answers_what_mcp_answers(
    knowledge_base: KnowledgeBase, settings: Any, transactional_db: None, make_paper: Any
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
    # The library has a match, as the benchmark's has (nothing at all would be an error).
    make_paper("Longformer: The Long-Document Transformer", abstract="Long documents.")
    in_process = [bench.search_once(bench.tools()["search_papers"])[1] for _ in range(2)]

    unreachable = {engine: ("unreachable", "dns") for engine in DEFAULT_ENGINES}
    for first, second in (over_mcp, in_process):
        # The library answers in both (its papers differ: the server's is seeded).
        assert first["engines"].pop("local")["status"] == "ok"
        assert second["engines"].pop("local")["status"] == "ok"
        assert outcomes(first) == unreachable
        # Known down now: not asked again by default, one line each.
        assert second["engines"] == {}
        assert sorted(skipped(second)) == sorted(DEFAULT_ENGINES)
    assert set(over_mcp[0]) == set(in_process[0])
    assert all(s.get("retry_after_seconds", 0) > 0 for s in over_mcp[0]["engines"].values())

"""expand_by_citations over /mcp with the SDK client, against a real server whose OpenAlex,
Semantic Scholar and Crossref engines call a local server answering from the snowballing
fixtures (tests/fixtures/snowball): seeds added by DOI with add_paper, a depth-2 expansion
with each work once and ranked by seeds connected, filed into a project; and the tool is
hidden on a read-only server.

The server runs its engine calls in its own process on both runs: its environment has no
broker, because the Celery workers would call the real sources (their URLs are not these).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from mcp import MCPError

from tests.engines.replay import ReplayServer, Reply
from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
    tool_error,
)
from tests.snowball_sources import SOURCES, graph, load, segment, serve_sources

pytestmark = [pytest.mark.server, pytest.mark.anyio]

BROKER_VARIABLES = ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")


@pytest.fixture(scope="module")
def sources() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    serve_sources(server)
    # Seeds added by DOI carry no S2 id: S2 is asked by DOI for the first seed too.
    first = load("s2_references.json")[graph()["S1"]["s2"]]
    server.add(f"/s2/graph/v1/paper/{segment('DOI:10.5555/seed.1')}/references", Reply(200, first))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def snowball_kb(
    tmp_path_factory: pytest.TempPathFactory, sources: ReplayServer
) -> Iterator[KnowledgeBase]:
    directory = tmp_path_factory.mktemp("snowball-kb")
    with server_database("mcpsnow") as database_url:
        env = base_env(directory, database_url)
        for name in BROKER_VARIABLES:
            env.pop(name, None)
        env["ENGINES_ENABLED"] = ",".join(SOURCES)
        env["ENGINE_MAX_RETRIES"] = "0"
        env["CONTACT_EMAIL"] = ""
        env["OPENALEX_API_URL"] = f"{sources.url}/openalex"
        env["SEMANTIC_SCHOLAR_API_URL"] = f"{sources.url}/s2"
        env["CROSSREF_API_URL"] = f"{sources.url}/crossref"
        yield KnowledgeBase(directory, env)


@pytest.fixture(scope="module")
def snowball_server(snowball_kb: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(snowball_kb) as server:
        yield server


async def test_expand_by_citations_over_mcp_ranks_each_work_once_and_files_them(
    snowball_server: LiveServer,
) -> None:
    async with mcp_client(snowball_server.mcp_url) as client:
        seeds = []
        for doi in ("10.5555/seed.1", "10.5555/seed.2"):
            added = await client.call_tool("add_paper", {"identifier": doi})
            assert not added.is_error, added
            seeds.append(tool_data(added)["paper"]["paper_id"])
        await client.call_tool("create_project", {"name": "Open science"})
        arguments: dict[str, Any] = {
            "paper_ids": seeds, "direction": "references", "depth": 2, "limit": 10,
            "project_id": "Open science", "add_to_project": True,
        }  # fmt: skip
        result = await client.call_tool("expand_by_citations", arguments)
        assert not result.is_error, result
        listed = await client.call_tool("list_project_papers", {"project_id": "Open science"})
        with pytest.raises(MCPError, match="direction"):
            await client.call_tool(
                "expand_by_citations", {"paper_ids": seeds, "direction": "sideways"}
            )
        unknown = await client.call_tool("expand_by_citations", {"paper_ids": [999999]})
    answer = tool_data(result)
    works = graph()
    titles = [entry["title"] for entry in answer["results"]]
    assert titles == [works[name]["title"] for name in ("X", "Z", "Y", "D", "Q")]
    assert [entry["connects_to"] for entry in answer["results"]] == [2, 2, 2, 2, 1]
    assert answer["results"][0]["via"] == sorted(seeds)
    assert set(answer["results"][0]["engines"]) == set(SOURCES)
    assert answer["new_to_library"] == 5 and answer["added_to_project"] == 5
    assert set(answer["engines"]) >= set(SOURCES)
    assert {p["title"] for p in tool_data(listed)["papers"]} >= set(titles)
    assert tool_error(unknown)["code"] == "not_found"


async def test_a_read_only_server_does_not_list_expand_by_citations(
    snowball_kb: KnowledgeBase,
) -> None:
    with running_server(snowball_kb, env={"MCP_READ_ONLY": "true"}) as server:
        async with mcp_client(server.mcp_url) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
    assert "search_papers" in names and "expand_by_citations" not in names

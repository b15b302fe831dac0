"""Collections (seed 001): a client chooses its projects once, on the endpoint URL or in a
header, and never sees papers outside them."""

from __future__ import annotations

import anyio
import pytest
from mcp import MCPError

from tests.mcp.conftest import KnowledgeBase, LiveServer, mcp_client, tool_data, tool_error

pytestmark = [pytest.mark.server, pytest.mark.anyio]


async def test_client_scoped_by_url_sees_only_its_projects_papers(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    url = f"{library_server.mcp_url}?collections={knowledge_base.project('nlp')}"
    async with mcp_client(url) as client:
        inside = await client.call_tool("get_paper_details", {"paper_id": "devlin2019bert"})
        outside = await client.call_tool(
            "get_paper_details", {"paper_id": knowledge_base.paper("resnet")["paper_id"]}
        )
        unfiled = await client.call_tool("get_paper_metadata", {"paper_id": "lovelace1843paper"})
        other_project = await client.call_tool("list_project_papers", {"project_id": "vision"})
        with pytest.raises(MCPError) as resource:
            await client.read_resource("papers://vision")
    assert tool_data(inside)["citekey"] == "devlin2019bert"
    assert tool_error(outside)["code"] == "not_found"
    assert tool_error(unfiled)["code"] == "not_found"
    assert tool_error(other_project)["code"] == "not_found"
    assert resource.value.error.code == -32002  # not found, handshake era


async def test_collection_by_name_in_header_scopes_the_client(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    async with mcp_client(
        library_server.mcp_url, headers={"X-MCP-Collections": "Vision"}
    ) as client:
        inside = await client.call_tool("get_paper_details", {"paper_id": "he2016deep"})
        outside = await client.call_tool("get_paper_details", {"paper_id": "vaswani2017attention"})
    assert tool_data(inside)["title"].startswith("Deep Residual")
    assert tool_error(outside)["code"] == "not_found"


async def test_two_clients_with_different_scopes_never_see_each_others_papers(
    library_server: LiveServer,
) -> None:
    seen: dict[str, list[bool]] = {"nlp-reading": [], "vision": []}

    async def probe(scope: str) -> None:
        async with mcp_client(
            f"{library_server.mcp_url}?collection={scope}", mode="auto"
        ) as client:
            for _ in range(5):
                for ref in ("vaswani2017attention", "he2016deep"):
                    result = await client.call_tool("get_paper_metadata", {"paper_id": ref})
                    seen[scope].append(not result.is_error)

    async with anyio.create_task_group() as group:
        group.start_soon(probe, "nlp-reading")
        group.start_soon(probe, "vision")
    assert seen["nlp-reading"] == [True, False] * 5
    assert seen["vision"] == [False, True] * 5


async def test_scoped_client_cannot_change_keywords_outside_its_projects(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    resnet = knowledge_base.paper("resnet")["paper_id"]
    url = f"{library_server.mcp_url}?collections=nlp-reading"
    async with mcp_client(url) as client:
        result = await client.call_tool(
            "manage_paper_keywords", {"paper_ids": resnet, "action": "set", "keywords": ["x"]}
        )
    async with mcp_client(library_server.mcp_url) as client:
        after = await client.call_tool("get_paper_metadata", {"paper_id": resnet})
    assert tool_error(result)["code"] == "not_found"
    assert "x" not in tool_data(after)["keywords"]


async def test_unknown_collection_shows_an_empty_library(library_server: LiveServer) -> None:
    async with mcp_client(f"{library_server.mcp_url}?collections=no-such-project") as client:
        result = await client.call_tool("get_paper_details", {"paper_id": "he2016deep"})
    assert tool_error(result)["code"] == "not_found"

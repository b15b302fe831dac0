"""A locked-down deployment: MCP_AUTH_TOKEN, MCP_READ_ONLY and MCP_REQUIRE_COLLECTION, on a
server bound to every interface."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from mcp import MCPError

from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    mcp_client,
    non_loopback_address,
    post,
    rpc,
    running_server,
    tool_data,
)

pytestmark = [pytest.mark.server]

TOKEN = "test-token-0123456789"
AUTH = {"authorization": f"Bearer {TOKEN}"}
WRITE_TOOLS = {"create_project", "manage_paper_keywords", "delete_project"}


@pytest.fixture(scope="module")
def restricted_server(knowledge_base: KnowledgeBase) -> Iterator[LiveServer]:
    env = {"MCP_AUTH_TOKEN": TOKEN, "MCP_READ_ONLY": "true", "MCP_REQUIRE_COLLECTION": "true"}
    everywhere = "0.0.0.0"  # noqa: S104 - the token test connects from a non-loopback address
    with running_server(knowledge_base, host=everywhere, env=env) as server:
        yield server


def test_request_without_token_is_401_with_bearer_challenge(restricted_server: LiveServer) -> None:
    response = post(restricted_server.mcp_url, rpc("ping"))
    assert response.status_code == 401
    assert response.headers["www-authenticate"].startswith("Bearer")
    assert "Authorization: Bearer" in response.json()["error"]["message"]


def test_request_with_wrong_token_is_401(restricted_server: LiveServer) -> None:
    response = post(
        restricted_server.mcp_url, rpc("ping"), headers={"authorization": "Bearer nope"}
    )
    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["www-authenticate"]


def test_request_with_token_is_served(restricted_server: LiveServer) -> None:
    response = post(restricted_server.mcp_url, rpc("ping"), headers=AUTH)
    assert response.status_code == 200
    assert response.json()["result"] == {}


def test_client_on_another_machine_with_token_is_served(restricted_server: LiveServer) -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to connect from")
    response = post(
        f"http://{address}:{restricted_server.port}/mcp",
        rpc("ping"),
        headers={**AUTH, "host": f"localhost:{restricted_server.port}"},
    )
    assert response.status_code == 200


@pytest.mark.anyio
async def test_read_only_mode_neither_lists_nor_runs_write_tools(
    restricted_server: LiveServer,
) -> None:
    url = f"{restricted_server.mcp_url}?collections=vision"
    async with mcp_client(url, headers=AUTH) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        with pytest.raises(MCPError) as raised:
            await client.call_tool("create_project", {"name": "Sneaky"})
    assert "get_paper_details" in names
    assert names.isdisjoint(WRITE_TOOLS)
    assert raised.value.error.code == -32602
    assert "read-only" in raised.value.error.message


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_unscoped_client_gets_32603_explaining_how_to_choose_a_collection(
    restricted_server: LiveServer, mode: str
) -> None:
    async with mcp_client(restricted_server.mcp_url, mode=mode, headers=AUTH) as client:
        tools = await client.list_tools()  # discovery works before choosing
        with pytest.raises(MCPError) as call:
            await client.call_tool("get_paper_details", {"paper_id": "he2016deep"})
        with pytest.raises(MCPError) as read:
            await client.read_resource("papers://vision")
    assert tools.tools
    for raised in (call, read):
        assert raised.value.error.code == -32603
        assert "?collections=" in raised.value.error.message
        assert "--collections" in raised.value.error.message


@pytest.mark.anyio
async def test_scoped_client_is_served_in_read_only_mode(restricted_server: LiveServer) -> None:
    async with mcp_client(
        f"{restricted_server.mcp_url}?collections=vision", headers=AUTH
    ) as client:
        result = await client.call_tool("get_paper_details", {"paper_id": "he2016deep"})
    assert tool_data(result)["citekey"] == "he2016deep"

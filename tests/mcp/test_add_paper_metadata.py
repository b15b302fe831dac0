"""add_paper from metadata alone (no engine: offline), through /mcp with the SDK client:
created once, then found again as imports find duplicates, filed into the scoped client's
collection, and never a way into a paper outside it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import MCPError

from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    mcp_client,
    running_server,
    seeded_knowledge_base,
    tool_data,
    tool_error,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

PAPER = {
    "title": "Creep Buckling of Columns Under Sustained Load",
    "authors": ["Nicholas J. Hoff", "Bruno A. Boley"],
    "year": 1956,
    "venue": "Journal of the Aeronautical Sciences",
    "url": "https://doi.org/10.2514/8.3511",
}


@pytest.fixture(scope="module")
def own_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    directory: Path = tmp_path_factory.mktemp("add-paper-metadata")
    with seeded_knowledge_base(directory, label="addmeta") as kb:
        yield kb


@pytest.fixture(scope="module")
def server(own_kb: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(own_kb) as live:  # engines: local only, as offline
        yield live


async def test_a_paper_from_its_metadata_is_created_once_then_found_as_imports_find_it(
    server: LiveServer,
) -> None:
    async with mcp_client(server.mcp_url) as client:
        first = tool_data(await client.call_tool("add_paper", PAPER))
        again = tool_data(await client.call_tool("add_paper", {**PAPER, "url": None}))
        by_doi = tool_data(await client.call_tool("add_paper", {"identifier": "10.2514/8.3511"}))
    assert first["created"] is True
    record = first["paper"]
    assert record["title"] == PAPER["title"]
    assert record["year"] == 1956 and record["authors"] == PAPER["authors"]
    assert record["venue"] == PAPER["venue"]
    assert record["doi"] == "10.2514/8.3511"  # read out of the URL
    assert first["engines"] == {}  # no engine was asked
    assert again["created"] is False and again["paper"]["paper_id"] == record["paper_id"]
    assert by_doi["created"] is False and by_doi["paper"]["paper_id"] == record["paper_id"]


async def test_metadata_of_a_library_paper_returns_it(
    server: LiveServer, own_kb: KnowledgeBase
) -> None:
    attention = own_kb.paper("attention")["paper_id"]
    same = {"title": "Attention is all you need.", "authors": ["A. Vaswani"], "year": 2017}
    async with mcp_client(server.mcp_url) as client:
        answer = tool_data(await client.call_tool("add_paper", same))
    assert answer["created"] is False
    assert answer["paper"]["paper_id"] == attention


async def test_a_scoped_client_files_a_new_paper_into_its_collection_and_never_reaches_another(
    server: LiveServer, own_kb: KnowledgeBase
) -> None:
    attention = own_kb.paper("attention")["paper_id"]
    async with mcp_client(f"{server.mcp_url}?collections=Vision") as client:
        new = tool_data(
            await client.call_tool(
                "add_paper",
                {"title": "Residual Flows at Scale", "authors": ["Ann Other"], "year": 2024},
            )
        )
        outside = await client.call_tool(
            "add_paper", {"title": "Attention Is All You Need", "year": 2017}
        )
    async with mcp_client(server.mcp_url) as client:
        still = tool_data(await client.call_tool("get_paper_details", {"paper_id": attention}))
    assert new["created"] is True and new["paper"]["projects"] == ["vision"]
    error = tool_error(outside)
    assert error["code"] == "outside_collections"
    assert "Vaswani" not in str(error)
    assert still["projects"] == [own_kb.project("nlp")]


async def test_no_identifier_and_no_title_is_a_clear_invalid_argument(server: LiveServer) -> None:
    async with mcp_client(server.mcp_url) as client:
        with pytest.raises(MCPError) as missing:
            await client.call_tool("add_paper", {"year": 2020})
        with pytest.raises(MCPError) as blank:
            await client.call_tool("add_paper", {"title": "   "})
    assert missing.value.error.code == -32602 and "title" in missing.value.error.message
    assert blank.value.error.code == -32602

"""Query understanding over /mcp with the SDK's own client (issue 38): `search_papers`
reads 'by Devlin' and 'since 2017' as filters, says so in its notes, and a scoped client's
reading only knows the authors of its collections."""

from __future__ import annotations

from typing import Any

import pytest

from tests.mcp.conftest import KnowledgeBase, LiveServer, mcp_client, tool_data

pytestmark = [pytest.mark.server, pytest.mark.anyio]


def titles(result: Any) -> list[str]:
    assert not result.is_error, result
    return [item["title"] for item in tool_data(result)["results"]]


async def test_search_papers_reads_an_author_and_a_year_and_says_so(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    bert = "BERT: Pre-training of Deep Bidirectional Transformers"
    resnet = "Deep Residual Learning for Image Recognition"
    async with mcp_client(library_server.mcp_url) as client:
        plain = await client.call_tool("search_papers", {"query": "deep", "engines": "local"})
        by = await client.call_tool(
            "search_papers", {"query": "deep learning by Devlin", "engines": "local"}
        )
        since = await client.call_tool(
            "search_papers", {"query": "deep networks since 2017", "engines": "local"}
        )
        quoted = await client.call_tool(
            "search_papers", {"query": 'deep "since 2017"', "engines": "local"}
        )
    assert set(titles(plain)) == {bert, resnet}
    assert titles(by) == [bert]
    assert any("as the author Devlin" in note for note in tool_data(by)["notes"])
    assert bert in titles(since) and resnet not in titles(since)  # 2019 and 2016
    assert any("2017 or later" in note for note in tool_data(since)["notes"])
    # Quoted words are searched as written: no year filter.
    assert not any("understood" in note for note in tool_data(quoted)["notes"])
    # A scoped client: Devlin has no paper in its collection, so 'by Devlin' is words.
    url = f"{library_server.mcp_url}?collections={knowledge_base.project('vision')}"
    async with mcp_client(url) as client:
        scoped = await client.call_tool(
            "search_papers", {"query": "deep learning by Devlin", "engines": "local"}
        )
    assert titles(scoped) == [resnet]
    assert not any("Devlin" in note for note in tool_data(scoped)["notes"])

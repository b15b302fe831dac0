"""A server's first typo query after a start (issue 37, goal 4): the typo-tolerance
vocabulary is built behind start-up, so once the warm-up has logged it, the first misspelt
query is corrected, over /mcp with the SDK's client against a real server process."""

from __future__ import annotations

import time

import pytest

from tests.mcp.conftest import (
    VOCABULARY_LOADED,
    KnowledgeBase,
    mcp_client,
    running_server,
    tool_data,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]


async def test_the_first_typo_query_after_a_start_is_corrected_once_warm_up_ends(
    knowledge_base: KnowledgeBase,
) -> None:
    with running_server(knowledge_base) as server:
        deadline = time.monotonic() + 120
        while "Search warm-up done" not in server.log() and time.monotonic() < deadline:
            assert "typo-tolerance vocabulary failed" not in server.log()
            assert "search warm-up failed" not in server.log()
            time.sleep(0.1)
        log = server.log()
        assert VOCABULARY_LOADED in log, log
        # The rehearsed searches ran after the vocabulary was built, inside the server.
        assert log.index(VOCABULARY_LOADED) < log.index("Search warm-up done"), log
        assert "tools/call" not in log  # built at start, not by a query
        # `serve` (one process) starts the warm-up before uvicorn imports the application,
        # the models before the database is even checked, so they load while it starts.
        starting = log.index("Waiting for application startup")
        assert log.index("Loading the embedding models in the background") < starting, log
        assert log.index("Building the typo-tolerance vocabulary") < starting, log
        async with mcp_client(server.mcp_url) as client:
            result = await client.call_tool("search_papers", {"query": "atention"})
    answer = tool_data(result)
    assert [hit["title"] for hit in answer["results"]] == ["Attention Is All You Need"]
    assert not any("still loading" in note for note in answer.get("notes", [])), answer

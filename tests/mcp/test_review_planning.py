"""The review planner's queries mean what they say, over /mcp with the SDK client: its
first query finds only the papers with all of the question's key terms, the broad one any
of them, and the same library paper returned by both is one record identified, not a
duplicate removed (docs/REVIEW.md "Counts"). The library is filled through search_papers
from a plugin engine answering from a local replay server.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply
from tests.mcp.builders import review_backend
from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

SOURCE = "plan_src"
QUESTION = "sparse attention for long documents"
ALL_TERMS = [f"Sparse attention over long documents, part {n}" for n in range(4)]
SOME_TERMS = [f"Attention in the visual cortex, part {n}" for n in range(4)]


def records() -> list[dict[str, Any]]:
    return [
        {"title": title, "authors": [f"Author {n}"], "year": 2020, "doi": f"10.9999/plan.{n}"}
        for n, title in enumerate(ALL_TERMS + SOME_TERMS)
    ]


@pytest.fixture(scope="module")
def planning_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    source = ReplayServer().start()
    source.add(f"/{SOURCE}/search", Reply(200, records()))
    directory = tmp_path_factory.mktemp("planning-kb")
    write_plugin(directory / "engines", SOURCE, f"{source.url}/{SOURCE}", timeout=30)
    try:
        with server_database("mcpplan") as database_url:
            env = base_env(directory, database_url)
            env.update(ENGINES_ENABLED=f"local,{SOURCE}", EMBEDDINGS_ENABLED="false")
            kb = KnowledgeBase(directory, env)
            with review_backend(kb) as (extra, _), running_server(kb, env=extra) as server:
                yield server
    finally:
        source.stop()


async def test_the_first_query_needs_every_key_term_and_a_paper_found_twice_is_no_duplicate(
    planning_server: LiveServer,
) -> None:
    async with mcp_client(planning_server.mcp_url) as client:
        kept = tool_data(
            await client.call_tool("search_papers", {"query": "attention", "engines": [SOURCE]})
        )
        assert kept["saved"] == len(ALL_TERMS + SOME_TERMS)
        state = tool_data(await client.call_tool("start_review", {"query": QUESTION}))
        plan = state["checkpoint"]["payload"]["plan"]
        state = tool_data(
            await client.call_tool(
                "decide",
                {"session_id": state["session_id"], "action": "edit",
                 "data": {"engines": ["local"]}, "checkpoint": 1},
            )
        )  # fmt: skip
        page = tool_data(
            await client.call_tool("get_session", {"session_id": state["session_id"], "limit": 20})
        )
        await client.call_tool("cleanup_review", {"session_id": state["session_id"]})

    strict, broad = plan["queries"][:2]
    assert strict == "sparse AND attention AND long AND documents"
    assert broad == "sparse OR attention OR long OR documents"
    assert "all of" in plan["rationale"][0] and "any of" in plan["rationale"][1]
    found_by = {
        item["title"]: item["queries"] for item in page["checkpoint"]["candidates"]["items"]
    }
    assert [found_by[title] for title in ALL_TERMS] == [[1, 2]] * len(ALL_TERMS)
    assert [found_by[title] for title in SOME_TERMS] == [[2]] * len(SOME_TERMS)
    counts = state["counts"]
    # 8 papers, 4 of them returned by both queries: 8 records identified, none removed.
    assert counts["identified"] == {"local": 8} and counts["duplicates_removed"] == 0
    assert counts["screened"] == 8

"""The multi-engine tools over /mcp with the SDK client, against a real server whose engines
are plugins in its knowledge base calling a local HTTP server: parallel search with a
failing engine, merging into the library, project tagging, citing papers, read-only mode
and the engine listing.

On the PostgreSQL + Redis run the server hands engine calls to the Celery workers, so the
plugins are also written where the workers look (this test run's RESEARCH_DIRECTORY).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from mcp import MCPError

from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply
from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    SEED_SCRIPT,
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
    tool_error,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

ENGINES = ("fake_arxiv", "fake_scholar", "fake_down")
# The seeded "Attention Is All You Need" as two engines describe it: arXiv by its arXiv id
# (no DOI), Scholar by its DOI with a cites_id. Both must land on the seeded paper.
ATTENTION_ARXIV = {
    "title": "Attention is All you Need",
    "authors": ["Ashish Vaswani", "Noam Shazeer"],
    "year": 2017,
    "arxiv_id": "1706.03762",
    "abstract": "We propose a new simple network architecture, the Transformer.",
}
ATTENTION_SCHOLAR = {
    "title": "Attention is all you need",
    "authors": ["A Vaswani", "N Shazeer"],
    "year": 2017,
    "doi": "10.5555/3295222.3295349",
    "cites_id": "2960712678066186980",
    "citation_count": 150000,
}
NEW_PAPER = {
    "title": "Reformer: The Efficient Transformer",
    "authors": ["Nikita Kitaev", "Lukasz Kaiser"],
    "year": 2020,
    "arxiv_id": "2001.04451",
}
CITING_PAPER = {
    "title": "Longformer: The Long-Document Transformer",
    "authors": ["Iz Beltagy", "Matthew E. Peters"],
    "year": 2020,
    "arxiv_id": "2004.05150",
}


@pytest.fixture(scope="module")
def source() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    server.add("/fake_arxiv/search", Reply(200, [ATTENTION_ARXIV, NEW_PAPER]))
    server.add("/fake_scholar/search", Reply(200, [ATTENTION_SCHOLAR]))
    server.add("/fake_scholar/citing", Reply(200, [CITING_PAPER]))
    server.add("/fake_down/search", Reply(400, {"error": "bad"}))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def engines_kb(
    tmp_path_factory: pytest.TempPathFactory, source: ReplayServer
) -> Iterator[KnowledgeBase]:
    """A knowledge base of its own (searches here add papers), with the plugin engines."""
    directory = tmp_path_factory.mktemp("engines-kb")
    worker_plugins = Path(settings.ENGINES_DIR)
    written = []
    for engine_id in ENGINES:
        for folder in (directory / "engines", worker_plugins):
            written.append(write_plugin(folder, engine_id, f"{source.url}/{engine_id}"))
    with server_database("mcpeng") as database_url:
        env = base_env(directory, database_url)
        env["ENGINES_ENABLED"] = ",".join(ENGINES)
        seeded = subprocess.run(
            [PYTHON, str(SEED_SCRIPT)], env=env, cwd=ROOT, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        yield KnowledgeBase(directory, env, json.loads(seeded.stdout.strip().splitlines()[-1]))
    for path in written:
        path.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def engines_server(engines_kb: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(engines_kb) as server:
        yield server


async def call(url: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(url) as client:
        return await client.call_tool(tool, arguments)


async def test_search_papers_asks_engines_in_parallel_and_merges_into_the_library(
    engines_server: LiveServer, engines_kb: KnowledgeBase, source: ReplayServer
) -> None:
    url = engines_server.mcp_url
    arguments = {"query": "attention transformer", "engines": ["local", *ENGINES]}
    result = await call(url, "search_papers", arguments)
    assert not result.is_error, result
    page = tool_data(result)
    statuses = {name: status["status"] for name, status in page["engines"].items()}
    assert statuses == {
        "local": "ok", "fake_arxiv": "ok", "fake_scholar": "ok", "fake_down": "error",
    }  # fmt: skip
    assert "bad request 400" in page["engines"]["fake_down"]["message"]
    by_title = {entry["title"]: entry for entry in page["results"]}
    # The seeded paper appears once, found by the library and both engines.
    attention = by_title["Attention Is All You Need"]
    assert attention["paper_id"] == engines_kb.paper("attention")["paper_id"]
    assert attention["engines"] == ["local", "fake_arxiv", "fake_scholar"]
    assert len([e for e in page["results"] if "attention" in e["title"].lower()]) == 1
    # The new paper was saved: its paper_id works with the other tools.
    reformer = by_title["Reformer: The Efficient Transformer"]
    assert reformer["engines"] == ["fake_arxiv"] and page["saved"] == 1
    async with mcp_client(url) as client:
        details = await client.call_tool("get_paper_details", {"paper_id": reformer["paper_id"]})
        merged = await client.call_tool("get_paper_details", {"paper_id": attention["paper_id"]})
    assert tool_data(details)["arxiv_id"] == "2001.04451"
    record = tool_data(merged)
    # Merged: the arXiv id from one engine, the Scholar handle from the other.
    assert record["arxiv_id"] == "1706.03762" and record["cites_id"] == "2960712678066186980"
    # A second identical search creates nothing new.
    again = await call(url, "search_papers", arguments)
    assert not again.is_error  # some engines failing is still an answer
    assert tool_data(again)["saved"] == 0
    # The failure is said once, in the engine's own status, not again in the notes.
    assert "bad request 400" in tool_data(again)["engines"]["fake_down"]["message"]
    assert not any("fake_down" in note for note in tool_data(again)["notes"])


async def test_project_id_adds_every_result_to_the_project(
    engines_server: LiveServer,
) -> None:
    url = engines_server.mcp_url
    async with mcp_client(url) as client:
        await client.call_tool("create_project", {"name": "Efficient Transformers"})
        found = await client.call_tool(
            "search_papers",
            {
                "query": "reformer",
                "engines": ["fake_arxiv"],
                "project_id": "Efficient Transformers",
            },
        )
        listed = await client.call_tool(
            "list_project_papers", {"project_id": "Efficient Transformers"}
        )
    assert tool_data(found)["project_id"] == "efficient-transformers"
    titles = {paper["title"] for paper in tool_data(listed)["papers"]}
    assert titles == {"Attention Is All You Need", "Reformer: The Efficient Transformer"}


async def test_citing_papers_come_from_engines_and_are_remembered(
    engines_server: LiveServer, engines_kb: KnowledgeBase
) -> None:
    url = engines_server.mcp_url
    attention = engines_kb.paper("attention")["paper_id"]
    async with mcp_client(url) as client:
        external = await client.call_tool(
            "get_citing_papers", {"paper_id": attention, "engines": ["local", "fake_scholar"]}
        )
        local = await client.call_tool(
            "get_citing_papers", {"paper_id": attention, "engines": "local"}
        )
        unsupported = await client.call_tool(
            "get_citing_papers", {"paper_id": attention, "engines": "no_such_engine"}
        )
    assert [p["title"] for p in tool_data(external)["results"]] == [CITING_PAPER["title"]]
    # Recorded as a citation in the library: the local engine now knows it too.
    assert [p["title"] for p in tool_data(local)["results"]] == [CITING_PAPER["title"]]
    assert tool_data(local)["engines"]["local"]["status"] == "ok"
    assert tool_data(unsupported)["engines"]["no_such_engine"]["status"] == "unavailable"


async def test_engines_are_listed_with_availability_limits_and_cache(
    engines_server: LiveServer,
) -> None:
    async with mcp_client(engines_server.mcp_url) as client:
        listing = await client.call_tool("list_search_engines", {})
        resource = await client.read_resource("engines://list")
        categories = await client.call_tool(
            "get_search_engine_categories", {"engines": ["local", "fake_arxiv"]}
        )
    engines = {engine["id"]: engine for engine in tool_data(listing)["engines"]}
    assert list(engines) == ["local", *sorted(ENGINES)]
    assert engines["fake_arxiv"]["is_available"] is True
    assert engines["fake_arxiv"]["rate_limit"]["limit"] == "1000 per 1 second"
    assert set(engines["fake_arxiv"]["cache"]) >= {"hits", "misses", "ttl_seconds"}
    text = resource.contents[0].text
    assert "| fake_scholar |" in text and "| local |" in text
    per_engine = tool_data(categories)["engines"]
    assert per_engine["fake_arxiv"]["status"] == "unsupported"
    assert (
        per_engine["local"]["status"] == "ok" and "list_top_facets" in per_engine["local"]["note"]
    )


async def test_read_only_server_returns_external_results_without_saving(
    engines_kb: KnowledgeBase,
) -> None:
    with running_server(engines_kb, env={"MCP_READ_ONLY": "true"}) as server:
        async with mcp_client(server.mcp_url) as client:
            tools = {tool.name for tool in (await client.list_tools()).tools}
            result = await client.call_tool(
                "search_papers",
                {"query": "novel", "engines": ["fake_scholar"], "project_id": "Vision"},
            )
    assert "search_papers" in tools and "add_paper" not in tools
    page = tool_data(result)
    assert [entry.get("paper_id") for entry in page["results"]] == [None]
    assert page["results"][0]["doi"] == ATTENTION_SCHOLAR["doi"]
    assert any("Read-only" in note for note in page["notes"])


async def test_read_only_server_searches_the_library_with_the_engines(
    engines_kb: KnowledgeBase,
) -> None:
    """Issue 18: library hits in read-only mode lacked `engines` (a -32603 error)."""
    attention = engines_kb.paper("attention")["paper_id"]
    with running_server(engines_kb, env={"MCP_READ_ONLY": "true"}) as server:
        async with mcp_client(server.mcp_url) as client:
            searched = await client.call_tool(
                "search_papers", {"query": "attention", "engines": ["local", "fake_arxiv"]}
            )
            by_author = await client.call_tool(
                "search_by_author", {"author_name": "Vaswani", "engines": ["local", "fake_arxiv"]}
            )
    for result in (searched, by_author):
        assert not result.is_error, result.content
        entries = tool_data(result)["results"]
        local = [entry for entry in entries if entry.get("paper_id") == attention]
        assert local and local[0]["engines"] == ["local"]
    unsaved = [e for e in tool_data(searched)["results"] if e.get("paper_id") is None]
    assert unsaved and unsaved[0]["engines"] == ["fake_arxiv"]


async def test_engine_arguments_are_validated(engines_server: LiveServer) -> None:
    url = engines_server.mcp_url
    async with mcp_client(url) as client:
        with pytest.raises(MCPError) as too_many:
            await client.call_tool("search_papers", {"query": "x", "engines": ["a"] * 21})
    assert too_many.value.error.code == -32602
    assert "at most 20" in too_many.value.error.message.lower()
    bad_project = await call(
        url, "search_papers", {"query": "x", "engines": ["fake_arxiv"], "project_id": "nope"}
    )
    assert tool_error(bad_project)["code"] == "not_found"


async def test_add_paper_finds_a_paper_already_in_the_library_without_asking_engines(
    engines_server: LiveServer, engines_kb: KnowledgeBase
) -> None:
    async with mcp_client(engines_server.mcp_url) as client:
        existing = await client.call_tool(
            "add_paper", {"identifier": "https://doi.org/10.5555/3295222.3295349"}
        )
        with pytest.raises(MCPError) as unrecognised:
            await client.call_tool("add_paper", {"identifier": "not an identifier"})
    added = tool_data(existing)
    assert added["created"] is False
    assert added["paper"]["paper_id"] == engines_kb.paper("attention")["paper_id"]
    assert added["engines"] == {} and "Already in the library" in added["notes"][0]
    assert unrecognised.value.error.code == -32602


async def test_related_papers_use_citations_fetched_from_engines(
    engines_server: LiveServer, engines_kb: KnowledgeBase
) -> None:
    attention = engines_kb.paper("attention")["paper_id"]
    async with mcp_client(engines_server.mcp_url) as client:
        related = await client.call_tool(
            "find_related_papers",
            {"paper_id": attention, "similarity_threshold": 0.0, "engines": ["fake_scholar"]},
        )
        strict = await client.call_tool("find_related_papers", {"paper_id": attention})
    page = tool_data(related)
    assert page["paper"]["paper_id"] == attention
    assert page["engines"]["fake_scholar"]["status"] == "ok"
    by_title = {entry["title"]: entry for entry in page["results"]}
    # The citing paper the engine reported is now related through the citation.
    longformer = by_title[CITING_PAPER["title"]]
    assert longformer["reasons"]["cites_paper"] is True and longformer["similarity"] > 0
    assert all(0 <= entry["similarity"] <= 1 for entry in page["results"])
    assert tool_data(strict)["similarity_threshold"] == 0.45  # measured: docs/SEARCH.md
    assert tool_data(strict)["engines"] == {}


async def test_trends_count_a_projects_papers_per_year(
    engines_server: LiveServer,
) -> None:
    async with mcp_client(engines_server.mcp_url) as client:
        timeline = await client.call_tool(
            "analyze_paper_trends", {"analysis_type": "timeline", "project_id": "NLP Reading"}
        )
        with pytest.raises(MCPError) as invalid:
            await client.call_tool(
                "analyze_paper_trends", {"analysis_type": "moods", "project_id": "NLP Reading"}
            )
    items = tool_data(timeline)["items"]
    assert [item["year"] for item in items] == list(range(items[0]["year"], 2020))
    counts = {item["year"]: item["paper_count"] for item in items}
    assert counts[2017] >= 1 and counts[2018] == 0 and counts[2019] == 1
    assert invalid.value.error.code == -32602 and "timeline" in invalid.value.error.message


async def test_a_pasted_abstract_reaches_the_engines_as_its_first_content_words(
    engines_server: LiveServer, source: ReplayServer
) -> None:
    # A 4,000-character text ranks the library by all of it, but engines get a query
    # their search can take: its first 12 distinct content words, with a note saying so.
    abstract = (
        "The dominant sequence transduction models are based on complex recurrent or "
        "convolutional neural networks that include an encoder and a decoder. "
    ) * 25
    assert 500 < len(abstract) <= 4000
    before = len(source.requests)
    result = await call(
        engines_server.mcp_url, "search_papers", {"query": abstract, "engines": ["fake_arxiv"]}
    )
    page = tool_data(result)
    sent = [r.query["q"][0] for r in source.requests[before:] if r.path == "/fake_arxiv/search"]
    expected = (
        "dominant sequence transduction models based complex recurrent convolutional "
        "neural networks include encoder"
    )
    assert sent == [expected]
    assert any(expected in note for note in page["notes"])

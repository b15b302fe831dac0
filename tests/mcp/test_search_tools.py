"""The `search` tools over /mcp with the SDK's own client, against a real server process:
full-text, keyword, payload (glob) and author search, facets, limits and collection scope."""

from __future__ import annotations

import importlib.util
from typing import Any

import pytest
from mcp import MCPError

from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    call_tool_raw,
    mcp_client,
    tool_data,
    tool_error,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

LIBRARY_SEARCH_TOOLS = {
    "search_papers_by_keyword", "search_papers_by_payload", "search_papers_semantic",
    "list_top_facets", "list_search_engines", "get_search_engine_categories",
}  # fmt: skip
# These ask external engines too and add what they find to the library.
ENGINE_SEARCH_TOOLS = {"search_papers", "search_by_author"}


async def call(url: str, tool: str, arguments: dict[str, Any], mode: str = "legacy") -> Any:
    async with mcp_client(url, mode=mode) as client:
        return await client.call_tool(tool, arguments)


def titles(result: Any) -> list[str]:
    assert not result.is_error, result
    return [item["title"] for item in tool_data(result)["results"]]


@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_search_tools_are_listed_read_only_with_bounded_inputs(
    library_server: LiveServer, mode: str
) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= LIBRARY_SEARCH_TOOLS | ENGINE_SEARCH_TOOLS
    for name in LIBRARY_SEARCH_TOOLS | ENGINE_SEARCH_TOOLS:
        tool = tools[name]
        assert tool.annotations is not None, name
        if name in ENGINE_SEARCH_TOOLS:
            hints = tool.annotations
            # Searches only read what the user made; found papers are kept as a cache.
            assert hints.read_only_hint is True and hints.destructive_hint is False, name
            assert hints.open_world_hint is True and hints.idempotent_hint is True, name
        else:
            assert tool.annotations.read_only_hint is True, name
        assert tool.output_schema is None, name
        assert tool.title and tool.description and len(tool.description) > 60, name
    search = tools["search_papers"].input_schema["properties"]
    # Size guards are enforced (test_limits_are_32602), not listed: they cost every turn.
    assert "maxLength" not in str(tools["search_papers"].input_schema)
    assert search["query"]["minLength"] == 1
    assert search["limit"]["maximum"] == 100 and search["limit"]["default"] == 5
    assert search["offset"]["maximum"] == 10_000
    assert "paper_id" in (tools["search_papers"].description or "")
    payload = tools["search_papers_by_payload"].input_schema
    assert "venue" in str(payload) and "has_pdf" in str(payload)
    facet = tools["list_top_facets"].input_schema["properties"]["category"]
    assert "author" in str(facet) and "tag" in str(facet)


async def test_search_papers_ranks_local_hits_with_snippets_and_engine_status(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    result = await call(library_server.mcp_url, "search_papers", {"query": "residual image"})
    page = tool_data(result)
    assert titles(result)[0] == "Deep Residual Learning for Image Recognition"
    hit = page["results"][0]
    assert hit["paper_id"] == knowledge_base.paper("resnet")["paper_id"]
    assert hit["year"] == 2016 and hit["venue"] == "CVPR" and hit["engine"] == "local"
    assert "**" in hit["snippet_markdown"] and hit["score"] > 0
    assert page["engines"] == {
        "local": {
            "status": "ok", "outcome": "ok", "count": len(page["results"]),
            "total": page["total"], "mode": page["mode"],
        }
    }  # fmt: skip
    assert page["has_more"] is False and page.get("next_offset") is None


async def test_search_results_carry_the_identifiers_an_agent_maps_back_by(
    library_server: LiveServer,
) -> None:
    arguments = {"query": "attention OR bert OR project", "engines": "local"}
    page = tool_data(await call(library_server.mcp_url, "search_papers", arguments))
    hits = {hit["title"]: hit for hit in page["results"]}
    assert hits["Attention Is All You Need"]["doi"] == "10.5555/3295222.3295349"
    assert hits["BERT: Pre-training of Deep Bidirectional Transformers"]["arxiv_id"] == "1810.04805"
    assert hits["A Paper In No Project"]["source_id"] == "note-g"
    # an identifier the paper lacks costs nothing
    assert "source_id" not in hits["Attention Is All You Need"]


@pytest.mark.parametrize("engines", [None, "local", ["local"], ["LOCAL", "local"]])
async def test_local_engine_can_be_named_in_every_form(
    library_server: LiveServer, engines: Any
) -> None:
    arguments = {"query": "attention", "engines": engines}
    result = await call(library_server.mcp_url, "search_papers", arguments)
    assert "Attention Is All You Need" in titles(result)


async def test_disabled_engines_are_reported_per_engine_and_the_rest_still_answers(
    library_server: LiveServer,
) -> None:
    # The test servers run with ENGINES_ENABLED=local: every external engine is disabled.
    arguments = {"query": "attention", "engines": ["local", "arxiv"]}
    result = await call(library_server.mcp_url, "search_papers", arguments)
    assert "Attention Is All You Need" in titles(result)
    arxiv = tool_data(result)["engines"]["arxiv"]
    assert arxiv["status"] == "unavailable" and "disabled" in arxiv["message"]
    assert tool_data(result)["engines"]["local"]["status"] == "ok"
    alone = await call(
        library_server.mcp_url, "search_by_author",
        {"author_name": "Vaswani", "engines": "google_scholar"},
    )  # fmt: skip
    # Nothing found and no engine could answer: an error naming the engine, not an empty page.
    error = tool_error(alone)
    assert error["code"] == "engines_unavailable"
    assert error["engines"]["google_scholar"]["status"] == "unavailable"
    # The error still says how the library read the query, as a page's notes do.
    understood = await call(
        library_server.mcp_url, "search_papers",
        {"query": "papers by Vaswani on zebras since 2015", "engines": ["local", "arxiv"]},
    )  # fmt: skip
    error = tool_error(understood)
    assert error["code"] == "engines_unavailable" and "no match in the library" in error["message"]
    assert any("author=Vaswani" in note for note in error["notes"]), error


async def test_search_papers_combines_text_with_filters_dates_and_project(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    url = library_server.mcp_url
    # "deep" is in the ResNet title and the BERT title ("Deep Bidirectional")
    both = await call(url, "search_papers", {"query": "deep"})
    assert set(titles(both)) >= {
        "Deep Residual Learning for Image Recognition",
        "BERT: Pre-training of Deep Bidirectional Transformers",
    }
    venue = await call(url, "search_papers", {"query": "deep", "filters": {"venue": "N*"}})
    assert titles(venue) == ["BERT: Pre-training of Deep Bidirectional Transformers"]
    assert tool_data(venue)["filters"] == {"venue": "N*"}
    dated = await call(url, "search_papers", {"query": "deep", "date_to": "2016-12-31"})
    assert titles(dated) == ["Deep Residual Learning for Image Recognition"]
    project = await call(
        url, "search_papers", {"query": "deep", "filters": {"project": "NLP Reading"}}
    )
    assert titles(project) == ["BERT: Pre-training of Deep Bidirectional Transformers"]
    assert tool_data(project)["filters"]["project"] == "NLP Reading"
    unknown = await call(url, "search_papers", {"query": "deep", "project_id": "no-such"})
    assert tool_error(unknown)["code"] == "not_found"


async def test_keyword_search_is_case_insensitive_exact_or_prefix(
    library_server: LiveServer,
) -> None:
    url = library_server.mcp_url
    exact = await call(url, "search_papers_by_keyword", {"keyword": "TRANSFORMER"})
    assert titles(exact) == ["Attention Is All You Need"]
    hit = tool_data(exact)["results"][0]
    assert "**transformer**" in hit["snippet_markdown"] and hit["venue"] == "NeurIPS"
    assert tool_data(exact)["mode"] == "keyword"
    prefix = await call(url, "search_papers_by_keyword", {"keyword": "trans", "match": "prefix"})
    assert titles(prefix) == ["Attention Is All You Need"]
    none = await call(url, "search_papers_by_keyword", {"keyword": "trans"})
    assert tool_data(none)["total"] == 0 and titles(none) == []


async def test_payload_search_with_glob_patterns_and_pages(library_server: LiveServer) -> None:
    url = library_server.mcp_url
    venues = await call(url, "search_papers_by_payload", {"payload": {"venue": "n*"}})
    assert titles(venues) == [
        "BERT: Pre-training of Deep Bidirectional Transformers", "Attention Is All You Need",
    ]  # fmt: skip
    doi = await call(url, "search_papers_by_payload", {"payload": {"doi": "10.5555/*"}})
    assert titles(doi) == ["Attention Is All You Need"]
    first = await call(
        url, "search_papers_by_payload", {"payload": {"year": "1800-2020"}, "limit": 1}
    )
    page = tool_data(first)
    assert page["total"] >= 4 and page["has_more"] and page["next_offset"] == 1
    assert page["mode"] == "payload"
    second = await call(
        url,
        "search_papers_by_payload",
        {"payload": {"year": [1800, 2020]}, "limit": 1, "offset": 1},
    )
    assert titles(second) != titles(first)


async def test_payload_with_unknown_key_is_32602_listing_the_allowed_keys(
    library_server: LiveServer,
) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        with pytest.raises(MCPError) as unknown:
            await client.call_tool("search_papers_by_payload", {"payload": {"journal": "x"}})
        with pytest.raises(MCPError) as empty:
            await client.call_tool("search_papers_by_payload", {"payload": {}})
        with pytest.raises(MCPError) as bad_year:
            await client.call_tool("search_papers_by_payload", {"payload": {"year": "soon"}})
    assert unknown.value.error.code == -32602
    assert "journal" in unknown.value.error.message and "venue" in unknown.value.error.message
    assert empty.value.error.code == -32602 and bad_year.value.error.code == -32602


async def test_top_author_facets_sorted_by_paper_count(library_server: LiveServer) -> None:
    url = library_server.mcp_url
    result = await call(url, "list_top_facets", {"category": "author", "limit": 20})
    page = tool_data(result)
    assert page["category"] == "author"
    counts = [value["paper_count"] for value in page["values"]]
    assert counts == sorted(counts, reverse=True) and len(counts) >= 7
    names = {value["name"] for value in page["values"]}
    assert {"Ashish Vaswani", "Kaiming He", "Ada Lovelace"} <= names
    venues = await call(url, "list_top_facets", {"category": "venue", "limit": 2})
    assert len(tool_data(venues)["values"]) == 2
    tags = await call(url, "list_top_facets", {"category": "tag"})
    assert {(v["name"], v["paper_count"]) for v in tool_data(tags)["values"]} >= {
        ("NLP Reading", 2), ("Vision", 1),
    }  # fmt: skip
    over_query = await call(url, "list_top_facets", {"category": "year", "query": "deep"})
    assert {v["name"] for v in tool_data(over_query)["values"]} == {"2016", "2019"}
    assert tool_data(over_query)["papers_considered"] == 2


async def test_search_by_author_accepts_name_forms_and_dates(library_server: LiveServer) -> None:
    url = library_server.mcp_url
    for name in ("Ashish Vaswani", "vaswani", "A. Vaswani", "Vaswani, Ashish"):
        result = await call(url, "search_by_author", {"author_name": name})
        assert titles(result) == ["Attention Is All You Need"], name
    assert tool_data(result)["engines"]["local"]["status"] == "ok"
    before = await call(url, "search_by_author", {"author_name": "Vaswani", "date_to": "2016"})
    assert tool_data(before)["total"] == 0


async def test_semantic_search_and_reranked_search_papers(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    url = library_server.mcp_url
    semantic = await call(
        url,
        "search_papers_semantic",
        {"query": "image recognition with residual networks", "top_k": 2},
    )
    page = tool_data(semantic)
    assert page["mode"] == "semantic" and 1 <= len(page["results"]) <= 2
    assert all(hit["engine"] == "local" and "score" in hit for hit in page["results"])
    scoped = await call(
        f"{url}?collections={knowledge_base.project('vision')}",
        "search_papers_semantic",
        {"query": "language model pre-training"},
    )
    assert titles(scoped) == ["Deep Residual Learning for Image Recognition"]
    hybrid = await call(url, "search_papers", {"query": "residual image", "rerank": True})
    assert tool_data(hybrid)["mode"] == "hybrid"
    assert tool_data(hybrid)["engines"]["local"]["mode"] == "hybrid"
    assert titles(hybrid)[0] == "Deep Residual Learning for Image Recognition"
    # The server (VECTOR_INDEX_APPROXIMATE_ABOVE=0) answered through the approximate index.
    if importlib.util.find_spec("usearch") is not None:
        assert "Approximate vector index of PaperEmbedding built" in library_server.log()


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("search_papers", {"query": "x" * 4001}, "query"),
        ("search_papers", {"query": "deep", "max_results": 101}, "limit"),
        ("search_papers", {"query": "deep", "offset": 10_001}, "offset"),
        ("search_papers", {"query": "deep", "date_from": "last year"}, "date_from"),
        ("search_papers", {}, "query"),
        ("search_papers_by_keyword", {"keyword": "a", "limit": 0}, "limit"),
        ("search_papers_by_keyword", {"keyword": "a", "match": "fuzzy"}, "match"),
        ("search_papers_by_payload", {"payload": {"venue": "a"}, "limit": 101}, "limit"),
        ("search_papers_semantic", {"query": "a", "top_k": 101}, "limit"),
        ("list_top_facets", {"category": "colour"}, "category"),
        ("list_top_facets", {"category": "author", "limit": 101}, "limit"),
        ("list_top_facets", {"category": "author", "query": "x" * 4001}, "query"),
        ("search_by_author", {"author_name": "x", "max_results": 500}, "limit"),
    ],
)
async def test_limits_are_32602(
    library_server: LiveServer, tool: str, arguments: dict[str, Any], field: str
) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(tool, arguments)
    assert raised.value.error.code == -32602
    assert any(e["field"].startswith(field) for e in raised.value.error.data["errors"])


def test_limit_errors_on_the_wire_are_jsonrpc_errors(library_server: LiveServer) -> None:
    response = call_tool_raw(library_server.mcp_url, "search_papers", {"query": "q" * 4001})
    assert response.json()["error"]["code"] == -32602


async def test_a_scoped_client_searches_only_its_collections(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    url = f"{library_server.mcp_url}?collections={knowledge_base.project('vision')}"
    async with mcp_client(url) as client:
        text = await client.call_tool("search_papers", {"query": "deep"})
        keyword = await client.call_tool("search_papers_by_keyword", {"keyword": "transformer"})
        payload = await client.call_tool("search_papers_by_payload", {"payload": {"year": "1000-"}})
        authors = await client.call_tool("list_top_facets", {"category": "author"})
        tags = await client.call_tool("list_top_facets", {"category": "tag"})
        by_author = await client.call_tool("search_by_author", {"author_name": "Vaswani"})
        other_project = await client.call_tool(
            "search_papers", {"query": "deep", "project_id": "NLP Reading"}
        )
    resnet = ["Deep Residual Learning for Image Recognition"]
    assert titles(text) == resnet and titles(payload) == resnet
    assert tool_data(keyword)["total"] == 0
    assert {v["name"] for v in tool_data(authors)["values"]} == {
        "Kaiming He", "Xiangyu Zhang",
    }  # fmt: skip
    assert [v["name"] for v in tool_data(tags)["values"]] == ["Vision"]
    assert tool_data(by_author)["total"] == 0
    assert tool_error(other_project)["code"] == "not_found"

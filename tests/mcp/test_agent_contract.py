"""The agent's contract over /mcp (issue 18), through the SDK client on real servers:
every tool in read-only mode, unknown arguments, aliases, disabled tools, lean answers."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from typing import Any

import pytest
from mcp import MCPError

from mcp_endpoint.registry import CORE_TOOLS, INVALID_PARAMS
from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    mcp_client,
    post,
    running_server,
    seeded_knowledge_base,
    tool_data,
)
from tests.papers.pdf.builders import PdfServer

pytestmark = [pytest.mark.server, pytest.mark.anyio]


@pytest.fixture(scope="module")
def read_only_server(knowledge_base: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(knowledge_base, env={"MCP_READ_ONLY": "true"}) as server:
        yield server


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


def sample_arguments(kb: KnowledgeBase) -> dict[str, dict[str, Any]]:
    """Arguments an agent could send to each tool on the seeded library."""
    attention = kb.paper("attention")["paper_id"]
    bert = kb.paper("bert")["citekey"]
    nlp = kb.project("nlp")
    return {
        "search_papers": {"query": "attention transformers", "engines": "local"},
        "search_by_author": {"author_name": "Vaswani", "engines": ["local"]},
        "search_papers_by_keyword": {"keyword": "transformer"},
        "search_papers_by_payload": {"payload": {"year": "2016-2019"}},
        "search_papers_semantic": {"query": "sequence models with attention"},
        "list_top_facets": {"category": "venue"},
        "list_search_engines": {},
        "get_search_engine_categories": {"engines": "local"},
        "get_paper_details": {"paper_id": attention},
        "get_paper_metadata": {"paper_id": bert},
        "list_projects": {},
        "get_project": {"project_id": nlp},
        "list_project_papers": {"project_id": nlp},
        "get_citing_papers": {"paper_id": attention, "engines": "local"},
        "find_related_papers": {"paper_id": attention},
        "analyze_paper_trends": {"analysis_type": "timeline", "project_id": nlp},
        "export_paper_bibtex": {"paper_id": attention},
        "get_pdf_outline": {"paper_id": attention},
        "read_pdf_pages": {"paper_id": attention, "pages": "1"},
        "list_annotations": {"paper_id": attention},
        "export_annotations": {"paper_id": attention},
        "get_paper_summary": {"paper_id": attention},
        "get_paper_source": {"paper_id": attention},
        "get_session": {"session_id": "00000000-0000-0000-0000-000000000000"},
        "export_results": {"session_id": "00000000-0000-0000-0000-000000000000"},
        # Writes: refused in read-only mode before they run.
        "create_project": {"name": "Should Not Exist"},
        "add_papers_to_project": {"project_id": nlp, "paper_ids": [attention]},
        "remove_papers_from_project": {"project_id": nlp, "paper_ids": [attention]},
        "delete_project": {"project_id": nlp, "confirm_name": "NLP Reading"},
        "manage_paper_keywords": {"paper_ids": attention, "action": "add", "keywords": ["x"]},
        "export_search_results": {"format": "bibtex", "project_id": nlp},
        "add_paper": {"identifier": "10.1000/xyz"},
        "attach_pdf": {"paper_id": attention},
        "save_paper_summary": {"paper_id": attention, "template": "t", "content": {"a": 1}},
        "create_highlight": {"paper_id": attention, "page": 1, "text": "x"},
        "create_area_annotation": {"paper_id": attention, "page": 1, "rect": [1, 1, 2, 2]},
        "start_review": {"query": "How do transformers handle long documents?"},
        "decide": {"session_id": "x", "action": "approve"},
        "cleanup_review": {"session_id": "x"},
    }


# Domain outcomes a read may meet on the seeded library (no PDFs, no summaries, no session).
ACCEPTABLE_READ_ERRORS = {"pdf_not_available", "asset_not_found", "template_not_available",
                          "not_found", "session_not_found"}  # fmt: skip


async def test_every_tool_in_read_only_mode(
    read_only_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    arguments = sample_arguments(knowledge_base)
    async with mcp_client(read_only_server.mcp_url) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert all(tool.annotations and tool.annotations.read_only_hint for tool in listed.values())
        for name, args in arguments.items():
            if name in listed:
                result = await client.call_tool(name, args)
                if result.is_error:
                    import json

                    code = json.loads(result.content[0].text)["error"]["code"]
                    assert code in ACCEPTABLE_READ_ERRORS, (name, code)
                else:
                    assert tool_data(result) is not None or result.content, name
                continue
            with pytest.raises(MCPError) as refused:
                await client.call_tool(name, args)
            assert refused.value.error.code == INVALID_PARAMS, name
            assert "read-only" in refused.value.error.message, (name, refused.value.error.message)
    # Every write tool was refused, every read tool answered: nothing is left untried.
    assert {"search_papers", "list_projects", "get_paper_details"} <= set(listed)
    assert not {"create_project", "delete_project", "attach_pdf"} & set(listed)
    # The library is as it was: the refused writes changed nothing.
    async with mcp_client(read_only_server.mcp_url) as client:
        projects = tool_data(await client.call_tool("list_projects", {}))["projects"]
    assert "Should Not Exist" not in {p["name"] for p in projects}


async def test_unknown_argument_is_named_with_the_accepted_ones(
    library_server: LiveServer,
) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("list_projects", {"limt": 3})
    error = caught.value.error
    assert error.code == INVALID_PARAMS
    assert "limt" in error.message
    assert error.data["unknown"] == ["limt"]


async def test_seed_page_size_names_are_aliases_of_limit(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        by_alias = tool_data(
            await client.call_tool(
                "search_papers", {"query": "deep", "engines": "local", "max_results": 1}
            )
        )
        by_limit = tool_data(
            await client.call_tool(
                "search_papers", {"query": "deep", "engines": "local", "limit": 1}
            )
        )
        semantic = tool_data(
            await client.call_tool("search_papers_semantic", {"query": "images", "top_k": 1})
        )
        with pytest.raises(MCPError) as both:
            await client.call_tool("search_papers", {"query": "deep", "max_results": 1, "limit": 2})
    assert by_alias == by_limit
    assert len(by_alias["results"]) == 1 and len(semantic["results"]) == 1
    assert both.value.error.code == INVALID_PARAMS and "limit" in both.value.error.message


async def test_names_agents_guess_for_the_main_argument_are_aliases(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        by_q = tool_data(
            await client.call_tool("search_papers", {"q": "deep", "engines": "local", "limit": 1})
        )
        by_query = tool_data(
            await client.call_tool(
                "search_papers", {"query": "deep", "engines": "local", "limit": 1}
            )
        )
        by_author = tool_data(
            await client.call_tool(
                "search_by_author", {"author": "He", "engines": "local", "limit": 2}
            )
        )
        by_author_name = tool_data(
            await client.call_tool(
                "search_by_author", {"author_name": "He", "engines": "local", "limit": 2}
            )
        )
    assert by_q == by_query and by_q["results"]
    assert by_author == by_author_name


async def test_answers_are_compact_json_without_nulls(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        result = await client.call_tool(
            "get_paper_details", {"paper_id": knowledge_base.paper("unfiled")["paper_id"]}
        )
    text = result.content[0].text
    assert result.structured_content is None
    assert "\n" not in text and ": " not in text and "null" not in text
    record = tool_data(result)
    assert record["title"] == "A Paper In No Project" and "doi" not in record


async def test_comma_separated_engines_and_unknown_engines(library_server: LiveServer) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        with pytest.raises(MCPError) as caught:
            await client.call_tool("search_papers", {"query": "x", "engines": "local,fakeeng"})
    assert caught.value.error.code == INVALID_PARAMS
    assert "fakeeng" in caught.value.error.message and "arxiv" in caught.value.error.message


async def test_a_comma_separated_engines_string_may_be_longer_than_twenty_characters(
    library_server: LiveServer,
) -> None:
    """'a,b' names up to 20 engines, not 20 characters: a long string is read, and too many
    engines are refused by their count."""
    many = [f"engine{n}" for n in range(21)]
    async with mcp_client(library_server.mcp_url) as client:
        long = await client.call_tool(
            "search_papers", {"query": "x", "engines": "local, local , local,local"}
        )
        with pytest.raises(MCPError) as unknown:
            await client.call_tool(
                "search_papers", {"query": "x", "engines": "local,no_such_engine"}
            )
        with pytest.raises(MCPError) as too_many:
            await client.call_tool("search_papers", {"query": "x", "engines": many})
    assert list(tool_data(long)["engines"]) == ["local"]
    assert "Unknown engine(s): no_such_engine" in unknown.value.error.message
    assert "At most 20 engines" in too_many.value.error.message


@pytest.fixture(scope="module")
def pdf_site() -> Iterator[PdfServer]:
    site = PdfServer()
    yield site
    site.close()


@pytest.fixture(scope="module")
def curating_kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    """A knowledge base of its own: the flow files, attaches and deletes."""
    with seeded_knowledge_base(tmp_path_factory.mktemp("curating-kb"), "curating") as kb:
        yield kb


@pytest.fixture(scope="module")
def curating_server(curating_kb: KnowledgeBase) -> Iterator[LiveServer]:
    # The local PDF server stands for the web (the download guard refuses loopback). The
    # download runs on this server's own threads: with a broker it would go to the suite's
    # shared Celery worker, which has neither this setting nor this server's database.
    env = {"PDF_ALLOW_PRIVATE_URLS": "true", "REDIS_URL": "", "CELERY_BROKER_URL": ""}
    with running_server(curating_kb, env=env) as server:
        yield server


async def test_an_agent_curates_a_reading_list_end_to_end(
    curating_server: LiveServer, curating_kb: KnowledgeBase, pdf_site: PdfServer
) -> None:
    knowledge_base = curating_kb
    """search -> create project -> add papers -> list_projects -> attach PDF -> export BibTeX,
    every step over /mcp with the SDK client, as an agent answering "collect the papers on
    deep networks in a project, get the PDF of the lone one and give me the BibTeX"."""
    async with mcp_client(curating_server.mcp_url) as client:
        found = tool_data(
            await client.call_tool("search_papers", {"query": "deep networks", "engines": "local"})
        )
        hits = [hit["paper_id"] for hit in found["results"]]
        assert knowledge_base.paper("resnet")["paper_id"] in hits
        created = tool_data(await client.call_tool("create_project", {"name": "Agent Flow"}))
        project_id = created["project_id"]
        lone = knowledge_base.paper("unfiled")["citekey"]
        added = tool_data(
            await client.call_tool(
                "add_papers_to_project", {"project_id": project_id, "paper_ids": [*hits, lone]}
            )
        )
        # Hybrid search may already have found the lone paper: the project holds each once.
        wanted = len({*hits, knowledge_base.paper("unfiled")["paper_id"]})
        assert added["added"] == wanted
        projects = tool_data(await client.call_tool("list_projects", {}))["projects"]
        counts = {p["name"]: p["paper_count"] for p in projects}
        # Times are ISO 8601, as every client parses them.
        assert all("T" in p["created_at"] and datetime.fromisoformat(p["created_at"])
                   for p in projects)  # fmt: skip
        assert counts["Agent Flow"] == wanted
        attached = tool_data(
            await client.call_tool(
                "attach_pdf", {"paper_id": lone, "url": pdf_site.url("/paper.pdf")}
            )
        )
        assert attached["has_pdf"] is True and attached["pdf"]["page_count"] >= 1
        outline = await client.call_tool("get_pdf_outline", {"paper_id": lone})
        assert not outline.is_error
        exported = tool_data(
            await client.call_tool(
                "export_search_results", {"format": "bibtex", "project_id": "Agent Flow"}
            )
        )
        assert exported["count"] == wanted and "path" not in exported
        assert exported["content"].count("\n@") + exported["content"].startswith("@") == wanted
        assert knowledge_base.paper("unfiled")["citekey"] in exported["content"]
        details = tool_data(await client.call_tool("get_paper_details", {"paper_id": lone}))
        assert details["has_pdf"] is True and project_id in details["projects"]
        removed = tool_data(
            await client.call_tool(
                "remove_papers_from_project", {"project_id": project_id, "paper_ids": [lone]}
            )
        )
        assert removed["removed"] == 1
        with pytest.raises(MCPError) as unconfirmed:
            await client.call_tool(
                "delete_project", {"project_id": project_id, "confirm_name": "agent flow"}
            )
        assert unconfirmed.value.error.code == INVALID_PARAMS
        deleted = tool_data(
            await client.call_tool(
                "delete_project", {"project_id": project_id, "confirm_name": "Agent Flow"}
            )
        )
        assert deleted["deleted"] is True
        after = tool_data(await client.call_tool("list_projects", {}))["projects"]
        assert "Agent Flow" not in {p["name"] for p in after}
        # The papers stay in the library.
        still = await client.call_tool("get_paper_details", {"paper_id": lone})
        assert not still.is_error


async def test_a_client_chooses_its_tool_sets_when_it_connects(library_server: LiveServer) -> None:
    async with mcp_client(f"{library_server.mcp_url}?toolsets=pdf") as client:
        by_query = {tool.name for tool in (await client.list_tools()).tools}
        with pytest.raises(MCPError) as unlisted:
            await client.call_tool("search_papers_semantic", {"query": "images"})
    async with mcp_client(library_server.mcp_url, headers={"x-mcp-toolsets": "core"}) as client:
        by_header = {tool.name for tool in (await client.list_tools()).tools}
    assert by_header == set(CORE_TOOLS)
    assert by_query > by_header and "read_pdf_pages" in by_query
    assert "search_papers_semantic" not in by_query
    assert unlisted.value.error.code == INVALID_PARAMS
    assert "tool set 'search'" in unlisted.value.error.message
    refused = post(
        f"{library_server.mcp_url}?toolsets=nosuchset",
        {"jsonrpc": "2.0", "id": 1, "method": "ping"},
    )
    assert refused.status_code == 400 and "nosuchset" in refused.text

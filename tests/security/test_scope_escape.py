"""A client scoped to one collection ("Vision") against what another ("NLP Reading")
holds, through the real /mcp server and the SDK client: add_paper by every kind of
identifier, the review tools, saved-search names, and the project lists of records.

Each answer must neither show the other project's data nor change it
(tests/security/scope_snapshot.py compares everything outside "Vision")."""

from __future__ import annotations

import json
from typing import Any

import mcp
import pytest
from mcp import MCPError, StdioServerParameters

from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    LiveServer,
    mcp_client,
    tool_data,
)
from tests.security.conftest import scope_snapshot

pytestmark = [pytest.mark.server, pytest.mark.anyio]

# Texts only "NLP Reading" holds (seed_scope.py and seed_library.py).
MARKERS = (
    "Attention Is All You Need",
    "dominant sequence transduction",
    "BERT: Pre-training",
    "SECRET-",
    "nlp-reading",
    "NLP Reading",
)


def scoped_url(server: LiveServer) -> str:
    return f"{server.mcp_url}?collections=Vision"


def answer_text(result: Any) -> str:
    return "".join(getattr(block, "text", "") for block in result.content)


def assert_nothing_of_nlp(text: str) -> None:
    found = [marker for marker in MARKERS if marker in text]
    assert not found, f"the scoped answer shows {found}: {text[:600]}"


async def test_add_paper_by_any_identifier_of_a_paper_outside_the_scope_shows_and_files_nothing(
    scope_server: LiveServer, scope_kb: KnowledgeBase
) -> None:
    data = scope_kb.data
    identifiers = [
        "10.5555/3295222.3295349",  # DOI
        "https://doi.org/10.5555/3295222.3295349",
        "1810.04805",  # arXiv id (BERT)
        "https://arxiv.org/abs/1810.04805",
        data["acl"],  # ACL Anthology id
        f"https://aclanthology.org/{data['acl']}/",
        data["openalex"],  # OpenAlex work id
    ]
    before = scope_snapshot(scope_kb)
    answers: dict[str, dict[str, Any]] = {}
    async with mcp_client(scoped_url(scope_server)) as client:
        for identifier in identifiers:
            result = await client.call_tool("add_paper", {"identifier": identifier})
            assert result.is_error, f"{identifier}: {answer_text(result)[:300]}"
            answers[identifier] = json.loads(answer_text(result))["error"]
            assert_nothing_of_nlp(answer_text(result))
        attention = data["papers"]["attention"]["paper_id"]
        after = await client.call_tool("get_paper_details", {"paper_id": attention})
    assert {answer["code"] for answer in answers.values()} == {"outside_collections"}
    assert json.loads(answer_text(after))["error"]["code"] == "not_found"
    assert scope_snapshot(scope_kb) == before


async def test_review_tools_never_reach_a_review_of_another_project(
    scope_server: LiveServer, scope_kb: KnowledgeBase
) -> None:
    review = scope_kb.data["review"]
    calls = [
        ("get_session", {"session_id": review}),
        ("decide", {"session_id": review, "action": "approve", "wait_seconds": 0}),
        ("export_results", {"session_id": review, "format": "json"}),
        ("split_duplicate", {"session_id": review, "paper": "1"}),
        ("screen_next", {"session_id": review}),
        (
            "screen_decide",
            {"session_id": review, "decisions": [{"paper": 1, "decision": "include"}]},
        ),
        ("cleanup_review", {"session_id": review}),
    ]
    before = scope_snapshot(scope_kb)
    codes: dict[str, str] = {}
    async with mcp_client(scoped_url(scope_server)) as client:
        for name, arguments in calls:
            result = await client.call_tool(name, arguments)
            assert_nothing_of_nlp(answer_text(result))
            assert result.is_error, f"{name}: {answer_text(result)[:300]}"
            codes[name] = json.loads(answer_text(result))["error"]["code"]
        with pytest.raises(MCPError):
            await client.read_resource(f"review://{review}/prisma.svg")
    assert codes == dict.fromkeys(codes, "not_found")
    assert scope_snapshot(scope_kb) == before


async def test_save_search_with_a_name_used_outside_the_scope_says_nothing_of_it(
    scope_server: LiveServer, scope_kb: KnowledgeBase
) -> None:
    before = scope_snapshot(scope_kb)
    arguments = {
        "name": "secret-watch", "query": "residual networks", "schedule": "manual",
        "project_id": "Vision",
    }  # fmt: skip
    async with mcp_client(scoped_url(scope_server)) as client:
        saved = await client.call_tool("save_search", arguments)
        listed = await client.call_tool("list_saved_searches", {})
        deleted = await client.call_tool("delete_saved_search", {"name": "secret-watch"})
    assert not saved.is_error, answer_text(saved)
    assert_nothing_of_nlp(answer_text(saved) + answer_text(listed))
    assert [s["project_id"] for s in tool_data(listed)["saved_searches"]] == ["vision"]
    assert not deleted.is_error, answer_text(deleted)
    assert scope_snapshot(scope_kb) == before  # the other project's search is untouched


async def test_records_list_only_the_projects_the_client_sees(
    scope_server: LiveServer, scope_kb: KnowledgeBase
) -> None:
    resnet = scope_kb.data["papers"]["resnet"]["paper_id"]
    async with mcp_client(scoped_url(scope_server)) as client:
        detail = await client.call_tool("get_paper_details", {"paper_id": resnet})
        found = await client.call_tool("search_papers", {"query": "residual"})
    assert tool_data(detail)["projects"] == ["vision"]
    assert_nothing_of_nlp(answer_text(detail) + answer_text(found))


async def test_a_citation_walk_from_the_scope_neither_shows_nor_files_papers_outside_it(
    scope_server: LiveServer, scope_kb: KnowledgeBase
) -> None:
    resnet = scope_kb.data["papers"]["resnet"]["paper_id"]
    arguments = {
        "paper_ids": [resnet], "direction": "references", "project_id": "Vision",
        "add_to_project": True,
    }  # fmt: skip
    before = scope_snapshot(scope_kb)
    async with mcp_client(scoped_url(scope_server)) as client:
        walked = await client.call_tool("expand_by_citations", arguments)
    assert not walked.is_error, answer_text(walked)
    assert_nothing_of_nlp(answer_text(walked))
    assert scope_snapshot(scope_kb) == before


async def test_a_stdio_client_scoped_on_the_command_line_cannot_add_its_way_out(
    scope_kb: KnowledgeBase,
) -> None:
    params = StdioServerParameters(
        command=PYTHON,
        args=["manage.py", "serve", "--transport", "stdio", "--collections", "Vision"],
        env=scope_kb.env,
        cwd=str(ROOT),
    )
    before = scope_snapshot(scope_kb)
    async with mcp.Client(params) as client:
        added = await client.call_tool("add_paper", {"identifier": scope_kb.data["acl"]})
        summary = await client.call_tool(
            "get_paper_summary", {"paper_id": scope_kb.data["papers"]["attention"]["paper_id"]}
        )
    assert json.loads(answer_text(added))["error"]["code"] == "outside_collections"
    assert json.loads(answer_text(summary))["error"]["code"] == "not_found"
    assert_nothing_of_nlp(answer_text(added) + answer_text(summary))
    assert scope_snapshot(scope_kb) == before

"""The `library` tools and resources over /mcp, with the SDK's own client, in both eras:
`mode="legacy"` (initialize handshake) and `mode="auto"` (probes 2026-07-28 first)."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

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

MODES = ["legacy", "auto"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    return str(request.param)


async def test_auto_mode_negotiates_2026_07_28_and_legacy_a_handshake_version(
    library_server: LiveServer,
) -> None:
    async with mcp_client(library_server.mcp_url, mode="auto") as client:
        assert client.protocol_version == "2026-07-28"
        assert client.server_capabilities.prompts is None
        assert client.server_capabilities.tools is not None
    async with mcp_client(library_server.mcp_url, mode="legacy") as client:
        assert client.protocol_version == "2025-11-25"
        assert client.server_capabilities.prompts is None


async def test_tools_list_describes_every_library_tool(
    library_server: LiveServer, mode: str
) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert set(tools) >= {
        "get_paper_details", "get_paper_metadata", "list_project_papers", "create_project",
        "manage_paper_keywords", "export_paper_bibtex", "export_search_results",
    }  # fmt: skip
    limit = tools["list_project_papers"].input_schema["properties"]["limit"]
    assert limit["maximum"] == 100 and limit["minimum"] == 1
    assert tools["get_paper_details"].annotations.read_only_hint is True
    assert tools["create_project"].annotations.read_only_hint is False


@pytest.mark.parametrize("ref_kind", ["paper_id", "id", "citekey", "digits"])
async def test_get_paper_details_accepts_any_of_the_three_identifiers(
    library_server: LiveServer, knowledge_base: KnowledgeBase, mode: str, ref_kind: str
) -> None:
    paper = knowledge_base.paper("attention")
    ref = str(paper["paper_id"]) if ref_kind == "digits" else paper[ref_kind]
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        result = await client.call_tool("get_paper_details", {"paper_id": ref})
    assert not result.is_error
    record = tool_data(result)
    assert record["paper_id"] == paper["paper_id"]
    assert record["title"] == "Attention Is All You Need"
    assert record["abstract"].startswith("The dominant sequence")
    assert json.loads(result.content[0].text)["citekey"] == paper["citekey"]


async def test_get_paper_metadata_is_the_compact_record(
    library_server: LiveServer, knowledge_base: KnowledgeBase, mode: str
) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        result = await client.call_tool(
            "get_paper_metadata", {"paper_id": knowledge_base.paper("bert")["citekey"]}
        )
    record = tool_data(result)
    assert record["title"].startswith("BERT")
    assert record["arxiv_id"] == "1810.04805"
    assert record["projects"] == [knowledge_base.project("nlp")]
    assert "abstract" not in record


async def test_unknown_paper_is_a_not_found_error_result(
    library_server: LiveServer, mode: str
) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        details = await client.call_tool("get_paper_details", {"paper_id": "[Nobody, X. 1900]"})
        metadata = await client.call_tool("get_paper_metadata", {"paper_id": 999999})
    assert tool_error(details)["code"] == "not_found"
    assert tool_error(metadata) == {
        "code": "not_found",
        "message": "No paper 999999 in the library.",
        "paper_id": "999999",
    }


async def test_list_project_papers_pages_through_a_project(
    library_server: LiveServer, knowledge_base: KnowledgeBase, mode: str
) -> None:
    project = knowledge_base.project("nlp")
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        first = await client.call_tool("list_project_papers", {"project_id": project, "limit": 1})
        second = await client.call_tool(
            "list_project_papers", {"project_id": "nlp reading", "limit": 1, "offset": 1}
        )
    first_page, second_page = tool_data(first), tool_data(second)
    assert first_page["total"] == 2 and first_page["next_offset"] == 1
    assert second_page.get("next_offset") is None and second_page["project_id"] == project
    titles = {first_page["papers"][0]["title"], second_page["papers"][0]["title"]}
    assert titles == {
        "Attention Is All You Need",
        "BERT: Pre-training of Deep Bidirectional Transformers",
    }


async def test_list_project_papers_of_unknown_project_is_not_found(
    library_server: LiveServer, mode: str
) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        result = await client.call_tool("list_project_papers", {"project_id": "no-such-project"})
    assert tool_error(result)["code"] == "not_found"


@pytest.mark.parametrize(
    ("tool", "arguments", "field"),
    [
        ("list_project_papers", {"project_id": "vision", "limit": 101}, "limit"),
        ("list_project_papers", {"project_id": "vision", "limit": 0}, "limit"),
        ("list_project_papers", {"project_id": "vision", "offset": 10001}, "offset"),
        ("list_project_papers", {"project_id": "v" * 201}, "project_id"),
        ("list_project_papers", {}, "project_id"),
        ("get_paper_details", {}, "paper_id"),
        ("get_paper_details", {"paper_id": "x" * 601}, "paper_id"),
        ("get_paper_metadata", {"paper_id": 0}, "paper_id"),
        ("create_project", {"name": ""}, "name"),
        (
            "manage_paper_keywords",
            {"paper_ids": 1, "action": "rename", "keywords": ["a"]},
            "action",
        ),
        (
            "manage_paper_keywords",
            {"paper_ids": [], "action": "add", "keywords": ["a"]},
            "paper_ids",
        ),
        (
            "manage_paper_keywords",
            {"paper_ids": 1, "action": "add", "keywords": ["k" * 101]},
            "keywords",
        ),
        ("export_search_results", {"paper_ids": [1], "format": "pdf"}, "format"),
        (
            "export_search_results",
            {"paper_ids": list(range(1, 102)), "format": "json"},
            "paper_ids",
        ),
    ],
)
async def test_bad_or_missing_arguments_are_32602(
    library_server: LiveServer, mode: str, tool: str, arguments: dict, field: str
) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(tool, arguments)
    assert raised.value.error.code == -32602
    assert any(e["field"].startswith(field) for e in raised.value.error.data["errors"])


async def test_unknown_tool_is_32602(library_server: LiveServer, mode: str) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("delete_everything", {})
    assert raised.value.error.code == -32602
    assert "delete_everything" in raised.value.error.message


def test_errors_on_the_wire_are_jsonrpc_errors_not_results(library_server: LiveServer) -> None:
    response = call_tool_raw(library_server.mcp_url, "get_paper_details", {"paper_id": ""})
    body = response.json()
    assert response.status_code == 200 and "result" not in body
    assert body["error"]["code"] == -32602


async def test_create_project_then_duplicate_name_is_a_conflict(
    library_server: LiveServer, mode: str
) -> None:
    name = f"Survey {mode} {uuid.uuid4().hex[:6]}"
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        created = await client.call_tool("create_project", {"name": name, "description": "d"})
        again = await client.call_tool("create_project", {"name": name.upper()})
        listed = await client.call_tool("list_project_papers", {"project_id": name})
        with pytest.raises(MCPError) as blank:
            await client.call_tool("create_project", {"name": "   "})
    project = tool_data(created)
    assert project["name"] == name and project["project_id"].startswith("survey-")
    assert tool_error(again)["code"] == "conflict"
    assert tool_data(listed)["total"] == 0
    assert blank.value.error.code == -32602  # the service's InvalidInput


async def test_manage_paper_keywords_adds_removes_and_sets(
    library_server: LiveServer, knowledge_base: KnowledgeBase, mode: str
) -> None:
    paper = knowledge_base.paper("unfiled")
    key = str(paper["paper_id"])
    tag = f"tag-{mode}"
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        added = await client.call_tool(
            "manage_paper_keywords",
            {"paper_ids": paper["paper_id"], "action": "add", "keywords": [tag, "history"]},
        )
        removed = await client.call_tool(
            "manage_paper_keywords",
            {"paper_ids": [paper["citekey"]], "action": "remove", "keywords": [tag]},
        )
        cleared = await client.call_tool(
            "manage_paper_keywords", {"paper_ids": [paper["id"]], "action": "set", "keywords": []}
        )
    assert set(tool_data(added)["keywords_by_paper"][key]) >= {tag, "history"}
    assert tag not in tool_data(removed)["keywords_by_paper"][key]
    assert tool_data(cleared) == {"action": "set", "keywords_by_paper": {key: []}}


async def test_manage_paper_keywords_with_an_unknown_paper_changes_nothing(
    library_server: LiveServer, knowledge_base: KnowledgeBase, mode: str
) -> None:
    resnet = knowledge_base.paper("resnet")["paper_id"]
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        failed = await client.call_tool(
            "manage_paper_keywords",
            {"paper_ids": [resnet, 999999], "action": "add", "keywords": ["never-written"]},
        )
        after = await client.call_tool("get_paper_metadata", {"paper_id": resnet})
    assert tool_error(failed)["code"] == "not_found"
    assert "never-written" not in tool_data(after)["keywords"]


async def test_export_paper_bibtex_returns_an_entry(
    library_server: LiveServer, knowledge_base: KnowledgeBase, mode: str
) -> None:
    paper = knowledge_base.paper("attention")
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        result = await client.call_tool("export_paper_bibtex", {"paper_id": paper["id"]})
        missing = await client.call_tool("export_paper_bibtex", {"paper_id": "nobody2020none"})
    entry = tool_data(result)
    assert entry["citekey"] == paper["citekey"]
    assert entry["bibtex"].lstrip().startswith("@") and paper["citekey"] in entry["bibtex"]
    assert (
        "{Attention}" in entry["bibtex"] and "Vaswani, Ashish and Shazeer, Noam" in entry["bibtex"]
    )
    assert tool_error(missing)["code"] == "not_found"


async def test_bibtex_exports_leave_abstracts_out_when_asked(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    nlp, attention = knowledge_base.project("nlp"), knowledge_base.paper("attention")
    project = {"format": "bibtex", "project_id": nlp}
    async with mcp_client(library_server.mcp_url) as client:
        full = tool_data(await client.call_tool("export_search_results", project))
        lean = tool_data(
            await client.call_tool("export_search_results", {**project, "abstracts": False})
        )
        one = tool_data(
            await client.call_tool(
                "export_paper_bibtex", {"paper_id": attention["paper_id"], "abstracts": False}
            )
        )
    assert full["content"].count("abstract = {") == 2
    assert "abstract" not in lean["content"] and "abstract" not in one["bibtex"]
    assert lean["count"] == 2 and lean["size"] < full["size"]
    assert attention["citekey"] in one["bibtex"]


async def test_export_search_results_writes_a_file_in_exports(
    library_server: LiveServer, knowledge_base: KnowledgeBase, mode: str
) -> None:
    ids = [knowledge_base.paper("attention")["paper_id"], knowledge_base.paper("bert")["citekey"]]
    name = f"export-{mode}-{uuid.uuid4().hex[:6]}"
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        result = await client.call_tool(
            "export_search_results", {"paper_ids": ids, "format": "json", "filename": name}
        )
    done = tool_data(result)
    assert done["count"] == 2 and done["format"] == "json"
    assert Path(done["path"]).parts[0] == "exports" and not Path(done["path"]).is_absolute()
    written = knowledge_base.directory / done["path"]
    assert written.is_file() and done["filename"] == written.name
    assert "Attention Is All You Need" in written.read_text()


async def test_export_search_results_rejects_unsafe_file_names(
    library_server: LiveServer, knowledge_base: KnowledgeBase, mode: str
) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(
                "export_search_results",
                {"paper_ids": [1], "format": "csv", "filename": "../../etc/evil"},
            )
    assert raised.value.error.code == -32602
    assert not (knowledge_base.directory.parent / "etc").exists()


async def test_export_search_results_with_unknown_paper_is_not_found(
    library_server: LiveServer, mode: str
) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        result = await client.call_tool(
            "export_search_results", {"paper_ids": [999999], "format": "bibtex"}
        )
    assert tool_error(result)["code"] == "not_found"


async def test_project_resource_is_a_markdown_list(
    library_server: LiveServer, knowledge_base: KnowledgeBase, mode: str
) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        templates = {
            t.uri_template for t in (await client.list_resource_templates()).resource_templates
        }
        read = await client.read_resource(f"papers://{knowledge_base.project('vision')}")
    assert templates >= {"papers://{project_id}", "paper://{paper_id}/metadata"}
    content = read.contents[0]
    assert content.mime_type == "text/markdown"
    assert content.text.startswith("# Vision")
    assert "Deep Residual Learning for Image Recognition" in content.text
    assert "Attention" not in content.text


async def test_paper_metadata_resource_is_json(
    library_server: LiveServer, knowledge_base: KnowledgeBase, mode: str
) -> None:
    paper = knowledge_base.paper("resnet")
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        read = await client.read_resource(f"paper://{paper['paper_id']}/metadata")
    content = read.contents[0]
    assert content.mime_type == "application/json"
    assert json.loads(content.text)["citekey"] == paper["citekey"]


@pytest.mark.parametrize("uri", ["papers://no-such-project", "paper://999999/metadata"])
async def test_missing_resource_is_32602(library_server: LiveServer, mode: str, uri: str) -> None:
    async with mcp_client(library_server.mcp_url, mode=mode) as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource(uri)
    # -32002 for handshake-era clients, -32602 for 2026-07-28 ones (docs/MCP.md "Errors").
    assert raised.value.error.code == (-32002 if mode == "legacy" else -32602)

"""The `extraction` tools over /mcp with the SDK client, on a project of the seeded library
(papers without PDFs, so quotes are anchored against abstracts): the form made and changed,
values recorded with their anchors, arguments refused with the field named, a client scoped
to another collection kept out, a read-only server without the write tools, and the
evidence table in each format. The review path (workflow, two extractors, PDFs) is
tests/mcp/test_extraction_review.py."""

from __future__ import annotations

import base64
import csv
import io
import json
import zipfile
from collections.abc import Iterator
from typing import Any

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

FIELDS = [
    {"key": "model", "type": "text", "description": "The model the paper introduces."},
    {
        "key": "recurrent",
        "type": "yes_no_unclear",
        "label": "Uses recurrence",
        "quote_required": False,
    },
]
WRITE_TOOLS = {"extraction_form", "extract_record"}


@pytest.fixture(scope="module")
def kb(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    with seeded_knowledge_base(tmp_path_factory.mktemp("extraction-tools"), "mcp_extract") as kb:
        yield kb


@pytest.fixture(scope="module")
def server(kb: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(kb) as live:
        yield live


async def ok(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    async with mcp_client(url) as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return dict(tool_data(result))


async def error(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    async with mcp_client(url) as client:
        return dict(tool_error(await client.call_tool(tool, arguments)))


async def invalid(url: str, tool: str, **arguments: Any) -> str:
    async with mcp_client(url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(tool, arguments)
    assert raised.value.error.code == -32602
    return str(raised.value.error.message)


async def test_form_values_and_evidence_table_of_a_project(
    server: LiveServer, kb: KnowledgeBase
) -> None:
    url, project = server.mcp_url, "NLP Reading"
    attention, bert = kb.paper("attention")["paper_id"], kb.paper("bert")["paper_id"]
    assert (await ok(url, "extraction_form", project_id=project)).get("form") is None
    made = await ok(url, "extraction_form", project_id=project, fields=FIELDS)
    assert made["form"]["version"] == 1 and made["form"]["name"] == "Extraction form"
    same = await ok(url, "extraction_form", project_id=project, fields=FIELDS)
    assert same["form"]["version"] == 1  # nothing changed, no new version

    recorded = await ok(
        url, "extract_record", project_id=project, paper=attention, extractor="claude",
        values={"model": {"value": "a sequence transduction model",
                          "quote": "The dominant sequence transduction models"},
                "recurrent": {"value": "No"}},
    )  # fmt: skip
    assert recorded["extractor"] == "agent:claude" and recorded["empty"] == []
    anchors = {r["field"]: r["anchor"]["status"] for r in recorded["recorded"]}
    assert anchors == {"model": "abstract_only", "recurrent": "no_quote"}
    assert recorded["flagged"] == ["model"]

    # A quote from another paper is never taken for this one's.
    wrong = await ok(
        url, "extract_record", project_id=project, paper=bert, extractor="claude",
        values={"model": {"value": "ResNet", "quote": "Deeper neural networks are more "
                          "difficult to train"}},
    )  # fmt: skip
    assert wrong["recorded"][0]["anchor"]["status"] == "not_found"

    todo = await ok(url, "extract_next", project_id=project, extractor="claude")
    assert [p["paper_id"] for p in todo["papers"]] == [bert]
    assert todo["papers"][0]["empty"] == ["recurrent"]

    changed = [*FIELDS, {"key": "layers", "type": "integer", "quote_required": False}]
    version2 = await ok(url, "extraction_form", project_id=project, fields=changed)
    assert version2["form"]["version"] == 2
    todo = await ok(url, "extract_next", project_id=project, extractor="claude")
    assert {p["paper_id"]: p["empty"] for p in todo["papers"]} == {
        attention: ["layers"],
        bert: ["recurrent", "layers"],
    }  # earlier values still count where the field kept its meaning

    table = await ok(url, "export_evidence_table", project_id=project, format="csv")
    rows = list(csv.DictReader(io.StringIO(table["content"])))
    assert len(rows) == 2 and table["studies"] == 2 and table["fields"] == 3
    xlsx = await ok(url, "export_evidence_table", project_id=project, format="xlsx")
    with zipfile.ZipFile(io.BytesIO(base64.b64decode(xlsx["content_base64"]))) as book:
        assert any(name.startswith("xl/worksheets/") for name in book.namelist())
    markdown = await ok(url, "export_evidence_table", project_id=project, format="markdown")
    assert "sequence transduction" in markdown["content"]


async def test_bad_arguments_are_refused_with_the_field_named(
    server: LiveServer, kb: KnowledgeBase
) -> None:
    url, project = server.mcp_url, "Vision"
    resnet = kb.paper("resnet")["paper_id"]
    problem = await invalid(url, "extraction_form", project_id=project,
                            fields=[{"key": "Bad Key", "type": "colour"}])  # fmt: skip
    assert "fields[0]" in problem
    await ok(url, "extraction_form", project_id=project, fields=FIELDS)
    assert "recurrent" in await invalid(
        url, "extract_record", project_id=project, paper=resnet,
        values={"recurrent": {"value": "perhaps"}},
    )  # fmt: skip
    assert "no fields ['colour']" in (await invalid(
        url, "extract_record", project_id=project, paper=resnet,
        values={"colour": {"value": "red"}},
    )).lower()  # fmt: skip
    assert "one field" in await invalid(
        url, "extract_record", project_id=project, paper=resnet, adjudicate=True,
        reason="both", values={"model": {"value": "x"}, "recurrent": {"value": "no"}},
    )  # fmt: skip
    assert "either" in (await invalid(url, "extract_next", extractor="a")).lower()
    outside = await error(url, "extract_record", project_id=project,
                          paper=kb.paper("attention")["paper_id"],
                          values={"model": {"value": None}})  # fmt: skip
    assert outside["code"] == "not_found"
    disagree = await invalid(
        url, "extract_record", project_id=project, paper=resnet, adjudicate=True,
        reason="no dispute", values={"recurrent": {"value": "no"}},
    )  # fmt: skip
    assert "do not disagree" in disagree


async def test_a_client_scoped_to_another_collection_cannot_reach_the_project(
    server: LiveServer, kb: KnowledgeBase
) -> None:
    scoped = f"{server.mcp_url}?collections={kb.project('vision')}"
    refused = await error(scoped, "extract_next", project_id="NLP Reading", extractor="a")
    assert refused["code"] == "not_found"


async def test_a_read_only_server_lists_no_write_tool_but_serves_the_table(
    server: LiveServer, kb: KnowledgeBase
) -> None:
    await ok(server.mcp_url, "extraction_form", project_id="Vision", fields=FIELDS)
    with running_server(kb, env={"MCP_READ_ONLY": "true"}) as live:
        async with mcp_client(live.mcp_url) as client:
            listed = {tool.name for tool in (await client.list_tools()).tools}
        assert not WRITE_TOOLS & listed
        assert {"extract_next", "export_evidence_table"} <= listed
        table = await ok(live.mcp_url, "export_evidence_table", project_id="Vision",
                         format="json")  # fmt: skip
    assert json.loads(table["content"])["columns"][0] == "model"

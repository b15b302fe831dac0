"""The `pdf` tools over /mcp, through the MCP SDK's own client, against a real server
process whose knowledge base has PDFs attached with `manage.py attach_pdf`.

Paper `attention` has 2304.02623v1.pdf (4 pages, outline), `bert` papermage.pdf
(13 pages, no outline), `resnet` no PDF. Annotations are made on `attention` and `unfiled`
(which gets 1111.2011v2.pdf), so the read tests do not depend on their order.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pymupdf
import pytest
from mcp import MCPError

from tests.mcp.builders import run
from tests.mcp.conftest import (
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
from tests.papers.pdf.builders import EXPOSITORY, FACTS, PAPERMAGE, QUANTUM, WRAPPED

pytestmark = [pytest.mark.server, pytest.mark.anyio]

PDF_TOOLS = {
    "get_pdf_outline",
    "read_pdf_pages",
    "create_highlight",
    "create_area_annotation",
    "list_annotations",
    "export_annotations",
}


@dataclass
class PdfSetup:
    kb: KnowledgeBase
    server: LiveServer
    read_only: LiveServer

    def paper_id(self, name: str) -> int:
        return int(self.kb.paper(name)["paper_id"])


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PdfSetup]:
    directory = tmp_path_factory.mktemp("pdf-kb")
    with server_database("mcp_pdf") as database_url:
        # Tasks (the markdown conversion after attach_pdf) run in the attaching process:
        # a broker would hand them to the test run's worker, which has another database.
        env = {
            name: value
            for name, value in base_env(directory, database_url).items()
            if name not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
        }
        data = json.loads(run(env, str(SEED_SCRIPT)).strip().splitlines()[-1])
        kb = KnowledgeBase(directory, env, data)
        for name, path in (("attention", EXPOSITORY), ("bert", PAPERMAGE), ("unfiled", QUANTUM)):
            run(env, "manage.py", "attach_pdf", data["papers"][name]["citekey"], str(path))
        with (
            running_server(kb) as server,
            running_server(kb, env={"MCP_READ_ONLY": "true"}) as read_only,
        ):
            yield PdfSetup(kb, server, read_only)


async def call(setup: PdfSetup, tool: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(setup.server.mcp_url) as client:
        return await client.call_tool(tool, arguments)


async def invalid_params(setup: PdfSetup, tool: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(setup.server.mcp_url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(tool, arguments)
    assert raised.value.error.code == -32602
    return raised.value.error


def flatten(items: list[dict[str, Any]]) -> list[list[Any]]:
    rows = []
    for item in items:
        rows.append([item["level"], item["title"], item["page"]])
        rows += flatten(item["children"])
    return rows


# --- listing -----------------------------------------------------------------------------


async def test_pdf_tools_are_listed_with_llm_descriptions(setup: PdfSetup) -> None:
    async with mcp_client(setup.server.mcp_url, mode="auto") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert PDF_TOOLS <= set(tools)
    assert "before read_pdf_pages" in (tools["get_pdf_outline"].description or "")
    assert "max_chars" in tools["read_pdf_pages"].input_schema["properties"]
    rect = tools["create_area_annotation"].input_schema["properties"]["rect"]
    assert "origin bottom-left" in rect["description"]
    for name in ("get_pdf_outline", "read_pdf_pages", "list_annotations", "export_annotations"):
        annotations = tools[name].annotations
        assert annotations and annotations.read_only_hint is True
    for name in ("create_highlight", "create_area_annotation"):
        annotations = tools[name].annotations
        assert annotations and annotations.read_only_hint is False
        assert annotations.idempotent_hint is False
    assert tools["read_pdf_pages"].output_schema is None  # the answer is the text itself


async def test_read_only_server_hides_the_write_tools(setup: PdfSetup) -> None:
    async with mcp_client(setup.read_only.mcp_url) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        outline = await client.call_tool(
            "get_pdf_outline", {"paper_id": setup.paper_id("attention")}
        )
        with pytest.raises(MCPError) as raised:
            await client.call_tool(
                "create_highlight",
                {"paper_id": setup.paper_id("attention"), "page": 1, "text": WRAPPED},
            )
    assert names >= PDF_TOOLS - {"create_highlight", "create_area_annotation"}
    assert not names & {"create_highlight", "create_area_annotation"}
    assert not outline.is_error
    assert raised.value.error.code == -32602
    assert "read-only" in raised.value.error.message


# --- outline -----------------------------------------------------------------------------


async def test_outline_is_nested_with_pages_and_total(setup: PdfSetup) -> None:
    result = await call(
        setup, "get_pdf_outline", {"paper_id": setup.kb.paper("attention")["citekey"]}
    )
    outline = tool_data(result)
    assert (outline["has_outline"], outline["total_pages"]) == (True, 4)
    assert flatten(outline["items"]) == FACTS["2304.02623v1.pdf"]["toc"]
    nested = await call(setup, "get_pdf_outline", {"paper_id": setup.paper_id("unfiled")})
    [root] = tool_data(nested)["items"]
    assert root["children"][2]["children"][0]["title"] == "A Ordered Phase"


async def test_no_outline_is_has_outline_false_with_a_hint(setup: PdfSetup) -> None:
    result = await call(setup, "get_pdf_outline", {"paper_id": setup.kb.paper("bert")["id"]})
    outline = tool_data(result)
    assert (outline["has_outline"], outline["items"], outline["total_pages"]) == (False, [], 13)
    assert "pages=" in outline["hint"]


async def test_paper_without_pdf_says_how_to_attach_one(setup: PdfSetup) -> None:
    paper_id = setup.paper_id("resnet")
    for tool, arguments in (
        ("get_pdf_outline", {}),
        ("read_pdf_pages", {"pages": "1"}),
        ("create_highlight", {"page": 1, "text": "residual"}),
    ):
        result = await call(setup, tool, {"paper_id": paper_id, **arguments})
        error = tool_error(result)
        assert error["code"] == "pdf_not_available" and error["paper_id"] == paper_id
        assert "attach_pdf" in error["message"]


# --- reading -----------------------------------------------------------------------------


async def test_read_pages_are_delimited(setup: PdfSetup) -> None:
    result = await call(
        setup, "read_pdf_pages", {"paper_id": setup.paper_id("bert"), "pages": "1,3-4"}
    )
    text = result.content[0].text
    assert text.startswith("--- Page 1 of 13 ---\nPaperMage: A Unified Toolkit")
    assert "--- Page 3 of 13 ---" in text and "--- Page 4 of 13 ---" in text
    assert "--- Page 2 of 13 ---" not in text
    assert "[TRUNCATED" not in text


async def test_read_sections_through_the_outline(setup: PdfSetup) -> None:
    result = await call(
        setup,
        "read_pdf_pages",
        {"paper_id": setup.paper_id("attention"), "section": "Introduction,Conclusion"},
    )
    text = result.content[0].text
    assert text.startswith("=== Section: 1 Introduction (pages 1-2) ===\n--- Page 1 of 4 ---")
    assert "=== Section: 4 Conclusion (page 3) ===\n--- Page 3 of 4 ---" in text


async def test_max_chars_cuts_with_a_marker(setup: PdfSetup) -> None:
    result = await call(
        setup,
        "read_pdf_pages",
        {"paper_id": setup.paper_id("bert"), "pages": "all", "max_chars": 500},
    )
    kept, marker = result.content[0].text.split("\n\n[TRUNCATED: ", 1)
    assert len(kept) == 500 and kept.startswith("--- Page 1 of 13 ---")
    assert marker.startswith("showed the first 500 of ")
    whole = await call(
        setup, "read_pdf_pages", {"paper_id": setup.paper_id("bert"), "pages": "all"}
    )
    total = int(marker.split("showed the first 500 of ")[1].split(" ")[0])
    # Without max_chars the default budget applies; its marker says how to read the rest.
    if total > 20_000:
        assert f"max_chars={total}" in whole.content[0].text
    else:
        assert "[TRUNCATED" not in whole.content[0].text


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ({"pages": "5"}, "Page 5 is out of range: the PDF has 4 page(s) (1-4)."),
        ({"pages": "2-x"}, "is not a page or a range"),
        ({"pages": "1", "section": "Introduction"}, "either pages"),
        ({}, "either pages"),
    ],
)
async def test_bad_page_requests_are_32602_with_the_reason(
    setup: PdfSetup, arguments: dict[str, Any], message: str
) -> None:
    error = await invalid_params(
        setup, "read_pdf_pages", {"paper_id": setup.paper_id("attention"), **arguments}
    )
    assert message in error.message


async def test_unknown_section_lists_the_sections(setup: PdfSetup) -> None:
    result = await call(
        setup, "read_pdf_pages", {"paper_id": setup.paper_id("attention"), "section": "Methods"}
    )
    error = tool_error(result)
    assert error["code"] == "not_found"
    assert "1 Introduction" in error["available_sections"]


async def test_section_without_outline_is_32602_suggesting_pages(setup: PdfSetup) -> None:
    error = await invalid_params(
        setup, "read_pdf_pages", {"paper_id": setup.paper_id("bert"), "section": "Introduction"}
    )
    assert "no outline" in error.message and "pages=" in error.message
    assert error.data["total_pages"] == 13


# --- annotations -------------------------------------------------------------------------


async def test_highlight_then_list_and_export(setup: PdfSetup) -> None:
    paper_id = setup.paper_id("attention")
    created = await call(
        setup,
        "create_highlight",
        {"paper_id": paper_id, "page": 1, "text": WRAPPED, "color": "positive",
         "comment": "Key claim"},
    )  # fmt: skip
    record = tool_data(created)
    assert (record["kind"], record["color"], record["color_name"]) == (
        "highlight",
        "#5fb236",
        "positive",
    )
    assert len(record["rects"]) == 3 and record["comment"] == "Key claim"

    listed = await call(setup, "list_annotations", {"paper_id": paper_id, "page": 1})
    assert record["annotation_id"] in [a["annotation_id"] for a in tool_data(listed)["annotations"]]
    exported = await call(setup, "export_annotations", {"paper_id": paper_id})
    assert "> Recent work has shown" in exported.content[0].text

    # The annotated copy in the server's knowledge base has the highlight.
    downloads = setup.kb.directory / "downloads"
    [copy] = downloads.glob(f"{paper_id}-*.annotated.pdf")
    with pymupdf.open(copy) as document:
        names = [a.info["id"] for a in document[0].annots()]
    assert f"research-mcp-{record['annotation_id']}" in names


async def test_area_annotation_over_mcp(setup: PdfSetup) -> None:
    paper_id = setup.paper_id("unfiled")
    created = await call(
        setup,
        "create_area_annotation",
        {"paper_id": paper_id, "page": 2, "rect": [300, 400, 60, 700], "color": "code"},
    )
    record = tool_data(created)
    assert (record["kind"], record["rects"], record["color_name"]) == (
        "area",
        [[60.0, 400.0, 300.0, 700.0]],
        "code",
    )
    outside = await invalid_params(
        setup,
        "create_area_annotation",
        {"paper_id": paper_id, "page": 2, "rect": [0, 0, 1000, 100]},
    )
    assert outside.data["page_box"] == [0.0, 0.0, 612.0, 792.0]


async def test_highlight_errors(setup: PdfSetup) -> None:
    paper_id = setup.paper_id("unfiled")
    missing = await call(
        setup, "create_highlight", {"paper_id": paper_id, "page": 3, "text": "not in this paper"}
    )
    error = tool_error(missing)
    assert error["code"] == "text_not_found" and error["page"] == 3
    out_of_range = await invalid_params(
        setup, "create_highlight", {"paper_id": paper_id, "page": 9, "text": "anything"}
    )
    assert "the PDF has 8 page(s)" in out_of_range.message
    colour = await invalid_params(
        setup,
        "create_highlight",
        {"paper_id": paper_id, "page": 1, "text": "Bethe lattice", "color": "teal"},
    )
    assert "positive" in colour.message and "#" in colour.message


async def test_papers_outside_the_client_collections_are_not_found(setup: PdfSetup) -> None:
    async with mcp_client(f"{setup.server.mcp_url}?collections=vision") as client:
        result = await client.call_tool(
            "get_pdf_outline", {"paper_id": setup.paper_id("attention")}
        )
    assert tool_error(result)["code"] == "not_found"


async def test_attaching_made_the_source_markdown_for_get_paper_source(setup: PdfSetup) -> None:
    result = await call(
        setup, "get_paper_source", {"paper_id": setup.paper_id("attention"), "max_chars": 3000}
    )
    text = result.content[0].text
    assert text.startswith("<!-- converted from the paper's PDF")
    assert "<!-- page 1 -->" in text and "## 1 INTRODUCTION" in text

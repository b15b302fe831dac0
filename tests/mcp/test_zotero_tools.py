"""The `zotero_*` tools through the MCP SDK's client over a real `manage.py serve` process,
whose ZOTERO_URL is the fake Zotero (tests/zotero_fake.py) running in this process.

A second server runs read-only with ZOTERO_URL on a port where nothing listens: it must
list no write tool and report Zotero as not reachable.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from mcp import MCPError

from mcp_endpoint.registry import CORE_TOOLS
from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    base_env,
    free_port,
    mcp_client,
    running_server,
    server_database,
    tool_data,
    tool_error,
)
from tests.zotero_fake import FakeZotero, default_items

pytestmark = [pytest.mark.server, pytest.mark.anyio]

ZOTERO_TOOLS = {
    "zotero_lookup",
    "zotero_get_pdf_outline",
    "zotero_read_pdf_pages",
    "zotero_create_highlight",
    "zotero_create_area_annotation",
}
WRITE_TOOLS = {"zotero_create_highlight", "zotero_create_area_annotation"}


@dataclass
class ZoteroSetup:
    kb: KnowledgeBase
    server: LiveServer
    fake: FakeZotero


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZoteroSetup]:
    directory = tmp_path_factory.mktemp("zotero-kb")
    with (
        server_database("mcp_zotero") as database_url,
        FakeZotero(default_items(directory / "gone")) as fake,
    ):
        kb = KnowledgeBase(directory, base_env(directory, database_url))
        env = {"ZOTERO_URL": fake.url, "ZOTERO_TIMEOUT": "1", "MCP_TOOLSETS": "zotero"}
        with running_server(kb, env=env) as server:
            yield ZoteroSetup(kb, server, fake)


@pytest.fixture(scope="module")
def closed_zotero_server(setup: ZoteroSetup) -> Iterator[tuple[LiveServer, str]]:
    """Read-only, over the database the first server migrated; Zotero not running."""
    url = f"http://127.0.0.1:{free_port()}/mcp"
    env = {"ZOTERO_URL": url, "MCP_READ_ONLY": "true", "MCP_TOOLSETS": "zotero"}
    with running_server(setup.kb, env=env) as server:
        yield server, url


@pytest.fixture(autouse=True)
def fresh_fake(request: pytest.FixtureRequest) -> Iterator[None]:
    """Each test sees only its own requests to the fake, and no leftover delay."""
    if "setup" in request.fixturenames:
        fake: FakeZotero = request.getfixturevalue("setup").fake
        fake.requests.clear()
        fake.delays.clear()
    yield


async def call(url: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(url) as client:
        return await client.call_tool(tool, arguments)


async def call_error(url: str, tool: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool(tool, arguments)
    return raised.value.error


# --- listing ------------------------------------------------------------------------------


async def test_zotero_tools_are_listed_with_titles_and_llm_descriptions(
    setup: ZoteroSetup,
) -> None:
    async with mcp_client(setup.server.mcp_url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    # MCP_TOOLSETS=zotero: the zotero set and the core set, which is always listed.
    assert set(tools) == ZOTERO_TOOLS | CORE_TOOLS
    tools = {name: tool for name, tool in tools.items() if name in ZOTERO_TOOLS}
    for tool in tools.values():
        assert tool.title and tool.description and tool.annotations
        assert tool.annotations.read_only_hint is (tool.name not in WRITE_TOOLS)
    area = tools["zotero_create_area_annotation"].input_schema["properties"]["rect"]
    assert "origin bottom-left" in area["description"]
    for name in ZOTERO_TOOLS - {"zotero_lookup"}:
        key = tools[name].input_schema["properties"]["key"]
        assert "zotero_lookup" in key["description"] and key["pattern"], name


async def test_read_only_server_lists_no_zotero_write_tools(
    closed_zotero_server: tuple[LiveServer, str],
) -> None:
    server, _ = closed_zotero_server
    async with mcp_client(server.mcp_url) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        with pytest.raises(MCPError) as raised:
            await client.call_tool(
                "zotero_create_highlight",
                {"key": "MURRAY12", "page": 1, "text": "Bethe", "color": "code"},
            )
    assert names & ZOTERO_TOOLS == ZOTERO_TOOLS - WRITE_TOOLS
    assert raised.value.error.code == -32602 and "read-only" in raised.value.error.message


# --- zotero_lookup ------------------------------------------------------------------------


async def test_lookup_returns_item_and_pdf_keys(setup: ZoteroSetup) -> None:
    result = await call(setup.server.mcp_url, "zotero_lookup", {"citekey": "murray2012quantum"})
    assert not result.is_error
    item = tool_data(result)
    assert item["key"] == "MURRAY12"
    assert item["title"].startswith("Quantum Criticality")
    assert item["creators"][0] == {"name": "James M. Murray", "role": "author"}
    assert item["date"] == "2012-04-03"
    assert item["pdf_attachment_keys"] == ["MURRAYPF"]
    assert item["has_pdf"] is True
    assert setup.fake.posted("citekey") == [{"citekey": "murray2012quantum"}]


async def test_lookup_of_item_without_pdf_says_no_pdf(setup: ZoteroSetup) -> None:
    result = await call(setup.server.mcp_url, "zotero_lookup", {"citekey": "smith2024deep"})
    assert tool_data(result)["has_pdf"] is False
    assert tool_data(result)["pdf_attachment_keys"] == []
    assert "no PDF attachment" in tool_data(result)["note"]


async def test_lookup_of_unknown_citekey_is_a_not_found_error(setup: ZoteroSetup) -> None:
    result = await call(setup.server.mcp_url, "zotero_lookup", {"citekey": "nobody1999"})
    error = tool_error(result)
    assert error["code"] == "not_found"
    assert error["message"] == "Zotero: Item not found for citekey (citekey: nobody1999)"


async def test_slow_zotero_is_a_timeout_error(setup: ZoteroSetup) -> None:
    setup.fake.delays["citekey"] = 4  # the server's ZOTERO_TIMEOUT is 1 s
    result = await call(setup.server.mcp_url, "zotero_lookup", {"citekey": "murray2012quantum"})
    error = tool_error(result)
    assert error["code"] == "zotero_timeout"
    assert "did not answer /citekey within 1 s" in error["message"]


async def test_closed_zotero_is_a_zotero_unreachable_error(
    closed_zotero_server: tuple[LiveServer, str],
) -> None:
    server, zotero_url = closed_zotero_server
    result = await call(server.mcp_url, "zotero_lookup", {"citekey": "murray2012quantum"})
    error = tool_error(result)
    assert error["code"] == "zotero_unreachable"
    assert error["message"] == (
        f"Zotero is not reachable at {zotero_url}: "
        "is Zotero running with the mcp-zotero-api plugin?"
    )


# --- zotero_get_pdf_outline ---------------------------------------------------------------


async def test_outline_is_nested_with_total_pages(setup: ZoteroSetup) -> None:
    result = await call(setup.server.mcp_url, "zotero_get_pdf_outline", {"key": "MURRAY12"})
    outline = tool_data(result)
    assert (outline["has_outline"], outline["total_pages"]) == (True, 8)
    [root] = outline["items"]
    second = root["children"][2]
    assert second["title"] == "II Self-consistent action in the large z limit"
    assert [c["title"] for c in second["children"]] == ["A Ordered Phase", "B Disordered phase"]


async def test_pdf_without_outline_has_empty_items_and_a_hint(setup: ZoteroSetup) -> None:
    result = await call(setup.server.mcp_url, "zotero_get_pdf_outline", {"key": "PAPERMAG"})
    outline = tool_data(result)
    assert outline["has_outline"] is False
    assert outline["items"] == []
    assert outline["total_pages"] == 13
    assert "page numbers" in outline["hint"]


async def test_outline_of_item_without_pdf_is_not_found(setup: ZoteroSetup) -> None:
    error = tool_error(
        await call(setup.server.mcp_url, "zotero_get_pdf_outline", {"key": "NOPDF234"})
    )
    assert (error["code"], error["message"]) == (
        "not_found",
        "Zotero: No PDF attachment for key (key: NOPDF234)",
    )


async def test_citekey_as_key_is_refused_by_the_schema(setup: ZoteroSetup) -> None:
    error = await call_error(
        setup.server.mcp_url, "zotero_get_pdf_outline", {"key": "murray2012quantum"}
    )
    assert error.code == -32602
    assert setup.fake.requests == []


# --- zotero_read_pdf_pages ----------------------------------------------------------------


async def test_read_page_range_is_delimited_text(setup: ZoteroSetup) -> None:
    result = await call(
        setup.server.mcp_url, "zotero_read_pdf_pages", {"key": "MURRAY12", "pages": "1-2"}
    )
    text = result.content[0].text
    assert text.startswith("--- Page 1 of 8 ---\nQuantum Criticality for Extended Nodes")
    assert "\n\n--- Page 2 of 8 ---\n" in text
    assert "--- Page 3 of 8 ---" not in text and "[TRUNCATED" not in text


async def test_read_sections_have_section_headers(setup: ZoteroSetup) -> None:
    result = await call(
        setup.server.mcp_url,
        "zotero_read_pdf_pages",
        {"key": "SHEN2023", "section": "Introduction,Conclusion"},
    )
    text = result.content[0].text
    assert text.startswith("=== Section: 1 Introduction (pages 1-2) ===")
    assert "\n\n=== Section: 4 Conclusion (page 3) ===\n\n--- Page 3 of 4 ---\n" in text


async def test_read_with_max_chars_ends_with_the_truncation_marker(setup: ZoteroSetup) -> None:
    result = await call(
        setup.server.mcp_url,
        "zotero_read_pdf_pages",
        {"key": "MURRAY12", "pages": "all", "max_chars": 300},
    )
    text = result.content[0].text
    assert text[300:].startswith("\n\n[TRUNCATED: showed the first 300 of ")


async def test_page_past_the_end_is_an_invalid_params_error(setup: ZoteroSetup) -> None:
    error = await call_error(
        setup.server.mcp_url, "zotero_read_pdf_pages", {"key": "SHEN2023", "pages": "4-5"}
    )
    assert error.code == -32602
    assert "Page 5 is out of range: the PDF has 4 page(s) (1-4)" in error.message


async def test_unknown_section_error_lists_the_sections(setup: ZoteroSetup) -> None:
    result = await call(
        setup.server.mcp_url,
        "zotero_read_pdf_pages",
        {"key": "SHEN2023", "section": "NonExistent"},
    )
    error = tool_error(result)
    assert error["code"] == "not_found"
    assert "1 Introduction" in error["available_sections"]


async def test_section_of_pdf_without_outline_suggests_pages(setup: ZoteroSetup) -> None:
    error = await call_error(
        setup.server.mcp_url, "zotero_read_pdf_pages", {"key": "PAPERMAG", "section": "Intro"}
    )
    assert error.code == -32602
    assert "no outline" in error.message and "pages" in error.message


async def test_missing_pdf_file_is_an_error_naming_the_file(setup: ZoteroSetup) -> None:
    result = await call(
        setup.server.mcp_url, "zotero_read_pdf_pages", {"key": "GONEFILE", "pages": "1"}
    )
    error = tool_error(result)
    assert error["code"] == "zotero_error"
    assert error["reason"] == "pdf_file_missing"
    assert error["key"] == "GONEFILE"
    assert error["path"].endswith("/gone/deleted.pdf")
    assert "Zotero item GONEFILE" in error["message"]
    assert f"{error['path']} does not exist" in error["message"]


# --- zotero_create_highlight --------------------------------------------------------------


async def test_highlight_with_semantic_colour_and_comment(setup: ZoteroSetup) -> None:
    result = await call(
        setup.server.mcp_url,
        "zotero_create_highlight",
        {
            "key": "MURRAY12",
            "page": 1,
            "text": "Bethe Lattice",
            "color": "positive",
            "comment": "the model",
        },
    )
    assert not result.is_error
    assert setup.fake.posted("highlight") == [
        {
            "key": "MURRAY12",
            "text": "Bethe Lattice",
            "page": 1,
            "color": "#5fb236",
            "comment": "the model",
        }
    ]
    highlight = tool_data(result)
    assert highlight["color"] == "#5fb236"
    assert highlight["attachment_key"] == "MURRAYPF"
    assert highlight["annotation_key"].startswith("HL")
    assert highlight["rects"]


async def test_highlight_text_not_found_is_an_error(setup: ZoteroSetup) -> None:
    result = await call(
        setup.server.mcp_url,
        "zotero_create_highlight",
        {"key": "MURRAY12", "page": 2, "text": "Nodes on a Bethe", "color": "code"},
    )
    error = tool_error(result)
    assert error["code"] == "not_found"
    assert error["message"] == "Zotero: Text not found on page 2 (use exact, unique text)"


async def test_highlight_page_out_of_range_gives_the_range(setup: ZoteroSetup) -> None:
    error = await call_error(
        setup.server.mcp_url,
        "zotero_create_highlight",
        {"key": "SHEN2023", "page": 7, "text": "Writing", "color": "detail"},
    )
    assert error.code == -32602
    assert error.message == "Zotero: page out of range (range: 1..4)"


async def test_highlight_with_unknown_colour_is_refused(setup: ZoteroSetup) -> None:
    error = await call_error(
        setup.server.mcp_url,
        "zotero_create_highlight",
        {"key": "SHEN2023", "page": 1, "text": "Writing", "color": "mauve"},
    )
    assert error.code == -32602
    assert setup.fake.posted("highlight") == []


# --- zotero_create_area_annotation --------------------------------------------------------


async def test_area_annotation_sends_the_documented_position(setup: ZoteroSetup) -> None:
    result = await call(
        setup.server.mcp_url,
        "zotero_create_area_annotation",
        {"key": "SHEN2023", "page": 3, "rect": [300, 500, 80, 650], "color": "code"},
    )
    assert not result.is_error
    assert setup.fake.posted("annotations") == [
        {
            "parentItemKey": "SHENPDF2",
            "annotationType": "image",
            "position": {"pageIndex": 2, "rects": [[80.0, 500.0, 300.0, 650.0]]},
            "color": "#f19837",
        }
    ]
    assert tool_data(result)["position"]["pageIndex"] == 2
    assert tool_data(result)["annotation_key"].startswith("IM")


async def test_area_annotation_with_bad_rect_is_refused(setup: ZoteroSetup) -> None:
    error = await call_error(
        setup.server.mcp_url,
        "zotero_create_area_annotation",
        {"key": "SHEN2023", "page": 1, "rect": [1, 2, 3], "color": "code"},
    )
    assert error.code == -32602
    assert setup.fake.requests == []


async def test_tool_errors_are_json_bodies(setup: ZoteroSetup) -> None:
    result = await call(setup.server.mcp_url, "zotero_lookup", {"citekey": "nobody2000"})
    body = json.loads(result.content[0].text)
    assert set(body["error"]) >= {"code", "message", "zotero"}

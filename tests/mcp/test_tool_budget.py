"""The agent's contract (issue 18): what tools/list costs, one vocabulary, closed schemas.

The costs are counted on the registry the server lists (`mcp_endpoint.budget`); a test
below checks that the real server lists the same tools with the same schemas.
"""

from __future__ import annotations

from typing import Any

import pytest
from django.core.management import call_command

from mcp_endpoint.budget import CORE_BUDGET, FULL_BUDGET, tool_costs
from mcp_endpoint.registry import CORE, CORE_TOOLS, build_registry, compact_schema
from tests.mcp.conftest import LiveServer, mcp_client

# Seed tool names that must stay listed under these names (seeds 000, 002, 003, 004).
SEED_TOOLS = {
    "search_papers", "search_by_author", "get_paper_details", "get_paper_metadata",
    "add_paper", "manage_paper_keywords", "create_project", "list_project_papers",
    "get_citing_papers", "find_related_papers", "analyze_paper_trends",
    "export_paper_bibtex", "export_search_results", "list_search_engines",
    "search_papers_by_keyword", "search_papers_by_payload", "search_papers_semantic",
    "list_top_facets", "get_search_engine_categories", "get_paper_summary",
    "get_paper_source", "save_paper_summary", "zotero_lookup", "zotero_get_pdf_outline",
    "zotero_read_pdf_pages", "zotero_create_highlight", "zotero_create_area_annotation",
    "decide", "get_session", "export_results",
}  # fmt: skip
CURATION_TOOLS = {
    "list_projects", "get_project", "add_papers_to_project", "remove_papers_from_project",
    "delete_project", "attach_pdf",
}  # fmt: skip


def test_the_whole_surface_fits_the_budget_with_every_seed_tool() -> None:
    costs = tool_costs()
    names = {cost.name for cost in costs}
    assert SEED_TOOLS | CURATION_TOOLS <= names
    total = sum(cost.tokens for cost in costs)
    assert total <= FULL_BUDGET, sorted((c.tokens, c.name) for c in costs)[-5:]


def test_the_core_set_fits_its_budget_and_is_always_listed() -> None:
    core = tool_costs(toolsets=[CORE])
    assert {cost.name for cost in core} == set(CORE_TOOLS)
    assert sum(cost.tokens for cost in core) <= CORE_BUDGET
    with_pdf = {cost.name for cost in tool_costs(toolsets=["pdf"])}
    assert set(CORE_TOOLS) < with_pdf and "read_pdf_pages" in with_pdf


def test_budget_command_prints_every_tool_and_set(capsys: pytest.CaptureFixture[str]) -> None:
    call_command("mcp_budget")
    out = capsys.readouterr().out
    for name in ("search_papers", "zotero_lookup", "list_projects"):
        assert name in out
    assert "core" in out and "total" in out and f"<= {FULL_BUDGET}" in out


def _walk(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        found.append(schema)
        for value in schema.values():
            found += _walk(value)
    elif isinstance(schema, list):
        for value in schema:
            found += _walk(value)
    return found


def test_schemas_are_closed_and_carry_no_noise() -> None:
    registry = build_registry(toolsets=[CORE, "library", "search", "assets", "pdf", "zotero",
                                        "review"])  # fmt: skip
    for name, tool in registry.tools.items():
        schema = tool.parameters
        assert schema["additionalProperties"] is False, name
        for node in _walk(schema):
            assert "title" not in node or not isinstance(node["title"], str), name
            assert node.get("default", 0) is not None, name
            assert {"type": "null"} not in node.get("anyOf", []), name
            if node.get("type") == "object" and "properties" in node:
                assert node.get("additionalProperties") is False, (name, node)
        page_names = {"max_results", "top_k", "candidates_limit"} & set(schema["properties"])
        assert not page_names, (name, page_names)


def test_compact_schema_keeps_meaning() -> None:
    schema = {
        "title": "x",
        "type": "object",
        "properties": {
            "a": {"anyOf": [{"type": "integer"}, {"type": "null"}], "default": None,
                  "title": "A", "description": "d"},
            "b": {"anyOf": [{"type": "integer"}, {"type": "string"}, {"type": "null"}]},
            "title": {"type": "string"},
        },
    }  # fmt: skip
    assert compact_schema(schema) == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "d"},
            "b": {"anyOf": [{"type": "integer"}, {"type": "string"}]},
            "title": {"type": "string"},
        },
        "additionalProperties": False,
    }


def test_closed_sets_are_enums() -> None:
    registry = build_registry(toolsets=[CORE, "library", "search", "pdf", "review"])
    props = {name: tool.parameters["properties"] for name, tool in registry.tools.items()}
    assert set(props["analyze_paper_trends"]["analysis_type"]["enum"]) == {
        "authors", "keywords", "categories", "venues", "timeline",
    }  # fmt: skip
    assert props["decide"]["action"]["enum"] == ["approve", "edit", "reject"]
    assert set(props["export_search_results"]["format"]["enum"]) == {
        "bibtex", "csv", "json", "jsonl", "markdown", "ris",
    }  # fmt: skip
    colours = props["create_highlight"]["color"]["anyOf"][0]["enum"]
    assert "positive" in colours and "section1" in colours


@pytest.mark.anyio
async def test_the_server_lists_what_the_budget_counts(library_server: LiveServer) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    registry = build_registry()
    assert set(listed) == set(registry.tools)
    for name, tool in listed.items():
        assert tool.input_schema == registry.tools[name].parameters, name
        assert tool.output_schema is None, name


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"

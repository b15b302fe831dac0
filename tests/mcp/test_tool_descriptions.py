"""A tool's description is part of its interface: the choices it lists are the choices the
tool accepts, read from the live registry (`build_registry()`, every tool set), and
docs/MCP.md's catalogue is what `manage.py mcp_budget --markdown` prints today.

An agent reads "as BibTeX, CSV, JSON or RIS" and never asks for JSONL or Markdown; it reads
"local, arxiv" and never tries openalex. So: wherever a description names two or more of an
enum's values it must name all of them, it may name no format the tool refuses, and the
`engines` argument names exactly the engines there are.
"""

from __future__ import annotations

import io
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from engines.registry import BUILTIN_ENGINES, LOCAL_ENGINE
from mcp_endpoint.budget import tool_costs
from mcp_endpoint.registry import CORE, TOOLSET_MODULES, build_registry

ROOT = Path(__file__).resolve().parents[2]
MCP_DOC = ROOT / "docs" / "MCP.md"
# Export and document formats a description might name; a tool with a `format` enum may
# name only those it accepts.
FORMAT_WORDS = ("bibtex", "csv", "tsv", "json", "jsonl", "markdown", "ris", "xml", "yaml", "xlsx",
                "html", "endnote", "txt", "text")  # fmt: skip


def all_tools() -> dict[str, Any]:
    return build_registry(toolsets=[CORE, *TOOLSET_MODULES]).tools


def enums(schema: Any, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], list[str]]]:
    """(path to the property, its enum) for every enum in an input schema."""
    if isinstance(schema, dict):
        if "enum" in schema:
            yield path, [str(value) for value in schema["enum"]]
        for key, value in schema.items():
            yield from enums(value, (*path, key))
    elif isinstance(schema, list):
        for value in schema:
            yield from enums(value, path)


def property_description(schema: dict[str, Any], path: tuple[str, ...]) -> str:
    """The descriptions along the path to an enum (the property's own, its array's...)."""
    texts, node = [], schema
    for key in path:
        if not isinstance(node, dict) or key not in node:
            break
        node = node[key]
        if isinstance(node, dict) and isinstance(node.get("description"), str):
            texts.append(node["description"])
    return " ".join(texts)


def mentions(text: str, value: str) -> bool:
    """`value` as a word of `text` (any case; a plural counts: 'authors' names 'author')."""
    stem = re.escape(value.lower())
    plural = r"(?:s|es)?" if not value.lower().endswith("y") else ""
    if value.lower().endswith("y"):
        stem = rf"(?:{stem}|{re.escape(value.lower()[:-1])}ies)"
    return re.search(rf"(?<![\w-]){stem}{plural}(?![\w-])", text.lower()) is not None


def enum_cases() -> list[tuple[str, tuple[str, ...], list[str], str]]:
    cases = []
    for name, tool in all_tools().items():
        for path, values in enums(tool.parameters):
            text = f"{tool.description or ''} {property_description(tool.parameters, path)}"
            cases.append((name, path, values, text))
    return cases


@pytest.mark.parametrize(
    ("tool", "path", "values", "text"),
    enum_cases(),
    ids=lambda case: case if isinstance(case, str) and case.isidentifier() else "",
)
def test_a_description_listing_an_enum_lists_every_value(
    tool: str, path: tuple[str, ...], values: list[str], text: str
) -> None:
    named = {value for value in values if mentions(text, value)}
    if len(named) < 2:  # the description does not list the choices: nothing to hold it to
        return
    assert named == set(values), (
        f"{tool}: its description names {sorted(named)} of {path[-2:]} but the tool accepts "
        f"{values}; missing {sorted(set(values) - named)}"
    )


def test_tools_with_a_format_name_no_format_they_refuse() -> None:
    checked = 0
    for name, tool in all_tools().items():
        for path, values in enums(tool.parameters):
            if "format" not in path:
                continue
            checked += 1
            text = f"{tool.description or ''} {property_description(tool.parameters, path)}"
            named = {word for word in FORMAT_WORDS if mentions(text, word)}
            assert named <= set(values), f"{name} names {sorted(named - set(values))}"
            assert named == set(values), f"{name} leaves out {sorted(set(values) - named)}"
    assert checked >= 3  # export_search_results, export_annotations, export_results


def test_export_search_results_names_every_format_it_accepts() -> None:
    tool = all_tools()["export_search_results"]
    accepted = next(values for path, values in enums(tool.parameters) if "format" in path)
    assert len(accepted) == 6
    for value in accepted:
        assert mentions(tool.description or "", value), value


def test_the_engines_argument_names_every_engine_there_is() -> None:
    engines = {LOCAL_ENGINE, *BUILTIN_ENGINES}
    checked = 0
    for name, tool in all_tools().items():
        schema = tool.parameters.get("properties", {}).get("engines")
        if schema is None:
            continue
        checked += 1
        text = schema.get("description", "")
        named = {engine for engine in engines if re.search(rf"\b{engine}\b", text)}
        # Either every engine by name, or examples and where the whole list is.
        assert named == engines or "list_search_engines" in text, (
            f"{name}: engines names {sorted(named)}, there are {engines}"
        )
        assert "for now" not in text, f"{name}: a stale 'for now' in the engines argument"
    assert checked >= 3  # search_papers, search_by_author, get_citing_papers


# --- docs/MCP.md -------------------------------------------------------------------------


def doc_table(start: str) -> list[str]:
    """The markdown table in docs/MCP.md whose first line starts with `start`."""
    lines = MCP_DOC.read_text(encoding="utf-8").splitlines()
    first = next(i for i, line in enumerate(lines) if line.startswith(start))
    table = []
    for line in lines[first:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return table


def test_the_catalogue_in_docs_mcp_is_what_mcp_budget_prints() -> None:
    out = io.StringIO()
    call_command("mcp_budget", "--markdown", stdout=out)
    printed = out.getvalue().strip().splitlines()
    assert doc_table("| set | tool | kind |") == printed, (
        "docs/MCP.md's catalogue drifted: replace the table with the output of "
        "`python manage.py mcp_budget --markdown`"
    )


def test_docs_mcp_names_every_tool_read_only_mode_hides() -> None:
    hidden = {c.name for c in tool_costs()} - {c.name for c in tool_costs(read_only=True)}
    text = MCP_DOC.read_text(encoding="utf-8")
    row = next(line for line in text.splitlines() if line.startswith("| `MCP_READ_ONLY`"))
    removed = row.split("Still listed")[0]  # the row then names the tools that stay
    named = set(re.findall(r"`([a-z_]+)`", removed)) - {"MCP_READ_ONLY", "false", "true"}
    assert named == hidden, (
        f"MCP_READ_ONLY row: missing {sorted(hidden - named)}, extra {sorted(named - hidden)}"
    )


# --- docs/API.md -------------------------------------------------------------------------


def test_docs_api_lists_every_rest_operation() -> None:
    from research_site.api import api

    text = (ROOT / "docs" / "API.md").read_text(encoding="utf-8")
    schema = api.get_openapi_schema(path_prefix="/api")
    missing = [
        f"{method.upper()} {path} ({operation['operationId']})"
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if operation["operationId"] != "api_index" and f"`{operation['operationId']}`" not in text
    ]
    assert not missing, f"docs/API.md does not list: {missing}"


def test_docs_api_lists_every_error_status_the_api_maps() -> None:
    from research_site.api_errors import STATUS_BY_ERROR

    text = (ROOT / "docs" / "API.md").read_text(encoding="utf-8")
    for error, status in STATUS_BY_ERROR.items():
        assert re.search(rf"^\| {status} \| [^|]*`{error.code}`", text, re.M), (
            f"docs/API.md: no row for {status} {error.code}"
        )

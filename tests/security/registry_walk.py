"""Every registered MCP tool and resource called by one client, for the tests that check an
answer for each (test_scope_registry.py: a client scoped to one collection; and
test_roles_registry.py: a user per project role).

The arguments name the paper, project, review, saved search and alert of "NLP Reading"
(seed_scope.py). A tool added later is called automatically when its required arguments
are ones this file knows (`targets`, SETTINGS); otherwise `tool_calls` says what is
missing until the tool is given arguments in TOOL_ARGUMENTS, or a reason in NOT_CALLED.
"""

from __future__ import annotations

import json
import re
from collections.abc import AsyncIterator, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from mcp import MCPError

from mcp_endpoint.registry import CORE, TOOLSET_MODULES, Registry, build_registry
from tests.mcp.conftest import KnowledgeBase

# Tools that are registered but not called, and why.
NOT_CALLED = {
    name: "the Zotero library is not the server's: collections do not apply, and the tool "
    "is listed only with a Zotero configured"
    for name in (
        "zotero_lookup",
        "zotero_get_pdf_outline",
        "zotero_read_pdf_pages",
        "zotero_create_highlight",
        "zotero_create_area_annotation",
    )
}

# Arguments whose value depends on the tool (an enum, a shape).
TOOL_ARGUMENTS: dict[str, dict[str, Any]] = {
    "export_search_results": {"format": "json"},
    "export_annotations": {"format": "markdown"},
    "export_results": {"format": "json"},
    "analyze_paper_trends": {"analysis_type": "keywords"},
    "list_top_facets": {"category": "keyword", "query": "transformer"},
    "decide": {"action": "approve"},
    "manage_paper_keywords": {"action": "set", "keywords": ["scope-probe"]},
    "search_papers_by_payload": {"payload": {"keyword": "transformer"}},
    "save_search": {"query": "sequence transduction models", "schedule": "manual"},
    "extraction_form": {"fields": [{"key": "probe", "type": "text"}]},
    "extract_record": {"values": {"probe": {"value": "probe"}}},
    # Project names are library-wide: the clash is the only answer (docs/SECURITY.md).
    "create_project": {"name": "NLP Reading"},
}

# Other arguments, given whenever a tool takes them: writes asked for (highlight, attach,
# mark_read), no waiting, no network.
SETTINGS: dict[str, Any] = {
    "highlight": True,
    "template": "brief",
    "content": {"tldr": "probe"},
    "set_preferred": True,
    "page": 1,
    "rect": [72, 72, 200, 120],
    "color": "#ff0000",
    "comment": "probe",
    "url": "https://example.org/paper.pdf",
    "attach": True,
    "mark_read": True,
    "engines": ["local"],
    "wait_seconds": 0,
    "lang": "en",
}

# Resource template variables (RFC 6570 query parts such as {?page} are left out).
TEMPLATE_VALUES = {"template": "brief", "lang": "en"}


def registry() -> Registry:
    """Every toolset's tools and resources, as the server registers them."""
    return build_registry(toolsets=[CORE, *TOOLSET_MODULES])


def targets(kb: KnowledgeBase) -> dict[str, Any]:
    """Argument name -> a value naming something of "NLP Reading" (or outside "Vision")."""
    attention = kb.paper("attention")
    return {
        "paper_id": attention["citekey"],
        "paper_ids": [
            attention["paper_id"],
            kb.paper("bert")["citekey"],
            kb.paper("unfiled")["id"],
        ],
        "paper": str(attention["paper_id"]),
        "project_id": kb.project("nlp"),
        "add_to_project": kb.project("nlp"),
        "filters": {"project": kb.project("nlp")},
        "session_id": kb.data["review"],
        "identifier": "10.5555/3295222.3295349",
        "name": "secret-watch",
        "confirm_name": "NLP Reading",
        "query": "sequence transduction models",
        "prompt": "sequence transduction models",
        "keyword": "transformer",
        "author_name": "Vaswani",
        "text": "Vaswani and Shazeer (2017) proposed sequence transduction with attention.",
        "decisions": [{"paper": attention["paper_id"], "decision": "include"}],
    }


def tool_calls(
    name: str, schema: dict[str, Any], named: dict[str, Any]
) -> list[dict[str, Any]] | str:
    """The calls to make: the required arguments (and every setting the tool takes), then
    once more with each optional argument that can name something of "NLP Reading" (so a
    check on one argument does not hide a path through another); or why none can be built."""
    properties = schema.get("properties", {})
    required = set(schema.get("required", []))
    known = {**named, **SETTINGS, **TOOL_ARGUMENTS.get(name, {})}
    missing = sorted(required - known.keys())
    if missing:
        return (
            f"{name}: required {missing} unknown to this test: add them to targets, SETTINGS "
            "or TOOL_ARGUMENTS, or the tool to NOT_CALLED with a reason"
        )
    base = {key: known[key] for key in properties if key in required or key in SETTINGS}
    base.update(TOOL_ARGUMENTS.get(name, {}))
    optional = [key for key in properties if key in named and key not in base]
    return [base] + [{**base, key: named[key]} for key in optional]


def resource_uri(template: str, kb: KnowledgeBase) -> tuple[str, dict[str, str]]:
    """The template filled with what names "NLP Reading"'s things, and those values."""
    values = {
        "paper_id": str(kb.paper("attention")["paper_id"]),
        "project_id": kb.project("nlp"),
        "session_id": kb.data["review"],
        **TEMPLATE_VALUES,
    }
    uri = re.sub(r"\{\?[^}]*\}", "", template)
    used = {name: values[name] for name in re.findall(r"\{(\w+)\}", uri)}
    return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], uri), used


def markers_shown(text: str, arguments: Any, markers: tuple[str, ...]) -> list[str]:
    """The markers in an answer, once the client's own strings (of four characters or
    more: errors echo them) are taken out of it."""
    echoed = [v for v in _strings(arguments) if len(v) >= 4]
    for value in sorted(echoed, key=len, reverse=True):
        text = text.replace(value, "").replace(json.dumps(value)[1:-1], "")
    return [marker for marker in markers if marker in text]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


@dataclass
class Answer:
    """One call's answer: `error` is the tool's error body (an `isError` result) or a
    resource's error data; None for an answer, and for a JSON-RPC error such as -32602
    (bad input: its message and data are the text)."""

    kind: str  # "tool" or "resource"
    name: str  # the tool's name, or the resource's URI template
    target: str  # the tool's name, or the URI read
    arguments: dict[str, Any]  # the tool's arguments, or the values put into the URI
    text: str
    error: dict[str, Any] | None


async def call_tool(client: Any, name: str, arguments: dict[str, Any]) -> Answer:
    try:
        result = await client.call_tool(name, arguments)
    except MCPError as exc:  # -32602 (bad input, e.g. the wrong confirm_name): the answer
        data = exc.error.data if isinstance(exc.error.data, dict) else {}
        text = f"{exc.error.message} {json.dumps(data, default=str)}"
        return Answer("tool", name, name, arguments, text, None)
    text = "".join(getattr(block, "text", "") for block in result.content)
    error = json.loads(text)["error"] if result.is_error else None
    return Answer("tool", name, name, arguments, text, error)


async def read_resource(client: Any, template: str, kb: KnowledgeBase) -> Answer:
    uri, used = resource_uri(template, kb)
    try:
        read = await client.read_resource(uri)
    except MCPError as exc:
        data = exc.error.data if isinstance(exc.error.data, dict) else {}
        return Answer("resource", template, uri, used, exc.error.message, data)
    text = "".join(getattr(c, "text", "") or "" for c in read.contents)
    return Answer("resource", template, uri, used, text, None)


async def walk_registry(
    client: Any,
    registry: Registry,
    calls: Mapping[str, list[dict[str, Any]]],
    kb: KnowledgeBase,
) -> AsyncIterator[Answer]:
    """Each tool of `calls` (tool -> its argument sets), in the registry's order, then
    every resource of the registry, read with `resource_uri`'s values: their answers."""
    for name in registry.tools:
        for arguments in calls.get(name, []):
            yield await call_tool(client, name, arguments)
    for resource in registry.resources:
        yield await read_resource(client, resource.uri, kb)

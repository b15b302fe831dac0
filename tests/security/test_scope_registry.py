"""Every tool and resource, generated from the tool registry, called by a client scoped to
one collection ("Vision") with the paper, project, review, saved search and alert of
another ("NLP Reading"), through the real /mcp server and the SDK client.

Nothing of "NLP Reading" may appear in any answer, and nothing of it may change
(tests/security/scope_snapshot.py). A tool added later is called here automatically when
its required arguments are ones this file knows (PARAMETERS); otherwise the test fails
until the tool is given arguments in TOOL_ARGUMENTS, or a reason in NOT_CALLED.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import MCPError

from mcp_endpoint.registry import CORE, TOOLSET_MODULES, build_registry
from tests.mcp.conftest import KnowledgeBase, LiveServer, mcp_client, running_server
from tests.security.conftest import scope_snapshot

pytestmark = [pytest.mark.server, pytest.mark.anyio]

# Texts only "NLP Reading" holds (seed_scope.py, seed_library.py); searched for in every
# answer after the client's own argument strings are taken out of it (errors echo them).
MARKERS = (
    "Attention Is All You Need",
    "dominant sequence transduction",
    "BERT: Pre-training",
    "We introduce a new language representation",
    "A Paper In No Project",
    "SECRET-",
    "secret-watch",
    "nlp-reading",
    "NLP Reading",
    "Language models.",
)

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


@pytest.fixture(scope="module")
def scope_server(scope_kb: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(scope_kb) as server:
        yield server


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


def shown(text: str, arguments: dict[str, Any]) -> list[str]:
    """The markers in an answer, once the client's own strings are taken out of it."""
    echoed = [v for v in _strings(arguments) if len(v) >= 4]
    for value in sorted(echoed, key=len, reverse=True):
        text = text.replace(value, "").replace(json.dumps(value)[1:-1], "")
    return [marker for marker in MARKERS if marker in text]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


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


async def test_every_tool_and_resource_keeps_a_scoped_client_inside_its_collection(
    scope_server: LiveServer, scope_kb: KnowledgeBase
) -> None:
    registry = build_registry(toolsets=[CORE, *TOOLSET_MODULES])
    assert registry.tools, "the registry lists no tool"
    named = targets(scope_kb)
    problems: list[str] = []
    before = scope_snapshot(scope_kb)
    called: list[str] = []
    async with mcp_client(f"{scope_server.mcp_url}?collections=Vision") as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        for name, tool in registry.tools.items():
            if name in NOT_CALLED:
                assert name not in listed, f"{name} is listed: call it here"
                continue
            calls = tool_calls(name, tool.parameters, named)
            if isinstance(calls, str):
                problems.append(calls)
                continue
            assert name in listed, f"{name} is registered but not listed to the client"
            called.append(name)
            for arguments in calls:
                try:
                    result = await client.call_tool(name, arguments)
                    text = "".join(getattr(block, "text", "") for block in result.content)
                except MCPError as exc:  # -32602 and the like: the message is the answer
                    text = f"{exc.error.message} {json.dumps(exc.error.data, default=str)}"
                if found := shown(text, arguments):
                    problems.append(f"{name}{arguments} shows {found}: {text[:300]}")
        for resource in registry.resources:
            uri, used = resource_uri(resource.uri, scope_kb)
            try:
                read = await client.read_resource(uri)
                text = "".join(getattr(c, "text", "") or "" for c in read.contents)
            except MCPError as exc:
                text = exc.error.message
            if found := shown(text, used):
                problems.append(f"resource {uri} shows {found}: {text[:300]}")
    assert not problems, "\n".join(problems)
    assert set(called) == set(registry.tools) - set(NOT_CALLED)
    assert scope_snapshot(scope_kb) == before

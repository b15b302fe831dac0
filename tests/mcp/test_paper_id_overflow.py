"""A paper id past the largest a database integer holds (2^63 and beyond) is invalid
params (-32602) in every tool that takes paper ids, never an internal error: the tools are
found in the registry (every argument whose name holds "paper" and whose schema takes an
integer), each called through the real server with such an id."""

from __future__ import annotations

from typing import Any

import pytest

from tests.mcp.conftest import LiveServer, call_tool_raw, post, rpc

pytestmark = pytest.mark.server

HUGE = [2**63, 2**64 + 1, 10**30]
# Other arguments a call needs to reach the paper id (plausible values, so that it is
# the id that is judged).
FILLERS = {
    "text": "attention is all you need",
    "query": "attention",
    "content": "A summary.",
    "template": "default",
    "quote": "attention",
    "project_id": "nlp-reading",
    "project": "nlp-reading",
    "keyword": "transformers",
    "keywords": ["transformers"],
    "page": 1,
    "decision": "include",
    "style": "apa",
    "url": "https://example.org/a.pdf",
}


def takes_integer(schema: dict[str, Any]) -> bool:
    kinds = [schema, *schema.get("anyOf", [])]
    for kind in kinds:
        if kind.get("type") == "integer":
            return True
        if kind.get("type") == "array" and takes_integer(kind.get("items", {})):
            return True
    return False


def paper_id_arguments(tool: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
    properties = tool["inputSchema"].get("properties", {})
    return [
        (name, schema)
        for name, schema in properties.items()
        if "paper" in name and takes_integer(schema)
    ]


def test_every_paper_id_argument_refuses_an_overflowing_id(library_server: LiveServer) -> None:
    tools = post(library_server.mcp_url, rpc("tools/list")).json()["result"]["tools"]
    cases = [(tool, name, schema) for tool in tools for name, schema in paper_id_arguments(tool)]
    assert len(cases) > 15, [(tool["name"], name) for tool, name, _ in cases]
    wrong = []
    for tool, name, schema in cases:
        required = tool["inputSchema"].get("required", [])
        arguments = {key: FILLERS[key] for key in required if key in FILLERS and key != name}
        array = any(kind.get("type") == "array" for kind in [schema, *schema.get("anyOf", [])])
        for huge in HUGE:
            arguments[name] = [huge] if array else huge
            answer = call_tool_raw(library_server.mcp_url, tool["name"], arguments).json()
            code = answer.get("error", {}).get("code")
            if code != -32602:
                wrong.append((tool["name"], name, huge, str(answer)[:300]))
    assert not wrong, "\n".join(map(str, wrong))

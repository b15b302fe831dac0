"""Hypothesis against one real server: random JSON-RPC messages, then random arguments
for every tool it lists. Whatever arrives, the server answers without a 5xx, without a
traceback or a path of its own files, with standard JSON-RPC error codes only and no
"Internal error" incident, and it still answers a ping afterwards.

About 150 requests in all (FUZZ_EXAMPLES raises it for a deeper local search).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest
from hypothesis import HealthCheck, given, note, settings
from hypothesis import strategies as st
from mcp.shared.inbound import ERROR_CODE_HTTP_STATUS

from tests.mcp.conftest import KnowledgeBase, LiveServer, post, rpc, running_server
from tests.security.conftest import assert_no_leak
from tests.security.hostile import (
    HOSTILE_STRINGS,
    HUGE_NUMBERS,
    encode,
    hostile_text,
    json_values,
    nested,
    numbers,
)

pytestmark = pytest.mark.server

EXAMPLES = int(os.environ.get("FUZZ_EXAMPLES", "75"))
FUZZ_SETTINGS = settings(
    max_examples=EXAMPLES,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
# JSON-RPC's own codes and the ones the MCP transport defines (unsupported protocol
# version, header mismatch, missing capability).
# JSON-RPC's five, the MCP transport's, and -32002 (resource not found, handshake era).
ALLOWED_CODES = {-32700, -32600, -32601, -32602, -32603, -32002, *ERROR_CODE_HTTP_STATUS}
KNOWN_METHODS = [
    "initialize", "ping", "tools/list", "tools/call", "resources/list",
    "resources/templates/list", "resources/read", "resources/subscribe", "prompts/list",
    "prompts/get", "completion/complete", "logging/setLevel", "server/discover",
    "notifications/initialized", "notifications/cancelled", "tasks/get", "sampling/createMessage",
]  # fmt: skip
VERSIONS = [None, "2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "x"]
MAX_BODY = 65536


@pytest.fixture(scope="module")
def fuzz_server(security_kb: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(security_kb, env={"MCP_MAX_BODY_BYTES": str(MAX_BODY)}) as server:
        yield server


@pytest.fixture(scope="module")
def http(fuzz_server: LiveServer) -> Iterator[httpx2.Client]:
    with httpx2.Client(timeout=60) as client:
        yield client


@pytest.fixture(scope="module")
def tools(fuzz_server: LiveServer) -> list[dict[str, Any]]:
    listed = post(fuzz_server.mcp_url, rpc("tools/list")).json()["result"]["tools"]
    assert len(listed) > 20
    return listed


def check_answer(response: httpx2.Response, kb: KnowledgeBase) -> None:
    assert response.status_code < 500, response.text[:2000]
    assert_no_leak(response.text, kb)
    if not response.content:
        assert response.status_code == 202
        return
    assert response.headers["content-type"] == "application/json"
    answer = response.json()
    # A batch (served under 2025-03-26, the version of a request without the header) is
    # answered with an array: every element must pass the same checks.
    for body in answer if isinstance(answer, list) else [answer]:
        if "error" in body:
            error = body["error"]
            assert error["code"] in ALLOWED_CODES, error
            assert "incident" not in error["message"], error  # an unexpected failure
        else:
            assert "result" in body, body


def send(
    http: httpx2.Client, server: LiveServer, content: bytes, version: str | None
) -> httpx2.Response:
    headers = {"content-type": "application/json", "accept": "application/json"}
    if version:
        headers["mcp-protocol-version"] = version
    return http.post(server.mcp_url, content=content, headers=headers)


ids = st.one_of(
    st.integers(),
    st.sampled_from([*HUGE_NUMBERS, 10**100, "", "\ud800", "\x00"]),
    hostile_text,
    st.none(),
    st.booleans(),
    st.lists(st.integers(), max_size=2),
)
methods = st.one_of(st.sampled_from(KNOWN_METHODS), hostile_text)
missing = object()


@st.composite
def messages(draw: st.DrawFn) -> Any:
    message: dict[str, Any] = {}
    jsonrpc = draw(st.sampled_from(["2.0", "2.0", "2.0", "1.0", 2, None, missing]))
    if jsonrpc is not missing:
        message["jsonrpc"] = jsonrpc
    if draw(st.booleans()) or draw(st.booleans()):
        message["id"] = draw(ids)
    if draw(st.integers(0, 9)):
        message["method"] = draw(methods)
    if draw(st.booleans()):
        params = draw(st.one_of(json_values, st.dictionaries(hostile_text, json_values)))
        message["params"] = params
    for key in draw(st.lists(hostile_text, max_size=2)):
        message.setdefault(key, draw(json_values))
    return message


RESOURCE_URIS = ["papers://{}", "paper://{}/metadata", "paper://{}/summary", "paper://1/summary/{}",
                 "paper://{}/source", "paper://1/translation/{}", "engines://{}", "{}"]  # fmt: skip
resource_reads = st.builds(
    lambda template, value: encode(rpc("resources/read", {"uri": template.format(value)})),
    st.sampled_from(RESOURCE_URIS),
    st.one_of(st.sampled_from(["1", "vision", "list", *HOSTILE_STRINGS[:-1]]), hostile_text),
)

bodies = st.one_of(
    messages().map(encode),
    resource_reads,
    st.lists(messages(), min_size=1, max_size=3).map(encode),  # batches
    st.integers(1, 3000).map(lambda depth: nested(rpc("ping", {"x": "__DEEP__"}), depth)),
    st.integers(1, 1500).map(  # deep nesting inside a tool's arguments
        lambda depth: nested(
            rpc("tools/call", {"name": "get_paper_details", "arguments": "__DEEP__"}), depth
        )
    ),
    st.binary(max_size=64),
    json_values.map(encode),
)


def test_random_jsonrpc_messages_get_clean_answers(
    http: httpx2.Client, fuzz_server: LiveServer, security_kb: KnowledgeBase
) -> None:
    @given(body=bodies, version=st.sampled_from(VERSIONS))
    @FUZZ_SETTINGS
    def check(body: bytes, version: str | None) -> None:
        note(body[:500].decode(errors="replace"))
        check_answer(send(http, fuzz_server, body, version), security_kb)

    check()
    assert post(fuzz_server.mcp_url, rpc("ping")).json()["result"] == {}


# --- tool arguments, loosely from each tool's inputSchema -----------------------------

PAPER_REFS = [1, 2, 3, 4, "vaswani2017attention", "[He, K., Zhang, X. 2016]", 0, -5, 10**30]
PROJECT_REFS = ["nlp-reading", "vision", "NLP Reading"]


def value_for(name: str, schema: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Mostly plausible values of the right type (so the call reaches the service), with
    hostile ones of every kind mixed in."""
    plausible: list[st.SearchStrategy[Any]] = []
    if "paper" in name:
        plausible.append(st.sampled_from(PAPER_REFS))
        plausible.append(st.lists(st.sampled_from(PAPER_REFS), min_size=1, max_size=3))
    if "project" in name:
        plausible.append(st.sampled_from(PROJECT_REFS))
    kinds = [schema, *schema.get("anyOf", [])]
    for kind in kinds:
        if "enum" in kind:
            plausible.append(st.sampled_from(kind["enum"]))
        match kind.get("type"):
            case "integer":
                low, high = kind.get("minimum", -(10**6)), kind.get("maximum", 10**6)
                plausible.append(st.integers(low - 2, high + 2))
            case "number":
                plausible.append(st.floats(-2, 3, allow_nan=False))
            case "string":
                plausible.append(st.sampled_from(HOSTILE_STRINGS))
            case "array":
                plausible.append(st.lists(st.sampled_from(HOSTILE_STRINGS), max_size=3))
            case "boolean":
                plausible.append(st.booleans())
            case "object":
                plausible.append(st.dictionaries(hostile_text, json_values, max_size=3))
    if "$ref" in schema:
        plausible.append(st.dictionaries(st.sampled_from(["year", "author", "venue"]), scalars))
    hostile = st.one_of(json_values, numbers, st.sampled_from(HOSTILE_STRINGS))
    return st.one_of(*plausible, hostile) if plausible else hostile


scalars = st.one_of(st.none(), numbers, hostile_text)


@st.composite
def tool_calls(draw: st.DrawFn, tools: list[dict[str, Any]]) -> dict[str, Any]:
    tool = draw(st.sampled_from(tools))
    schema = tool["inputSchema"]
    required = set(schema.get("required", []))
    arguments: dict[str, Any] = {}
    for name, prop in schema.get("properties", {}).items():
        if name in required or draw(st.booleans()):
            arguments[name] = draw(value_for(name, prop))
    if draw(st.integers(0, 5)) == 0:
        arguments[draw(hostile_text)] = draw(json_values)  # a field the tool does not have
    if tool["name"] == "start_review":
        arguments["wait_seconds"] = 0  # a review waits up to 20 s for its first checkpoint
    return {"name": tool["name"], "arguments": arguments}


def test_random_tool_arguments_get_clean_answers(
    http: httpx2.Client,
    fuzz_server: LiveServer,
    security_kb: KnowledgeBase,
    tools: list[dict[str, Any]],
) -> None:
    @given(call=tool_calls(tools), version=st.sampled_from(["2025-06-18", None]))
    @FUZZ_SETTINGS
    def check(call: dict[str, Any], version: str | None) -> None:
        note(json.dumps(call)[:1000])
        check_answer(send(http, fuzz_server, encode(rpc("tools/call", call)), version), security_kb)

    check()
    assert post(fuzz_server.mcp_url, rpc("ping")).json()["result"] == {}

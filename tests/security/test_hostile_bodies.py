"""Hostile JSON-RPC bodies against the real server (uvicorn, the ASGI front with its
lanes, the endpoint's framing): 1,200 bodies from a fixed seed, every JSON type (null,
booleans, integers up to hundreds of digits, floats, strings, arrays, objects, nesting)
in every field (`jsonrpc`, `id`, `method`, `params`, `params.name`, `params.arguments`),
alone, in batches and as the whole body.

Every answer must be a well-formed JSON-RPC answer (an object, or for a batch an array of
them, with `jsonrpc: "2.0"`, an `id`, and a `result` or an `error` holding an integer
code and a message) or 202 with no body, under one of the statuses docs/MCP.md gives;
never 5xx, never plain text.
"""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import httpx2
import pytest

from tests.mcp.conftest import TLS, KnowledgeBase, LiveServer, post, rpc, running_server
from tests.security.conftest import assert_no_leak

pytestmark = pytest.mark.server

SEED = 20261128
BODIES = 1200
# The statuses docs/MCP.md lists for /mcp: answers, 202 for notifications and responses,
# 400 (framing, bad params at 2026-07-28), 404 (unknown method at 2026-07-28), 413, 429.
STATUSES = {200, 202, 400, 404, 413, 429}
VERSIONS = [None, None, "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]
METHODS = [
    "ping", "tools/list", "tools/call", "tools/call", "tools/call", "resources/read",
    "resources/list", "prompts/list", "initialize", "notifications/initialized",
    "completion/complete", "logging/setLevel",
]  # fmt: skip
STRINGS = ["", "2.0", "1.0", "tools/call", "\ud800", "\x00", "x" * 300, "search_papers", "local"]
INTEGERS = [0, 1, -1, 2**31, 2**53 + 1, 2**63, -(2**63) - 1, 2**64 + 1, 10**40, 10**400]
FLOATS = [0.0, -0.0, 0.5, 1.5, 1e308, -1e308, 5e-324, 2.0**63]


def value(rng: random.Random, depth: int = 0) -> Any:
    """A JSON value of any type; containers hold more of them."""
    kind = rng.randrange(9 if depth < 3 else 6)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.choice(INTEGERS) if rng.random() < 0.6 else rng.randint(-(10**6), 10**6)
    if kind == 3:
        return rng.choice(FLOATS)
    if kind in (4, 5):
        return rng.choice(STRINGS + METHODS)
    if kind == 6:
        return [value(rng, depth + 1) for _ in range(rng.randrange(4))]
    if kind == 7:
        keys = ["name", "arguments", "uri", "engines", "paper_id", "a", "\ud800"]
        return {rng.choice(keys): value(rng, depth + 1) for _ in range(rng.randrange(4))}
    return deep(rng.randrange(1, 90))


def deep(levels: int) -> Any:
    nested: Any = 1
    for level in range(levels):
        nested = [nested] if level % 2 else {"a": nested}
    return nested


def message(rng: random.Random, tools: list[str]) -> Any:
    """A request whose fields are each, at random, well-formed, hostile or missing."""
    body: dict[str, Any] = {"jsonrpc": "2.0", "id": rng.randrange(1, 10**6)}
    body["method"] = rng.choice(METHODS)
    name = rng.choice(tools)
    body["params"] = {"name": name, "arguments": {"engines": "local", "query": "x"}}
    if body["method"] == "resources/read":
        body["params"] = {"uri": rng.choice(["paper://1/metadata", "papers://1", "x"])}
    for field in ("jsonrpc", "id", "method", "params"):
        roll = rng.random()
        if roll < 0.3:
            body[field] = value(rng)
        elif roll < 0.4:
            del body[field]
    params = body.get("params")
    if isinstance(params, dict) and rng.random() < 0.5:
        params[rng.choice(["name", "arguments"])] = value(rng)
    return body


def bodies(tools: list[str]) -> Iterator[tuple[bytes, str | None]]:
    rng = random.Random(SEED)
    for _ in range(BODIES):
        version = rng.choice(VERSIONS)
        roll = rng.random()
        if roll < 0.7:
            decoded = message(rng, tools)
        elif roll < 0.9:  # a batch of messages and stray values
            decoded = [
                message(rng, tools) if rng.random() < 0.7 else value(rng)
                for _ in range(rng.randrange(5))
            ]
        else:  # any JSON value as the whole body
            decoded = value(rng)
        yield json.dumps(decoded, ensure_ascii=True).encode(), version


def well_formed(answer: Any) -> bool:
    if not isinstance(answer, dict) or answer.get("jsonrpc") != "2.0" or "id" not in answer:
        return False
    if ("result" in answer) == ("error" in answer):
        return False
    if "error" in answer:
        error = answer["error"]
        return (
            isinstance(error, dict)
            and type(error.get("code")) is int
            and isinstance(error.get("message"), str)
        )
    return True


@pytest.fixture(scope="module")
def server(security_kb: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(security_kb) as live:
        yield live


def test_every_hostile_body_gets_a_json_rpc_answer(
    server: LiveServer, security_kb: KnowledgeBase
) -> None:
    listed = post(server.mcp_url, rpc("tools/list")).json()["result"]["tools"]
    # Tools that only read, so the bodies change nothing; plus open-world ones (the lane
    # front reads their names) and names that are no tool.
    tools = sorted(t["name"] for t in listed if t.get("annotations", {}).get("readOnlyHint"))
    tools += ["search_papers", "no_such_tool"]
    assert len(tools) > 10
    cases = list(bodies(tools))
    assert len(cases) >= 1000

    def send(case: tuple[bytes, str | None]) -> tuple[bytes, httpx2.Response]:
        content, version = case
        headers = {"content-type": "application/json", "accept": "application/json"}
        if version:
            headers["mcp-protocol-version"] = version
        with httpx2.Client(timeout=60, verify=TLS) as client:
            return content, client.post(server.mcp_url, content=content, headers=headers)

    failures: list[str] = []
    statuses: dict[int, int] = {}
    with ThreadPoolExecutor(4) as pool:
        for content, response in pool.map(send, cases):
            statuses[response.status_code] = statuses.get(response.status_code, 0) + 1
            problem = answer_problem(response)
            if problem:
                failures.append(f"{problem}: {content[:300]!r} -> {response.text[:300]!r}")
            assert_no_leak(response.text, security_kb)
    assert not failures, f"{len(failures)} of {len(cases)} bodies:\n" + "\n".join(failures[:10])
    assert statuses.get(200, 0) > 100 and statuses.get(400, 0) > 100, statuses
    assert post(server.mcp_url, rpc("ping")).json()["result"] == {}


def answer_problem(response: httpx2.Response) -> str | None:
    if response.status_code not in STATUSES:
        return f"status {response.status_code}"
    if response.status_code == 202:
        return None if not response.content else "202 with a body"
    if response.headers.get("content-type") != "application/json":
        return f"content-type {response.headers.get('content-type')}"
    try:
        answer = response.json()
    except ValueError:
        return "not JSON"
    answers = answer if isinstance(answer, list) else [answer]
    if isinstance(answer, list) and not answer:
        return "an empty batch answer"
    if not all(well_formed(item) for item in answers):
        return "not a JSON-RPC answer"
    return None

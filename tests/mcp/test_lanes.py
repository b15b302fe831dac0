"""Lanes of /mcp (mcp_endpoint/asgi.py): library tool calls and resource reads run at most
MCP_LIBRARY_CALLS at once (more at once only contend for the GIL: docs/MCP.md "Lanes"),
calls that may wait on the outside world have their own lane, and requests that need no
tool thread (ping, lists, the handshake) wait for neither.

The lanes are held around the endpoint's whole answer, so an endpoint that records how
many answers overlap shows them; the classification is checked on real tool names.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import anyio
import pytest
from django.test import override_settings

from mcp_endpoint import http
from mcp_endpoint.asgi import LIBRARY, OPEN_WORLD, McpAsgiApp, lane_of
from tests.mcp.conftest import asgi_post_scope


def body(*messages: dict[str, Any]) -> bytes:
    return json.dumps(messages[0] if len(messages) == 1 else list(messages)).encode()


def call(name: str, **arguments: Any) -> dict[str, Any]:
    params = {"name": name, "arguments": arguments}
    return {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}


PING = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
READ = {"jsonrpc": "2.0", "id": 1, "method": "resources/read", "params": {"uri": "paper://1"}}


def test_each_request_is_given_its_lane() -> None:
    assert lane_of(body(call("list_projects"))) == LIBRARY
    assert lane_of(body(call("search_papers", query="x", engines="local"))) == LIBRARY
    assert lane_of(body(READ)) == LIBRARY
    assert lane_of(body(call("search_papers", query="x", engines="local,arxiv"))) == OPEN_WORLD
    assert lane_of(body(call("search_papers", query="x"))) == OPEN_WORLD  # default engines
    assert lane_of(body(call("list_projects"), call("add_paper", identifier="1"))) == OPEN_WORLD
    assert lane_of(body(PING)) is None
    assert lane_of(body({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})) is None
    assert lane_of(b"{not json") is None


class OverlapEndpoint(http.McpEndpoint):
    """Answers after a short wait, recording how many answers were under way at once."""

    def __init__(self) -> None:
        super().__init__()
        self.running = 0
        self.most = 0

    async def handle(self, request: http.HttpRequest) -> http.HttpResponse:
        self.running += 1
        self.most = max(self.most, self.running)
        try:
            await anyio.sleep(0.05)
        finally:
            self.running -= 1
        return http.HttpResponse(200, [("content-type", "application/json")], b"{}")


async def overlap(payload: bytes, requests: int) -> int:
    endpoint = OverlapEndpoint()
    app = McpAsgiApp(endpoint)

    async def one() -> None:
        sent: list[dict[str, Any]] = []
        received = [{"type": "http.request", "body": payload, "more_body": False}]

        async def receive() -> dict[str, Any]:
            if received:
                return received.pop()
            await asyncio.sleep(3600)  # the client stays
            raise AssertionError("unreachable")

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = asgi_post_scope(
            [(b"host", b"127.0.0.1"), (b"content-length", b"%d" % len(payload))]
        )
        await app(scope, receive, send)
        assert sent and sent[0]["status"] == 200

    await asyncio.gather(*(one() for _ in range(requests)))
    return endpoint.most


@pytest.mark.parametrize(
    ("places", "threads", "payload", "expected"),
    [
        (2, 8, body(call("list_projects")), 2),
        (1, 8, body(READ), 1),
        (3, 8, body(call("search_papers", query="x", engines="local")), 3),
        (2, 8, body(PING), 6),  # no tool thread: no lane
        (2, 8, body(call("search_papers", query="x", engines="arxiv")), 4),  # threads // 2
        (8, 8, body(call("list_projects")), 6),  # as many places as threads: no lane
    ],
)
def test_answers_under_way_at_once(
    places: int, threads: int, payload: bytes, expected: int
) -> None:
    with override_settings(MCP_LIBRARY_CALLS=places, MCP_MAX_THREADS=threads):
        assert asyncio.run(overlap(payload, 6)) == expected

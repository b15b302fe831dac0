"""Issue 19, parts A and D: malformed and unusual JSON-RPC messages answered with the codes
JSON-RPC 2.0 and the MCP specification give, on HTTP (raw httpx and the SDK client), stdio
(a subprocess fed lines) and the legacy SSE transport, the server serving on afterwards."""

from __future__ import annotations

import json
import subprocess
import threading
from collections.abc import Iterator
from typing import Any

import httpx2
import mcp
import pytest
from mcp import MCPError
from mcp.client.sse import sse_client

from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    LiveServer,
    mcp_client,
    post,
    rpc,
    running_server,
)

pytestmark = pytest.mark.server

PING = rpc("ping")
DETAILS = {"paper_id": "he2016deep"}
DEEP = 2000


def initialize(version: str, request_id: int = 1) -> dict[str, Any]:
    return rpc(
        "initialize",
        {
            "protocolVersion": version,
            "capabilities": {},
            "clientInfo": {"name": "strictness", "version": "1"},
        },
        request_id,
    )


def deep_call(request_id: int) -> str:
    """save_paper_summary with `content` nested DEEP levels (raw: json.dumps would recurse)."""
    content = "[" * DEEP + "]" * DEEP
    return (
        f'{{"jsonrpc":"2.0","id":{request_id},"method":"tools/call","params":'
        f'{{"name":"save_paper_summary","arguments":{{"paper_id":"1","template":"brief",'
        f'"content":{content}}}}}}}'
    )


def error_of(answer: dict[str, Any], code: int, request_id: Any) -> dict[str, Any]:
    assert answer.get("id", "missing") == request_id, answer
    assert answer["error"]["code"] == code, answer
    assert "Traceback" not in json.dumps(answer)
    return answer["error"]


# --- HTTP ------------------------------------------------------------------------------


def mcp_post(server: LiveServer, body: Any = None, **options: Any) -> httpx2.Response:
    headers = {"mcp-protocol-version": "2025-06-18", **options.pop("headers", {})}
    return post(server.mcp_url, body, headers=headers, **options)


def test_unparseable_body_is_400_parse_error(library_server: LiveServer) -> None:
    response = mcp_post(library_server, content=b'{"jsonrpc": "2.0", "id": 1,')
    assert response.status_code == 400
    error_of(response.json(), -32700, None)


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        {"jsonrpc": "1.0", "id": 1, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1, "method": 42},
        {"jsonrpc": "2.0", "id": True, "method": "ping"},
        {"jsonrpc": "2.0", "id": 1},
        "ping",
    ],
    ids=["id-null", "jsonrpc-1.0", "method-number", "id-boolean", "no-method", "string"],
)
def test_invalid_request_is_400_invalid_request(library_server: LiveServer, message: Any) -> None:
    response = mcp_post(library_server, message)
    assert response.status_code == 400
    expected_id = 1 if isinstance(message, dict) and message.get("id") == 1 else None
    if isinstance(message, dict) and message.get("id") is True:
        expected_id = None
    error_of(response.json(), -32600, expected_id)


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "id": 99, "result": {}},
        {"jsonrpc": "2.0", "id": 99, "error": {"code": -32601, "message": "no"}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ],
    ids=["response", "error-response", "notification"],
)
def test_posted_response_or_notification_is_202_without_body(
    library_server: LiveServer, message: dict[str, Any]
) -> None:
    response = mcp_post(library_server, message)
    assert response.status_code == 202
    assert response.content == b""


def test_accept_without_json_is_406(library_server: LiveServer) -> None:
    response = mcp_post(library_server, PING, headers={"accept": "text/html"})
    assert response.status_code == 406
    error_of(response.json(), -32600, None)


@pytest.mark.parametrize("content_type", ["text/plain", "application/x-www-form-urlencoded", ""])
def test_body_that_is_not_declared_json_is_415(
    library_server: LiveServer, content_type: str
) -> None:
    response = mcp_post(library_server, PING, headers={"content-type": content_type})
    assert response.status_code == 415
    error_of(response.json(), -32600, None)


def test_json_with_charset_and_wildcard_accept_are_served(library_server: LiveServer) -> None:
    headers = {"content-type": "application/json; charset=utf-8", "accept": "*/*"}
    response = mcp_post(library_server, PING, headers=headers)
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize("version", [None, "2025-03-26"])
def test_batch_is_answered_where_the_version_has_batches(
    library_server: LiveServer, version: str | None
) -> None:
    batch = [
        rpc("ping", request_id=1),
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": None, "method": "ping"},
        rpc("tools/list", request_id="two"),
    ]
    headers = {"mcp-protocol-version": version} if version else {}
    response = post(library_server.mcp_url, batch, headers=headers)
    assert response.status_code == 200
    answers = response.json()
    assert [answer["id"] for answer in answers] == [1, None, "two"]
    assert answers[0]["result"] == {}
    error_of(answers[1], -32600, None)
    assert "get_paper_details" in {tool["name"] for tool in answers[2]["result"]["tools"]}


def test_batch_of_notifications_only_is_202(library_server: LiveServer) -> None:
    batch = [{"jsonrpc": "2.0", "method": "notifications/initialized"}]
    response = post(library_server.mcp_url, batch, headers={"mcp-protocol-version": "2025-03-26"})
    assert response.status_code == 202
    assert response.content == b""


def test_a_batch_longer_than_the_limit_is_refused_whole(library_server: LiveServer) -> None:
    batch = [rpc("ping", request_id=n) for n in range(51)]  # MCP_MAX_BATCH_LENGTH is 50
    response = post(library_server.mcp_url, batch, headers={"mcp-protocol-version": "2025-03-26"})
    assert response.status_code == 400
    error = error_of(response.json(), -32600, None)
    assert "at most 50 per batch (MCP_MAX_BATCH_LENGTH)" in error["message"]
    assert error["data"] == {"max_batch_length": 50, "batch_length": 51}
    fifty = post(library_server.mcp_url, batch[:50], headers={"mcp-protocol-version": "2025-03-26"})
    assert [answer["result"] for answer in fifty.json()] == [{}] * 50


@pytest.fixture(scope="module")
def small_budget_server(knowledge_base: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(knowledge_base, env={"MCP_MAX_BATCH_ANSWER_BYTES": "1024"}) as server:
        yield server


def test_requests_past_the_batch_answer_budget_are_not_run(
    small_budget_server: LiveServer,
) -> None:
    """The answers collected stop at the budget: the request that passes it is answered,
    the ones after it are not run and say so, with their ids."""
    batch = [
        rpc("ping", request_id=1),
        rpc("tools/list", request_id=2),  # tens of kilobytes: passes 1,024 bytes
        rpc("ping", request_id=3),
        rpc("tools/call", {"name": "list_projects", "arguments": {}}, request_id=4),
    ]
    response = post(small_budget_server.mcp_url, batch)
    assert response.status_code == 200
    answers = response.json()
    assert [answer["id"] for answer in answers] == [1, 2, 3, 4]
    assert answers[0]["result"] == {}
    assert answers[1]["result"]["tools"]
    for answer in answers[2:]:
        error = error_of(answer, -32600, answer["id"])
        assert "MCP_MAX_BATCH_ANSWER_BYTES" in error["message"]
        assert error["data"] == {"max_batch_answer_bytes": 1024, "not_run": True}


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_batch_is_invalid_request_where_the_version_has_none(
    library_server: LiveServer, version: str
) -> None:
    response = post(library_server.mcp_url, [PING], headers={"mcp-protocol-version": version})
    assert response.status_code == 400
    assert version in error_of(response.json(), -32600, None)["message"]


def test_bogus_cursor_is_invalid_params(library_server: LiveServer) -> None:
    for method in ("tools/list", "resources/templates/list", "resources/list"):
        response = mcp_post(library_server, rpc(method, {"cursor": "bogus"}))
        assert response.status_code == 200
        error_of(response.json(), -32602, 1)


def test_missing_resource_is_32002_in_the_handshake_era(library_server: LiveServer) -> None:
    for uri in ("paper://999999/metadata", "nothing://here"):
        response = mcp_post(library_server, rpc("resources/read", {"uri": uri}))
        error_of(response.json(), -32002, 1)


@pytest.mark.anyio
async def test_sdk_client_sees_32002_for_a_missing_paper(library_server: LiveServer) -> None:
    async with mcp_client(library_server.mcp_url, mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("paper://999999/metadata")
    assert raised.value.error.code == -32002


@pytest.mark.anyio
async def test_modern_client_keeps_32602_for_a_missing_paper(library_server: LiveServer) -> None:
    async with mcp_client(library_server.mcp_url, mode="2026-07-28") as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("paper://999999/metadata")
    assert raised.value.error.code == -32602  # 2026-07-28 retired -32002 (SEP-2164)


@pytest.mark.parametrize(
    ("name", "arguments", "field"),
    [
        ("get_citing_papers", {"paper_id": "\ud800"}, "paper_id"),
        ("find_related_papers", {"paper_id": "\ud800"}, "paper_id"),
        ("search_papers", {"query": "x", "engines": "\ud800"}, "engines"),
        ("get_paper_details", {"paper_id": {"\ud800": 1}}, "paper_id"),
    ],
)
def test_lone_surrogate_in_arguments_is_invalid_params(
    library_server: LiveServer, name: str, arguments: dict[str, Any], field: str
) -> None:
    body = rpc("tools/call", {"name": name, "arguments": arguments})
    response = mcp_post(library_server, content=json.dumps(body).encode())
    assert response.status_code == 200
    error = error_of(response.json(), -32602, 1)
    assert error["data"]["errors"][0]["field"] == field


def test_deeply_nested_arguments_are_invalid_params(library_server: LiveServer) -> None:
    response = mcp_post(library_server, content=deep_call(5).encode())
    error = error_of(response.json(), -32602, 5)
    assert "nested" in error["message"]
    response = mcp_post(library_server, content=deep_call(6).replace(str(DEEP), "").encode())
    shallow = "[" * 100 + "]" * 100
    body = deep_call(6).replace("[" * DEEP + "]" * DEEP, shallow)
    error = error_of(mcp_post(library_server, content=body.encode()).json(), -32602, 6)
    assert error["data"]["errors"][0]["field"].startswith("content.0.0")


def test_server_log_has_no_traceback_after_the_hostile_requests(library_server: LiveServer) -> None:
    assert mcp_post(library_server, PING).json()["result"] == {}
    log = library_server.log()
    assert "Traceback" not in log
    assert "incident" not in log


def test_disabled_mcp_answers_a_json_404(knowledge_base: KnowledgeBase) -> None:
    with running_server(knowledge_base, env={"MCP_ENABLED": "false"}) as server:
        answers = [post(server.mcp_url, PING), post(server.mcp_url + "/", PING)]
    for answer in answers:
        assert answer.status_code == 404
        assert answer.headers["content-type"] == "application/json"
        assert "MCP is disabled" in error_of(answer.json(), -32600, None)["message"]


# --- stdio -----------------------------------------------------------------------------


class StdioServer:
    """`manage.py serve --transport stdio` fed one line at a time, answers read back."""

    def __init__(self, kb: KnowledgeBase) -> None:
        self.process = subprocess.Popen(
            [PYTHON, "manage.py", "serve", "--transport", "stdio"],
            cwd=ROOT, env=kb.env, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )  # fmt: skip
        self.stderr = b""
        self._stderr_reader = threading.Thread(target=self._drain, daemon=True)
        self._stderr_reader.start()
        self.watchdog = threading.Timer(120, self.process.kill)
        self.watchdog.start()

    def _drain(self) -> None:
        assert self.process.stderr is not None
        self.stderr = self.process.stderr.read()

    def send(self, line: str | bytes) -> None:
        assert self.process.stdin is not None
        data = line.encode() if isinstance(line, str) else line
        self.process.stdin.write(data + b"\n")
        self.process.stdin.flush()

    def answer(self) -> Any:
        assert self.process.stdout is not None
        line = self.process.stdout.readline()
        assert line, "the server closed stdout"
        return json.loads(line)

    def ask(self, line: str | bytes | dict[str, Any] | list[Any]) -> Any:
        if isinstance(line, dict | list):
            line = json.dumps(line)
        self.send(line)
        return self.answer()

    def close(self) -> int:
        assert self.process.stdin is not None
        self.process.stdin.close()
        try:
            return self.process.wait(30)
        finally:
            self.watchdog.cancel()
            self._stderr_reader.join(5)


@pytest.fixture
def stdio(knowledge_base: KnowledgeBase) -> Iterator[StdioServer]:
    server = StdioServer(knowledge_base)
    try:
        yield server
    finally:
        if server.process.poll() is None:
            server.process.kill()
            server.process.wait()


def test_stdio_answers_malformed_lines_and_keeps_serving(stdio: StdioServer) -> None:
    error_of(stdio.ask("{not json"), -32700, None)
    error_of(stdio.ask(b"\xff\xfe garbage"), -32700, None)
    error_of(stdio.ask({"jsonrpc": "2.0", "id": None, "method": "ping"}), -32600, None)
    error_of(stdio.ask({"jsonrpc": "2.0", "id": 3, "method": 7}), -32600, 3)
    error_of(stdio.ask('"just a string"'), -32600, None)
    # A batch before any version is negotiated, then under 2025-06-18: no batches.
    error_of(stdio.ask([PING]), -32600, None)
    assert stdio.ask(initialize("2025-06-18"))["result"]["protocolVersion"] == "2025-06-18"
    stdio.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    assert "2025-06-18" in error_of(stdio.ask([PING]), -32600, None)["message"]
    assert stdio.ask(rpc("ping", request_id=9)) == {"jsonrpc": "2.0", "id": 9, "result": {}}
    assert stdio.close() == 0
    assert b"Traceback" not in stdio.stderr


def test_stdio_answers_batches_after_negotiating_2025_03_26(stdio: StdioServer) -> None:
    assert stdio.ask(initialize("2025-03-26"))["result"]["protocolVersion"] == "2025-03-26"
    stdio.send(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}))
    answers = stdio.ask(
        [
            rpc("ping", request_id=1),
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": None, "method": "ping"},
            rpc("tools/list", {"cursor": "bogus"}, request_id="c"),
            rpc("tools/call", {"name": "get_paper_details", "arguments": DETAILS}, 2),
        ]
    )
    assert [answer["id"] for answer in answers] == [1, None, "c", 2]
    assert answers[0]["result"] == {}
    error_of(answers[1], -32600, None)
    error_of(answers[2], -32602, "c")
    assert json.loads(answers[3]["result"]["content"][0]["text"])["year"] == 2016
    error_of(stdio.ask([]), -32600, None)
    assert stdio.ask(rpc("ping", request_id=10))["result"] == {}
    assert stdio.close() == 0


def test_stdio_answers_lone_surrogates_everywhere(stdio: StdioServer) -> None:
    stdio.ask(initialize("2025-06-18"))
    # json.dumps writes "\ud800" as the escape a hostile client sends.
    answer = stdio.ask(rpc("ping", request_id="\ud800"))
    assert answer == {"jsonrpc": "2.0", "id": "\ud800", "result": {}}
    error_of(stdio.ask(rpc("\ud800", request_id=2)), -32601, 2)
    call = rpc("tools/call", {"name": "\ud800", "arguments": {}}, 3)
    error_of(stdio.ask(call), -32602, 3)
    call = rpc("tools/call", {"name": "get_citing_papers", "arguments": {"paper_id": "\ud800"}}, 4)
    assert error_of(stdio.ask(call), -32602, 4)["data"]["errors"][0]["field"] == "paper_id"
    read = rpc("resources/read", {"uri": "paper://\ud800/metadata"}, 5)
    error_of(stdio.ask(read), -32602, 5)
    error_of(stdio.ask(deep_call(6)), -32602, 6)
    assert stdio.ask(rpc("ping", request_id=7))["result"] == {}
    assert stdio.close() == 0
    assert b"Traceback" not in stdio.stderr


def test_stdio_missing_resource_is_32002_and_input_end_waits_for_answers(
    stdio: StdioServer,
) -> None:
    stdio.ask(initialize("2025-06-18"))
    stdio.send(json.dumps(rpc("resources/read", {"uri": "paper://999999/metadata"}, 2)))
    stdio.send(json.dumps(rpc("resources/read", {"uri": "nothing://here"}, 3)))
    assert stdio.process.stdin is not None
    stdio.process.stdin.close()  # the answers must still come
    answers = {answer["id"]: answer for answer in (stdio.answer(), stdio.answer())}
    error_of(answers[2], -32002, 2)
    error_of(answers[3], -32002, 3)


@pytest.mark.anyio
async def test_stdio_sdk_client_gets_32002(knowledge_base: KnowledgeBase) -> None:
    from tests.mcp.stdio_builders import stdio_params

    async with mcp.Client(stdio_params(knowledge_base), mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("paper://999999/metadata")
        answer = await client.call_tool("get_paper_details", {"paper_id": "he2016deep"})
        # The server still answers after the error (compact JSON text: docs/MCP.md).
        assert json.loads(answer.content[0].text)["citekey"] == "he2016deep"
    assert raised.value.error.code == -32002


# --- SSE -------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sse_server(knowledge_base: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(knowledge_base, transport="sse") as server:
        yield server


def _session_url(server: LiveServer, client: httpx2.Client) -> tuple[str, Any, Any]:
    """The session's POST URL; the stream and its line iterator must stay referenced (a
    collected iterator closes the stream, which ends the session)."""
    stream = client.stream("GET", f"{server.base_url}/sse")
    response = stream.__enter__()
    lines = response.iter_lines()
    for line in lines:
        if line.startswith("data:"):
            return server.base_url + line.removeprefix("data:").strip(), stream, lines
    raise AssertionError("no endpoint event")


def test_sse_unparseable_or_invalid_post_is_answered_without_traceback(
    sse_server: LiveServer,
) -> None:
    with httpx2.Client(timeout=10) as client:
        url, stream, _lines = _session_url(sse_server, client)
        try:
            headers = {"content-type": "application/json"}
            bad = client.post(url, content=b"{nope", headers=headers)
            null_id = client.post(url, json={"jsonrpc": "2.0", "id": None, "method": "ping"})
            batch = client.post(url, json=[PING])
            arguments = {"paper_id": "\ud800"}
            call = rpc("tools/call", {"name": "get_paper_details", "arguments": arguments})
            surrogate = client.post(url, content=json.dumps(call).encode(), headers=headers)
            deep = client.post(url, content=deep_call(8).encode(), headers=headers)
            good = client.post(url, json=PING)
        finally:
            stream.__exit__(None, None, None)
    assert bad.status_code == 400
    error_of(bad.json(), -32700, None)
    assert null_id.status_code == 400
    error_of(null_id.json(), -32600, None)
    error_of(batch.json(), -32600, None)
    error_of(surrogate.json(), -32602, 1)
    error_of(deep.json(), -32602, 8)
    assert good.status_code == 202
    assert "Traceback" not in sse_server.log()


@pytest.mark.anyio
async def test_sse_client_gets_32002_for_a_missing_resource(sse_server: LiveServer) -> None:
    async with mcp.Client(sse_client(f"{sse_server.base_url}/sse"), mode="legacy") as client:
        with pytest.raises(MCPError) as raised:
            await client.read_resource("paper://999999/metadata")
        assert not (
            await client.call_tool("get_paper_details", {"paper_id": "he2016deep"})
        ).is_error
    assert raised.value.error.code == -32002


# --- resource URIs with a human-readable id ------------------------------------------------


@pytest.mark.anyio
async def test_human_readable_id_in_a_resource_uri_is_percent_encoded(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    from urllib.parse import quote

    paper = next(iter(knowledge_base.data["papers"].values()))
    encoded = f"paper://{quote(paper['id'], safe='')}/metadata"  # paper://%5BHe%2C%20K.…
    raw = f"paper://{paper['id']}/metadata"  # brackets, commas and spaces: not a URI
    async with mcp_client(library_server.mcp_url, mode="legacy") as client:
        read = await client.read_resource(encoded)
        with pytest.raises(MCPError) as raised:
            await client.read_resource(raw)
    assert json.loads(read.contents[0].text)["paper_id"] == paper["paper_id"]
    assert raised.value.error.code == -32002

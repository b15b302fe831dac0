"""Seed 000's HTTP rules for /mcp, against a real uvicorn server process, with raw HTTP."""

from __future__ import annotations

import json

import pytest
from mcp_types import HEADER_MISMATCH

from tests.mcp.conftest import (
    MAX_BODY_BYTES,
    KnowledgeBase,
    LiveServer,
    non_loopback_address,
    post,
    rpc,
    running_server,
)

pytestmark = pytest.mark.server

INITIALIZE = rpc(
    "initialize",
    {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-test", "version": "1"},
    },
)
SUPPORTED = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28"]


def assert_jsonrpc_error(response, status: int, code: int) -> dict:
    assert response.status_code == status, response.text
    assert response.headers["content-type"] == "application/json"
    body = response.json()
    assert body["jsonrpc"] == "2.0" and "id" in body
    assert body["error"]["code"] == code
    return body["error"]


def test_initialize_advertises_tools_and_resources_only(library_server: LiveServer) -> None:
    response = post(library_server.mcp_url, INITIALIZE)
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    result = response.json()["result"]
    assert set(result["capabilities"]) == {"tools", "resources"}
    assert result["protocolVersion"] == "2025-06-18"
    assert result["serverInfo"]["name"] == "research-mcp"
    assert "mcp-session-id" not in response.headers


def test_prompts_are_not_offered(library_server: LiveServer) -> None:
    error = assert_jsonrpc_error(post(library_server.mcp_url, rpc("prompts/list")), 200, -32601)
    assert error["message"] == "Method not found"


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "OPTIONS"])
def test_non_post_on_mcp_is_405_with_allow_post(library_server: LiveServer, method: str) -> None:
    response = post(library_server.mcp_url, method=method, headers={"accept": "text/event-stream"})
    assert response.status_code == 405
    assert response.headers["allow"] == "POST"
    assert "mcp-session-id" not in response.headers
    assert response.headers["content-type"] == "application/json"  # never an SSE stream


def test_trailing_slash_is_answered_without_redirect(library_server: LiveServer) -> None:
    response = post(library_server.mcp_url + "/", rpc("ping"))
    assert response.status_code == 200
    assert response.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.parametrize("version", [None, *SUPPORTED[:4]])
def test_supported_or_absent_protocol_version_is_served(
    library_server: LiveServer, version: str | None
) -> None:
    headers = {"mcp-protocol-version": version} if version else {}
    response = post(library_server.mcp_url, rpc("tools/list"), headers=headers)
    assert response.status_code == 200
    assert "get_paper_details" in {t["name"] for t in response.json()["result"]["tools"]}
    assert "mcp-session-id" not in response.headers


@pytest.mark.parametrize("version", ["2099-01-01", "garbage", "2025-06-18, 2025-03-26"])
def test_unsupported_protocol_version_is_400_naming_the_supported_ones(
    library_server: LiveServer, version: str
) -> None:
    response = post(
        library_server.mcp_url, rpc("tools/list"), headers={"mcp-protocol-version": version}
    )
    error = assert_jsonrpc_error(response, 400, -32022)
    assert error["data"]["supported"] == SUPPORTED
    assert all(v in error["message"] for v in SUPPORTED)


def test_disallowed_origin_is_403_with_jsonrpc_body(library_server: LiveServer) -> None:
    response = post(library_server.mcp_url, rpc("ping"), headers={"origin": "http://evil.example"})
    error = assert_jsonrpc_error(response, 403, -32600)
    assert "MCP_ALLOWED_ORIGINS" in error["message"]


def test_allowed_origin_entry_without_port_matches_any_port(library_server: LiveServer) -> None:
    response = post(
        library_server.mcp_url, rpc("ping"), headers={"origin": "http://localhost:5173"}
    )
    assert response.status_code == 200


def test_host_outside_allowed_hosts_is_421_with_jsonrpc_body(library_server: LiveServer) -> None:
    response = post(library_server.mcp_url, rpc("ping"), headers={"host": "attacker.example"})
    error = assert_jsonrpc_error(response, 421, -32600)
    assert "ALLOWED_HOSTS" in error["message"]


def test_body_over_the_limit_is_413(library_server: LiveServer) -> None:
    padding = "x" * (MAX_BODY_BYTES + 10)
    body = rpc("tools/call", {"name": "get_paper_details", "arguments": {"paper_id": padding}})
    assert_jsonrpc_error(post(library_server.mcp_url, body), 413, -32600)


def test_chunked_body_over_the_limit_is_413(library_server: LiveServer) -> None:
    import httpx2

    def chunks():
        for _ in range(MAX_BODY_BYTES // 1000 + 2):
            yield b" " * 1000

    with httpx2.Client(timeout=20) as client:
        response = client.post(
            library_server.mcp_url, content=chunks(), headers={"content-type": "application/json"}
        )
    assert_jsonrpc_error(response, 413, -32600)


def test_malformed_json_is_400_parse_error(library_server: LiveServer) -> None:
    response = post(library_server.mcp_url, content=b'{"jsonrpc": "2.0", "id": 1, "method":')
    assert_jsonrpc_error(response, 400, -32700)


def test_batch_is_rejected_with_a_clear_error(library_server: LiveServer) -> None:
    # 2025-06-18 removed batches (a request without the header is 2025-03-26, which has them:
    # tests/mcp/test_protocol_strictness.py).
    response = post(
        library_server.mcp_url,
        [rpc("ping", request_id=1), rpc("ping", request_id=2)],
        headers={"mcp-protocol-version": "2025-06-18"},
    )
    error = assert_jsonrpc_error(response, 400, -32600)
    assert "batch" in error["message"].lower()


def test_request_without_method_or_result_is_400(library_server: LiveServer) -> None:
    response = post(library_server.mcp_url, {"jsonrpc": "2.0", "id": 3, "params": {}})
    assert_jsonrpc_error(response, 400, -32600)


def test_notification_is_202_with_empty_body(library_server: LiveServer) -> None:
    response = post(
        library_server.mcp_url, {"jsonrpc": "2.0", "method": "notifications/initialized"}
    )
    assert response.status_code == 202
    assert response.content == b""
    assert "mcp-session-id" not in response.headers


def test_unknown_method_is_method_not_found(library_server: LiveServer) -> None:
    response = post(library_server.mcp_url, rpc("papers/steal"))
    assert_jsonrpc_error(response, 200, -32601)


def test_client_from_another_machine_without_token_is_403(library_server: LiveServer) -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to connect from")
    url = f"http://{address}:{library_server.port}/mcp"
    # Host stays an allowed name: only the client address differs from the other tests.
    response = post(url, rpc("ping"), headers={"host": f"127.0.0.1:{library_server.port}"})
    error = assert_jsonrpc_error(response, 403, -32600)
    assert "MCP_AUTH_TOKEN" in error["message"]


def test_admin_is_still_served_by_django(library_server: LiveServer) -> None:
    response = post(f"{library_server.base_url}/admin/login/", method="GET")
    assert response.status_code == 200
    assert "csrfmiddlewaretoken" in response.text


def test_modern_request_with_mismatched_headers_is_rejected(library_server: LiveServer) -> None:
    envelope = {
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": {},
    }
    body = rpc("tools/list", {"_meta": envelope})
    good = post(
        library_server.mcp_url,
        body,
        headers={"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/list"},
    )
    mismatched = post(
        library_server.mcp_url,
        body,
        headers={"mcp-protocol-version": "2026-07-28", "mcp-method": "tools/call"},
    )
    assert good.status_code == 200, good.text
    assert good.json()["result"]["resultType"] == "complete"
    assert mismatched.status_code == 400
    assert json.loads(mismatched.text)["error"]["code"] == HEADER_MISMATCH


def test_disabled_mcp_is_404_while_the_admin_keeps_working(knowledge_base: KnowledgeBase) -> None:
    with running_server(knowledge_base, env={"MCP_ENABLED": "false"}) as server:
        mcp_answer = post(server.mcp_url, rpc("ping"))
        admin = post(f"{server.base_url}/admin/login/", method="GET")
    assert_jsonrpc_error(mcp_answer, 404, -32600)
    assert admin.status_code == 200

"""The framework-free /mcp rules and the registry, driven in-process.

What a live server cannot show on demand lives here: a client on another machine (a fake
client address), a crashing tool (a test-only tool set), settings switched per test.
"""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from mcp_endpoint import http
from mcp_endpoint import registry as registry_module
from mcp_endpoint.asgi import McpRouter
from mcp_endpoint.registry import CORE_TOOLS, build_server
from tests.mcp.conftest import asgi_post_scope, result_json

EXTRA = "tests.mcp.extra_toolset"
LIBRARY_WRITE_TOOLS = {"create_project", "manage_paper_keywords", "export_search_results"}


@pytest.fixture
def toolsets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(registry_module.TOOLSET_MODULES, "extra", EXTRA)


def request(
    body: Any = None,
    *,
    method: str = "POST",
    headers: dict[str, str] | None = None,
    client_host: str = "127.0.0.1",
    query_string: str = "",
) -> http.HttpRequest:
    all_headers = {"host": "127.0.0.1:8000", "content-type": "application/json"}
    all_headers.update(headers or {})
    return http.HttpRequest(
        method=method,
        headers=list(all_headers.items()),
        query_string=query_string,
        body=json.dumps(body).encode() if body is not None else b"",
        client_host=client_host,
    )


def call(name: str, arguments: dict[str, Any] | None = None, request_id: int = 7) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments or {}},
    }


async def handle(endpoint: http.McpEndpoint, req: http.HttpRequest) -> http.HttpResponse:
    return await endpoint.handle(req)


@pytest.fixture
def extra_endpoint(toolsets: None) -> http.McpEndpoint:
    return http.McpEndpoint(build_server(toolsets=["extra"]))


# --- who may call -----------------------------------------------------------------


@pytest.mark.anyio
async def test_client_on_another_machine_without_token_is_403_naming_the_setting() -> None:
    answer = await http.McpEndpoint().handle(
        request({"jsonrpc": "2.0", "id": 1, "method": "ping"}, client_host="203.0.113.9")
    )
    assert answer.status == 403
    assert "MCP_AUTH_TOKEN" in answer.json()["error"]["message"]


@pytest.mark.anyio
async def test_client_on_another_machine_with_the_token_is_served() -> None:
    with override_settings(MCP_AUTH_TOKEN="s3cret-token"):
        answer = await http.McpEndpoint().handle(
            request(
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                client_host="203.0.113.9",
                headers={"authorization": "Bearer s3cret-token"},
            )
        )
    assert answer.status == 200
    assert answer.json() == {"jsonrpc": "2.0", "id": 1, "result": {}}


@pytest.mark.anyio
async def test_wrong_token_is_401_with_bearer_challenge() -> None:
    with override_settings(MCP_AUTH_TOKEN="s3cret-token"):
        answer = await http.McpEndpoint().handle(
            request(
                {"jsonrpc": "2.0", "id": 1, "method": "ping"},
                headers={"authorization": "Bearer s3cret-tokeN"},
            )
        )
    assert answer.status == 401
    assert dict(answer.headers)["www-authenticate"].startswith("Bearer")
    assert answer.json()["error"]["code"] == -32600


@pytest.mark.parametrize(
    ("address", "loopback"),
    [
        ("127.0.0.1", True),
        ("127.8.9.1", True),
        ("::1", True),
        ("::ffff:127.0.0.1", True),
        ("192.0.2.2", False),
        ("::ffff:192.0.2.2", False),
        ("", False),
        (None, False),
        ("not-an-ip", False),
    ],
)
def test_only_loopback_addresses_count_as_this_machine(address: str | None, loopback: bool) -> None:
    assert http.is_loopback(address) is loopback


@pytest.mark.parametrize(
    ("origin", "allowed"),
    [
        ("http://localhost", True),
        ("http://localhost:3000", True),  # entry without a port: any port
        ("http://app.example:8443", True),  # entry with a port: that port
        ("http://app.example:8444", False),
        ("https://localhost", False),  # scheme must match
        ("http://localhost.evil.example", False),
        ("http://evil.example/?http://localhost", False),
        ("null", False),
        ("", False),
    ],
)
def test_origin_matching_is_exact_on_scheme_host_and_listed_port(
    origin: str, allowed: bool
) -> None:
    entries = ["http://localhost", "http://app.example:8443"]
    assert http.origin_allowed(origin, entries) is allowed


# --- error mapping ----------------------------------------------------------------


@pytest.mark.anyio
async def test_crashing_tool_is_32603_with_incident_and_no_internals(
    extra_endpoint: http.McpEndpoint, caplog: pytest.LogCaptureFixture
) -> None:
    with caplog.at_level(logging.ERROR, logger="mcp_endpoint.registry"):
        answer = await extra_endpoint.handle(request(call("crash", request_id=4242)))
    error = answer.json()["error"]
    assert answer.status == 200
    assert error["code"] == -32603
    assert "incident" in error["message"]
    assert "secret internal detail" not in answer.body.decode()
    assert "Traceback" not in answer.body.decode()
    incident = error["message"].split("incident ")[1].split(";")[0]
    logged = [r for r in caplog.records if incident in r.getMessage()]
    assert logged and "4242" in logged[0].getMessage()
    assert logged[0].exc_info is not None  # the traceback stays in the server log


@pytest.mark.anyio
async def test_domain_error_is_an_is_error_result_with_json_body_and_no_structured_content(
    extra_endpoint: http.McpEndpoint,
) -> None:
    result = (await extra_endpoint.handle(request(call("conflict")))).json()["result"]
    assert result["isError"] is True
    assert "structuredContent" not in result
    assert json.loads(result["content"][0]["text"]) == {
        "error": {"code": "conflict", "message": "Already there.", "name": "x", "existing_id": 7}
    }


@pytest.mark.anyio
async def test_invalid_input_from_a_service_is_32602_with_details(
    extra_endpoint: http.McpEndpoint,
) -> None:
    error = (await extra_endpoint.handle(request(call("invalid")))).json()["error"]
    assert error["code"] == -32602
    assert error["data"] == {
        "code": "invalid_input",
        "message": "value is not acceptable.",
        "field": "value",
    }


@pytest.mark.anyio
async def test_schema_violation_is_32602_without_echoing_the_value(
    extra_endpoint: http.McpEndpoint,
) -> None:
    error = (
        await extra_endpoint.handle(request(call("invalid", {"value": "TOO-LONG-VALUE-XYZ"})))
    ).json()["error"]
    assert error["code"] == -32602
    assert error["data"]["errors"][0]["field"] == "value"
    assert "TOO-LONG-VALUE-XYZ" not in json.dumps(error)


# --- protocol versions and scope reach the tool -------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize(
    ("header", "expected"),
    [(None, "2025-03-26"), ("2024-11-05", "2024-11-05"), ("2025-11-25", "2025-11-25")],
)
async def test_request_runs_at_the_header_version_or_2025_03_26_when_absent(
    extra_endpoint: http.McpEndpoint, header: str | None, expected: str
) -> None:
    headers = {"mcp-protocol-version": header} if header else {}
    answer = await extra_endpoint.handle(request(call("echo"), headers=headers))
    assert result_json(answer.json()["result"])["protocol_version"] == expected


@pytest.mark.anyio
async def test_scope_from_query_and_header_reaches_the_tool(
    extra_endpoint: http.McpEndpoint,
) -> None:
    by_query = await extra_endpoint.handle(request(call("echo"), query_string="collections=a,b"))
    by_header = await extra_endpoint.handle(
        request(call("echo"), headers={"x-mcp-collections": "Vision"})
    )
    unscoped = await extra_endpoint.handle(request(call("echo")))
    assert result_json(by_query.json()["result"])["scope"] == ["a", "b"]
    assert result_json(by_header.json()["result"])["scope"] == ["Vision"]
    assert "scope" not in result_json(unscoped.json()["result"])  # null fields are left out


@pytest.mark.anyio
async def test_too_many_collections_is_400() -> None:
    names = ",".join(f"p{i}" for i in range(21))
    answer = await http.McpEndpoint().handle(
        request({"jsonrpc": "2.0", "id": 1, "method": "ping"}, query_string=f"collections={names}")
    )
    assert answer.status == 400
    assert "collections" in answer.json()["error"]["message"]


# --- the registry honours settings ---------------------------------------------------


@pytest.mark.anyio
async def test_toolsets_setting_lists_only_the_chosen_sets(toolsets: None) -> None:
    only_extra = {t.name for t in await build_server(toolsets=["extra"]).list_tools()}
    everything = {t.name for t in await build_server(toolsets=[]).list_tools()}
    core = {t.name for t in await build_server(toolsets=["core"]).list_tools()}
    assert core == set(CORE_TOOLS)
    assert only_extra == {"crash", "conflict", "invalid", "echo"} | core
    assert only_extra < everything
    assert "get_paper_details" in everything


def test_unknown_toolset_stops_the_server_from_starting() -> None:
    with pytest.raises(ImproperlyConfigured, match="nosuchset"):
        build_server(toolsets=["nosuchset"])


@pytest.mark.anyio
async def test_read_only_mode_hides_write_tools() -> None:
    tools = await build_server(read_only=False).list_tools()
    writable = {t.name for t in tools}
    write_tools = {t.name for t in tools if t.annotations and not t.annotations.read_only_hint}
    read_only_tools = await build_server(read_only=True).list_tools()
    read_only = {t.name for t in read_only_tools}
    assert write_tools >= LIBRARY_WRITE_TOOLS
    # Engine searches stay: in read-only mode they return what they find without saving,
    # and say they are read-only.
    saving_searches = {
        "search_papers", "search_by_author", "get_citing_papers", "find_related_papers",
        "export_search_results",  # inline only in read-only mode
        "find_quote", "verify_quote",  # answer, but create no highlight, in read-only mode
        "get_alerts",  # answers, but refuses mark_read, in read-only mode
    }  # fmt: skip
    assert read_only.isdisjoint(write_tools - saving_searches)
    assert read_only == writable - write_tools | saving_searches
    assert all(t.annotations.read_only_hint for t in read_only_tools if t.annotations)


@pytest.mark.anyio
async def test_every_tool_has_title_description_annotations_and_no_output_schema() -> None:
    for tool in await build_server().list_tools():
        assert tool.title and len(tool.description or "") > 40, tool.name
        assert tool.annotations is not None and tool.annotations.read_only_hint is not None
        # Answers are compact JSON text (docs/MCP.md "Responses"): no schema to pay for.
        assert tool.output_schema is None, tool.name


# --- MCP_ENABLED=false and the two adapters -------------------------------------------


def test_disabled_mcp_is_404_on_the_django_view(client: Any) -> None:
    with override_settings(MCP_ENABLED=False):
        response = client.post("/mcp", data="{}", content_type="application/json")
    assert response.status_code == 404


def test_django_view_applies_the_same_rules(client: Any) -> None:
    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"},
        },
    }
    host = {"HTTP_HOST": "localhost:8000"}
    ok = client.post("/mcp", data=json.dumps(initialize), content_type="application/json", **host)
    get = client.get("/mcp", **host)
    bad_origin = client.post(
        "/mcp/",
        data="{}",
        content_type="application/json",
        HTTP_ORIGIN="http://evil.example",
        **host,
    )
    bad_host = client.post("/mcp", data="{}", content_type="application/json")  # "testserver"
    assert ok.status_code == 200
    assert ok["content-type"] == "application/json"
    assert set(ok.json()["result"]["capabilities"]) == {"tools", "resources"}
    assert "mcp-session-id" not in ok
    assert get.status_code == 405 and get["allow"] == "POST"
    assert bad_origin.status_code == 403
    assert bad_host.status_code == 421


@pytest.mark.anyio
async def test_disabled_mcp_is_404_on_the_asgi_path() -> None:
    sent: list[dict[str, Any]] = []

    async def django_app(scope: Any, receive: Any, send: Any) -> None:
        await send({"type": "http.response.start", "status": 404, "headers": []})
        await send({"type": "http.response.body", "body": b""})

    async def receive() -> dict[str, Any]:
        body = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
        return {"type": "http.request", "body": body, "more_body": False}

    async def send(message: dict[str, Any]) -> None:
        sent.append(message)

    scope = asgi_post_scope([(b"host", b"127.0.0.1"), (b"content-type", b"application/json")])
    router = McpRouter(django_app)
    with override_settings(MCP_ENABLED=False):
        await router(scope, receive, send)
    assert sent[0]["status"] == 404
    sent.clear()
    await router(scope, receive, send)
    assert sent[0]["status"] == 200  # enabled: the MCP path answered the ping
    assert json.loads(sent[1]["body"]) == {"jsonrpc": "2.0", "id": 1, "result": {}}

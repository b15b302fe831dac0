"""Targeted hostile requests against one real server (no token, bound to every interface,
so only loopback clients are served): path traversal, FTS syntax, oversized bodies,
Origin/Host spoofing, lone surrogates. Every answer is checked for leaks as well."""

from __future__ import annotations

import json
import socket
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.mcp.conftest import (
    ROOT,
    KnowledgeBase,
    LiveServer,
    call_tool_raw,
    non_loopback_address,
    post,
    result_json,
    rpc,
    running_server,
)
from tests.security.conftest import Listener, assert_no_leak
from tests.security.hostile import FTS_SYNTAX, MARKER, TRAVERSAL, encode

pytestmark = pytest.mark.server

MAX_BODY = 32768


@pytest.fixture(scope="module")
def server(security_kb: KnowledgeBase, sandbox: Path) -> Iterator[LiveServer]:
    everywhere = "0.0.0.0"  # noqa: S104 - the no-token test connects from a non-loopback address
    before = sorted(p.name for p in sandbox.iterdir())
    env = {"MCP_MAX_BODY_BYTES": str(MAX_BODY)}
    with running_server(security_kb, host=everywhere, env=env) as live:
        yield live
    # Nothing the hostile requests did created a file next to the knowledge base, in the
    # project or in the temporary directory.
    assert sorted(p.name for p in sandbox.iterdir()) == before
    for place in (ROOT, Path(tempfile.gettempdir()), Path("/etc")):
        assert not [p for p in place.iterdir() if MARKER in p.name], place


def tool(server: LiveServer, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    response = call_tool_raw(server.mcp_url, name, arguments)
    assert response.status_code == 200, response.text
    assert_no_leak(response.text)
    return response.json()


def invalid_params(body: dict[str, Any]) -> dict[str, Any]:
    assert "error" in body, body
    assert body["error"]["code"] == -32602, body
    return body["error"]


def files_under(directory: Path) -> set[Path]:
    return {p for p in directory.rglob("*") if p.is_file()}


# --- path traversal ----------------------------------------------------------------


@pytest.mark.parametrize("filename", [*TRAVERSAL, f"{MARKER}\x00.txt", f".{MARKER}", "CON"])
def test_export_file_name_with_folders_is_refused(
    server: LiveServer, security_kb: KnowledgeBase, filename: str
) -> None:
    before = files_under(security_kb.directory)
    body = tool(
        server,
        "export_search_results",
        {"paper_ids": [1], "format": "json", "filename": filename},
    )
    data = invalid_params(body)["data"]
    fields = [data.get("field"), *(e["field"] for e in data.get("errors", []))]
    assert "filename" in fields, data
    assert files_under(security_kb.directory) == before


def test_export_with_a_plain_name_stays_in_the_exports_folder(
    server: LiveServer, security_kb: KnowledgeBase
) -> None:
    body = tool(
        server, "export_search_results", {"paper_ids": [1], "format": "json", "filename": MARKER}
    )
    done = result_json(body["result"])
    assert not Path(done["path"]).is_absolute()  # shown relative: no server path leaks
    assert (security_kb.directory / done["path"]).resolve().parent == (
        security_kb.directory / "exports"
    ).resolve()


@pytest.mark.parametrize("template", [*TRAVERSAL, "..", ".", "a/b", "a\\b", "a\x00"])
def test_summary_template_with_a_path_is_refused_on_read_and_write(
    server: LiveServer, security_kb: KnowledgeBase, template: str
) -> None:
    before = files_under(security_kb.directory)
    read = tool(server, "get_paper_summary", {"paper_id": 1, "template": template})
    write = tool(
        server, "save_paper_summary", {"paper_id": 1, "template": template, "content": "{}"}
    )
    assert invalid_params(read) and invalid_params(write)
    assert files_under(security_kb.directory) == before


@pytest.mark.parametrize("template", ["..%2F..%2Fsecfuzz", "..", "%2e%2e", "a%00", "a%5Cb"])
def test_summary_template_with_a_path_is_refused_over_rest(
    server: LiveServer, security_kb: KnowledgeBase, template: str
) -> None:
    before = files_under(security_kb.directory)
    headers = {"authorization": f"Bearer {security_kb.data['write_token']}"}
    url = f"{server.base_url}/api/papers/1/summaries/{template}"
    with httpx2.Client(timeout=20) as client:
        write = client.put(url, json={"content": {"a": 1}}, headers=headers)
        read = client.get(url, headers=headers)
    # 400/404 from the API, or 403/405 when the client or Django resolves the path to
    # another route first ('..' reads /api/papers/1): never stored, never a 5xx.
    assert 400 <= write.status_code < 500, write.text
    assert read.status_code < 500, read.text
    assert read.status_code != 200 or read.url.path == "/api/papers/1", read.url
    for response in (write, read):
        assert_no_leak(response.text)
    assert files_under(security_kb.directory) == before


def test_summary_resource_with_a_path_is_refused(server: LiveServer) -> None:
    for uri in ("paper://1/summary/../../secfuzz", "paper://1/summary/..%2F..%2Fetc%2Fpasswd"):
        response = post(server.mcp_url, rpc("resources/read", {"uri": uri}))
        assert_no_leak(response.text)
        # No template matches a path: "Unknown resource", -32002 in the handshake era.
        assert response.json()["error"]["code"] == -32002, response.text


@pytest.mark.parametrize("engines", [["../x"], "../../etc/passwd", ["/etc/passwd"], [".."]])
def test_plugin_engine_ids_with_paths_are_unknown_engines(server: LiveServer, engines: Any) -> None:
    body = tool(server, "search_papers", {"query": "attention", "engines": engines})
    # Named as unknown, with the known ids (issue 19), before any engine is looked up.
    error = invalid_params(body)
    assert "Unknown engine" in error["message"] and "arxiv" in error["message"]
    listed = tool(server, "list_search_engines", {"refresh": True})
    assert "../" not in json.dumps(result_json(listed["result"]))


@pytest.mark.parametrize("section", [*TRAVERSAL, "\x00", "Introduction,../../x", "*", "%s%n"])
def test_pdf_section_names_are_titles_not_paths(server: LiveServer, section: str) -> None:
    body = tool(server, "read_pdf_pages", {"paper_id": 1, "section": section})
    # An unknown section is an answer the agent can act on (or the known sections of a
    # list are read), never a file read and never an internal error.
    if "error" in body:  # a NUL: refused before any tool runs
        assert invalid_params(body)["data"]["errors"][0]["field"] == "section"
        return
    result = body["result"]
    text = result["content"][0]["text"]
    if result["isError"]:
        error = json.loads(text)["error"]
        assert (error["code"], error["field"]) == ("not_found", "section"), text
    else:
        assert text.startswith("=== Section: ") and "root:" not in text


# --- SSRF through add_paper ----------------------------------------------------------


def test_add_paper_never_fetches_the_url_it_is_given(
    server: LiveServer, listener: Listener
) -> None:
    """add_paper only reads identifiers out of a URL (docs/MCP.md); whatever the URL, no
    request reaches the host it names."""
    port = listener.port
    urls = [
        f"http://127.0.0.1:{port}/abs/1706.03762",
        f"http://localhost:{port}/10.1000/xyz123",
        f"http://127.0.0.1:{port}/",
        f"https://arxiv.org@127.0.0.1:{port}/abs/1706.03762",
        f"http://[::1]:{port}/pdf/1706.03762",
        "http://169.254.169.254/latest/meta-data/iam/security-credentials/",
        "file:///etc/passwd",
        f"gopher://127.0.0.1:{port}/_INFO",
    ]
    for url in urls:
        body = tool(server, "add_paper", {"identifier": url})
        if "error" in body:
            assert invalid_params(body)["data"]["field"] == "identifier"
        else:
            assert body["result"]["isError"] or result_json(body["result"]), body
    assert listener.hits == []


# --- full-text query syntax --------------------------------------------------------


@pytest.mark.parametrize("query", FTS_SYNTAX)
def test_fts_syntax_is_an_answer_or_a_clear_invalid_query(server: LiveServer, query: str) -> None:
    for name, arguments in (
        ("search_papers", {"query": query, "engines": "local"}),
        ("list_top_facets", {"category": "author", "query": query}),
        ("search_papers_semantic", {"query": query}),
    ):
        body = tool(server, name, arguments)
        if "error" in body:
            assert body["error"]["code"] == -32602, body
            assert body["error"]["data"]["field"] == "query"
        else:
            assert not body["result"]["isError"], body


# --- request shape -----------------------------------------------------------------


def test_lone_surrogates_in_id_method_and_tool_name_are_answered_as_json(
    server: LiveServer,
) -> None:
    bodies = [
        b'{"jsonrpc":"2.0","id":"\\udfff","method":"ping"}',
        b'{"jsonrpc":"2.0","id":1,"method":"\\ud800"}',
        b'{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"\\ud800x"}}',
    ]
    answers = [post(server.mcp_url, content=body) for body in bodies]
    assert [a.status_code for a in answers] == [200, 200, 200], [a.text for a in answers]
    assert answers[0].json() == {"jsonrpc": "2.0", "id": "\udfff", "result": {}}
    assert answers[1].json()["error"]["code"] == -32601
    assert answers[2].json()["error"]["code"] == -32602


@pytest.mark.parametrize(
    "uri", ["paper://\ud800/metadata", "papers://\ud800", "paper://\x00/metadata", "papers://\x00"]
)
def test_resource_uri_with_lone_surrogate_or_nul_is_invalid_params(
    server: LiveServer, uri: str
) -> None:
    response = post(server.mcp_url, content=encode(rpc("resources/read", {"uri": uri})))
    assert response.status_code == 200
    assert_no_leak(response.text)
    error = invalid_params(response.json())
    assert "incident" not in error["message"]


@pytest.mark.parametrize("value", ["\x00", "a\x00b", "vaswani\x00"])
def test_nul_in_references_is_refused_without_an_internal_error(
    server: LiveServer, value: str
) -> None:
    for name, arguments in (
        ("get_paper_details", {"paper_id": value}),
        ("list_project_papers", {"project_id": value}),
        ("get_session", {"session_id": value}),
        ("search_papers_by_keyword", {"keyword": value}),
    ):
        body = tool(server, name, arguments)
        if "error" in body:
            invalid_params(body)
        else:
            text = body["result"]["content"][0]["text"]
            assert "incident" not in text and "internal" not in text, text


@pytest.mark.parametrize(
    "path",
    [
        "/api/papers/a%00b",
        "/api/papers/%00/metadata",
        "/api/projects/%00",
        "/api/projects/a%00/papers",
        "/api/search/keyword?keyword=a%00b",
        "/api/search/author?author_name=a%00b",
        "/api/search/facets/author?query=a%00b",
        "/api/papers/%ED%A0%80",  # a lone surrogate, UTF-8-style
        "/api/papers/%FF%FE",
    ],
)
def test_nul_and_broken_utf8_in_rest_urls_are_4xx(
    server: LiveServer, security_kb: KnowledgeBase, path: str
) -> None:
    headers = {"authorization": f"Bearer {security_kb.data['write_token']}"}
    with httpx2.Client(timeout=20) as client:
        response = client.get(server.base_url + path, headers=headers)
    assert 400 <= response.status_code < 500, response.text[:500]
    assert_no_leak(response.text)


def test_body_over_the_limit_is_413_not_5xx(server: LiveServer) -> None:
    arguments = {"name": "x" * (MAX_BODY + 1)}
    response = post(
        server.mcp_url, rpc("tools/call", {"name": "create_project", "arguments": arguments})
    )
    assert response.status_code == 413
    assert response.json()["error"]["code"] == -32600


def test_declared_length_over_the_limit_is_413_before_reading(server: LiveServer) -> None:
    request = (
        f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
        "Content-Type: application/json\r\nContent-Length: 1000000000000\r\n\r\n{}"
    ).encode()
    with socket.create_connection(("127.0.0.1", server.port), timeout=20) as sock:
        sock.sendall(request)
        status_line = sock.recv(4096).split(b"\r\n", 1)[0]
    assert status_line.startswith(b"HTTP/1.1 413"), status_line


def test_oversized_rest_body_is_refused_not_5xx(
    server: LiveServer, security_kb: KnowledgeBase
) -> None:
    headers = {"authorization": f"Bearer {security_kb.data['write_token']}"}
    content = {"content": {"text": "z" * (6 * 1024 * 1024)}}
    with httpx2.Client(timeout=60) as client:
        response = client.put(
            f"{server.base_url}/api/papers/1/summaries/big", json=content, headers=headers
        )
    assert 400 <= response.status_code < 500, response.text[:500]
    assert_no_leak(response.text)


# --- Origin / Host / credentials ---------------------------------------------------


@pytest.mark.parametrize(
    "origin",
    [
        "http://evil.example",
        "null",
        "http://127.0.0.1.evil.example",
        "http://localhost.evil.example:8000",
        "http://localhost@evil.example",
        "https://localhost",
        "http://evil.example#http://localhost",
        "file://",
        "http://localhost/path",
        "",
    ],
)
def test_spoofed_origin_is_403(server: LiveServer, origin: str) -> None:
    response = post(server.mcp_url, rpc("ping"), headers={"origin": origin})
    assert response.status_code == 403, response.text
    assert response.json()["error"]["code"] == -32600


@pytest.mark.parametrize(
    "host",
    ["evil.example", "localhost.evil.example", "127.0.0.1.nip.io", "evil.example:80", "[::2]"],
)
def test_spoofed_host_is_refused(server: LiveServer, host: str) -> None:
    response = post(server.mcp_url, rpc("ping"), headers={"host": host})
    assert response.status_code == 421, response.text  # DNS rebinding: docs/MCP.md rule 1


def test_forwarded_headers_do_not_make_a_remote_client_local(server: LiveServer) -> None:
    address = non_loopback_address()
    if address is None:
        pytest.skip("this machine has no non-loopback address to connect from")
    spoofed = {
        "host": f"127.0.0.1:{server.port}",
        "x-forwarded-for": "127.0.0.1",
        "x-real-ip": "127.0.0.1",
        "forwarded": "for=127.0.0.1",
    }
    response = post(f"http://{address}:{server.port}/mcp", rpc("ping"), headers=spoofed)
    assert response.status_code == 403
    assert "MCP_AUTH_TOKEN" in response.json()["error"]["message"]


def test_server_still_answers_after_the_hostile_requests(server: LiveServer) -> None:
    assert post(server.mcp_url, rpc("ping")).json()["result"] == {}
    # uvicorn's own 500 (an exception that escaped the application) never happened.
    assert "Exception in ASGI application" not in server.log()
    assert "incident" not in server.log()  # nor an unexpected failure inside a tool

"""The rest of the site on the same server: the admin and its static files."""

from __future__ import annotations

import urllib.error
import urllib.request

import pytest

from tests.mcp.conftest import LiveServer

pytestmark = pytest.mark.server


def fetch(url: str, method: str = "GET") -> tuple[int, bytes, str]:
    request = urllib.request.Request(url, method=method)
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, response.read(), response.headers.get("content-type", "")
    except urllib.error.HTTPError as error:
        return error.code, error.read(), error.headers.get("content-type", "")


def test_admin_login_page_and_its_stylesheet_are_served(library_server: LiveServer) -> None:
    status, body, _ = fetch(f"{library_server.base_url}/admin/login/")
    assert status == 200
    assert b"Research MCP" in body
    status, body, content_type = fetch(f"{library_server.base_url}/static/admin/css/base.css")
    assert status == 200
    assert content_type.startswith("text/css")
    assert len(body) > 1000


@pytest.mark.parametrize(
    "path", ["admin/css/missing.css", "../research.db", "admin/../../settings.py", "%2e%2e/x"]
)
def test_missing_or_escaping_static_paths_are_404(library_server: LiveServer, path: str) -> None:
    status, body, _ = fetch(f"{library_server.base_url}/static/{path}")
    assert status == 404
    assert b"Traceback" not in body


def test_static_files_refuse_writes(library_server: LiveServer) -> None:
    status, _, _ = fetch(f"{library_server.base_url}/static/admin/css/base.css", method="POST")
    assert status == 405

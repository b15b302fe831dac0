"""The Origin, Host and loopback rules of /mcp (mcp_endpoint/http.py), case by case: what
MCP_ALLOWED_ORIGINS and ALLOWED_HOSTS let in, and what a browser page or a rebinding DNS
name must not get past. tests/mcp/test_endpoint_core.py checks them through requests."""

from __future__ import annotations

from typing import Any

import pytest

from mcp_endpoint.http import host_allowed, is_loopback, origin_allowed

APP = ["https://app.example"]


@pytest.mark.parametrize(
    ("origin", "allowed", "expected"),
    [
        ("https://app.example", APP, True),
        ("https://app.example/", APP, True),  # a bare "/" path is still an origin
        ("  https://app.example ", APP, True),
        ("HTTPS://App.Example", APP, True),  # scheme and host compare case-insensitively
        ("https://app.example", ["HTTPS://APP.EXAMPLE"], True),
        ("https://app.example:8443", APP, True),  # an entry without a port allows any port
        ("https://app.example", ["https://app.example:443"], True),  # https's own port
        ("http://app.example", ["http://app.example:80"], True),  # http's own port
        ("https://app.example", ["https://app.example:80"], False),
        ("http://app.example", ["http://app.example:443"], False),
        ("https://app.example:8443", ["https://app.example:443"], False),
        ("https://app.example:8443", ["https://app.example:8443"], True),
        ("http://app.example", APP, False),  # another scheme
        ("https://evil.example", APP, False),
        ("https://app.example.evil", APP, False),
        ("https://app.example", ["not an origin", "https://app.example"], True),
        ("https://app.example", [], False),
        ("https://app.example/path", ["https://app.example/path"], False),
        ("https://app.example?x=1", ["https://app.example?x=1"], False),
        ("https://app.example#top", ["https://app.example#top"], False),
        ("https://me@app.example", ["https://me@app.example"], False),
        ("ftp://app.example", ["ftp://app.example"], False),  # only http(s) origins
        ("https://", ["https://"], False),
        ("null", ["null"], False),  # what sandboxed pages send
        ("https://app.example:99999", ["https://app.example"], False),  # no such port
    ],
)
def test_origin_matches_scheme_host_and_port_exactly(
    origin: str, allowed: list[str], expected: bool
) -> None:
    assert origin_allowed(origin, allowed) is expected


@pytest.mark.parametrize(
    ("host", "allowed_hosts", "expected"),
    [
        ("example.com", ["example.com"], True),
        ("example.com:8000", ["example.com"], True),
        ("EXAMPLE.com", ["example.com"], True),
        ("api.example.com", [".example.com"], True),
        ("evil.com", ["example.com"], False),
        ("example.com.evil.com", ["example.com"], False),
        (None, ["example.com"], False),
        ("", ["example.com"], False),
        (":8000", ["*"], False),  # a port and no name
        ("bad host!", ["*"], False),
        ("anything.example", ["*"], True),
    ],
)
def test_host_must_be_one_of_the_allowed_hosts(
    host: str | None, allowed_hosts: list[str], expected: bool, settings: Any
) -> None:
    settings.DEBUG = False
    assert host_allowed(host, allowed_hosts) is expected


def test_in_debug_without_allowed_hosts_only_local_names_pass(settings: Any) -> None:
    settings.DEBUG = True
    assert host_allowed("localhost:8000", [])
    assert host_allowed("127.0.0.1", [])
    assert host_allowed("[::1]:8000", [])
    assert not host_allowed("evil.example", [])
    settings.DEBUG = False
    assert not host_allowed("localhost", [])  # without DEBUG an empty list allows nothing


@pytest.mark.parametrize(
    ("client", "expected"),
    [
        ("127.0.0.1", True),
        ("127.8.9.10", True),
        ("::1", True),
        ("[::1]", True),
        ("::ffff:127.0.0.1", True),  # IPv4 loopback seen through an IPv6 socket
        ("::ffff:10.0.0.1", False),
        ("10.0.0.1", False),
        ("192.168.1.5", False),
        ("localhost", False),  # a name, not an address: never trusted as loopback
        ("", False),
        (None, False),
    ],
)
def test_only_loopback_addresses_are_loopback(client: str | None, expected: bool) -> None:
    assert is_loopback(client) is expected

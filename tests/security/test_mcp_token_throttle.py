"""Guessing MCP_AUTH_TOKEN over /mcp: after AUTH_FAILURE_LIMIT wrong bearer tokens from one
address, that address gets 429 with Retry-After, the right token included, until the
window has passed; other addresses keep being served (core.throttle, the policy
of REST API tokens). Through a real `manage.py serve`, with httpx from loopback addresses:
one server for the module, two addresses of 127.0.0.0/8 of their own for each test, so each
starts with no failure counted."""

from __future__ import annotations

import itertools
import time
from collections.abc import Iterator

import httpx2
import pytest

from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    base_env,
    rpc,
    running_server,
    server_database,
)

pytestmark = pytest.mark.server

TOKEN = "throttle-token-5e4d3c2b1a09"
LIMIT = 3
WINDOW = 4  # seconds
_TESTS = itertools.count(1)


@pytest.fixture(scope="module")
def throttled_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    """No REDIS_URL: the counts stay in this knowledge base's files, not in a Redis shared
    with other test servers."""
    directory = tmp_path_factory.mktemp("throttle")
    with server_database("mcpthrottle") as database_url:
        env = {**base_env(directory, database_url), "REDIS_URL": ""}
        settings = {
            "MCP_AUTH_TOKEN": TOKEN,
            "AUTH_FAILURE_LIMIT": str(LIMIT),
            "AUTH_FAILURE_WINDOW_SECONDS": str(WINDOW),
        }
        with running_server(KnowledgeBase(directory, env), env=settings) as server:
            yield server


@pytest.fixture
def guesser() -> tuple[str, str]:
    """A guessing address and another one, used by no other test of the module."""
    n = next(_TESTS)
    return f"127.0.{n}.1", f"127.0.{n}.2"


def ping(server: LiveServer, token: str | None, source: str) -> httpx2.Response:
    headers = {"content-type": "application/json", "accept": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    transport = httpx2.HTTPTransport(local_address=source)
    with httpx2.Client(transport=transport, timeout=20) as client:
        return client.post(server.mcp_url, json=rpc("ping"), headers=headers)


def guess_until_limit(server: LiveServer, source: str) -> None:
    for attempt in range(LIMIT):
        wrong = ping(server, f"guess-{attempt}", source)
        assert wrong.status_code == 401, wrong.text
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]


def test_wrong_tokens_then_429_with_retry_after_even_for_the_right_token(
    throttled_server: LiveServer, guesser: tuple[str, str]
) -> None:
    source, _ = guesser
    assert ping(throttled_server, TOKEN, source).status_code == 200
    guess_until_limit(throttled_server, source)
    for token in ("one-more-guess", TOKEN, None):
        refused = ping(throttled_server, token, source)
        assert refused.status_code == 429, refused.text
        assert 0 < int(refused.headers["retry-after"]) <= WINDOW
        error = refused.json()["error"]
        assert error["code"] == -32600
        assert "Too many failed attempts" in error["message"]
        assert 0 < error["data"]["retry_after_seconds"] <= WINDOW
        assert "result" not in refused.json()


def test_other_addresses_keep_being_served(
    throttled_server: LiveServer, guesser: tuple[str, str]
) -> None:
    source, other = guesser
    guess_until_limit(throttled_server, source)
    assert ping(throttled_server, TOKEN, source).status_code == 429
    served = ping(throttled_server, TOKEN, other)
    assert served.status_code == 200, served.text
    assert served.json()["result"] == {}
    # ... and a wrong token from there is still a plain 401: its own count.
    assert ping(throttled_server, "nope", other).status_code == 401


def test_the_right_token_works_again_once_the_window_has_passed(
    throttled_server: LiveServer, guesser: tuple[str, str]
) -> None:
    source, _ = guesser
    guess_until_limit(throttled_server, source)
    refused = ping(throttled_server, TOKEN, source)
    assert refused.status_code == 429
    time.sleep(int(refused.headers["retry-after"]) + 0.5)
    assert ping(throttled_server, TOKEN, source).status_code == 200


def test_missing_tokens_and_fewer_guesses_than_the_limit_are_not_throttled(
    throttled_server: LiveServer, guesser: tuple[str, str]
) -> None:
    source, _ = guesser
    for _ in range(LIMIT + 2):  # no token at all is not a guess
        assert ping(throttled_server, None, source).status_code == 401
    for attempt in range(LIMIT - 1):
        assert ping(throttled_server, f"guess-{attempt}", source).status_code == 401
    assert ping(throttled_server, TOKEN, source).status_code == 200

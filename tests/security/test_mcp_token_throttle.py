"""Guessing MCP_AUTH_TOKEN over /mcp: after AUTH_FAILURE_LIMIT wrong bearer tokens from one
address, that address gets 429 with Retry-After, the right token included, until the
window has passed; other addresses keep being served (core.throttle, the policy
of REST API tokens). Through a real `manage.py serve`, with httpx from two loopback
addresses (127.0.0.1 and 127.0.0.2)."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx2
import pytest

from tests.mcp.conftest import (
    PYTHON,
    ROOT,
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
GUESSER = "127.0.0.1"
OTHER = "127.0.0.2"


@pytest.fixture
def throttled_server(tmp_path: Path) -> Iterator[LiveServer]:
    """A fresh server (and knowledge base) per test: its failure counts start at zero.
    No REDIS_URL: the counts stay in this knowledge base's files, not in a Redis shared
    with other test servers."""
    with server_database("mcpthrottle") as database_url:
        env = {**base_env(tmp_path, database_url), "REDIS_URL": ""}
        migrated = subprocess.run(
            [PYTHON, "manage.py", "migrate", "-v0"], env=env, cwd=ROOT, capture_output=True,
            text=True, timeout=120, check=False,
        )  # fmt: skip
        assert migrated.returncode == 0, migrated.stderr
        settings = {
            "MCP_AUTH_TOKEN": TOKEN,
            "AUTH_FAILURE_LIMIT": str(LIMIT),
            "AUTH_FAILURE_WINDOW_SECONDS": str(WINDOW),
        }
        with running_server(KnowledgeBase(tmp_path, env), env=settings) as server:
            yield server


def ping(server: LiveServer, token: str | None, source: str = GUESSER) -> httpx2.Response:
    headers = {"content-type": "application/json", "accept": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    transport = httpx2.HTTPTransport(local_address=source)
    with httpx2.Client(transport=transport, timeout=20) as client:
        return client.post(server.mcp_url, json=rpc("ping"), headers=headers)


def guess_until_limit(server: LiveServer) -> None:
    for attempt in range(LIMIT):
        wrong = ping(server, f"guess-{attempt}")
        assert wrong.status_code == 401, wrong.text
        assert 'error="invalid_token"' in wrong.headers["www-authenticate"]


def test_wrong_tokens_then_429_with_retry_after_even_for_the_right_token(
    throttled_server: LiveServer,
) -> None:
    assert ping(throttled_server, TOKEN).status_code == 200
    guess_until_limit(throttled_server)
    for token in ("one-more-guess", TOKEN, None):
        refused = ping(throttled_server, token)
        assert refused.status_code == 429, refused.text
        assert 0 < int(refused.headers["retry-after"]) <= WINDOW
        error = refused.json()["error"]
        assert error["code"] == -32600
        assert "Too many failed attempts" in error["message"]
        assert 0 < error["data"]["retry_after_seconds"] <= WINDOW
        assert "result" not in refused.json()


def test_other_addresses_keep_being_served(throttled_server: LiveServer) -> None:
    guess_until_limit(throttled_server)
    assert ping(throttled_server, TOKEN).status_code == 429
    served = ping(throttled_server, TOKEN, source=OTHER)
    assert served.status_code == 200, served.text
    assert served.json()["result"] == {}
    # ... and a wrong token from there is still a plain 401: its own count.
    assert ping(throttled_server, "nope", source=OTHER).status_code == 401


def test_the_right_token_works_again_once_the_window_has_passed(
    throttled_server: LiveServer,
) -> None:
    guess_until_limit(throttled_server)
    refused = ping(throttled_server, TOKEN)
    assert refused.status_code == 429
    time.sleep(int(refused.headers["retry-after"]) + 0.5)
    assert ping(throttled_server, TOKEN).status_code == 200


def test_missing_tokens_and_fewer_guesses_than_the_limit_are_not_throttled(
    throttled_server: LiveServer,
) -> None:
    for _ in range(LIMIT + 2):  # no token at all is not a guess
        assert ping(throttled_server, None).status_code == 401
    for attempt in range(LIMIT - 1):
        assert ping(throttled_server, f"guess-{attempt}").status_code == 401
    assert ping(throttled_server, TOKEN).status_code == 200

"""A client cannot choose its own address with X-Forwarded-For: the failed-attempt
throttle keys on the connection's peer unless the operator names trusted proxies
(FORWARDED_ALLOW_IPS, passed to uvicorn by `serve`). Through a real `manage.py serve`."""

from __future__ import annotations

import subprocess
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

TOKEN = "forwarded-token-1a2b3c4d5e6f"
LIMIT = 10


def serve(tmp_path: Path, trusted: str) -> Iterator[tuple[LiveServer, str]]:
    with server_database("forwarded") as database_url:
        env = {**base_env(tmp_path, database_url), "REDIS_URL": ""}
        env.update(
            MCP_AUTH_TOKEN=TOKEN,
            AUTH_FAILURE_LIMIT=str(LIMIT),
            ADMIN_PASSWORD="forwarded-admin-password",
        )
        env.pop("FORWARDED_ALLOW_IPS", None)  # unset is the default to test
        if trusted:
            env["FORWARDED_ALLOW_IPS"] = trusted
        with running_server(KnowledgeBase(tmp_path, env)) as server:
            created = subprocess.run(
                [PYTHON, "manage.py", "api_token", "create", "--user", "admin", "--name", "t"],
                env=env, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
            )  # fmt: skip
            assert created.returncode == 0, created.stderr
            yield server, created.stdout.strip().splitlines()[-1]


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[LiveServer, str]]:
    yield from serve(tmp_path, "")


@pytest.fixture
def proxied_server(tmp_path: Path) -> Iterator[tuple[LiveServer, str]]:
    yield from serve(tmp_path, "127.0.0.1")


def mcp_ping(server: LiveServer, token: str, forwarded: str) -> httpx2.Response:
    headers = {
        "authorization": f"Bearer {token}",
        "accept": "application/json",
        "x-forwarded-for": forwarded,
    }
    with httpx2.Client(timeout=30) as client:
        return client.post(server.mcp_url, json=rpc("ping"), headers=headers)


def rest_read(server: LiveServer, token: str, forwarded: str) -> httpx2.Response:
    headers = {"authorization": f"Bearer {token}", "x-forwarded-for": forwarded}
    with httpx2.Client(timeout=30) as client:
        return client.get(f"{server.base_url}/api/projects", headers=headers)


def test_a_new_forwarded_address_per_guess_does_not_escape_the_lockout(
    server: tuple[LiveServer, str],
) -> None:
    live, secret = server
    mcp = [mcp_ping(live, f"wrong-{n}", f"203.0.113.{n}").status_code for n in range(40)]
    assert mcp[:LIMIT] == [401] * LIMIT
    assert mcp[LIMIT:] == [429] * (40 - LIMIT), mcp
    assert mcp_ping(live, TOKEN, "198.51.100.7").status_code == 429

    rest = [rest_read(live, f"rmcp_wrong{n}", f"198.51.100.{n}").status_code for n in range(30)]
    assert rest[:LIMIT] == [401] * LIMIT
    assert rest[LIMIT:] == [429] * (30 - LIMIT), rest
    assert rest_read(live, secret, "192.0.2.99").status_code == 429


def test_a_trusted_proxy_forwards_its_clients_addresses(
    proxied_server: tuple[LiveServer, str],
) -> None:
    """FORWARDED_ALLOW_IPS=127.0.0.1: behind that proxy each client has its own count."""
    live, _secret = proxied_server
    for n in range(LIMIT):
        assert mcp_ping(live, f"wrong-{n}", "203.0.113.1").status_code == 401
    assert mcp_ping(live, TOKEN, "203.0.113.1").status_code == 429
    assert mcp_ping(live, TOKEN, "203.0.113.2").status_code == 200

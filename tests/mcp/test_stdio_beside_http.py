"""Seed 001: with MCP_ENABLED=true and MCP_TRANSPORT=stdio the application serves MCP on
stdio beside the HTTP site, in one process, and both stop cleanly on a signal."""

from __future__ import annotations

import json
import signal
import subprocess
import threading
import time

import httpx2
import pytest

from tests.mcp.conftest import PYTHON, ROOT, KnowledgeBase, free_port, post, rpc

pytestmark = pytest.mark.server


def start(kb: KnowledgeBase, port: int) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [PYTHON, "manage.py", "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=ROOT, env={**kb.env, "MCP_ENABLED": "true", "MCP_TRANSPORT": "stdio"},
        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
    )  # fmt: skip


def wait_for_http(port: int, process: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 40
    while time.monotonic() < deadline:
        assert process.poll() is None, "the server exited"
        try:
            httpx2.get(f"http://127.0.0.1:{port}/admin/login/", timeout=2)
            return
        except httpx2.TransportError:
            time.sleep(0.2)
    raise AssertionError("HTTP never answered")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_stdio_and_http_in_one_process_stop_on_a_signal(
    knowledge_base: KnowledgeBase, sig: int
) -> None:
    port = free_port()
    process = start(knowledge_base, port)
    watchdog = threading.Timer(90, process.kill)
    watchdog.start()
    try:
        assert process.stdin is not None and process.stdout is not None
        wait_for_http(port, process)
        process.stdin.write(json.dumps(rpc("ping", request_id=7)).encode() + b"\n")
        process.stdin.flush()
        assert json.loads(process.stdout.readline()) == {"jsonrpc": "2.0", "id": 7, "result": {}}
        admin = httpx2.get(f"http://127.0.0.1:{port}/admin/login/", timeout=10)
        over_http = post(f"http://127.0.0.1:{port}/mcp", rpc("ping"))
        process.send_signal(sig)
        returncode = process.wait(40)
    finally:
        watchdog.cancel()
        if process.poll() is None:
            process.kill()
    assert admin.status_code == 200
    assert over_http.json()["result"] == {}
    assert returncode == 0


def test_end_of_stdio_input_stops_the_site_too(knowledge_base: KnowledgeBase) -> None:
    port = free_port()
    process = start(knowledge_base, port)
    try:
        assert process.stdin is not None
        wait_for_http(port, process)
        process.stdin.close()
        assert process.wait(40) == 0
    finally:
        if process.poll() is None:
            process.kill()

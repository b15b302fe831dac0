"""Seed 002's `paper-search-mcp` script, `--verbose` debug lines without secrets, and the
message a server started without a knowledge base gives (issue 19, part B)."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import httpx2
import pytest

from tests.mcp.conftest import PYTHON, ROOT, KnowledgeBase, rpc, running_server
from tests.mcp.stdio_builders import INITIALIZE, INITIALIZED, run_raw

pytestmark = pytest.mark.server

SCRIPTS = Path(PYTHON).parent
SECRET = "s3cr3t-token-value-0123456789"


def test_paper_search_mcp_script_serves_stdio(knowledge_base: KnowledgeBase) -> None:
    done = run_raw(
        [str(SCRIPTS / "paper-search-mcp")],
        knowledge_base.env,
        [INITIALIZE, INITIALIZED, rpc("tools/list", request_id=2)],
    )
    assert done.returncode == 0, done.stderr
    answers = {a["id"]: a for a in map(json.loads, done.stdout.splitlines())}
    assert "search_papers" in {t["name"] for t in answers[2]["result"]["tools"]}


def test_paper_search_mcp_refuses_other_transports(knowledge_base: KnowledgeBase) -> None:
    done = subprocess.run(
        [str(SCRIPTS / "paper-search-mcp"), "--transport", "http"],
        env=knowledge_base.env, capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert "stdio only" in done.stderr


def test_verbose_logs_each_request_with_timing_and_no_secret(
    knowledge_base: KnowledgeBase,
) -> None:
    call = rpc("tools/call", {"name": "get_paper_details", "arguments": {"paper_id": SECRET}}, 3)
    done = run_raw(
        [PYTHON, "manage.py", "serve", "--transport", "stdio", "--verbose"],
        {**knowledge_base.env, "MCP_AUTH_TOKEN": SECRET, "SERP_API_KEY": "serp-" + SECRET},
        [INITIALIZE, INITIALIZED, rpc("tools/list", request_id=2), call],
    )
    assert done.returncode == 0, done.stderr
    assert "stdio tools/list (id 2): ok in" in done.stderr
    assert "stdio tools/call get_paper_details (id 3): isError in" in done.stderr
    assert SECRET not in done.stderr  # neither the token nor the key, even at DEBUG
    assert '"id": 3' in done.stdout or '"id":3' in done.stdout


def test_server_without_a_knowledge_base_says_where_it_creates_one(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k not in ("RESEARCH_DIRECTORY", "DATABASE_URL")}
    env["PYTHONPATH"] = str(ROOT)
    done = subprocess.run(
        [str(SCRIPTS / "research-mcp"), "--transport", "stdio"],
        cwd=tmp_path, env=env, input="", capture_output=True, text=True, timeout=90, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert f"No knowledge base in {tmp_path / 'knowledge-base'}" in done.stderr
    assert "pass --directory PATH" in done.stderr
    assert done.stdout == ""


def test_verbose_http_server_logs_every_request_without_secrets(
    knowledge_base: KnowledgeBase,
) -> None:
    """`serve --verbose` over HTTP: one line per MCP request (with its id) and one access
    line per HTTP request, neither holding the token sent in a header or a query string."""
    env = {"MCP_AUTH_TOKEN": SECRET}
    with running_server(knowledge_base, env=env, args=("--verbose",)) as server:
        with httpx2.Client(timeout=30) as client:
            for request_id in range(1, 21):
                method = "ping" if request_id % 2 else "tools/list"
                client.post(
                    f"{server.mcp_url}?token={SECRET}",
                    json=rpc(method, request_id=request_id),
                    headers={"authorization": f"Bearer {SECRET}", "accept": "application/json"},
                ).raise_for_status()
        log = server.log()
    for request_id in range(1, 21):
        method = "ping" if request_id % 2 else "tools/list"
        assert f"HTTP {method} (id {request_id}): ok in" in log, log[-3000:]
    assert log.count('"POST /mcp?token=[redacted] HTTP/1.1" 200') == 20
    assert SECRET not in log

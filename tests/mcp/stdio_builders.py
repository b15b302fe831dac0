"""The stdio transport's handshake messages and a raw stdio session, for the stdio suites."""

from __future__ import annotations

import json
import subprocess
from typing import Any

from mcp import StdioServerParameters

from tests.mcp.conftest import PYTHON, ROOT, STARTUP_TIMEOUT, KnowledgeBase

INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "raw-stdio", "version": "1"},
    },
}


INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


def stdio_params(
    kb: KnowledgeBase, *args: str, env: dict[str, str] | None = None
) -> StdioServerParameters:
    return StdioServerParameters(
        command=PYTHON,
        args=["manage.py", "serve", "--transport", "stdio", *args],
        env={**kb.env, **(env or {})},
        cwd=str(ROOT),
    )


def run_raw(
    command: list[str], env: dict[str, str], messages: list[dict[str, Any]]
) -> subprocess.CompletedProcess[str]:
    """Feed JSON-RPC lines on stdin, close it, and collect the process's output. The
    timeout is STARTUP_TIMEOUT's: a serve that makes a new knowledge base migrates it first
    (about 20 s on a 2-core machine running a suite; past 60 s with two suites and more)."""
    stdin = "".join(json.dumps(m) + "\n" for m in messages)
    return subprocess.run(
        command, input=stdin, env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=STARTUP_TIMEOUT, check=False,
    )  # fmt: skip

"""The user's path for benchmarks: `manage.py serve --transport http` on a loopback port and a
keep-alive JSON-RPC client that times `tools/call` over `/mcp`.

    with McpServer(env) as server:
        elapsed_ms, result = server.call_tool("search_papers", {"query": "bert"})

The server is the product as a user starts it (uvicorn, `mcp_endpoint.asgi`, the registry,
the tool-call policy); the client is one `http.client` connection, so a figure includes the
HTTP round trip, JSON-RPC framing and validation, and nothing of a client library. A call that
answers with a JSON-RPC error or `isError: true` raises `ToolCallFailed`: a benchmark never
times an error as if it were an answer.
"""

from __future__ import annotations

import http.client
import itertools
import json
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import TracebackType
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
HOST = "127.0.0.1"
HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-06-18",
}


class ToolCallFailed(RuntimeError):
    pass


# SEARCH_START_WAIT_MS for servers measured in their steady state (bench_stalls measures
# the start itself, with the default).
STEADY_STATE_WAIT_MS = "600000"


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind((HOST, 0))
        return int(sock.getsockname()[1])


class McpServer:
    """`manage.py serve --transport http` in a child process, stopped on exit."""

    def __init__(self, env: dict[str, str], *, timeout: float = 120.0) -> None:
        # Steady-state answers: searches wait for the start's models and vectors rather
        # than ranking by the words alone meanwhile (papers/search/startup.py).
        self.env = {"SEARCH_START_WAIT_MS": STEADY_STATE_WAIT_MS, **env}
        self.timeout = timeout
        self.port = free_port()
        self.ids = itertools.count(1)
        self.process: subprocess.Popen[bytes] | None = None
        self.connection: http.client.HTTPConnection | None = None
        self.log = tempfile.NamedTemporaryFile("w+", suffix=".log", delete=False)

    def __enter__(self) -> McpServer:
        command = [sys.executable, "manage.py", "serve", "--transport", "http",
                   "--host", HOST, "--port", str(self.port)]  # fmt: skip
        self.process = subprocess.Popen(
            command, cwd=ROOT, env=self.env, stdout=self.log, stderr=self.log
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                break
            try:
                self.connection = http.client.HTTPConnection(HOST, self.port, timeout=self.timeout)
                self.connection.connect()
                return self
            except OSError:
                time.sleep(0.1)
        tail = Path(self.log.name).read_text()[-2000:]
        self.__exit__(None, None, None)
        raise RuntimeError(f"server did not start: {tail}")

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self.connection is not None:
            self.connection.close()
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.process.kill()
        Path(self.log.name).unlink(missing_ok=True)

    def request(self, method: str, params: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """(milliseconds, the JSON-RPC result) of one request on the keep-alive connection."""
        assert self.connection is not None
        body = json.dumps({"jsonrpc": "2.0", "id": next(self.ids), "method": method,
                           "params": params})  # fmt: skip
        started = time.perf_counter()
        self.connection.request("POST", "/mcp", body=body, headers=HEADERS)
        response = self.connection.getresponse()
        payload = response.read()
        elapsed = (time.perf_counter() - started) * 1000
        if response.status != 200:
            raise ToolCallFailed(f"HTTP {response.status}: {payload[:300]!r}")
        answer = json.loads(payload)
        if "error" in answer:
            raise ToolCallFailed(f"{method}: {answer['error']}")
        return elapsed, answer["result"]

    def call_tool(self, name: str, arguments: dict[str, Any]) -> tuple[float, dict[str, Any]]:
        """(milliseconds, the result) of `tools/call name`; raises on `isError: true`."""
        elapsed, result = self.request("tools/call", {"name": name, "arguments": arguments})
        if result.get("isError"):
            text = " ".join(part.get("text", "") for part in result.get("content", []))
            raise ToolCallFailed(f"{name}: {text[:300]}")
        return elapsed, result


def answer(result: dict[str, Any]) -> Any:
    """A tool's answer as data: `structuredContent` when sent, else the JSON of its one text
    block (the product sends compact JSON text, docs/MCP.md "Responses")."""
    if "structuredContent" in result:
        return result["structuredContent"]
    texts = [part["text"] for part in result.get("content", []) if part.get("type") == "text"]
    return json.loads(texts[0]) if texts else None

"""A local HTTP server that answers like an external source, for engine tests.

Tests register routes (a path and, optionally, query parameters that must match) with the
recorded real answer (status, body, headers) and point the engine's base URL at
`server.url`. Every request is kept in `server.requests` so a test can check what the
client really sent. Nothing leaves the machine.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit


@dataclass
class Reply:
    status: int = 200
    body: bytes | str | dict[str, Any] | list[Any] = b""
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering (timeouts, slow engines)

    def payload(self) -> tuple[bytes, str]:
        if isinstance(self.body, (dict, list)):
            return json.dumps(self.body).encode(), "application/json"
        if isinstance(self.body, str):
            return self.body.encode(), "text/plain; charset=utf-8"
        return self.body, "application/octet-stream"


@dataclass
class Request:
    method: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    body: bytes
    at: float


@dataclass
class _Route:
    method: str
    path: str
    query: dict[str, str]
    reply: Reply | Callable[[Request], Reply]


class ReplayServer:
    """Routes are matched newest first; no match answers 404 with a JSON body."""

    def __init__(self) -> None:
        self.routes: list[_Route] = []
        self.requests: list[Request] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                split = urlsplit(self.path)
                length = int(self.headers.get("Content-Length") or 0)
                request = Request(
                    method=self.command,
                    path=split.path,
                    query=parse_qs(split.query, keep_blank_values=True),
                    headers={k.lower(): v for k, v in self.headers.items()},
                    body=self.rfile.read(length) if length else b"",
                    at=time.monotonic(),
                )
                server.requests.append(request)
                reply = server._match(request)
                if reply.delay:
                    time.sleep(reply.delay)
                body, content_type = reply.payload()
                try:
                    self.send_response(reply.status)
                    headers = {"Content-Type": content_type, **reply.headers}
                    for name, value in headers.items():
                        self.send_header(name, value)
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        host = host.decode() if isinstance(host, bytes) else host
        return f"http://{host}:{port}"

    def add(
        self,
        path: str,
        reply: Reply | Callable[[Request], Reply],
        *,
        method: str = "GET",
        query: dict[str, str] | None = None,
    ) -> None:
        self.routes.append(_Route(method, path, query or {}, reply))

    def _match(self, request: Request) -> Reply:
        for route in reversed(self.routes):
            if route.method != request.method or route.path != request.path:
                continue
            if any(request.query.get(k, [None])[0] != v for k, v in route.query.items()):
                continue
            return route.reply(request) if callable(route.reply) else route.reply
        return Reply(404, {"error": f"no recorded answer for {request.method} {request.path}"})

    def start(self) -> ReplayServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

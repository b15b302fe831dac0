"""Builders shared by test folders: `LoopbackServer`, a real HTTP server on 127.0.0.1 at a
free port, the base of the local stand-ins for remote hosts (`tests/zotero_fake.py`'s
Zotero, `tests/papers/assets/builders.py`'s asset host, `tests/papers/pdf/builders.py`'s
PDF host)."""

from __future__ import annotations

import http.server
import threading
from typing import Any, Self


class QuietHandler(http.server.BaseHTTPRequestHandler):
    """A request handler that writes no access log."""

    def log_message(self, *args: Any) -> None:
        pass


class LoopbackServer:
    """`handler` answering on 127.0.0.1 at a free port from daemon threads; use as a
    context manager. Leaving it sets `release`, so that answers held back on it end."""

    def __init__(self, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
        self.release = threading.Event()
        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True)

    @property
    def port(self) -> int:
        return int(self.httpd.server_address[1])

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> Self:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release.set()
        self.httpd.shutdown()
        self.httpd.server_close()

"""Sources that fail the way real ones do, for tests/faults/test_pdf_and_zotero_faults.py.

- `FlakyZotero`: tests/zotero_fake.py's answers (routes, bodies, status codes) behind a
  server of its own, whose `mode` a test switches: `normal`; `cut` (headers and half the
  body, then the connection is closed); `stall` (the request is read, nothing is ever
  answered); `stall_body` (headers and half the body, then nothing); `trickle` (the body
  a few bytes at a time, each in time for a read timeout, all of it far too late). `stop()`
  closes the listening socket (connections are refused) and `start()` opens it again on
  the same port: Zotero quit and was started again.
- `PdfHost`: a web server for PDF downloads that truncates, stalls, trickles, answers
  HTML or a 500, or fails a few times before it sends the file.
- Makers of damaged PDFs: random bytes with a `%PDF` header, a real PDF cut short, a PDF
  encrypted with a user password or with an owner password only.

Stalled and trickling answers end when the test releases them (`release()`, `stop()`,
`close()`), so no thread outlives its test for long.
"""

from __future__ import annotations

import contextlib
import http.server
import os
import socket
import threading
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

import pymupdf

from tests.builders import LoopbackServer
from tests.zotero_fake import FakeZotero, ZoteroUrls, json_body

MODES = ("normal", "cut", "stall", "stall_body", "trickle")
STALL_LIMIT = 60.0  # a stalled answer gives up after this long even if nobody releases it
TRICKLE_BYTES = 8
TRICKLE_INTERVAL = 0.3


def _close_abruptly(connection: socket.socket) -> None:
    with contextlib.suppress(OSError):
        connection.shutdown(socket.SHUT_RDWR)
    with contextlib.suppress(OSError):
        connection.close()


class _Handler(http.server.BaseHTTPRequestHandler):
    """Shared plumbing: write a complete or a broken answer."""

    protocol_version = "HTTP/1.1"
    release: threading.Event

    def head(self, status: int, content_type: str, length: int | None) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        if length is not None:
            self.send_header("Content-Length", str(length))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.flush()

    def answer(self, status: int, content_type: str, body: bytes, mode: str = "normal") -> None:
        self.close_connection = True
        with contextlib.suppress(OSError):
            if mode == "stall":
                self.release.wait(STALL_LIMIT)
                _close_abruptly(self.connection)
                return
            self.head(status, content_type, len(body))
            if mode == "normal":
                self.wfile.write(body)
                return
            half = body[: max(1, len(body) // 2)]
            if mode == "cut":
                self.wfile.write(half)
                self.wfile.flush()
                _close_abruptly(self.connection)
            elif mode == "stall_body":
                self.wfile.write(half)
                self.wfile.flush()
                self.release.wait(STALL_LIMIT)
                _close_abruptly(self.connection)
            elif mode == "trickle":
                for start in range(0, len(body), TRICKLE_BYTES):
                    if self.release.wait(TRICKLE_INTERVAL):
                        break
                    self.wfile.write(body[start : start + TRICKLE_BYTES])
                    self.wfile.flush()
                _close_abruptly(self.connection)
            else:
                raise ValueError(f"unknown mode {mode!r}")

    def log_message(self, *args: Any) -> None:
        pass


class _Server(http.server.ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True


class FlakyZotero(ZoteroUrls):
    """The fake Zotero's answers on a fixed port, in the mode a test chooses.

    `routes` limits the misbehaviour to some routes (the last part of the path, e.g.
    "citekey", "readpdf") or Better BibTeX methods ("item.attachments"; a batch by its
    first call's method); the others answer normally.
    """

    def __init__(self, fake: FakeZotero) -> None:
        self.fake = fake
        self.mode = "normal"
        self.routes: set[str] | None = None
        self.release = threading.Event()
        self.requests: list[tuple[str, str]] = []  # (path, mode it was answered in)
        self.bbt_methods: list[str] = []
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = int(probe.getsockname()[1])
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # --- addresses, lifecycle ------------------------------------------------------------

    @property
    def origin(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> None:
        """Listen (again) on the same port."""
        assert self._server is None, "already running"
        self.release = threading.Event()
        flaky = self

        class Handler(_Handler):
            release = flaky.release

            def do_GET(self) -> None:
                flaky._handle(self, "GET", None)

            def do_POST(self) -> None:
                flaky._handle(self, "POST", json_body(self))

        deadline = time.monotonic() + 5
        while True:
            try:
                self._server = _Server(("127.0.0.1", self.port), Handler)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        self._thread = threading.Thread(
            target=self._server.serve_forever, args=(0.05,), daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        """Zotero quits: stalled answers end, the port refuses connections."""
        self.release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None
        if self._thread is not None:
            self._thread.join(5)
            self._thread = None

    def set_mode(self, mode: str, routes: Iterable[str] | None = None) -> None:
        """Answer in `mode` from now on (on `routes` only, if given); answers stalled in
        the previous mode end."""
        assert mode in MODES, mode
        self.release.set()
        self.release = threading.Event()
        self.mode = mode
        self.routes = set(routes) if routes is not None else None

    def __enter__(self) -> FlakyZotero:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # --- answers -------------------------------------------------------------------------

    def _handle(self, handler: _Handler, method: str, body: Any) -> None:
        path = handler.path
        route = path.rsplit("/", 1)[-1]
        if path == "/better-bibtex/json-rpc":
            calls = body if isinstance(body, list) else [body]
            methods = [str(c.get("method")) for c in calls if isinstance(c, dict)]
            self.bbt_methods += methods
            route = methods[0] if methods else route
        mode = self.mode if self.routes is None or route in self.routes else "normal"
        self.requests.append((path, mode))
        handler.release = self.release
        handler.answer(*self.fake.respond(method, path, body), mode)


class PdfHost(LoopbackServer):
    """A web server for `pdf_url` downloads. Paths:

    /good.pdf           the PDF, whole
    /truncated.pdf      Content-Length of the whole PDF, 40 % of it sent, then closed
    /unsized.pdf        no Content-Length, 60 % of the PDF, then closed (looks complete)
    /page.html          a login page as text/html
    /html-as.pdf        the login page sent as application/pdf
    /stall.pdf          headers and 30 % of the PDF, then nothing until released
    /trickle.pdf        the PDF a few bytes at a time (each read in time, the whole never)
    /error500           HTTP 500
    /flaky-N.pdf        the first N requests of this path truncated, then the PDF whole
    """

    LOGIN_PAGE = b"<!doctype html><html><body><form>Sign in to read</form></body></html>"

    def __init__(self, pdf: bytes) -> None:
        self.pdf = pdf
        self.requests: list[str] = []
        host = self

        class Handler(_Handler):
            def do_GET(self) -> None:
                self.release = host.release
                host.requests.append(self.path)
                host._get(self)

        super().__init__(Handler)

    def url(self, path: str) -> str:
        return f"{self.origin}{path}"

    def _get(self, handler: _Handler) -> None:
        path, pdf = handler.path, self.pdf
        with contextlib.suppress(OSError):
            if path == "/good.pdf":
                handler.answer(200, "application/pdf", pdf)
            elif path == "/truncated.pdf":
                handler.head(200, "application/pdf", len(pdf))
                handler.wfile.write(pdf[: len(pdf) * 4 // 10])
                handler.wfile.flush()
                _close_abruptly(handler.connection)
            elif path == "/unsized.pdf":
                handler.head(200, "application/pdf", None)
                handler.wfile.write(pdf[: len(pdf) * 6 // 10])
                handler.wfile.flush()
                _close_abruptly(handler.connection)
            elif path == "/page.html":
                handler.answer(200, "text/html; charset=utf-8", self.LOGIN_PAGE)
            elif path == "/html-as.pdf":
                handler.answer(200, "application/pdf", self.LOGIN_PAGE)
            elif path == "/stall.pdf":
                handler.head(200, "application/pdf", len(pdf))
                handler.wfile.write(pdf[: len(pdf) * 3 // 10])
                handler.wfile.flush()
                self.release.wait(STALL_LIMIT)
                _close_abruptly(handler.connection)
            elif path == "/trickle.pdf":
                handler.answer(200, "application/pdf", pdf, mode="trickle")
            elif path == "/error500":
                handler.answer(500, "text/plain", b"Internal Server Error")
            elif path.startswith("/flaky-") and path.endswith(".pdf"):
                failures = int(path.removeprefix("/flaky-").removesuffix(".pdf"))
                if self.requests.count(path) <= failures:
                    handler.head(200, "application/pdf", len(pdf))
                    handler.wfile.write(pdf[: len(pdf) // 2])
                    handler.wfile.flush()
                    _close_abruptly(handler.connection)
                else:
                    handler.answer(200, "application/pdf", pdf)
            else:
                handler.answer(404, "text/plain", b"not found")


# --- damaged PDFs ---------------------------------------------------------------------------


def random_pdf(size: int = 50_000) -> bytes:
    """A `%PDF-1.7` header and random bytes: no PDF reader can make anything of it."""
    return b"%PDF-1.7\n%\xe2\xe3\xcf\xd3\n" + os.urandom(size)


def truncated_pdf(pdf: bytes, fraction: float) -> bytes:
    """The first `fraction` of a real PDF, as an interrupted copy or download leaves it."""
    return pdf[: int(len(pdf) * fraction)]


def encrypted_pdf(pdf: bytes, *, user_password: str | None, owner_password: str) -> bytes:
    """The PDF encrypted with AES-256: with a user password it cannot be opened without
    it; with only an owner password anyone can read it (the password guards permissions)."""
    with pymupdf.open(stream=pdf, filetype="pdf") as document:
        return document.tobytes(
            encryption=pymupdf.mupdf.PDF_ENCRYPT_AES_256,
            user_pw=user_password or "",
            owner_pw=owner_password,
            permissions=int(pymupdf.mupdf.PDF_PERM_PRINT | pymupdf.mupdf.PDF_PERM_COPY),
        )


def write(path: Path, data: bytes) -> Path:
    path.write_bytes(data)
    return path

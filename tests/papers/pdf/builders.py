"""The fixture PDFs (tests/fixtures/pdfs, facts in pdf_facts.json) and `PdfServer`, a real
local HTTP server for the download paths, with its fixtures."""

from __future__ import annotations

import contextlib
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.builders import LoopbackServer, QuietHandler

FIXTURES = Path(__file__).parents[2] / "fixtures" / "pdfs"


FACTS: dict[str, Any] = json.loads((FIXTURES / "pdf_facts.json").read_text())


QUANTUM = FIXTURES / "1111.2011v2.pdf"  # 8 pages, nested outline


EXPOSITORY = FIXTURES / "2304.02623v1.pdf"  # 4 pages, flat outline


PAPERMAGE = FIXTURES / "papermage.pdf"  # 13 pages, no outline


# Page 1 of 2304.02623v1: three lines, 'tech-' + 'nology' split by the line break.
WRAPPED = (
    "Recent work has shown that leveraging this new technology can transform writing in "
    "many scenarios such as ideation during creative writing, editing support, and "
    "summarization."
)


PDF = EXPOSITORY.read_bytes()


class PdfServer(LoopbackServer):
    """Answers by path: /paper.pdf, /big (declared too large), /endless (no length, too
    large), /page.html, /octet (HTML sent as octet-stream), /loop, /chain/N (N redirects
    to /paper.pdf), /to/<url> (redirect there), /missing (404), /busy (503), /slow."""

    def __init__(self) -> None:
        self.requests: list[str] = []
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                path = self.path
                if path == "/paper.pdf":
                    self.reply(200, "application/pdf", PDF)
                elif path == "/big":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/pdf")
                    self.send_header("Content-Length", str(10_000_000))
                    self.end_headers()
                elif path == "/endless":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/pdf")
                    self.end_headers()
                    with contextlib.suppress(OSError):
                        self.wfile.write(b"%PDF-1.5\n")
                        for _ in range(100):
                            self.wfile.write(b"0" * 65536)
                    self.close_connection = True
                elif path == "/page.html":
                    self.reply(200, "text/html; charset=utf-8", b"<html>Sign in</html>")
                elif path == "/octet":
                    self.reply(200, "application/octet-stream", b"<html>Sign in</html>")
                elif path == "/loop":
                    self.redirect("/loop")
                elif path.startswith("/chain/"):
                    left = int(path.rsplit("/", 1)[1])
                    self.redirect(f"/chain/{left - 1}" if left > 1 else "/paper.pdf")
                elif path.startswith("/to/"):
                    self.redirect(path.removeprefix("/to/"))
                elif path == "/busy":
                    self.reply(503, "text/plain", b"busy")
                elif path == "/slow":
                    time.sleep(3)
                    self.reply(200, "application/pdf", PDF)
                else:
                    self.reply(404, "text/plain", b"not found")

            def reply(self, status: int, content_type: str, body: bytes) -> None:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

            def redirect(self, location: str) -> None:
                self.send_response(302)
                self.send_header("Location", location)
                self.send_header("Content-Length", "0")
                self.end_headers()

        super().__init__(Handler)
        self.thread.start()

    def url(self, path: str, host: str = "127.0.0.1") -> str:
        return f"http://{host}:{self.port}{path}"

    def close(self) -> None:
        self.__exit__()


@pytest.fixture(scope="module")
def server() -> Iterator[PdfServer]:
    running = PdfServer()
    yield running
    running.close()


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path, server: PdfServer) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    # These folders are this process's own, so tasks run here even where CI has a worker
    # (test_pdf_worker.py covers the worker).
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.PDF_ALLOW_PRIVATE_URLS = True
    settings.PDF_MAX_BYTES = 2_000_000
    settings.PDF_MAX_REDIRECTS = 3
    settings.PDF_DOWNLOAD_TIMEOUT = 5
    server.requests.clear()
    return tmp_path

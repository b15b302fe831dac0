"""The asset fixture library (tests/fixtures/assets) and `AssetServer`, a real local HTTP
server that serves it and, on demand, fails, hangs or redirects."""

from __future__ import annotations

import contextlib
from pathlib import Path
from typing import Any

from tests.builders import LoopbackServer, QuietHandler

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "assets" / "library"


ATTENTION = FIXTURES / "attention"


BRIEF = (ATTENTION / "summary" / "brief.json").read_text()


DEEP_READ = (ATTENTION / "summary" / "deep_read.json").read_text()


SOURCE = (ATTENTION / "source.md").read_text()


ZH = (ATTENTION / "translation" / "zh.md").read_text()


class AssetServer(LoopbackServer):
    """A stand-in for the internal asset host: files of `root` under /assets/, and per
    relative path a behaviour: ('hang',), ('redirect', location), ('status', code)."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.behaviours: dict[str, tuple[Any, ...]] = {}
        self.requests: list[str] = []
        server = self

        class Handler(QuietHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                relative = self.path.removeprefix("/assets/")
                behaviour = server.behaviours.get(relative, ("file",))
                if behaviour[0] == "hang":
                    server.release.wait(10)
                    behaviour = ("file",)
                if behaviour[0] == "redirect":
                    self.send_response(302)
                    self.send_header("Location", behaviour[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                if behaviour[0] == "status":
                    self.send_error(behaviour[1])
                    return
                path = (server.root / relative).resolve()
                if not path.is_relative_to(server.root.resolve()) or not path.is_file():
                    self.send_error(404)
                    return
                body = path.read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                with contextlib.suppress(OSError):
                    self.wfile.write(body)

        super().__init__(Handler)

    @property
    def base_url(self) -> str:
        return f"{self.origin}/assets"

    def put(self, relative: str, content: str | bytes) -> None:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content.encode() if isinstance(content, str) else content)

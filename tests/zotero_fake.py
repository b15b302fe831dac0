"""A stand-in for a running Zotero desktop app (docs/ZOTERO-TOOLS.md, "Setup"), on loopback:

- the mcp-zotero-api plugin's routes under /mcp (ping, citekey, readpdf, pdfoutline,
  highlight, annotations) with the documented bodies and status codes, reading real text,
  outlines and text positions from the fixture PDFs with PyMuPDF;
- Better BibTeX's JSON-RPC endpoint at /better-bibtex/json-rpc (api.ready, item.search,
  item.attachments; batches; errors with `id: null` as BBT sends them);
- anything else as Zotero's own server does: 404 "No endpoint found" in plain text.

`delays` (route -> seconds, "*" for every route) makes it answer late, for timeouts;
`requests` records every request as (method, path, JSON body).
"""

from __future__ import annotations

import contextlib
import http.server
import json
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pymupdf

from tests.builders import LoopbackServer, QuietHandler

PDFS = Path(__file__).resolve().parent / "fixtures" / "pdfs"
TEXT_CAP = 300_000  # the plugin stops reading near this many characters per call


@dataclass
class FakeAttachment:
    key: str
    path: Path
    title: str = "Full Text PDF"
    content_type: str = "application/pdf"


@dataclass
class FakeItem:
    key: str
    citekey: str
    title: str
    creators: list[dict[str, str]]
    date: str
    item_type: str = "journalArticle"
    extra: str = ""
    attachments: list[FakeAttachment] = field(default_factory=list)
    # Files that are not PDFs (snapshots): BBT's item.attachments lists them, the plugin not.
    other_files: list[str] = field(default_factory=list)
    # The CSL-JSON fields BBT's item.search returns (id, citekey, library are added).
    csl: dict[str, Any] = field(default_factory=dict)
    library: str = "My Library"


def default_items(missing_dir: Path) -> list[FakeItem]:
    """Five items: two PDFs with outlines (nested and flat), one without outline, one item
    without PDF, one whose PDF file is gone from disk."""
    return [
        FakeItem(
            key="MURRAY12",
            citekey="murray2012quantum",
            title="Quantum Criticality for Extended Nodes on a Bethe Lattice in the Large "
            "Connectivity Limit",
            creators=[
                {"creatorType": "author", "firstName": "James M.", "lastName": "Murray"},
                {"creatorType": "author", "firstName": "Adrian", "lastName": "Del Maestro"},
                {"creatorType": "author", "firstName": "Zlatko", "lastName": "Tesanovic"},
            ],
            date="2012-04-03",
            extra="arXiv: 1111.2011",
            attachments=[FakeAttachment("MURRAYPF", PDFS / "1111.2011v2.pdf")],
            other_files=["/zotero/storage/SNAPSHOT/arxiv.html"],
            csl={
                "type": "article-journal",
                "author": [
                    {"family": "Murray", "given": "James M."},
                    {"family": "Del Maestro", "given": "Adrian"},
                    {"family": "Tesanovic", "given": "Zlatko"},
                ],
                "issued": {"date-parts": [[2012, 4, 3]]},
                "container-title": "Physical Review B",
                "container-title-short": "Phys. Rev. B",
                "volume": "85",
                "issue": "11",
                "page": "115117",
                "DOI": "10.1103/PhysRevB.85.115117",
                "URL": "http://arxiv.org/abs/1111.2011",
                "abstract": "Theoretical description of anisotropic systems.",
            },
        ),
        FakeItem(
            key="SHEN2023",
            citekey="shen2023beyond",
            title="Beyond Summarization: Designing AI Support for Real-World Expository "
            "Writing Tasks",
            creators=[
                {"creatorType": "author", "firstName": "Zejiang", "lastName": "Shen"},
                {"creatorType": "author", "firstName": "Tal", "lastName": "August"},
            ],
            date="2023-04-05",
            item_type="preprint",
            attachments=[FakeAttachment("SHENPDF2", PDFS / "2304.02623v1.pdf")],
            csl={
                "type": "article",
                "author": [
                    {"family": "Shen", "given": "Zejiang"},
                    {"family": "August", "given": "Tal"},
                ],
                "issued": {"date-parts": [["2023", "4", "5"]]},
                "publisher": "arXiv",
                "number": "arXiv:2304.02623",
                "DOI": "10.48550/arXiv.2304.02623",
                "keyword": "Computer Science - Computation and Language, Writing",
            },
        ),
        FakeItem(
            key="PAPERMAG",
            citekey="lo2023papermage",
            title="PaperMage: A Unified Toolkit for Processing, Representing, and "
            "Manipulating Visually-Rich Scientific Documents",
            creators=[{"creatorType": "author", "firstName": "Kyle", "lastName": "Lo"}],
            date="2023",
            item_type="conferencePaper",
            attachments=[FakeAttachment("PAPERPDF", PDFS / "papermage.pdf")],
            csl={
                "type": "paper-conference",
                "author": [{"family": "Lo", "given": "Kyle"}],
                "issued": {"date-parts": [[2023]]},
                "container-title": "Proceedings of EMNLP 2023: System Demonstrations",
                "publisher": "Association for Computational Linguistics",
                "page": "495-507",
            },
        ),
        FakeItem(
            key="NOPDF234",
            citekey="smith2024deep",
            title="Deep Learning Without PDFs",
            creators=[{"creatorType": "editor", "name": "The Deep Learning Collective"}],
            date="2024",
            item_type="book",
            csl={
                "type": "book",
                "editor": [{"literal": "The Deep Learning Collective"}],
                "issued": {"raw": "2024"},
                "publisher": "Example Press",
                "ISBN": "978-0-00-000000-0",
            },
        ),
        FakeItem(
            key="GONEFILE",
            citekey="gone2021missing",
            title="A Paper Whose PDF Was Deleted",
            creators=[{"creatorType": "author", "firstName": "Ada", "lastName": "Gone"}],
            date="2021",
            attachments=[FakeAttachment("GONEPDF2", missing_dir / "deleted.pdf")],
            csl={
                "type": "article-journal",
                "author": [{"family": "Gone", "given": "Ada"}],
                "issued": {"date-parts": [[2021]]},
                "container-title": "Journal of Missing Files",
            },
        ),
    ]


class ZoteroUrls:
    """ZOTERO_URL and ZOTERO_BBT_URL of a fake Zotero at `origin`."""

    @property
    def origin(self) -> str:
        raise NotImplementedError

    @property
    def url(self) -> str:
        """ZOTERO_URL for this fake."""
        return f"{self.origin}/mcp"

    @property
    def bbt_url(self) -> str:
        """ZOTERO_BBT_URL for this fake."""
        return f"{self.origin}/better-bibtex/json-rpc"


def json_body(handler: http.server.BaseHTTPRequestHandler) -> Any:
    """The request's body read as JSON (None when it is empty or not JSON)."""
    length = int(handler.headers.get("Content-Length") or 0)
    raw = handler.rfile.read(length)
    try:
        return json.loads(raw or b"null")
    except ValueError:
        return None


class FakeZotero(LoopbackServer, ZoteroUrls):
    """The fake Zotero on 127.0.0.1 at a free port; use as a context manager."""

    def __init__(self, items: list[FakeItem]) -> None:
        self.items = items
        self.delays: dict[str, float] = {}
        self.text_cap = TEXT_CAP
        self.requests: list[tuple[str, str, Any]] = []
        self.annotations: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        fake = self

        class Handler(QuietHandler):
            def _answer(self) -> None:
                body = json_body(self) if self.command == "POST" else None
                fake._record(self.command, self.path, body)
                fake._wait(self.path)
                status, content_type, content = fake.respond(self.command, self.path, body)
                with contextlib.suppress(OSError):
                    self.send_response(status)
                    self.send_header("Content-Type", content_type)
                    self.send_header("Content-Length", str(len(content)))
                    self.end_headers()
                    self.wfile.write(content)

            do_GET = do_POST = _answer

        super().__init__(Handler)

    def posted(self, route: str) -> list[Any]:
        """The JSON bodies POSTed to /mcp/<route> so far."""
        return [body for method, path, body in self.requests if path == f"/mcp/{route}"]

    def _record(self, method: str, path: str, body: Any) -> None:
        with self._lock:
            self.requests.append((method, path, body))

    def _wait(self, path: str) -> None:
        route = path.rsplit("/", 1)[-1]
        delay = self.delays.get(route, self.delays.get("*", 0))
        if delay:
            self.release.wait(delay)

    # --- routes --------------------------------------------------------------------------

    def respond(self, method: str, path: str, body: Any) -> tuple[int, str, bytes]:
        """The status, Content-Type and body Zotero answers `method` on `path` with."""
        if method == "GET":
            if path == "/mcp/ping":
                return 200, "text/plain", b""
            return 404, "text/plain", b"No endpoint found"
        status, answer = self.answer(path, body)
        if status is None:
            return 404, "text/plain", b"No endpoint found"
        return status, "application/json", json.dumps(answer).encode()

    def answer(self, path: str, body: Any) -> tuple[int | None, Any]:
        if path == "/better-bibtex/json-rpc":
            return 200, self._json_rpc(body)
        routes = {
            "/mcp/citekey": self._citekey,
            "/mcp/readpdf": self._readpdf,
            "/mcp/pdfoutline": self._pdfoutline,
            "/mcp/highlight": self._highlight,
            "/mcp/annotations": self._annotations,
        }
        route = routes.get(path)
        if route is None:
            return None, None
        if not isinstance(body, dict):
            return 400, {"error": "Request body must be a JSON object"}
        try:
            return route(body)
        except Exception as error:  # the plugin answers every other failure like this
            return 500, {"error": "Internal error", "message": str(error)}

    def _citekey(self, body: dict[str, Any]) -> tuple[int, Any]:
        citekey = body.get("citekey")
        if not citekey:
            return 400, {"error": "Missing required field: citekey"}
        item = next((i for i in self.items if i.citekey == citekey), None)
        if item is None:
            return 404, {"error": "Item not found for citekey", "citekey": citekey}
        return 200, {
            "id": self.items.index(item) + 1,
            "key": item.key,
            "itemType": item.item_type,
            "title": item.title,
            "creators": item.creators,
            "date": item.date,
            "extra": item.extra,
            "citekey": item.citekey,
            "attachments": [
                {
                    "id": 100 + n,
                    "key": a.key,
                    "title": a.title,
                    "contentType": a.content_type,
                    "path": str(a.path),
                }
                for n, a in enumerate(item.attachments)
            ],
        }

    def _attachment(self, key: Any) -> FakeAttachment | None:
        for item in self.items:
            if item.key == key and item.attachments:
                return item.attachments[0]
            for attachment in item.attachments:
                if attachment.key == key:
                    return attachment
        return None

    def _open(self, key: Any) -> tuple[FakeAttachment | None, Any]:
        attachment = self._attachment(key)
        if attachment is None:
            return None, (404, {"error": "No PDF attachment for key", "key": key})
        if not attachment.path.is_file():
            raise FileNotFoundError(f"PDF file not found: {attachment.path}")
        return attachment, None

    def _readpdf(self, body: dict[str, Any]) -> tuple[int, Any]:
        for name in ("key", "pages"):
            if not body.get(name):
                return 400, {"error": f"Missing required field: {name}"}
        attachment, failure = self._open(body["key"])
        if failure:
            return failure
        assert attachment is not None
        with pymupdf.open(attachment.path) as doc:
            wanted = _pages(str(body["pages"]))
            if wanted is None:
                return 400, {"error": "Invalid pages", "pages": body["pages"]}
            pages: list[dict[str, Any]] = []
            used = 0
            for number in wanted:
                if not 1 <= number <= doc.page_count or used >= self.text_cap:
                    continue
                text = doc[number - 1].get_text()
                entry: dict[str, Any] = {"page": number, "text": text}
                if used + len(text) > self.text_cap:
                    entry["text"] = text[: self.text_cap - used]
                    entry["truncated"] = True
                used += len(text)
                pages.append(entry)
            return 200, {
                "attachmentKey": attachment.key,
                "pageCount": doc.page_count,
                "pages": pages,
            }

    def _pdfoutline(self, body: dict[str, Any]) -> tuple[int, Any]:
        if not body.get("key"):
            return 400, {"error": "Missing required field: key"}
        attachment, failure = self._open(body["key"])
        if failure:
            return failure
        assert attachment is not None
        with pymupdf.open(attachment.path) as doc:
            outline = [
                {"level": level, "title": title, "page": page if page >= 1 else None}
                for level, title, page in doc.get_toc()
            ]
            return 200, {
                "attachmentKey": attachment.key,
                "pageCount": doc.page_count,
                "outline": outline,
            }

    def _highlight(self, body: dict[str, Any]) -> tuple[int, Any]:
        for name in ("key", "text", "page", "color"):
            if body.get(name) in (None, ""):
                return 400, {"error": f"Missing required field: {name}"}
        attachment, failure = self._open(body["key"])
        if failure:
            return failure
        assert attachment is not None
        page = body["page"]
        with pymupdf.open(attachment.path) as doc:
            if not isinstance(page, int) or not 1 <= page <= doc.page_count:
                return 400, {"error": "page out of range", "range": f"1..{doc.page_count}"}
            pdf_page = doc[page - 1]
            found = pdf_page.search_for(body["text"])
            if not found:
                return 404, {"error": f"Text not found on page {page} (use exact, unique text)"}
            height = pdf_page.rect.height
            # PyMuPDF's origin is top-left; Zotero's is the page's bottom-left.
            rects = [
                [round(r.x0, 3), round(height - r.y1, 3), round(r.x1, 3), round(height - r.y0, 3)]
                for r in found
            ]
        annotation = {
            "key": f"HL{len(self.annotations):06d}",
            "parentItemKey": attachment.key,
            "page": page,
            "color": body["color"],
            "rects": rects,
        }
        self.annotations.append({**annotation, "comment": body.get("comment", "")})
        return 201, {"success": True, "annotation": annotation}

    def _annotations(self, body: dict[str, Any]) -> tuple[int, Any]:
        for name in ("parentItemKey", "annotationType", "position"):
            if not body.get(name):
                return 400, {"error": f"Missing required field: {name}"}
        attachment = next(
            (a for i in self.items for a in i.attachments if a.key == body["parentItemKey"]),
            None,
        )
        if attachment is None:
            return 404, {"error": "Attachment not found", "key": body["parentItemKey"]}
        if body["annotationType"] not in ("highlight", "underline", "note", "image", "ink"):
            return 400, {"error": f"Unknown annotationType: {body['annotationType']}"}
        position = body["position"]
        with pymupdf.open(attachment.path) as doc:
            count = doc.page_count
        index = position.get("pageIndex") if isinstance(position, dict) else None
        if not isinstance(index, int) or not 0 <= index < count:
            return 400, {"error": "position.pageIndex out of range", "range": f"0..{count - 1}"}
        annotation = {
            "key": f"IM{len(self.annotations):06d}",
            "parentItemKey": attachment.key,
            "annotationType": body["annotationType"],
            "position": position,
            "color": body.get("color", "#ffd400"),
            "comment": body.get("comment", ""),
        }
        self.annotations.append(annotation)
        return 201, {"success": True, "annotation": annotation}

    # --- Better BibTeX JSON-RPC ----------------------------------------------------------

    def _json_rpc(self, body: Any) -> Any:
        if isinstance(body, list):
            return [self._rpc_one(request) for request in body]
        return self._rpc_one(body)

    def _rpc_one(self, request: Any) -> dict[str, Any]:
        if not isinstance(request, dict) or request.get("jsonrpc") != "2.0":
            return _rpc_error(-32600, "Invalid Request")
        method = request.get("method")
        params = request.get("params") or []
        if isinstance(params, dict):
            params = list(params.values())
        handlers: dict[str, Callable[..., Any]] = {
            "api.ready": lambda: {"zotero": "7.0.15", "betterbibtex": "7.0.21"},
            "item.search": lambda terms="", library=None: self._search(terms),
            "item.attachments": lambda citekey, library=None: self._bbt_attachments(citekey),
        }
        handler = handlers.get(str(method))
        if handler is None:
            return _rpc_error(-32601, f"Method not found: {method}")
        try:
            result = handler(*params)
        except LookupError as error:
            return _rpc_error(-32602, str(error.args[0]))
        except TypeError as error:
            return _rpc_error(-32603, f"TypeError: {error}")
        return {"jsonrpc": "2.0", "result": result, "id": request.get("id")}

    def _search(self, terms: Any) -> list[dict[str, Any]]:
        if isinstance(terms, str) and terms.strip():
            needle = terms.strip().lower()
            chosen = [i for i in self.items if needle in f"{i.title} {i.citekey}".lower()]
        else:
            chosen = list(self.items)  # '' or advanced-search conditions: every regular item
        return [
            {
                "id": f"http://zotero.org/users/local/aBcDeFgH/items/{item.key}",
                "title": item.title,
                **item.csl,
                "library": item.library,
                "citekey": item.citekey,
            }
            for item in chosen
        ]

    def _bbt_attachments(self, citekey: str) -> list[dict[str, Any]]:
        item = next((i for i in self.items if i.citekey == citekey.removeprefix("@")), None)
        if item is None:
            raise LookupError(f"{citekey} not found")
        files = [
            {"open": f"zotero://open-pdf/library/items/{a.key}", "path": str(a.path)}
            for a in item.attachments
        ]
        files += [
            {"open": f"zotero://open-pdf/library/items/SNAP{n:04d}", "path": path}
            for n, path in enumerate(item.other_files)
        ]
        return files


def _rpc_error(code: int, message: str) -> dict[str, Any]:
    # Better BibTeX answers errors with `id: null`, even inside a batch.
    return {"jsonrpc": "2.0", "error": {"code": code, "message": message}, "id": None}


def _pages(spec: str) -> list[int] | None:
    pages: list[int] = []
    for part in spec.split(","):
        match = re.fullmatch(r"\s*(\d+)\s*(?:-\s*(\d+))?\s*", part)
        if not match:
            return None
        first, last = int(match.group(1)), int(match.group(2) or match.group(1))
        pages.extend(range(first, last + 1))
    return pages

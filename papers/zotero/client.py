"""Client for the mcp-zotero-api plugin: REST routes inside a running Zotero (ZOTERO_URL,
default http://localhost:23119/mcp); routes and errors are listed in docs/ZOTERO-TOOLS.md.

Every failure becomes a domain error with Zotero's own message:

- nothing listening, DNS failure: ZoteroUnreachable ("is Zotero running with the plugin?");
- Zotero answers but the route does not exist (plugin missing): ZoteroUnreachable too;
- no whole answer within ZOTERO_TIMEOUT seconds (stalled, or trickling): ZoteroTimeout;
- the connection closed mid-answer (Zotero quit or restarted): ZoteroError, reason
  `connection_closed`; for a write, both say it may have been made all the same;
- 400: InvalidInput (e.g. a page out of range, with Zotero's range);
- 404: NotFound (unknown citekey, no PDF attachment, text not found on the page);
- 500, any other status, a body that is not the documented JSON: ZoteroError.

Nothing is retried: Zotero is on loopback, so a refused connection means it is closed and
a retry cannot help, and a write retried after a timeout could annotate the PDF twice.
"""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass
from typing import Any

import httpx
from django.conf import settings

from core.errors import DomainError, InvalidInput, NotFound
from papers.pdf.spec import OutlineEntry
from papers.zotero.errors import ZoteroError, ZoteroTimeout, ZoteroUnreachable

PLUGIN_HINT = "is Zotero running with the mcp-zotero-api plugin?"
# Routes that change the user's Zotero library, and what they make.
WRITE_ROUTES = {"highlight": "the highlight", "annotations": "the annotation"}
# Routes that open the attachment's file; a file gone from disk fails them with a 500.
PDF_ROUTES = frozenset({"readpdf", "pdfoutline", "highlight", "annotations"})
_MISSING_FILE = re.compile(r"(?i)file not found|no such file|ENOENT")
_PATH = re.compile(r"(?:/|~/|[A-Za-z]:\\)[^'\"\n]*")


@dataclass(frozen=True)
class ZoteroAttachment:
    """A PDF attachment of an item (the plugin lists PDF attachments only)."""

    key: str
    title: str
    content_type: str
    path: str


@dataclass(frozen=True)
class ZoteroItem:
    key: str
    item_type: str
    title: str
    creators: list[dict[str, Any]]
    date: str
    citekey: str
    extra: str
    attachments: list[ZoteroAttachment]


@dataclass(frozen=True)
class PdfOutline:
    """A PDF's bookmarks as Zotero lists them: flat, depth in `level`, 1-based pages."""

    attachment_key: str
    page_count: int
    entries: list[OutlineEntry]


@dataclass(frozen=True)
class PageText:
    page: int
    text: str
    truncated: bool


@dataclass(frozen=True)
class PdfText:
    attachment_key: str
    page_count: int
    pages: list[PageText]


def zotero_send(
    method: str,
    url: str,
    *,
    body: Any = None,
    timeout: float,
    unreachable: str,
    what: str,
    writes: str = "",
) -> httpx.Response:
    """One HTTP exchange with Zotero, transport failures turned into domain errors.

    `unreachable` is the message for a refused connection; `what` names the request in the
    messages. The whole answer must arrive within `timeout` seconds: one that stalls, or
    trickles in a few bytes at a time, is a ZoteroTimeout. For a request that changes
    something in Zotero, `writes` names it ("the highlight"): when the answer is lost
    (a timeout, a connection closed mid-answer) the message says that it may have been
    made anyway, so it is not made twice. Proxy variables are ignored: Zotero only
    listens on loopback.
    """
    deadline = time.monotonic() + timeout
    maybe_done = (
        f" {writes[:1].upper()}{writes[1:]} may have been made in Zotero all the same: check "
        "there before trying again."
        if writes
        else ""
    )
    try:
        with (
            httpx.Client(timeout=httpx.Timeout(timeout), trust_env=False) as client,
            client.stream(method, url, json=body) as response,
        ):
            content = bytearray()
            for chunk in response.iter_bytes():
                content += chunk
                if time.monotonic() > deadline:
                    raise httpx.ReadTimeout("the answer took too long")
            return httpx.Response(
                response.status_code,
                headers=response.headers,
                content=bytes(content),
                request=response.request,
            )
    except httpx.TimeoutException:
        advice = f".{maybe_done}" if writes else "; try again, or raise ZOTERO_TIMEOUT."
        raise ZoteroTimeout(
            f"Zotero did not answer {what} within {timeout:g} s (ZOTERO_TIMEOUT) at {url}: "
            f"it may be busy (a large PDF) or stuck{advice}",
            url=url,
            timeout=timeout,
        ) from None
    except httpx.ConnectError:
        # Refused connections and unresolvable host names both land here.
        raise ZoteroUnreachable(unreachable, url=url) from None
    except httpx.RemoteProtocolError:
        # The connection closed before the answer was whole (Zotero quit or restarted).
        retry = "" if writes else " Try again."
        raise ZoteroError(
            f"Zotero closed the connection before its answer to {what} was complete (at "
            f"{url}): it may have quit or restarted.{retry}{maybe_done}",
            url=url,
            reason="connection_closed",
        ) from None
    except httpx.HTTPError as error:
        raise ZoteroError(
            f"The connection to Zotero at {url} failed during {what}: {error}.{maybe_done}",
            url=url,
        ) from None


@dataclass(frozen=True)
class ZoteroClient:
    """The plugin's routes under `base_url`; build it with `from_settings()`."""

    base_url: str
    timeout: float

    @classmethod
    def from_settings(cls) -> ZoteroClient:
        return cls(base_url=settings.ZOTERO_URL.rstrip("/"), timeout=float(settings.ZOTERO_TIMEOUT))

    def ping(self) -> None:
        """Check that Zotero and the plugin answer. Raises the errors listed above."""
        self._call("GET", "ping", None)

    def item_by_citekey(self, citekey: str) -> ZoteroItem:
        """The item with this Better BibTeX citekey (or `Citation Key:` line in `extra`),
        with its PDF attachments. Raises NotFound for an unknown citekey."""
        data = self._call("POST", "citekey", {"citekey": citekey})
        attachments = [
            ZoteroAttachment(
                key=_text(entry, "key", required=True),
                title=_text(entry, "title"),
                content_type=_text(entry, "contentType"),
                path=_text(entry, "path"),
            )
            for entry in _list(data, "attachments")
        ]
        creators = [c for c in _list(data, "creators") if isinstance(c, dict)]
        return ZoteroItem(
            key=_text(data, "key", required=True),
            item_type=_text(data, "itemType"),
            title=_text(data, "title"),
            creators=creators,
            date=_text(data, "date"),
            citekey=_text(data, "citekey") or citekey,
            extra=_text(data, "extra"),
            attachments=attachments,
        )

    def pdf_outline(self, key: str) -> PdfOutline:
        """The outline and page count of the item's PDF (`key`: item or attachment key).
        Raises NotFound when the item has no PDF attachment."""
        data = self._call("POST", "pdfoutline", {"key": key})
        entries = []
        for entry in _list(data, "outline"):
            level = entry.get("level")
            page = entry.get("page")
            entries.append(
                OutlineEntry(
                    level=level if isinstance(level, int) and level >= 1 else 1,
                    title=_text(entry, "title"),
                    page=page if isinstance(page, int) and page >= 1 else None,
                )
            )
        return PdfOutline(
            attachment_key=_text(data, "attachmentKey", required=True),
            page_count=_count(data, "pageCount"),
            entries=entries,
        )

    def pdf_pages(self, key: str, pages: str) -> PdfText:
        """The text of `pages` ('1-10', '3', '1,3,5-7'; 1-based) of the item's PDF. Zotero
        stops near 300,000 characters: later pages may be missing or marked truncated.
        Raises NotFound when the item has no PDF attachment."""
        data = self._call("POST", "readpdf", {"key": key, "pages": pages})
        read = []
        for entry in _list(data, "pages"):
            page = entry.get("page")
            if not isinstance(page, int):
                raise self._unexpected("readpdf", "a page without its number")
            read.append(PageText(page, _text(entry, "text"), entry.get("truncated") is True))
        return PdfText(
            attachment_key=_text(data, "attachmentKey", required=True),
            page_count=_count(data, "pageCount"),
            pages=read,
        )

    def highlight_create(
        self, *, key: str, text: str, page: int, color: str, comment: str | None = None
    ) -> dict[str, Any]:
        """Highlight `text` (exact and unique on the page) on 1-based `page` of the item's
        PDF. Side effect: a new annotation in Zotero. Returns Zotero's annotation
        ({key, parentItemKey, page, color, rects}). Raises InvalidInput for a page out of
        range, NotFound when the text is not on the page or there is no PDF."""
        body: dict[str, Any] = {"key": key, "text": text, "page": page, "color": color}
        if comment:
            body["comment"] = comment
        data = self._call("POST", "highlight", body)
        annotation = data.get("annotation")
        if not isinstance(annotation, dict) or not isinstance(annotation.get("key"), str):
            raise self._unexpected("highlight", "no annotation key")
        return annotation

    def annotation_create(self, body: dict[str, Any]) -> dict[str, Any]:
        """Create an annotation from a full body ({parentItemKey: attachment key,
        annotationType, position: {pageIndex (0-based), rects}, color, comment?}). Side
        effect: a new annotation in Zotero. Returns it as Zotero does."""
        data = self._call("POST", "annotations", body)
        annotation = data.get("annotation", data)
        if not isinstance(annotation, dict):
            raise self._unexpected("annotations", "no annotation")
        return annotation

    # --- one request -------------------------------------------------------------------

    def _call(self, method: str, route: str, body: Any) -> dict[str, Any]:
        url = f"{self.base_url}/{route}"
        response = zotero_send(
            method,
            url,
            body=body,
            timeout=self.timeout,
            unreachable=f"Zotero is not reachable at {self.base_url}: {PLUGIN_HINT}",
            what=f"/{route}",
            writes=WRITE_ROUTES.get(route, ""),
        )
        data = _json_object(response)
        # 200 for reads and 201 for new annotations, as documented; any 2xx is success.
        if response.is_success:
            if route == "ping":
                return data or {}
            if data is None:
                raise self._unexpected(route, "a body that is not a JSON object")
            return data
        raise self._error(route, response.status_code, data, body)

    def _error(
        self, route: str, status: int, data: dict[str, Any] | None, body: Any = None
    ) -> DomainError:
        message = data.get("error") if data else None
        if not isinstance(message, str) or not data:
            if status == 404:
                # Zotero's own server answers unknown routes with a plain-text 404.
                return ZoteroUnreachable(
                    f"Zotero answers at {self.base_url} but has no route /{route}: "
                    "is the mcp-zotero-api plugin installed and enabled?",
                    url=self.base_url,
                    reason="plugin_missing",
                )
            return ZoteroError(
                f"Zotero answered HTTP {status} to /{route} without an error message.",
                status=status,
            )
        extras = {k: v for k, v in data.items() if k != "error"}
        if status == 400:
            return InvalidInput(_with_extras(message, extras), zotero=data)
        if status == 404:
            return NotFound(_with_extras(message, extras), zotero=data)
        detail = data.get("message")
        text = f"{message}: {detail}" if isinstance(detail, str) and detail else message
        if route in PDF_ROUTES and (missing := _missing_pdf_path(text)) is not None:
            key = body.get("key") if isinstance(body, dict) else None
            return ZoteroError(
                f"The PDF of Zotero item {key} is missing on this machine: {missing} does not "
                f"exist (Zotero: {text}). Zotero still lists the attachment: relink or "
                "re-download the file in Zotero, then try again.",
                reason="pdf_file_missing",
                key=key,
                path=missing,
                zotero=data,
            )
        return ZoteroError(f"Zotero failed on /{route} (HTTP {status}): {text}", zotero=data)

    def _unexpected(self, route: str, what: str) -> ZoteroError:
        return ZoteroError(
            f"Zotero's answer to /{route} is not what the mcp-zotero-api plugin sends "
            f"({what}): is the plugin up to date?",
            url=self.base_url,
        )


def _missing_pdf_path(text: str) -> str | None:
    """The path in the plugin's "PDF file not found: <path>" (also ENOENT/"no such file"
    texts), or None when the failure is something else."""
    found = _MISSING_FILE.search(text)
    if found is None:
        return None
    path = _PATH.search(text, found.end())
    return path.group(0).strip().rstrip(".,;") if path else "(Zotero did not say which file)"


def _with_extras(message: str, extras: dict[str, Any]) -> str:
    """'page out of range', {'range': '1..8'} -> 'Zotero: page out of range (range: 1..8)'."""
    shown = ", ".join(f"{k}: {v}" for k, v in extras.items() if isinstance(v, str | int))
    return f"Zotero: {message}" + (f" ({shown})" if shown else "")


def _json_object(response: httpx.Response) -> dict[str, Any] | None:
    try:
        data = json.loads(response.content or b"null")
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def _text(data: dict[str, Any], name: str, *, required: bool = False) -> str:
    value = data.get(name)
    if isinstance(value, str) and (value or not required):
        return value
    if required:
        raise ZoteroError(f"Zotero's answer lacks {name!r}: is the plugin up to date?")
    return "" if value is None else str(value)


def _list(data: dict[str, Any], name: str) -> list[dict[str, Any]]:
    value = data.get(name) or []
    if not isinstance(value, list):
        raise ZoteroError(f"Zotero's answer has {name!r} that is not a list.")
    return [entry for entry in value if isinstance(entry, dict)]


def _count(data: dict[str, Any], name: str) -> int:
    value = data.get(name)
    if not isinstance(value, int) or value < 0:
        raise ZoteroError(f"Zotero's answer lacks a page count ({name!r}).")
    return value

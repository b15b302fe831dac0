"""Downloading a PDF from a URL that a user or a source supplied.

A URL from outside must not make the server fetch from its own network: unless
PDF_ALLOW_PRIVATE_URLS is on, every hop's host is resolved and refused when any address
is not globally routable unicast (papers/pdf/addresses.py: every IANA special-purpose block,
and the IPv4 address inside NAT64 and mapped forms), and the address the
connection actually reaches is checked again before the request is sent (a name that
resolves differently the second time gains nothing). Redirects are followed by hand, at
most PDF_MAX_REDIRECTS, each hop checked the same way; proxies from the environment are
ignored. The body is streamed to a staging file, at most PDF_MAX_BYTES, within
PDF_DOWNLOAD_TIMEOUT seconds overall.

Errors are DownloadFailed with a `reason` and `retryable` (timeouts, refused connections and
5xx may work later; a 404, a refused address or an HTML page will not).
"""

from __future__ import annotations

import logging
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
from django.conf import settings

from papers.pdf.addresses import address_allowed
from papers.pdf.errors import DownloadFailed, NotAPdf
from papers.pdf.files import too_large, write_chunks

logger = logging.getLogger(__name__)

USER_AGENT = "research-mcp (PDF download)"
# What servers send PDFs as; an empty type is judged by the %PDF header alone.
ACCEPTED_TYPES = frozenset(
    {
        "application/pdf", "application/x-pdf", "application/acrobat", "application/octet-stream",
        "binary/octet-stream", "application/force-download", "application/download",
    }
)  # fmt: skip


def _check_url(url: httpx2.URL) -> None:
    if url.scheme not in ("http", "https"):
        raise DownloadFailed(
            f"Only http and https URLs can be downloaded, not {url.scheme or 'this'}:.",
            reason="bad_scheme",
        )
    if not url.host:
        raise DownloadFailed("The URL has no host.", reason="bad_url")
    if settings.PDF_ALLOW_PRIVATE_URLS:
        return
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        infos = socket.getaddrinfo(url.host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError):
        raise DownloadFailed(
            f"The host {url.host!r} cannot be resolved.", reason="dns_failed", retryable=True
        ) from None
    addresses = {str(info[4][0]) for info in infos}
    refused = sorted(address for address in addresses if not address_allowed(address))
    if refused:
        raise _refused(url.host)


def _refused(host: str) -> DownloadFailed:
    return DownloadFailed(
        f"Refused to download from {host!r}: it is a loopback, private or link-local "
        "address (set PDF_ALLOW_PRIVATE_URLS=true to allow such URLs).",
        reason="private_address",
    )


def _guard_connection(host: str) -> Any:
    """An httpcore trace hook that checks the connected peer before the request is sent."""

    def trace(event: str, info: dict[str, Any]) -> None:
        if event != "connection.connect_tcp.complete" or settings.PDF_ALLOW_PRIVATE_URLS:
            return
        stream = info.get("return_value")
        peer = stream.get_extra_info("server_addr") if stream is not None else None
        if not peer or not address_allowed(str(peer[0])):
            if stream is not None:
                stream.close()
            raise _refused(host)

    return trace


def fetch_pdf(url_text: str, target: Path) -> str:
    """Stream the PDF at `url_text` into `target` (a staging file); returns the final URL.
    Raises DownloadFailed, NotAPdf (too large, not a PDF by content type or first bytes)."""
    try:
        url = httpx2.URL(url_text)
    except Exception:
        raise DownloadFailed("The URL is not valid.", reason="bad_url") from None
    timeout = float(settings.PDF_DOWNLOAD_TIMEOUT)
    deadline = time.monotonic() + timeout
    limit = settings.PDF_MAX_BYTES
    seen: set[str] = set()
    try:
        with httpx2.Client(
            timeout=httpx2.Timeout(timeout),
            follow_redirects=False,
            trust_env=False,  # an environment proxy would hide the real peer
            headers={"User-Agent": USER_AGENT, "Accept": "application/pdf,*/*;q=0.5"},
        ) as client:
            for _ in range(settings.PDF_MAX_REDIRECTS + 1):
                _check_url(url)
                seen.add(str(url))
                request = client.build_request(
                    "GET", url, extensions={"trace": _guard_connection(url.host)}
                )
                response = client.send(request, stream=True)
                try:
                    if response.is_redirect:
                        location = response.headers.get("location", "")
                        url = url.join(location)
                        if str(url) in seen:
                            raise DownloadFailed(
                                "The server redirects in a loop.", reason="redirect_loop"
                            )
                        continue
                    _check_response(response)
                    declared = response.headers.get("content-length", "")
                    if declared.isdigit() and int(declared) > limit:
                        raise too_large(limit)

                    write_chunks(target, _body(response, deadline))
                finally:
                    response.close()
                _check_header(target)
                return str(url)
            raise DownloadFailed(
                f"The server redirected more than {settings.PDF_MAX_REDIRECTS} times.",
                reason="too_many_redirects",
            )
    except httpx2.TimeoutException:
        raise DownloadFailed(
            f"The download did not finish within {timeout:g} s.", reason="timeout", retryable=True
        ) from None
    except httpx2.ConnectError:
        raise DownloadFailed(
            "The server cannot be reached.", reason="connection_failed", retryable=True
        ) from None
    except httpx2.RemoteProtocolError as error:
        # Most often the body ended before its Content-Length: a truncated transfer.
        logger.warning("PDF download from %s broke off: %r", url, error)
        raise DownloadFailed(
            "The server closed the connection before the whole file arrived; try again later.",
            reason="incomplete",
            retryable=True,
        ) from None
    except httpx2.HTTPError as error:
        logger.warning("PDF download from %s failed: %r", url, error)
        raise DownloadFailed(
            "The transfer failed.", reason="network_error", retryable=True
        ) from None


def _body(response: httpx2.Response, deadline: float) -> Iterator[bytes]:
    """The body as it arrives, checked against the deadline at every piece received: a
    server that sends a few bytes at a time, each in time for the read timeout, still
    ends at the deadline (a fixed chunk size would wait for a whole chunk first)."""
    for chunk in response.iter_bytes():
        if time.monotonic() > deadline:
            raise httpx2.ReadTimeout("the transfer took too long")
        yield chunk


def _check_response(response: httpx2.Response) -> None:
    status = response.status_code
    if status != 200:
        raise DownloadFailed(
            f"The server answered HTTP {status}.",
            reason="http_error",
            status=status,
            retryable=status >= 500 or status == 429,
        )
    content_type = response.headers.get("content-type", "").split(";")[0].strip().lower()
    if content_type and content_type not in ACCEPTED_TYPES:
        raise NotAPdf(
            f"The server sent {content_type}, not a PDF (often a login or landing page).",
            reason="not_pdf",
            content_type=content_type,
        )


def _check_header(target: Path) -> None:
    with target.open("rb") as file:
        head = file.read(1024)
    if b"%PDF-" not in head:
        raise NotAPdf("The downloaded file is not a PDF (no %PDF header).", reason="not_pdf")

"""One GET request for the engines, with the source's failures turned into our errors.

Every request has an explicit timeout (also bounding the whole download, not only each
read), follows at most MAX_REDIRECTS redirects, refuses answers over MAX_RESPONSE_BYTES and
names the product in its User-Agent. Failures map to engines.base errors: 429, 5xx,
timeouts and dropped connections are transient (the runner retries them, honouring
Retry-After); other 4xx and answers we cannot read are permanent. No retries, caching or
rate limiting here: the runner does those for every engine alike.

Messages never contain API keys: any key sent in a header or a `*key*` parameter is masked
in every message, and key headers are dropped if a redirect leads to another host or port.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import cache
from importlib import metadata
from typing import Any

import httpx
from django.conf import settings

from engines.base import (
    EngineError,
    EngineTimeout,
    PaperNotFoundAtSource,
    RateLimited,
    TransientEngineError,
)

MAX_REDIRECTS = 5
MAX_RESPONSE_BYTES = 20 * 1024 * 1024
# Longest piece of an error body quoted in a message.
MAX_DETAIL_CHARS = 300
SECRET_HEADERS = frozenset({"x-api-key", "authorization", "api-key"})
_TAG = re.compile(r"<[^>]+>")

Params = Mapping[str, str | int | None]


@cache
def _version() -> str:
    try:
        return metadata.version("research-mcp")
    except metadata.PackageNotFoundError:
        return "0"


def user_agent() -> str:
    """'research-mcp/<version> (mailto:<CONTACT_EMAIL>)': who is asking and how to reach them."""
    product = f"research-mcp/{_version()}"
    contact = settings.CONTACT_EMAIL
    return f"{product} (mailto:{contact})" if contact else product


def contact_params() -> dict[str, str]:
    """The `mailto` parameter that puts OpenAlex and Crossref calls in their polite pool."""
    return {"mailto": settings.CONTACT_EMAIL} if settings.CONTACT_EMAIL else {}


def get_json(
    url: str,
    *,
    engine_name: str,
    timeout: float,
    params: Params | None = None,
    headers: Mapping[str, str] | None = None,
    not_found: str = "",
) -> Any:
    """GET `url` and decode its JSON answer.

    `not_found`: when given, a 404 raises PaperNotFoundAtSource with this message (a
    single-paper lookup); otherwise a 404 is an EngineError like any other refusal.
    Raises TransientEngineError (RateLimited, EngineTimeout) or EngineError.
    """
    body, content_type = _get(
        url,
        engine_name=engine_name,
        timeout=timeout,
        params=params,
        headers={"Accept": "application/json", **(headers or {})},
        not_found=not_found,
    )
    try:
        return json.loads(body)
    except ValueError:
        raise EngineError(
            f"{engine_name} answered with something that is not JSON "
            f"({content_type or 'no content type'})."
        ) from None


def get_text(
    url: str,
    *,
    engine_name: str,
    timeout: float,
    accept: str,
    params: Params | None = None,
    headers: Mapping[str, str] | None = None,
    not_found: str = "",
) -> str:
    """GET `url` asking for `accept` and return the answer as text (BibTeX and the like).

    Errors as for get_json.
    """
    body, content_type = _get(
        url,
        engine_name=engine_name,
        timeout=timeout,
        params=params,
        headers={"Accept": accept, **(headers or {})},
        not_found=not_found,
    )
    return body.decode(_charset(content_type) or "utf-8", errors="replace")


def retry_after_seconds(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header: delay-seconds or an HTTP date."""
    if not value or not value.strip():
        return None
    value = value.strip()
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = parsedate_to_datetime(value)
        except (TypeError, ValueError, IndexError):
            return None
        if when.tzinfo is None:
            when = when.replace(tzinfo=UTC)
        seconds = (when - datetime.now(UTC)).total_seconds()
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _get(
    url: str,
    *,
    engine_name: str,
    timeout: float,
    params: Params | None,
    headers: Mapping[str, str],
    not_found: str,
) -> tuple[bytes, str]:
    query = {name: str(value) for name, value in (params or {}).items() if value is not None}
    request_headers = {"User-Agent": user_agent(), **headers}
    mask = _masker(request_headers, query)
    deadline = time.monotonic() + timeout
    try:
        parsed = httpx.URL(url)
        client = _client_for(parsed.scheme, parsed.host, parsed.port)
        with client.stream(
            "GET", url, params=query, headers=request_headers, timeout=timeout
        ) as response:
            body = _read_bounded(response, deadline, engine_name, timeout)
            status, answer_headers = response.status_code, response.headers
    except httpx.TimeoutException:
        raise EngineTimeout(f"{engine_name} did not answer within {timeout:g} s.") from None
    except httpx.TooManyRedirects:
        raise EngineError(
            f"{engine_name} redirected more than {MAX_REDIRECTS} times; giving up."
        ) from None
    except (httpx.UnsupportedProtocol, httpx.InvalidURL, httpx.DecodingError) as exc:
        # A bad base URL setting or a garbled body: retrying will not help.
        raise EngineError(mask(f"{engine_name} request failed: {exc}")) from None
    except httpx.TransportError as exc:
        raise TransientEngineError(
            mask(f"{engine_name} could not be reached ({type(exc).__name__}: {exc}).")
        ) from None
    content_type = answer_headers.get("content-type", "")
    if 200 <= status < 300:
        return body, content_type
    detail = mask(_detail(body))
    suffix = f": {detail}" if detail else "."
    if status == 429:
        raise RateLimited(
            f"{engine_name} is rate limiting us (HTTP 429){suffix}",
            http_status=status,
            retry_after=retry_after_seconds(answer_headers.get("retry-after")),
        )
    if status >= 500:
        raise TransientEngineError(
            f"{engine_name} failed (HTTP {status}){suffix}",
            http_status=status,
            retry_after=retry_after_seconds(answer_headers.get("retry-after")),
        )
    if status == 404 and not_found:
        raise PaperNotFoundAtSource(mask(not_found), http_status=status)
    raise EngineError(
        f"{engine_name} refused the request (HTTP {status}){suffix}", http_status=status
    )


@cache
def _client_for(scheme: str, host: str, port: int | None) -> httpx.Client:
    """One client (connection pool, TLS context) per source, shared by all threads.

    Building an httpx.Client loads the CA bundle (tens of ms of CPU), which dominated a
    multi-engine search when done per request (benchmarks/README.md, "Engines").
    """
    return httpx.Client(
        follow_redirects=True,
        max_redirects=MAX_REDIRECTS,
        event_hooks={"request": [_keep_keys_at_home((scheme, host, port))]},
    )


def _read_bounded(
    response: httpx.Response, deadline: float, engine_name: str, timeout: float
) -> bytes:
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > MAX_RESPONSE_BYTES:
        raise EngineError(
            f"{engine_name} sent {int(declared):,} bytes; the limit is {MAX_RESPONSE_BYTES:,}."
        )
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_bytes():
        size += len(chunk)
        if size > MAX_RESPONSE_BYTES:
            raise EngineError(f"{engine_name} sent more than {MAX_RESPONSE_BYTES:,} bytes.")
        if time.monotonic() > deadline:
            # httpx's timeout is per read; a slow trickle must not outlast the call's.
            raise EngineTimeout(f"{engine_name} did not answer within {timeout:g} s.")
        chunks.append(chunk)
    return b"".join(chunks)


def _keep_keys_at_home(
    home: tuple[str, str, int | None],
) -> Callable[[httpx.Request], None]:
    """A request hook dropping key headers when a redirect leads to another origin."""

    def hook(request: httpx.Request) -> None:
        if (request.url.scheme, request.url.host, request.url.port) != home:
            for name in SECRET_HEADERS:
                request.headers.pop(name, None)

    return hook


def _masker(headers: Mapping[str, str], params: Mapping[str, str]) -> Callable[[str], str]:
    secrets = [value for name, value in headers.items() if name.lower() in SECRET_HEADERS]
    secrets += [value for name, value in params.items() if "key" in name.lower()]
    secrets = [secret for secret in secrets if secret]

    def mask(text: str) -> str:
        for secret in secrets:
            text = text.replace(secret, "***")
        return text

    return mask


def _detail(body: bytes) -> str:
    """The useful sentence of an error answer: a JSON `message`/`error`, else the text."""
    try:
        data = json.loads(body)
    except ValueError:
        data = None
    text = ""
    if isinstance(data, dict):
        for key in ("message", "error", "detail"):
            value = data.get(key)
            if isinstance(value, str) and value.strip():
                text = value
                break
            if isinstance(value, list):  # Crossref: [{"type", "value", "message"}]
                parts = [str(v.get("message", "")) for v in value if isinstance(v, dict)]
                text = " ".join(p for p in parts if p)
                if text:
                    break
    if not text and data is None:
        text = _TAG.sub(" ", body[:4000].decode("utf-8", errors="replace"))
    text = " ".join(text.split())
    return text[:MAX_DETAIL_CHARS] + ("…" if len(text) > MAX_DETAIL_CHARS else "")


def _charset(content_type: str) -> str:
    match = re.search(r"charset=([\w.-]+)", content_type, re.IGNORECASE)
    if not match:
        return ""
    try:
        "".encode(match.group(1))
    except LookupError:
        return ""
    return match.group(1)

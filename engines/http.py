"""One GET request for the engines, with the source's failures turned into our errors.

Every request has explicit deadlines: one to connect (name resolution included) and one
to answer, both the engine's own (`connect_timeout`, `timeout`) cut to what is left of the
call's deadline (`call_deadline`, set by the runner), the read one bounding the whole
download, not only each read. It follows at most MAX_REDIRECTS redirects, refuses answers
over MAX_RESPONSE_BYTES and names the product in its User-Agent. Failures map to
engines.base errors (engines/failures.py has the table): no network, refused connections
and TLS failures are `EngineUnreachable` (not retried); timeouts, dropped connections,
429 and 5xx are transient; 401/403 are `BadKey`; other 4xx and answers we cannot read are
permanent. No retries, caching, rate limiting or circuit breaking here: the runner does
those for every engine alike.

Identifiers go into a URL only through `path_segment`, which encodes them as one path
segment and refuses dot segments, so a hostile DOI can never choose the path.

Messages never contain API keys: any key sent in a header or a `*key*` parameter is masked
in every message, and key headers are dropped if a redirect leads to another host or port.
"""

from __future__ import annotations

import json
import math
import re
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from functools import cache
from importlib import metadata
from typing import Any
from urllib.parse import quote, unquote

import httpx
from django.conf import settings

from engines.base import EngineError, EngineTimeout, PaperNotFoundAtSource
from engines.failures import status_error, transport_error

MAX_REDIRECTS = 5
MAX_RESPONSE_BYTES = 20 * 1024 * 1024
# Longest piece of an error body quoted in a message.
MAX_DETAIL_CHARS = 300
SECRET_HEADERS = frozenset({"x-api-key", "authorization", "api-key"})
_TAG = re.compile(r"<[^>]+>")

Params = Mapping[str, str | int | None]
# Seconds to connect when an engine does not say (BaseSearchEngine.connect_timeout).
DEFAULT_CONNECT_TIMEOUT = 3.0
# The shortest deadline a request is given, even when the call's is almost spent.
MIN_REQUEST_SECONDS = 0.05

# The monotonic time by which the engine call under way must end (runner.call_engine).
_call_deadline: ContextVar[float | None] = ContextVar("engine_call_deadline", default=None)


@contextmanager
def call_deadline(deadline: float) -> Iterator[None]:
    """Requests made inside end by `deadline` (a time.monotonic() value)."""
    token = _call_deadline.set(deadline)
    try:
        yield
    finally:
        _call_deadline.reset(token)


def current_deadline() -> float | None:
    """The monotonic time by which the engine call under way must end, if one is set."""
    return _call_deadline.get()


# Called when a response's status line arrives: the source answers (engines/breaker.py).
_answer_hook: ContextVar[Callable[[], None] | None] = ContextVar("engine_answer", default=None)


@contextmanager
def on_answer(callback: Callable[[], None]) -> Iterator[None]:
    """Requests made inside call `callback` as soon as an answer (any status) begins."""
    token = _answer_hook.set(callback)
    try:
        yield
    finally:
        _answer_hook.reset(token)


def request_timeouts(connect: float, read: float) -> tuple[float, float]:
    """(connect, read) seconds for one request: the engine's own, cut to what is left of
    the call's deadline."""
    deadline = _call_deadline.get()
    if deadline is None:
        return connect, read
    left = max(MIN_REQUEST_SECONDS, deadline - time.monotonic())
    return min(connect, left), min(read, left)


_SCHEME = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)


def path_segment(value: str, *, what: str = "identifier") -> str:
    """`value` as exactly one URL path segment: everything but letters, digits, `-._~` and
    `:;()@` percent-encoded, `/` included (an identifier can never add segments).

    Raises EngineError for an empty value, control characters, backslashes or a dot
    segment (`.`/`..` between slashes, also once percent-decoded): such an identifier is
    not real, and a server that decodes %2F before routing would still resolve it.
    """
    text = value.strip()
    if not text:
        raise EngineError(f"The {what} is empty.")
    decoded = text
    for _ in range(3):  # double-encoded dots too
        decoded = unquote(decoded)
    if any(ord(ch) < 0x20 or ord(ch) == 0x7F for ch in decoded) or "\\" in decoded:
        raise EngineError(f"The {what} {value!r} contains characters no identifier has.")
    if any(part in (".", "..") for part in decoded.split("/")):
        raise EngineError(f"The {what} {value!r} contains a '.' or '..' path segment.")
    return quote(text, safe=":;()@")


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
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
    params: Params | None = None,
    headers: Mapping[str, str] | None = None,
    not_found: str = "",
) -> Any:
    """GET `url` and decode its JSON answer.

    `not_found`: when given, a 404 raises PaperNotFoundAtSource with this message (a
    single-paper lookup); otherwise a 404 is an EngineError like any other refusal.
    Raises TransientEngineError (RateLimited, EngineTimeout, EngineUnreachable) or
    EngineError (BadKey).
    """
    body, content_type = _get(
        url,
        engine_name=engine_name,
        timeout=timeout,
        connect_timeout=connect_timeout,
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
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT,
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
        connect_timeout=connect_timeout,
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
    connect_timeout: float,
    params: Params | None,
    headers: Mapping[str, str],
    not_found: str,
) -> tuple[bytes, str]:
    query = {name: str(value) for name, value in (params or {}).items() if value is not None}
    request_headers = {"User-Agent": user_agent(), **headers}
    mask = _masker(request_headers, query)
    connect, read = request_timeouts(connect_timeout, timeout)
    deadline = time.monotonic() + read
    try:
        parsed = httpx.URL(url)
        client = _client_for(parsed.scheme, parsed.host, parsed.port)
        with client.stream(
            "GET",
            url,
            params=query,
            headers=request_headers,
            timeout=httpx.Timeout(read, connect=connect),
        ) as response:
            hook = _answer_hook.get()
            if hook is not None:
                hook()
            body = _read_bounded(response, deadline, engine_name, read)
            status, answer_headers = response.status_code, response.headers
    except httpx.TooManyRedirects:
        raise EngineError(
            f"{engine_name} redirected more than {MAX_REDIRECTS} times; giving up."
        ) from None
    except (httpx.UnsupportedProtocol, httpx.InvalidURL, httpx.DecodingError) as exc:
        # A bad base URL setting or a garbled body: retrying will not help.
        raise EngineError(mask(f"{engine_name} request failed: {exc}")) from None
    except httpx.TransportError as exc:
        error = transport_error(
            engine_name, exc, timeout=connect if isinstance(exc, httpx.ConnectTimeout) else read
        )
        raise error from None
    content_type = answer_headers.get("content-type", "")
    if 200 <= status < 300:
        return body, content_type
    detail = mask(_detail(body))
    classified = status_error(
        engine_name,
        status,
        detail,
        retry_after=retry_after_seconds(answer_headers.get("retry-after")),
    )
    if classified is not None:
        raise classified
    if status == 404 and not_found:
        raise PaperNotFoundAtSource(mask(not_found), http_status=status)
    suffix = f": {detail}" if detail else "."
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

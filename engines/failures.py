"""What went wrong when a source gave no answer at all, told apart for people and agents.

The engines' HTTP clients (httpx for most, requests under the `arxiv` and SerpAPI
packages) report a missing answer as a handful of exception types whose real cause sits
further down the chain (`socket.gaierror` under httpx.ConnectError, urllib3's
NameResolutionError under requests' ConnectionError). `transport_error` walks that chain
and returns our error for it:

| cause | error | reason | retried |
|---|---|---|---|
| name resolution failed (no network, DNS down) | EngineUnreachable | dns | no |
| connection refused | EngineUnreachable | refused | no |
| no route to the host / network unreachable | EngineUnreachable | no_route | no |
| TLS handshake or certificate failure | EngineUnreachable | tls | no |
| connect timeout | EngineTimeout (outcome unreachable) | connect_timeout | yes |
| read timeout | EngineTimeout | read_timeout | yes |
| connection dropped mid-answer, anything else | TransientEngineError | connection_lost | yes |

HTTP answers with an error status are classified where they are read (engines/http.py
for httpx; arxiv.py and google_scholar.py for their packages) with `status_error`.
Messages never quote a URL (it may carry a key).
"""

from __future__ import annotations

import errno
import socket
import ssl
from collections.abc import Iterator

import httpx
import requests

from engines.base import (
    BadKey,
    EngineError,
    EngineTimeout,
    EngineUnreachable,
    RateLimited,
    TransientEngineError,
)

_DNS_TEXT = (
    "name or service not known",
    "temporary failure in name resolution",
    "nodename nor servname",
    "getaddrinfo failed",
    "no address associated",
    "name resolution",
    "failed to resolve",
)
_REFUSED_ERRNOS = {errno.ECONNREFUSED}
_NO_ROUTE_ERRNOS = {errno.ENETUNREACH, errno.EHOSTUNREACH, errno.ENETDOWN, errno.EHOSTDOWN}


def _chain(exc: BaseException) -> Iterator[BaseException]:
    """`exc`, its causes and contexts, and exceptions held in args (urllib3's
    MaxRetryError keeps its cause in `.reason`)."""
    seen: set[int] = set()
    todo = [exc]
    while todo:
        current = todo.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        for linked in (current.__cause__, current.__context__, getattr(current, "reason", None)):
            if isinstance(linked, BaseException):
                todo.append(linked)
        todo.extend(arg for arg in current.args if isinstance(arg, BaseException))


def failure_kind(exc: BaseException) -> str:
    """dns | refused | no_route | tls | connect_timeout | read_timeout | connection_lost."""
    chain = list(_chain(exc))
    text = " ".join(str(item) for item in chain).lower()
    if any(isinstance(item, socket.gaierror) for item in chain) or any(
        marker in text for marker in _DNS_TEXT
    ):
        return "dns"
    if any(isinstance(item, ConnectionRefusedError) for item in chain) or (
        "connection refused" in text
    ):
        return "refused"
    if any(isinstance(item, OSError) and item.errno in _NO_ROUTE_ERRNOS for item in chain) or (
        "network is unreachable" in text or "no route to host" in text
    ):
        return "no_route"
    if any(isinstance(item, (ssl.SSLError, requests.exceptions.SSLError)) for item in chain) or any(
        marker in text for marker in ("certificate verify failed", "ssl:", "tlsv1")
    ):
        return "tls"
    if any(isinstance(item, (httpx.ConnectTimeout, requests.ConnectTimeout)) for item in chain):
        return "connect_timeout"
    if any(isinstance(item, (httpx.TimeoutException, requests.Timeout)) for item in chain):
        return "read_timeout"
    if any(isinstance(item, OSError) and item.errno in _REFUSED_ERRNOS for item in chain):
        return "refused"
    return "connection_lost"


def transport_error(engine_name: str, exc: BaseException, *, timeout: float) -> EngineError:
    """Our error for a request that got no HTTP answer (see the table above)."""
    kind = failure_kind(exc)
    if kind == "dns":
        return EngineUnreachable(
            f"{engine_name} could not be reached: name resolution failed (no network, or DNS "
            "is down).",
            reason=kind,
        )
    if kind == "refused":
        return EngineUnreachable(
            f"{engine_name} could not be reached: the connection was refused.", reason=kind
        )
    if kind == "no_route":
        return EngineUnreachable(
            f"{engine_name} could not be reached: no route to the network.", reason=kind
        )
    if kind == "tls":
        return EngineUnreachable(
            f"{engine_name} could not be reached securely: the TLS handshake or certificate "
            "check failed (a proxy intercepting HTTPS?).",
            reason=kind,
        )
    if kind == "connect_timeout":
        error = EngineTimeout(
            f"{engine_name} did not accept a connection within {timeout:g} s.", reason=kind
        )
        error.outcome = "unreachable"
        return error
    if kind == "read_timeout":
        return EngineTimeout(f"{engine_name} did not answer within {timeout:g} s.", reason=kind)
    return TransientEngineError(
        f"{engine_name} dropped the connection ({type(exc).__name__}).", reason=kind
    )


def status_error(
    engine_name: str, status: int, detail: str, *, retry_after: float | None
) -> EngineError | None:
    """Our error for an HTTP error status that means the same at every source (401/403 bad
    key, 429 quota, 5xx server error); None for the others (the caller words those)."""
    suffix = f": {detail}" if detail else "."
    if status in (401, 403):
        return BadKey(
            f"{engine_name} refused our credentials (HTTP {status}){suffix}",
            http_status=status,
            reason=f"http_{status}",
        )
    if status == 429:
        return RateLimited(
            f"{engine_name} is rate limiting us (HTTP 429){suffix}",
            http_status=status,
            retry_after=retry_after,
            reason="quota",
        )
    if status >= 500:
        return TransientEngineError(
            f"{engine_name} failed (HTTP {status}){suffix}",
            http_status=status,
            retry_after=retry_after,
            reason="server_error",
        )
    return None

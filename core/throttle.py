"""Failed sign-ins and API-token guesses: counted per client address (and per user name for
sign-ins), refused for a while once there are too many.

A password or a token can otherwise be guessed as fast as the server answers. After
`AUTH_FAILURE_LIMIT` failures within `AUTH_FAILURE_WINDOW_SECONDS`, every further attempt
from that address (or for that user name) is refused, the right secret included, until the
window has passed since the first counted failure; a successful sign-in clears its
user name's count. The counts live in the `throttle` cache: Redis when REDIS_URL is set
(shared by every process and machine), else files under `<directory>/cache/throttle`
(shared by the processes of one machine).

Used by the admin's sign-in form (`research_site.admin_login`), the REST API's bearer
authentication (`research_site.api_auth`) and /mcp's `MCP_AUTH_TOKEN` check
(`mcp_endpoint.http.check_access`, over HTTP and SSE).
"""

from __future__ import annotations

import hashlib
import math
import time
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest

CACHE_ALIAS = "throttle"


@dataclass(frozen=True)
class Throttled(Exception):
    retry_after: int  # seconds

    @property
    def message(self) -> str:
        minutes = max(1, math.ceil(self.retry_after / 60))
        return (
            f"Too many failed attempts: try again in {minutes} minute{'s' if minutes != 1 else ''}."
        )


def client_key(request: HttpRequest | None) -> str:
    # REMOTE_ADDR: forwarded-for headers are the client's to choose.
    address = request.META.get("REMOTE_ADDR") if request is not None else None
    return address_key(address)


def address_key(address: str | None) -> str:
    """The key of a client address (the peer of the connection, never a header)."""
    return f"addr:{address or 'unknown'}"


def user_key(username: str) -> str:
    digest = hashlib.sha256(username.strip().lower().encode("utf-8", "replace")).hexdigest()
    return f"user:{digest[:32]}"


def _cache_key(scope: str, key: str) -> str:
    return f"auth-failures:{scope}:{key}"


def check(scope: str, keys: Iterable[str]) -> None:
    """Raise Throttled when any of `keys` has reached the limit within the window."""
    cache = caches[CACHE_ALIAS]
    now = time.time()
    for key in keys:
        entry = cache.get(_cache_key(scope, key))
        if not entry:
            continue
        count, first = entry
        remaining = first + settings.AUTH_FAILURE_WINDOW_SECONDS - now
        if count >= settings.AUTH_FAILURE_LIMIT and remaining > 0:
            raise Throttled(retry_after=math.ceil(remaining))


def record_failure(scope: str, keys: Iterable[str]) -> None:
    cache = caches[CACHE_ALIAS]
    now = time.time()
    window = settings.AUTH_FAILURE_WINDOW_SECONDS
    for key in keys:
        name = _cache_key(scope, key)
        entry = cache.get(name)
        if entry and entry[1] + window > now:
            count, first = entry[0] + 1, entry[1]
        else:
            count, first = 1, now
        cache.set(name, (count, first), timeout=math.ceil(first + window - now) + 1)


def clear(scope: str, keys: Iterable[str]) -> None:
    cache = caches[CACHE_ALIAS]
    for key in keys:
        cache.delete(_cache_key(scope, key))

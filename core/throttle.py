"""Failed sign-ins and API-token guesses: counted per client address (and per user name
*at* that address for sign-ins), refused for a while once there are too many.

A password or a token can otherwise be guessed as fast as the server answers. After
`AUTH_FAILURE_LIMIT` failures within `AUTH_FAILURE_WINDOW_SECONDS`, every further attempt
from that address (or for that user name from that address) is refused, the right secret
included, until the window has passed since the first counted failure; a successful
sign-in clears its user name's count. A user name is never locked out everywhere: a
stranger guessing the owner's password locks out only their own address, not the owner.

The counts live in the `throttle` cache: Redis when REDIS_URL is set (shared by every
process and machine), else files under `<directory>/cache/throttle` (shared by the
processes of one machine). When that store cannot be reached (Redis stopped, hung or
unreachable; a full disk), the counts go on in this process's memory, with one warning
per outage, and the store is not tried again for STORE_RETRY_SECONDS: a sign-in is never
refused, and never waits, because the store is down.

Client addresses are the connection's peer (REMOTE_ADDR, the ASGI `client`): forwarded-for
headers count only from the proxies the operator names in FORWARDED_ALLOW_IPS, which
uvicorn applies before the address reaches this module.

Used by the admin's sign-in form (`research_site.admin_login`), the REST API's bearer
authentication (`research_site.api_auth`) and /mcp's `MCP_AUTH_TOKEN` check
(`mcp_endpoint.http.check_access`, over HTTP and SSE).
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Iterable
from dataclasses import dataclass

from django.conf import settings
from django.core.cache import caches
from django.http import HttpRequest

logger = logging.getLogger(__name__)

CACHE_ALIAS = "throttle"
# After the shared store failed, this process counts alone for this long before trying
# it again, so an outage costs one connect timeout per process, not one per request.
STORE_RETRY_SECONDS = 10.0


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
    # REMOTE_ADDR: the peer, or what a proxy named in FORWARDED_ALLOW_IPS says it is.
    return address_key(client_address(request))


def address_key(address: str | None) -> str:
    """The key of a client address: the connection's peer (a forwarded-for header only
    from a proxy the operator trusts, FORWARDED_ALLOW_IPS)."""
    return f"addr:{address or 'unknown'}"


def user_key(username: str, address: str | None = None) -> str:
    """The key of a user name, at one client address when `address` is given."""
    name = username.strip().lower()
    if address is not None:
        name = f"{name}\x00{address}"
    digest = hashlib.sha256(name.encode("utf-8", "replace")).hexdigest()
    return f"user:{digest[:32]}"


def client_address(request: HttpRequest | None) -> str:
    """The request's client address as the ASGI server gave it (see `address_key`)."""
    return (request.META.get("REMOTE_ADDR") if request is not None else None) or "unknown"


class _Counts:
    """The shared store (the `throttle` cache), or this process's memory while it fails."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._local: dict[str, tuple[tuple[int, float], float]] = {}  # name -> (entry, expiry)
        self._down_until = 0.0
        self._warned = False

    def _shared(self) -> bool:
        return time.monotonic() >= self._down_until

    def _failed(self, exc: Exception) -> None:
        with self._lock:
            self._down_until = time.monotonic() + STORE_RETRY_SECONDS
            warn, self._warned = not self._warned, True
        if warn:
            logger.warning(
                "The sign-in throttle's store is unreachable (%s: %s); counting failed "
                "attempts in this process until it is back",
                type(exc).__name__,
                exc,
            )

    def _recovered(self) -> None:
        if self._warned:
            with self._lock:
                self._warned = False
            logger.warning("The sign-in throttle's store is reachable again")

    def get(self, name: str) -> tuple[int, float] | None:
        if self._shared():
            try:
                entry = caches[CACHE_ALIAS].get(name)
            except Exception as exc:  # any store failure: count locally
                self._failed(exc)
            else:
                self._recovered()
                return entry
        with self._lock:
            found = self._local.get(name)
            if found is None or found[1] <= time.time():
                self._local.pop(name, None)
                return None
            return found[0]

    def set(self, name: str, entry: tuple[int, float], timeout: int) -> None:
        if self._shared():
            try:
                caches[CACHE_ALIAS].set(name, entry, timeout=timeout)
                return
            except Exception as exc:
                self._failed(exc)
        with self._lock:
            self._local[name] = (entry, time.time() + timeout)
            if len(self._local) > 100_000:  # a flood of addresses: forget the oldest
                for stale in list(self._local)[:10_000]:
                    del self._local[stale]

    def delete(self, name: str) -> None:
        with self._lock:
            self._local.pop(name, None)
        if self._shared():
            try:
                caches[CACHE_ALIAS].delete(name)
            except Exception as exc:
                self._failed(exc)


_counts = _Counts()


def _cache_key(scope: str, key: str) -> str:
    return f"auth-failures:{scope}:{key}"


def check(scope: str, keys: Iterable[str], *, limit: int | None = None) -> None:
    """Raise Throttled when any of `keys` has reached the limit (AUTH_FAILURE_LIMIT unless
    given) within the window."""
    limit = settings.AUTH_FAILURE_LIMIT if limit is None else limit
    now = time.time()
    for key in keys:
        entry = _counts.get(_cache_key(scope, key))
        if not entry:
            continue
        count, first = entry
        remaining = first + settings.AUTH_FAILURE_WINDOW_SECONDS - now
        if count >= limit and remaining > 0:
            raise Throttled(retry_after=math.ceil(remaining))


def record_failure(scope: str, keys: Iterable[str]) -> None:
    now = time.time()
    window = settings.AUTH_FAILURE_WINDOW_SECONDS
    for key in keys:
        name = _cache_key(scope, key)
        entry = _counts.get(name)
        if entry and entry[1] + window > now:
            count, first = entry[0] + 1, entry[1]
        else:
            count, first = 1, now
        _counts.set(name, (count, first), timeout=math.ceil(first + window - now) + 1)


def clear(scope: str, keys: Iterable[str]) -> None:
    for key in keys:
        _counts.delete(_cache_key(scope, key))

"""A cheap connectivity check of an engine's source, for `list_search_engines`.

Resolves the host of the engine's `probe_url()` and opens a TCP connection to it, nothing
more (no request, no key sent, no rate-limit slot), within PROBE_TIMEOUT_SECONDS. The answer
is kept PROBE_TTL_SECONDS per host and port in this process, so listing the engines often
costs one probe a minute per source. An engine's availability is "checked via
network connectivity"; this is that check, for every engine.
"""

from __future__ import annotations

import socket
import threading
import time
from concurrent.futures import ThreadPoolExecutor, wait
from urllib.parse import urlsplit

from engines.failures import failure_kind

PROBE_TIMEOUT_SECONDS = 1.0
PROBE_TTL_SECONDS = 60.0

_lock = threading.Lock()
_pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="probe")
_answers: dict[tuple[str, int], tuple[float, str]] = {}

_WORDS = {
    "dns": "no network: name resolution failed for {host}",
    "refused": "{host} refused the connection",
    "no_route": "no network: no route to {host}",
    "tls": "TLS to {host} failed",
    "connect_timeout": "{host} did not accept a connection within {timeout:g} s",
    "read_timeout": "{host} did not accept a connection within {timeout:g} s",
    "connection_lost": "{host} could not be reached",
}


def _target(url: str) -> tuple[str, int] | None:
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    default = 443 if parts.scheme == "https" else 80
    try:
        return parts.hostname, parts.port or default
    except ValueError:
        return None


def _connect(host: str, port: int) -> str:
    try:
        with socket.create_connection((host, port), timeout=PROBE_TIMEOUT_SECONDS):
            return ""
    except TimeoutError:
        kind = "connect_timeout"
    except OSError as exc:
        kind = failure_kind(exc)
    return _WORDS.get(kind, _WORDS["connection_lost"]).format(
        host=host, timeout=PROBE_TIMEOUT_SECONDS
    )


def probe_reasons(urls: dict[str, str]) -> dict[str, str]:
    """Engine id -> why its source cannot be reached ('' when it can), for each engine's
    probe URL, probed in parallel (cached answers first)."""
    now = time.monotonic()
    targets = {engine_id: _target(url) for engine_id, url in urls.items() if url}
    wanted: set[tuple[str, int]] = set()
    with _lock:
        for target in targets.values():
            if target and (target not in _answers or _answers[target][0] < now):
                wanted.add(target)
    if wanted:
        # Name resolution is not bounded by the socket timeout: wait for the probes a
        # little longer than it, and call a host that is still resolving unreachable.
        futures = {target: _pool.submit(_connect, *target) for target in wanted}
        wait(futures.values(), timeout=PROBE_TIMEOUT_SECONDS + 0.5)
        with _lock:
            for target, future in futures.items():
                reason = (
                    future.result()
                    if future.done()
                    else f"no network: {target[0]} could not be resolved in time"
                )
                _answers[target] = (time.monotonic() + PROBE_TTL_SECONDS, reason)
    with _lock:
        return {
            engine_id: _answers.get(target, (0.0, ""))[1] if target else ""
            for engine_id, target in targets.items()
        }


def forget() -> None:
    """Drop the cached answers (tests; after the network came back)."""
    with _lock:
        _answers.clear()

"""Rate limits per engine, shared by every process that calls the engine.

The counting is the `limits` library's moving window: at most N calls in any window of the
engine's period, with the window kept in Redis when REDIS_URL is set (one window for all
web processes and Celery workers, updated atomically by a Lua script) and in process memory
on the embedded default. A call over the limit waits for its turn (a queue, not an error)
until its deadline; only then does it fail, as a transient error the runner reports as
`rate_limited`.

A source's `Retry-After` pauses the engine for everyone: `pause()` stores the moment the
engine may be called again in the shared cache, and `acquire()` waits for it.

While Redis cannot be reached, each process counts in its own memory instead (the limit
then holds per process, not for all of them together) and pauses are not shared; a
warning says so in the log, and the shared window is used again as soon as Redis is back.
"""

from __future__ import annotations

import random
import threading
import time
from dataclasses import dataclass
from functools import cache

from django.conf import settings
from django.core.cache import caches
from limits import RateLimitItem, parse, storage, strategies

from engines.base import BaseSearchEngine, RateLimited
from engines.cache import store_unreachable

NAMESPACE = "research-mcp-engine"
# Longest single sleep while waiting, so a waiting call notices a pause or its deadline.
MAX_NAP_SECONDS = 0.5


@dataclass(frozen=True)
class RateState:
    """What `list_search_engines` shows about an engine's limit."""

    limit: str
    remaining: int
    resets_in_seconds: float
    paused_for_seconds: float

    def as_dict(self) -> dict[str, object]:
        return {
            "limit": self.limit,
            "remaining": self.remaining,
            "resets_in_seconds": round(self.resets_in_seconds, 2),
            "paused_for_seconds": round(self.paused_for_seconds, 2),
        }


@cache
def _limiter() -> strategies.MovingWindowRateLimiter:
    backend = (
        storage.storage_from_string(settings.REDIS_URL)
        if settings.REDIS_URL
        else storage.MemoryStorage()
    )
    return strategies.MovingWindowRateLimiter(backend)


@cache
def _local_limiter() -> strategies.MovingWindowRateLimiter:
    """This process's own window, while the shared one cannot be reached."""
    return strategies.MovingWindowRateLimiter(storage.MemoryStorage())


def _hit(item: RateLimitItem, engine_id: str) -> bool:
    try:
        return bool(_limiter().hit(item, NAMESPACE, engine_id))
    except Exception as exc:  # Redis down
        store_unreachable(exc)
        return bool(_local_limiter().hit(item, NAMESPACE, engine_id))


def _window(item: RateLimitItem, engine_id: str) -> tuple[int, float]:
    """(remaining calls, reset time) of the engine's window."""
    try:
        stats = _limiter().get_window_stats(item, NAMESPACE, engine_id)
    except Exception as exc:  # Redis down
        store_unreachable(exc)
        stats = _local_limiter().get_window_stats(item, NAMESPACE, engine_id)
    return int(stats.remaining), float(stats.reset_time)


_parse_lock = threading.Lock()


def rate_for(engine: BaseSearchEngine) -> RateLimitItem:
    """The engine's limit: ENGINE_RATE_LIMITS[id] or the engine's own (current_rate_limit)."""
    text = settings.ENGINE_RATE_LIMITS.get(engine.id) or engine.current_rate_limit()
    with _parse_lock:  # parse() memoises in a plain dict
        return parse(text)


def _pause_key(engine_id: str) -> str:
    return f"{NAMESPACE}:paused-until:{engine_id}"


def pause(engine_id: str, seconds: float) -> None:
    """Hold every call to the engine for `seconds` (a Retry-After), in every process."""
    until = time.time() + seconds
    cache_ = caches["engines"]
    try:
        current = cache_.get(_pause_key(engine_id)) or 0.0
        if until > current:
            cache_.set(_pause_key(engine_id), until, timeout=int(seconds) + 1)
    except Exception as exc:  # Redis down: the retry's own backoff still waits
        store_unreachable(exc)


def paused_for(engine_id: str) -> float:
    try:
        until = caches["engines"].get(_pause_key(engine_id)) or 0.0
    except Exception as exc:  # Redis down: no shared pause known
        store_unreachable(exc)
        return 0.0
    return max(0.0, float(until) - time.time())


def acquire(engine: BaseSearchEngine, *, deadline: float) -> float:
    """Wait for the engine's turn; returns the seconds waited.

    `deadline` is a time.monotonic() value. Raises TransientEngineError when the turn
    would come after it.
    """
    started = time.monotonic()
    item = rate_for(engine)
    while True:
        pause_left = paused_for(engine.id)
        if pause_left <= 0 and _hit(item, engine.id):
            return time.monotonic() - started
        if pause_left > 0:
            wait = pause_left
        else:
            reset_at = _window(item, engine.id)[1]
            wait = max(0.005, reset_at - time.time())
        if time.monotonic() + min(wait, MAX_NAP_SECONDS) > deadline:
            raise RateLimited(
                f"{engine.name} is rate limited ({item}); no free slot before the deadline."
            )
        # A little jitter so waiting callers do not all retry at the same instant.
        time.sleep(min(wait, MAX_NAP_SECONDS) + random.uniform(0, 0.01))


def state(engine: BaseSearchEngine) -> RateState:
    item = rate_for(engine)
    remaining, reset_at = _window(item, engine.id)
    return RateState(
        limit=str(item),
        remaining=remaining,
        resets_in_seconds=max(0.0, reset_at - time.time()),
        paused_for_seconds=paused_for(engine.id),
    )


def reset(engine: BaseSearchEngine) -> None:
    """Forget the engine's counted calls and any pause (tests, or after changing a limit)."""
    _limiter().clear(rate_for(engine), NAMESPACE, engine.id)
    caches["engines"].delete(_pause_key(engine.id))

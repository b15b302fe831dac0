"""The engine response cache (docs/ENGINES.md).

Answers of external engines (searches, details, citing papers, BibTeX, categories) are kept
for the engine's TTL in the `engines` cache: Redis when REDIS_URL is set (shared by every
process), files under `<directory>/cache/engines/` otherwise. Keys are a hash of the engine,
the operation and its arguments, so no query text or key ends up in a key. Failures are
never cached. Hits and misses are counted per engine for `list_search_engines`.

The cache is an optimisation: when Redis cannot be reached (restarting, down), a lookup is
a miss and nothing is stored or counted, with a warning in the log (`store_unreachable`),
so searches go on without it.
"""

from __future__ import annotations

import hashlib
import json
import logging
import threading
import time
from typing import Any

from django.conf import settings
from django.core.cache import caches

from engines.base import BaseSearchEngine

logger = logging.getLogger(__name__)

NAMESPACE = "research-mcp-engine"
# At most one warning per this many seconds per process about the unreachable store.
WARN_EVERY_SECONDS = 30.0
_warned = {"at": -WARN_EVERY_SECONDS}
_warned_lock = threading.Lock()
# Counters live as long as the cache itself would keep anything (30 days).
COUNTER_TTL = 30 * 24 * 3600


class _Missing:
    def __repr__(self) -> str:
        return "MISSING"


# What lookup() returns when nothing is cached (None is a valid cached answer).
MISSING: Any = _Missing()


def ttl_for(engine: BaseSearchEngine) -> int:
    """Seconds answers stay fresh: ENGINE_CACHE_TTLS[id] or the engine's default; 0 = off."""
    return int(settings.ENGINE_CACHE_TTLS.get(engine.id, engine.cache_ttl))


def cache_key(engine_id: str, operation: str, arguments: dict[str, Any]) -> str:
    canonical = json.dumps([engine_id, operation, arguments], sort_keys=True, default=str)
    digest = hashlib.sha256(canonical.encode()).hexdigest()
    return f"{NAMESPACE}:answer:{engine_id}:{operation}:{digest}"


def store_unreachable(exc: Exception) -> None:
    """Log (at most every WARN_EVERY_SECONDS) that the shared store failed; go on."""
    with _warned_lock:
        now = time.monotonic()
        if now - _warned["at"] < WARN_EVERY_SECONDS:
            return
        _warned["at"] = now
    logger.warning(
        "The engines' shared store (cache, rate limits) is unreachable (%s: %s); going on "
        "without it in this process",
        type(exc).__name__, exc,
    )  # fmt: skip


def lookup(engine: BaseSearchEngine, operation: str, arguments: dict[str, Any]) -> Any:
    """The cached answer, or `MISSING`; counts the hit or miss."""
    if ttl_for(engine) <= 0:
        return MISSING
    try:
        value = caches["engines"].get(cache_key(engine.id, operation, arguments), MISSING)
        _count(engine.id, "hits" if value is not MISSING else "misses")
    except Exception as exc:  # Redis down: a miss
        store_unreachable(exc)
        return MISSING
    return value


def store(engine: BaseSearchEngine, operation: str, arguments: dict[str, Any], value: Any) -> None:
    ttl = ttl_for(engine)
    if ttl > 0:
        try:
            caches["engines"].set(cache_key(engine.id, operation, arguments), value, timeout=ttl)
        except Exception as exc:  # Redis down: not cached this time
            store_unreachable(exc)


def _counter_key(engine_id: str, kind: str) -> str:
    return f"{NAMESPACE}:counter:{engine_id}:{kind}"


def _count(engine_id: str, kind: str) -> None:
    cache_ = caches["engines"]
    key = _counter_key(engine_id, kind)
    if not cache_.add(key, 1, timeout=COUNTER_TTL):
        try:
            cache_.incr(key)
        except ValueError:  # expired between add and incr
            cache_.add(key, 1, timeout=COUNTER_TTL)


def stats(engine_id: str) -> dict[str, Any]:
    """{"hits", "misses", "hit_rate"} since the counters started (hit_rate None if unused;
    both None while the store is unreachable)."""
    try:
        values = caches["engines"].get_many(
            [_counter_key(engine_id, "hits"), _counter_key(engine_id, "misses")]
        )
    except Exception as exc:
        store_unreachable(exc)
        return {"hits": None, "misses": None, "hit_rate": None}
    hits = int(values.get(_counter_key(engine_id, "hits"), 0))
    misses = int(values.get(_counter_key(engine_id, "misses"), 0))
    total = hits + misses
    return {"hits": hits, "misses": misses, "hit_rate": round(hits / total, 3) if total else None}

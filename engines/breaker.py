"""A circuit breaker per engine (pybreaker), shared by every process through Redis.

After ENGINE_BREAKER_FAILURES failures in a row that say the source is down (timeouts,
dropped connections, 5xx), or one that says it cannot be reached from here at all (name
resolution, refused connection, TLS; `EngineUnreachable`), the engine's breaker opens: for
ENGINE_BREAKER_RESET_SECONDS every call to it answers at once as `unreachable` (reason
`circuit_open`) without touching the network or a rate-limit slot. Then one call is let
through (half-open): success closes the breaker, failure opens it again. While that trial
call is under way, the others still answer at once (pybreaker itself would let them all
through, and with a source that hangs each would wait for its deadline); the trial is
claimed in Redis (SET NX) when it is configured, else in this process. Answers that
prove the source is up (a 400, a 404, a 429, a bad key) do not count.

The state lives in Redis when REDIS_URL is set (pybreaker's CircuitRedisStorage: every web
process and Celery worker sees the same breaker) and in process memory otherwise. While
Redis cannot be reached, pybreaker reads the breaker as closed (calls go through).

pybreaker holds a lock for the whole guarded call; one breaker object per thread over the
same storage keeps calls to one engine from queueing behind each other.

An engine that accepts connections and never answers would otherwise hold every call for
its whole deadline until enough of them had failed (50 calls of 20 s, measured). So each
process also knows whether an engine *answers*: it does for TRUST_SECONDS after any
answer (a response's first byte through engines/http.py, or a call that ended without a
counted failure). A call to an engine not known to answer is its *probe*: it alone goes
to the source; calls arriving meanwhile do not queue for the engine or reach it, they
wait for the probe to answer until ENGINE_PROBE_WAIT_SECONDS after it began (and at most
their deadline), then give up as `unreachable` (reason `circuit_open`); once the probe has
been silent that long, calls give up at once. A probe that ends without
any answer (a time-out, a dropped connection) opens the breaker at once, whatever
ENGINE_BREAKER_FAILURES says; a time-out of a call to a trusted engine withdraws the trust,
so the next call is a probe. docs/RELIABILITY.md has the measurements.

Why the breaker opened is kept beside it (`last_failure`, in the engines cache), so a
refused call and `list_search_engines` can say "name resolution failed" and when the next
try comes.
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from functools import cache
from typing import Any, TypeVar

import pybreaker
import redis
from django.conf import settings
from django.core.cache import caches

from engines import http
from engines.base import (
    EngineError,
    EngineTimeout,
    EngineUnreachable,
    RateLimited,
    TransientEngineError,
)
from engines.cache import store_unreachable

logger = logging.getLogger(__name__)

T = TypeVar("T")
NAMESPACE = "research-mcp-engine-breaker"
# How long a recorded failure is kept when the breaker does not hold it open longer.
FAILURE_MEMORY_SECONDS = 600
# How long an engine counts as answering after its last answer (see the docstring).
TRUST_SECONDS = 300.0


@dataclass(frozen=True)
class BreakerState:
    """What an engine's breaker says now. `retry_in`: seconds until a call is let through
    again (0 when closed or half-open)."""

    state: str  # closed | open | half-open
    retry_in: float
    failure: dict[str, Any] | None
    opened_at: datetime | None = None  # when it last opened (open or half-open)

    @property
    def open(self) -> bool:
        return self.state == pybreaker.STATE_OPEN and self.retry_in > 0

    def as_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"state": self.state}
        if self.open:
            data["retry_in_seconds"] = round(self.retry_in, 1)
        if self.failure:
            data["last_failure"] = self.failure
        return data


def counts(error: BaseException) -> bool:
    """Whether `error` says the source is down (see the module docstring)."""
    return isinstance(error, TransientEngineError) and not isinstance(error, RateLimited)


def _not_counted(error: BaseException) -> bool:
    return not counts(error)


@cache
def _redis() -> redis.Redis:
    # Short socket timeouts: a Redis that went away must not hold engine calls up.
    return redis.Redis.from_url(settings.REDIS_URL, socket_timeout=0.5, socket_connect_timeout=0.5)


_memory: dict[str, pybreaker.CircuitMemoryStorage] = {}
_shared: dict[str, pybreaker.CircuitBreakerStorage] = {}
_storage_lock = threading.Lock()


def _storage(engine_id: str) -> pybreaker.CircuitBreakerStorage:
    with _storage_lock:
        if engine_id in _shared:
            return _shared[engine_id]
        if settings.REDIS_URL:
            try:
                storage = pybreaker.CircuitRedisStorage(
                    pybreaker.STATE_CLOSED, _redis(), namespace=f"{NAMESPACE}:{engine_id}"
                )
            except redis.RedisError as exc:  # down now: this process's memory meanwhile
                store_unreachable(exc)
                return _memory.setdefault(
                    engine_id, pybreaker.CircuitMemoryStorage(pybreaker.STATE_CLOSED)
                )
            _shared[engine_id] = storage
            return storage
        return _memory.setdefault(engine_id, pybreaker.CircuitMemoryStorage(pybreaker.STATE_CLOSED))


_local = threading.local()
# Engines whose breaker this process has used (reset_all forgets their failures).
_recorded: set[str] = set()


def breaker(engine_id: str) -> pybreaker.CircuitBreaker:
    """This thread's breaker object for the engine (shared state, see the docstring)."""
    breakers: dict[tuple[str, int, float], pybreaker.CircuitBreaker] = (
        getattr(_local, "breakers", None) or {}
    )
    _local.breakers = breakers
    fail_max = settings.ENGINE_BREAKER_FAILURES
    reset = float(settings.ENGINE_BREAKER_RESET_SECONDS)
    key = (engine_id, fail_max, reset)
    found = breakers.get(key)
    storage = _storage(engine_id)
    if found is None or found._state_storage is not storage:
        found = pybreaker.CircuitBreaker(
            fail_max=fail_max,
            reset_timeout=reset,
            exclude=[_not_counted],
            state_storage=storage,
            # The caller gets the source's own error (with its reason), not a generic one.
            throw_new_error_on_trip=False,
            name=engine_id,
        )
        breakers[key] = found
    return found


def state(engine_id: str) -> BreakerState:
    """The engine's breaker now, and the failure that opened it (if any)."""
    guard = breaker(engine_id)
    name = guard.current_state
    retry_in = 0.0
    opened_at = None
    if name != pybreaker.STATE_CLOSED:
        opened_at = guard._state_storage.opened_at
        if opened_at is not None and opened_at.tzinfo is None:
            opened_at = opened_at.replace(tzinfo=UTC)
    if name == pybreaker.STATE_OPEN and opened_at is not None:
        reopen = opened_at.timestamp() + guard.reset_timeout
        retry_in = max(0.0, reopen - datetime.now(UTC).timestamp())
    return BreakerState(name, retry_in, last_failure(engine_id), opened_at)


def check(engine_id: str) -> None:
    """Raise BreakerOpen if the engine's breaker is open (before taking a rate-limit slot)."""
    current = state(engine_id)
    if current.open:
        raise BreakerOpen(engine_id, current)


def call(engine_id: str, function: Callable[[], T]) -> T:
    """`function()` guarded by the engine's breaker. Raises BreakerOpen when the breaker
    is open (or half-open with its trial call under way elsewhere), the function's own
    error otherwise; an `EngineUnreachable` opens the breaker at once."""
    _recorded.add(engine_id)
    guard = breaker(engine_id)
    check(engine_id)
    with _trial(engine_id, guard), _probe(engine_id, guard):
        return _guarded_call(engine_id, guard, function)


# --- probes: one call at a time to an engine not known to answer --------------------------


@dataclass
class _Gate:
    answered_at: float = -math.inf
    probe: threading.Event | None = None  # set once the probe under way has answered or ended
    probe_started: float = 0.0


_gates: dict[str, _Gate] = {}
_gates_lock = threading.Lock()


def _gate(engine_id: str) -> _Gate:
    return _gates.setdefault(engine_id, _Gate())


def _trusted(gate: _Gate) -> bool:
    return time.monotonic() - gate.answered_at < TRUST_SECONDS


def answered(engine_id: str) -> None:
    """The engine answered (any status): it is trusted, and calls waiting for its probe go."""
    with _gates_lock:
        gate = _gate(engine_id)
        gate.answered_at = time.monotonic()
        if gate.probe is not None:
            gate.probe.set()


def await_probe(engine_id: str, deadline: float) -> None:
    """Return at once unless a probe of the engine is under way; then wait for it to answer
    until ENGINE_PROBE_WAIT_SECONDS after the probe began (and at most until `deadline`, a
    time.monotonic() value), and raise BreakerOpen if it has not. Callers call this before
    queueing for the engine."""
    with _gates_lock:
        gate = _gate(engine_id)
        pending = None if _trusted(gate) else gate.probe
        started = gate.probe_started
    if pending is None:
        return
    # Measured from the probe's start: once it has been silent that long, every call is
    # refused at once (they would otherwise hold MCP's open-world places while waiting).
    now = time.monotonic()
    pending.wait(max(0.0, min(started + settings.ENGINE_PROBE_WAIT_SECONDS, deadline) - now))
    with _gates_lock:
        if _trusted(gate):
            return
    check(engine_id)  # the probe failed: its breaker is open
    waited = time.monotonic() - started
    raise BreakerOpen(
        engine_id,
        BreakerState("half-open", float(settings.ENGINE_PROBE_WAIT_SECONDS), {
            "reason": "no_answer",
            "message": f"a call to it has waited {waited:.0f} s without an answer",
        }),
    )  # fmt: skip


@contextmanager
def _probe(engine_id: str, guard: pybreaker.CircuitBreaker) -> Iterator[None]:
    """Run the call as the engine's probe when it is not known to answer (the docstring);
    wait for the probe under way when there is one."""
    deadline = http.current_deadline() or time.monotonic() + settings.ENGINE_DEADLINE_SECONDS
    while True:
        with _gates_lock:
            gate = _gate(engine_id)
            if _trusted(gate):
                probing = None
                break
            if gate.probe is None:
                probing = gate.probe = threading.Event()
                gate.probe_started = time.monotonic()
                break
        await_probe(engine_id, deadline)  # returns once the engine answered
    try:
        with http.on_answer(lambda: answered(engine_id)):
            yield
    except EngineError as error:
        if counts(error):
            with _gates_lock:
                # No status came back (a time-out, a dropped connection): nothing answered.
                unanswered = not _trusted(gate) and error.http_status is None
                if isinstance(error, EngineTimeout):
                    gate.answered_at = -math.inf  # the next call is a probe
            if probing is not None and unanswered and guard.current_state != "open":
                guard.open()  # a probe nothing answered: open now, not after N of them
        else:
            answered(engine_id)
        raise
    else:
        answered(engine_id)
    finally:
        if probing is not None:
            with _gates_lock:
                if gate.probe is probing:
                    gate.probe = None
            probing.set()


@contextmanager
def _trial(engine_id: str, guard: pybreaker.CircuitBreaker) -> Iterator[None]:
    """The breaker's one trial call when it is due (open past its reset, or half-open);
    BreakerOpen when another call holds the trial."""
    if guard.current_state == pybreaker.STATE_CLOSED:
        yield
        return
    key = f"{NAMESPACE}:{engine_id}:trial"
    ttl = settings.ENGINE_DEADLINE_SECONDS + 5  # outlives any call, so a crash frees it
    claimed = _claim(key, ttl)
    if not claimed:
        raise BreakerOpen(engine_id, BreakerState("half-open", float(ttl), last_failure(engine_id)))
    try:
        yield
    finally:
        _release(key)


_trials: set[str] = set()
_trials_lock = threading.Lock()


def _claim(key: str, ttl: int) -> bool:
    if settings.REDIS_URL:
        try:
            return bool(_redis().set(key, "1", nx=True, ex=ttl))
        except redis.RedisError as exc:  # as pybreaker does without Redis: let it through
            store_unreachable(exc)
            return True
    with _trials_lock:
        if key in _trials:
            return False
        _trials.add(key)
        return True


def _release(key: str) -> None:
    if settings.REDIS_URL:
        try:
            _redis().delete(key)
        except redis.RedisError as exc:
            store_unreachable(exc)
        return
    with _trials_lock:
        _trials.discard(key)


def _guarded_call(engine_id: str, guard: pybreaker.CircuitBreaker, function: Callable[[], T]) -> T:
    try:
        result = guard.call(function)
    except pybreaker.CircuitBreakerError:
        raise BreakerOpen(engine_id, state(engine_id)) from None
    except EngineError as error:
        if counts(error):
            failure_record(engine_id, error)
            if isinstance(error, EngineUnreachable) and guard.current_state != "open":
                guard.open()
        elif error.outcome in ("bad_key", "rate_limited"):
            failure_record(engine_id, error)
        raise
    failure_clear(engine_id)
    return result


class BreakerOpen(EngineUnreachable):
    """The engine's breaker is open: the call was not made."""

    status = "unavailable"

    def __init__(self, engine_id: str, current: BreakerState) -> None:
        failure = current.failure or {}
        why = failure.get("message") or "it failed repeatedly"
        super().__init__(
            f"Not asked: {why.rstrip('.')}; next try in {current.retry_in:.0f} s.",
            reason="circuit_open",
            retry_after=current.retry_in,
        )
        self.cause = failure.get("reason", "")


# --- why it failed ------------------------------------------------------------------------


def _failure_key(engine_id: str) -> str:
    return f"{NAMESPACE}:failure:{engine_id}"


def failure_record(engine_id: str, error: EngineError) -> None:
    """Remember the engine's latest failure (shared like the breaker) for the listing."""
    retry_after = getattr(error, "retry_after", None)
    value = {
        "outcome": error.outcome,
        "reason": error.reason,
        "message": error.message,
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if retry_after:
        value["until"] = datetime.fromtimestamp(time.time() + retry_after, UTC).isoformat(
            timespec="seconds"
        )
    keep = max(FAILURE_MEMORY_SECONDS, int(retry_after or 0) + 1)
    try:
        caches["engines"].set(_failure_key(engine_id), value, timeout=keep)
    except Exception as exc:  # Redis down: the breaker itself still works
        store_unreachable(exc)


def failure_clear(engine_id: str) -> None:
    try:
        if caches["engines"].get(_failure_key(engine_id)) is not None:
            caches["engines"].delete(_failure_key(engine_id))
    except Exception as exc:
        store_unreachable(exc)


def last_failure(engine_id: str) -> dict[str, Any] | None:
    try:
        value = caches["engines"].get(_failure_key(engine_id))
    except Exception as exc:
        store_unreachable(exc)
        return None
    return value if isinstance(value, dict) else None


def reset(engine_id: str) -> None:
    """Close the engine's breaker and forget its failures (tests; after fixing a key)."""
    breaker(engine_id).close()
    try:
        caches["engines"].delete(_failure_key(engine_id))
    except Exception as exc:
        store_unreachable(exc)


def reset_all() -> None:
    """Every breaker closed and every failure forgotten, in this process and in Redis
    (tests start from here)."""
    with _storage_lock:
        _memory.clear()
        _shared.clear()
    with _trials_lock:
        _trials.clear()
    _local.__dict__.clear()
    with _gates_lock:
        _gates.clear()
    if settings.REDIS_URL:
        try:
            client = _redis()
            for key in client.scan_iter(match=f"{NAMESPACE}:*", count=500):
                client.delete(key)
        except redis.RedisError as exc:
            store_unreachable(exc)
    for engine_id in list(_recorded):
        try:
            caches["engines"].delete(_failure_key(engine_id))
        except Exception as exc:
            store_unreachable(exc)
    _recorded.clear()

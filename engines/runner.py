"""Calling engines: one call with cache, breaker, rate limit and retries; many in parallel.

`call_engine` is what runs for one engine (in a Celery worker on the `engines` queue, or in
a thread of this process on the embedded default): availability check, cache, a turn among
the engine's ENGINE_CONCURRENCY calls, the engine's circuit breaker (engines/breaker.py:
an engine that is down answers at once), a rate-limit slot, the call with its connect and
read deadlines cut to the call's own (engines/http.py), retries of retryable failures only
(timeouts, dropped connections, 429, 5xx: exponential backoff with jitter, or the source's
Retry-After) while the deadline allows, and the answer turned into JSON-safe data.
Whatever happens, it returns an `EngineOutcome`; it never raises.

`start_calls` fans several calls out at once, on one bounded pool of ENGINE_POOL_SIZE
threads shared by every search of the process (engine calls never take the threads that
serve requests), and returns a `PendingCalls`; `wait()` gathers them with one deadline, so
a slow or failing engine never holds up the others: what has not arrived by then is
reported as `timeout`, and calls still queued then are cancelled.

A fan-out started while a `Cancellation` is current (`cancellation_scope`: the MCP HTTP
front opens one per request and cancels it when the client disconnects) is abandoned when
it is cancelled: `wait()` returns at once with `cancelled` for what has not arrived, calls
still queued are dropped (Celery tasks revoked), and calls under way on this process's
threads start no further attempt, rate-limit wait or turn wait. A request already sent to
a source is not interrupted; it ends by its own deadline. Likewise a fan-out started
under a `request_deadline` (set by the MCP HTTP front when the request arrives) ends by
it: time the request spent queued for a thread is taken from its engines' deadline.

One module because the single call and the fan-out share the stop conditions (deadline,
cancellation) that every attempt, retry and wait checks; apart, a call could outlive the
fan-out that started it.
"""

from __future__ import annotations

import logging
import random
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from functools import cache as memoize
from typing import Any

from celery import current_task
from celery.exceptions import TimeoutError as CeleryTimeout
from celery.result import AsyncResult
from django.conf import settings

from core.errors import EngineUnavailable
from engines import breaker, cache, http, ratelimit
from engines.base import (
    AUTHOR,
    BIBTEX,
    CATEGORIES,
    CITING,
    DETAILS,
    OUTCOME_OF_STATUS,
    REFERENCES,
    SEARCH,
    UPDATES,
    BaseSearchEngine,
    EngineError,
    EngineTimeout,
    PaperRef,
    SearchRequest,
    TransientEngineError,
    status_of,
)
from engines.dispatch import engine_call_send
from engines.registry import registry
from papers.schemas import PaperRecord, record_as_dict

logger = logging.getLogger(__name__)

# Backoff between retries: BASE * 2^attempt seconds, capped, times a random factor.
BACKOFF_BASE_SECONDS = 0.5
BACKOFF_CAP_SECONDS = 8.0
# A call's own deadline ends this much before the gathering deadline, so it can report
# why it gave up (rate limited, retries exhausted) before the gatherer calls it a timeout.
CALL_MARGIN_SECONDS = 0.5
# How often a waiting fan-out looks whether its request was cancelled: waits cannot be
# woken, so they wait in slices of this length. Each wait on a Celery result subscribes
# to it in Redis anew (about 50 ms here), so those wait in longer slices.
CANCEL_POLL_SECONDS = 0.1
CELERY_POLL_SECONDS = 1.0


class Cancellation:
    """Says that the work for one request is no longer wanted (its client went away).

    Thread-safe; `cancel()` runs the callbacks registered with `on_cancel` (each at most
    once), and a callback registered after the cancellation runs at once.
    """

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks, self._callbacks = self._callbacks, []
        for callback in callbacks:
            try:
                callback()
            except Exception:  # one abandoned fan-out must not keep the others running
                logger.exception("A cancellation callback failed")

    def on_cancel(self, callback: Callable[[], None]) -> None:
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()


# The cancellation of the request being served; worker threads that run tools see it
# (anyio copies the context into them).
current_cancellation: ContextVar[Cancellation | None] = ContextVar(
    "engine_calls_cancellation", default=None
)


@contextmanager
def cancellation_scope(cancellation: Cancellation) -> Iterator[Cancellation]:
    """Fan-outs started inside are abandoned when `cancellation` is cancelled."""
    token = current_cancellation.set(cancellation)
    try:
        yield cancellation
    finally:
        current_cancellation.reset(token)


# The monotonic time by which the engine calls of the request being served must end: set
# when the request arrives (mcp_endpoint/asgi.py), so time it spent waiting for a thread
# comes out of its engines' deadline instead of being added to it.
current_request_deadline: ContextVar[float | None] = ContextVar(
    "engine_calls_request_deadline", default=None
)


@contextmanager
def request_deadline(deadline: float) -> Iterator[None]:
    """Fan-outs started inside end by `deadline` (a time.monotonic() value) at the latest."""
    token = current_request_deadline.set(deadline)
    try:
        yield
    finally:
        current_request_deadline.reset(token)


class CallCancelled(EngineError):
    """The request that wanted this call was cancelled (its client went away)."""

    outcome = "cancelled"


@dataclass
class EngineOutcome:
    """One engine's answer to one call.

    outcome: what happened, and status, the coarser word derived from it: the one
        vocabulary of engines/base.py (STATUS_OF_OUTCOME). Given only a status, the
        outcome is the one it stands for.
    reason: the exact failure (dns, refused, tls, connect_timeout, read_timeout,
        server_error, quota, http_401, circuit_open, deadline, ...); empty when ok
    retry_after: seconds after which asking again may work (Retry-After, the breaker's
        reopening); None when unknown or when asking again will not help
    """

    engine: str
    status: str
    message: str = ""
    result: Any = None
    cached: bool = False
    attempts: int = 0
    elapsed_ms: float = 0.0
    outcome: str = ""
    reason: str = ""
    retry_after: float | None = None
    # When the source gave this answer (UTC ISO; for a cached answer, when it was fetched)
    # and, for a search, the matches it reported in all (None: it did not say).
    answered_at: str = ""
    total: int | None = None
    # For a search, the query as the source received it, when the engine added to it.
    sent: str | None = None

    def __post_init__(self) -> None:
        if self.outcome:
            self.status = status_of(self.outcome)
        else:
            self.outcome = OUTCOME_OF_STATUS.get(self.status, "error")

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def records(self) -> list[PaperRecord]:
        """The result as PaperRecords (for operations that return papers)."""
        return [PaperRecord.build(**values) for values in self.result or []]

    def summary(self) -> dict[str, Any]:
        """The per-engine status shown to clients (without the result itself):
        status, outcome, cached, attempts, elapsed_ms, and when they apply reason,
        retry_after_seconds and message."""
        outcome = self.outcome
        if self.ok and isinstance(self.result, list) and not self.result:
            outcome = "no_results"
        data: dict[str, Any] = {
            "status": self.status,
            "outcome": outcome,
            "cached": self.cached,
            "attempts": self.attempts,
            "elapsed_ms": round(self.elapsed_ms, 1),
        }
        if self.reason:
            data["reason"] = self.reason
        if self.retry_after is not None:
            data["retry_after_seconds"] = round(self.retry_after, 1)
        if self.message:
            data["message"] = self.message
        return data

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


# An argument of a call (not passed to the engine): skip the cache lookup.
FRESH = "fresh"


@dataclass(frozen=True)
class EngineCall:
    """One operation on one engine, with JSON-safe arguments (see `_invoke`)."""

    engine: str
    operation: str
    arguments: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def search(cls, engine: str, request: SearchRequest, *, fresh: bool = False) -> EngineCall:
        """`fresh`: ask the engine even when the cache has an answer (a saved search wants
        what is new since its last run); the answer is still cached for the others."""
        arguments: dict[str, Any] = {"request": request.as_dict()}
        if fresh:
            arguments[FRESH] = True
        return cls(engine, SEARCH, arguments)

    @classmethod
    def author(cls, engine: str, author: str, request: SearchRequest) -> EngineCall:
        return cls(engine, AUTHOR, {"author": author, "request": request.as_dict()})

    @classmethod
    def details(cls, engine: str, paper_id: str) -> EngineCall:
        return cls(engine, DETAILS, {"paper_id": paper_id})

    @classmethod
    def citing(cls, engine: str, paper: PaperRef, max_results: int) -> EngineCall:
        return cls(engine, CITING, {"paper": paper.as_dict(), "max_results": max_results})

    @classmethod
    def references(cls, engine: str, paper: PaperRef, max_results: int) -> EngineCall:
        return cls(engine, REFERENCES, {"paper": paper.as_dict(), "max_results": max_results})

    @classmethod
    def categories(cls, engine: str) -> EngineCall:
        return cls(engine, CATEGORIES, {})

    @classmethod
    def bibtex(cls, engine: str, paper: PaperRef) -> EngineCall:
        return cls(engine, BIBTEX, {"paper": paper.as_dict()})

    @classmethod
    def update_notices(cls, engine: str, dois: list[str]) -> EngineCall:
        return cls(engine, UPDATES, {"dois": list(dois)})


def _invoke(engine: BaseSearchEngine, operation: str, arguments: dict[str, Any]) -> Any:
    """Run the operation and make its answer JSON-safe: a search's as {"records", "total"}
    (the matches the source reported, when it says: a SearchResults), the others as is."""
    if operation in SEARCHES:
        request = SearchRequest.from_dict(arguments["request"])
        if operation == SEARCH:
            found = engine.search(request)
        else:
            found = engine.search_by_author(arguments["author"], request)
        total = getattr(found, "total", None)
        return {
            "records": [record_as_dict(record) for record in found],
            "total": int(total) if total is not None else None,
            "sent": getattr(found, "sent", None),
        }
    if operation == DETAILS:
        records = [engine.get_paper_details(arguments["paper_id"])]
    elif operation == CITING:
        paper = PaperRef.from_dict(arguments["paper"])
        records = engine.get_citing_papers(paper, int(arguments["max_results"]))
    elif operation == REFERENCES:
        paper = PaperRef.from_dict(arguments["paper"])
        records = engine.get_references(paper, int(arguments["max_results"]))
    elif operation == CATEGORIES:
        return [asdict(category) for category in engine.categories()]
    elif operation == BIBTEX:
        return engine.get_bibtex(PaperRef.from_dict(arguments["paper"]))
    elif operation == UPDATES:
        return engine.get_update_notices([str(doi) for doi in arguments["dois"]])
    else:
        raise EngineError(f"Unknown operation {operation!r}.")
    return [record_as_dict(record) for record in records]


UNCACHED_OPERATIONS = frozenset({UPDATES})
# Operations answering a query: their answers carry the source's total and what it was sent.
SEARCHES = frozenset({SEARCH, AUTHOR})
# Marks a cache entry holding an answer with its time (older entries hold the answer alone).
_CACHED = "engine_answer"


def _answered(operation: str, answer: Any) -> dict[str, Any]:
    """An operation's answer as EngineOutcome fields: the result, the time it came and, for a
    search, the source's total."""
    values: dict[str, Any] = {"answered_at": datetime.now(UTC).isoformat(timespec="seconds")}
    if operation in SEARCHES:
        values.update(result=answer["records"], total=answer["total"], sent=answer.get("sent"))
    else:
        values["result"] = answer
    return values


def _from_cache(entry: Any) -> dict[str, Any]:
    if isinstance(entry, dict) and entry.get(_CACHED) is True:
        return {key: value for key, value in entry.items() if key != _CACHED}
    return {"result": entry}  # stored before answers kept their time


def _backoff(attempt: int, error: TransientEngineError) -> float:
    if error.retry_after is not None:
        return max(0.0, error.retry_after)
    return min(BACKOFF_CAP_SECONDS, BACKOFF_BASE_SECONDS * 2**attempt) * random.uniform(0.5, 1.5)


def precheck(engine_id: str, operation: str) -> EngineOutcome | None:
    """The outcome of a call that cannot be made here (unknown or disabled engine, missing
    key, unsupported operation), or None. The caller's process decides this before
    dispatching, so its own ENGINES_ENABLED and keys rule."""
    try:
        engine = registry.get(engine_id)
    except EngineUnavailable as exc:
        return EngineOutcome(engine_id, "unavailable", exc.message)
    if operation not in engine.operations:
        return EngineOutcome(
            engine_id, "unsupported", f"{engine.name} does not support {operation}."
        )
    reason = engine.unavailable_reason()
    if reason:
        return EngineOutcome(engine_id, "unavailable", reason)
    return None


def call_engine(
    engine_id: str,
    operation: str,
    arguments: dict[str, Any],
    *,
    timeout_seconds: float,
    stop: threading.Event | None = None,
) -> EngineOutcome:
    """One engine operation with cache, rate limit and retries; never raises.

    Once `stop` is set (the fan-out was abandoned) it starts nothing more: no turn wait,
    attempt, rate-limit wait or backoff, and answers `cancelled`."""
    stop = stop or threading.Event()
    started = time.monotonic()
    deadline = started + timeout_seconds

    def outcome(status: str, message: str = "", **values: Any) -> EngineOutcome:
        elapsed = (time.monotonic() - started) * 1000
        # serve --verbose: each engine call with its timing (arguments stay out: they
        # may hold a user's query; API keys never reach this line).
        logger.debug(
            "engine %s %s: %s%s in %.0f ms (attempts %s)", engine_id, operation, status,
            " (cache hit)" if values.get("cached") else "", elapsed, values.get("attempts", 0),
        )  # fmt: skip
        return EngineOutcome(engine_id, status, message, elapsed_ms=elapsed, **values)

    def failed(exc: EngineError, attempts: int) -> EngineOutcome:
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is None and isinstance(exc, TransientEngineError):
            reopening = breaker.state(engine_id)
            retry_after = reopening.retry_in if reopening.open else None
        return outcome(
            exc.status,
            exc.message,
            attempts=attempts,
            outcome=exc.outcome,
            reason=exc.reason,
            retry_after=retry_after,
        )

    refusal = precheck(engine_id, operation)
    if refusal is not None:
        return refusal
    engine = registry.get(engine_id)
    # A retraction check asks what the source says now: never answered from the cache;
    # a `fresh` call is not answered from it either, and stores its answer as any other.
    fresh = bool(arguments.get(FRESH))
    arguments = {key: value for key, value in arguments.items() if key != FRESH}
    cacheable = operation not in UNCACHED_OPERATIONS
    cached = (
        cache.lookup(engine, operation, arguments) if cacheable and not fresh else cache.MISSING
    )
    if cached is not cache.MISSING:
        return outcome("ok", cached=True, **_from_cache(cached))

    def attempts() -> EngineOutcome:
        attempt = 0
        while True:
            attempt += 1
            try:
                _check_stop(stop)
                breaker.check(engine.id)
                waited = ratelimit.acquire(engine, deadline=deadline)
                _check_stop(stop)
                if waited >= 0.05:
                    logger.debug(
                        "engine %s %s: waited %.2f s for its rate limit", engine_id, operation,
                        waited,
                    )  # fmt: skip
                answer = breaker.call(engine.id, lambda: _invoke(engine, operation, arguments))
            except TransientEngineError as exc:
                if exc.retry_after and not isinstance(exc, breaker.BreakerOpen):
                    ratelimit.pause(engine.id, exc.retry_after)
                delay = _backoff(attempt - 1, exc)
                retries_left = exc.retryable and attempt <= settings.ENGINE_MAX_RETRIES
                if not retries_left or time.monotonic() + delay >= deadline:
                    return failed(exc, attempt)
                logger.info(
                    "%s %s failed (%s), retry %d in %.2fs", engine_id, operation, exc.message,
                    attempt, delay,
                )  # fmt: skip
                if stop.wait(delay):
                    return failed(CallCancelled(CANCELLED_MESSAGE, reason="client_gone"), attempt)
                continue
            except EngineError as exc:
                return failed(exc, attempt)
            except Exception as exc:  # a bug in an engine (a plugin): report, never crash
                logger.exception("Engine %s failed on %s", engine_id, operation)
                message = f"{type(exc).__name__} in {engine.name}: {exc}"
                return outcome("error", message, attempts=attempt, reason="engine_bug")
            answered = _answered(operation, answer)
            if cacheable:
                cache.store(engine, operation, arguments, {_CACHED: True, **answered})
            return outcome("ok", attempts=attempt, **answered)

    with http.call_deadline(deadline):
        try:
            breaker.await_probe(engine.id, deadline)  # not queued behind a hanging probe
        except EngineError as exc:
            return failed(exc, 0)
        try:
            with _engine_turn(engine, deadline, stop):
                return attempts()
        except (EngineTimeout, CallCancelled) as exc:  # no turn came in time, or none wanted
            return failed(exc, 0)


CANCELLED_MESSAGE = "The client went away; the call was abandoned."


def _check_stop(stop: threading.Event) -> None:
    if stop.is_set():
        raise CallCancelled(CANCELLED_MESSAGE, reason="client_gone")


_turns_lock = threading.Lock()
_turns: dict[tuple[str, int], threading.BoundedSemaphore] = {}


@contextmanager
def _engine_turn(
    engine: BaseSearchEngine, deadline: float, stop: threading.Event
) -> Iterator[None]:
    """One of the engine's ENGINE_CONCURRENCY places in this process, waited for until
    `deadline`; EngineTimeout (reason `queued`) if none frees up by then, CallCancelled
    as soon as `stop` is set."""
    size = settings.ENGINE_CONCURRENCY
    with _turns_lock:
        places = _turns.setdefault((engine.id, size), threading.BoundedSemaphore(size))
    while not places.acquire(
        timeout=min(CANCEL_POLL_SECONDS, max(0.0, deadline - time.monotonic()))
    ):
        _check_stop(stop)
        if time.monotonic() >= deadline:
            raise EngineTimeout(
                f"{engine.name} already had {size} calls under way here; none finished in time.",
                reason="queued",
            )
    if stop.is_set():
        places.release()
        _check_stop(stop)
    try:
        yield
    finally:
        places.release()


# --- fan-out -----------------------------------------------------------------------------


class PendingCalls:
    """Calls under way; `wait()` gathers them by one deadline (see the module docstring
    for what a cancellation does to them)."""

    def __init__(self, calls: list[EngineCall], deadline_seconds: float) -> None:
        self.calls = calls
        self.started = time.monotonic()
        answer_by = current_request_deadline.get()
        if answer_by is not None:
            deadline_seconds = max(0.0, min(deadline_seconds, answer_by - self.started))
        self.deadline = self.started + deadline_seconds
        self._stop = threading.Event()
        timeout_seconds = max(0.1, deadline_seconds - CALL_MARGIN_SECONDS)
        cancellation = current_cancellation.get()
        if cancellation is not None and cancellation.cancelled:
            self._stop.set()  # nobody is waiting for these: start none of them
        no_time = deadline_seconds <= CALL_MARGIN_SECONDS
        refusals = [
            precheck(call.engine, call.operation)
            or _breaker_refusal(call.engine)
            or (_cancelled(call.engine) if self._stop.is_set() else None)
            or (_no_time_left(call.engine) if no_time else None)
            for call in calls
        ]
        runnable = [call for call, refusal in zip(calls, refusals, strict=True) if not refusal]
        launched: list[Future[EngineOutcome] | AsyncResult] = []
        in_process = _use_threads()
        for call in runnable:
            sent = None if in_process else _send(call, timeout_seconds, deadline_seconds)
            if sent is None:
                in_process = True  # no queue (or it is unreachable): run the rest here
                sent = _pool().submit(
                    call_engine, call.engine, call.operation, call.arguments,
                    timeout_seconds=timeout_seconds, stop=self._stop,
                )  # fmt: skip
            launched.append(sent)

        pending = iter(launched)
        self._futures: list[Future[EngineOutcome] | AsyncResult | EngineOutcome] = [
            refusal or next(pending) for refusal in refusals
        ]
        if cancellation is not None:
            cancellation.on_cancel(self.abandon)

    @property
    def abandoned(self) -> bool:
        return self._stop.is_set()

    def abandon(self) -> None:
        """Nobody wants these answers any more: drop the queued calls and let the running
        ones start nothing further (a request already sent ends by its own deadline)."""
        self._stop.set()
        for future in self._futures:
            if isinstance(future, Future):
                future.cancel()
            elif isinstance(future, AsyncResult):
                future.revoke()

    def wait(self) -> list[EngineOutcome]:
        """Each call's outcome, in call order; `timeout` for those not back in time,
        `cancelled` for those not back when the fan-out was abandoned."""
        outcomes = [
            _gather(call, future, self)
            for call, future in zip(self.calls, self._futures, strict=True)
        ]
        for future in self._futures:
            # Calls still queued are dropped; running ones end by their own deadline.
            if isinstance(future, Future):
                future.cancel()
        return outcomes


def _no_time_left(engine_id: str) -> EngineOutcome:
    return EngineOutcome(
        engine_id,
        "timeout",
        "Not asked: the request waited its whole engine deadline "
        f"({settings.ENGINE_DEADLINE_SECONDS} s) for a place among the calls under way.",
        reason="queued",
    )


def _cancelled(engine_id: str) -> EngineOutcome:
    return EngineOutcome(engine_id, "cancelled", CANCELLED_MESSAGE, reason="client_gone")


@memoize
def _pool() -> ThreadPoolExecutor:
    """The threads that call engines in this process, shared by every search."""
    return ThreadPoolExecutor(max_workers=settings.ENGINE_POOL_SIZE, thread_name_prefix="engine")


def _breaker_refusal(engine_id: str) -> EngineOutcome | None:
    """The outcome of a call to an engine whose breaker is open: answered here, at once,
    without sending it anywhere."""
    try:
        breaker.check(engine_id)
    except breaker.BreakerOpen as exc:
        return EngineOutcome(
            engine_id,
            exc.status,
            exc.message,
            outcome=exc.outcome,
            reason=exc.reason,
            retry_after=exc.retry_after,
        )
    return None


def _gather(
    call: EngineCall,
    future: Future[EngineOutcome] | AsyncResult | EngineOutcome,
    pending: PendingCalls,
) -> EngineOutcome:
    """The call's outcome, waiting for it until the fan-out's deadline in short slices,
    so an abandoned fan-out stops waiting at once."""
    if isinstance(future, EngineOutcome):  # refused before dispatch
        return future
    try:
        while True:
            if pending.abandoned:
                return _cancelled(call.engine)
            remaining = pending.deadline - time.monotonic()
            poll = CANCEL_POLL_SECONDS if isinstance(future, Future) else CELERY_POLL_SECONDS
            # Never 0: Celery reads a timeout of 0 as "no timeout".
            step = max(0.001, min(remaining, poll))
            try:
                if isinstance(future, Future):
                    return future.result(timeout=step)
                data = future.get(timeout=step, propagate=True, disable_sync_subtasks=False)
                return EngineOutcome(**data)
            except (FutureTimeout, CeleryTimeout):
                if remaining <= poll:
                    raise
    except (FutureTimeout, CeleryTimeout):
        if isinstance(future, AsyncResult):
            future.revoke()
        waited = f"no answer within the search deadline ({settings.ENGINE_DEADLINE_SECONDS} s)"
        elapsed = (time.monotonic() - pending.started) * 1000
        return EngineOutcome(call.engine, "timeout", waited, elapsed_ms=elapsed, reason="deadline")
    except CancelledError:  # dropped by abandon() before it started
        return _cancelled(call.engine)
    except Exception as exc:  # the worker died, the broker dropped the task, ...
        logger.exception("Engine call %s/%s was lost", call.engine, call.operation)
        return EngineOutcome(
            call.engine,
            "error",
            f"The engine call failed: {type(exc).__name__}",
            reason="call_lost",
        )


def _send(call: EngineCall, timeout_seconds: float, expires: float) -> AsyncResult | None:
    """The call as an `engines` task, or None when the broker cannot take it (Redis down
    or restarting): the caller then runs it itself rather than failing the search."""
    try:
        return engine_call_send(
            engine_id=call.engine, operation=call.operation, arguments=call.arguments,
            timeout_seconds=timeout_seconds, expires=expires,
        )  # fmt: skip
    except Exception as exc:  # kombu's OperationalError, redis' ConnectionError, ...
        logger.warning(
            "The task queue is unreachable (%s); engine calls run in this process meanwhile",
            type(exc).__name__,
        )
        return None


def _use_threads() -> bool:
    """Threads in this process on the embedded default, and inside a worker (waiting on
    other tasks from a task could starve the pool)."""
    in_worker = bool(current_task) and current_task.request.id is not None
    return bool(settings.CELERY_TASK_ALWAYS_EAGER) or in_worker


def start_calls(calls: list[EngineCall], *, deadline_seconds: float | None = None) -> PendingCalls:
    """Start every call now (in parallel); gather with `.wait()`."""
    if deadline_seconds is None:
        deadline_seconds = settings.ENGINE_DEADLINE_SECONDS
    return PendingCalls(calls, float(deadline_seconds))


def run_calls(
    calls: list[EngineCall], *, deadline_seconds: float | None = None
) -> list[EngineOutcome]:
    return start_calls(calls, deadline_seconds=deadline_seconds).wait()

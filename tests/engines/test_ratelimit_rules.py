"""engines/ratelimit.py rule by rule: which limit applies, a call's turn, Retry-After pauses
shared through the engines cache, what list_search_engines shows, and counting on in
process memory while the shared store is down. On the embedded default the window is in
memory; with REDIS_URL (make test-pg) the same tests run against Redis."""

from __future__ import annotations

import logging
import time
import uuid
from typing import Any

import pytest

from engines import cache as engine_cache
from engines import ratelimit
from engines.base import BaseSearchEngine, RateLimited


def make_engine(limit: str = "2/minute") -> BaseSearchEngine:
    class Limited(BaseSearchEngine):
        id = f"limited_{uuid.uuid4().hex[:8]}"  # a window of its own in a shared Redis
        name = "Limited Source"
        description = "test"
        rate_limit = limit

    return Limited()


@pytest.fixture
def engine(settings: Any) -> Any:
    settings.ENGINE_RATE_LIMITS = {}
    limited = make_engine()
    yield limited
    ratelimit.reset(limited)


def now_deadline() -> float:
    """A deadline that leaves no time to wait."""
    return time.monotonic()


def test_the_settings_override_replaces_the_engine_s_own_limit(settings: Any, engine) -> None:
    assert str(ratelimit.rate_for(engine)) == "2 per 1 minute"
    settings.ENGINE_RATE_LIMITS = {engine.id: "5/second", "other": "1/hour"}
    assert str(ratelimit.rate_for(engine)) == "5 per 1 second"
    settings.ENGINE_RATE_LIMITS = {engine.id: ""}  # empty: the engine's own again
    assert str(ratelimit.rate_for(engine)) == "2 per 1 minute"


def test_calls_within_the_limit_go_at_once_and_the_next_waits_past_a_near_deadline(
    engine,
) -> None:
    assert ratelimit.acquire(engine, deadline=now_deadline() + 5) < 1.0
    assert ratelimit.acquire(engine, deadline=now_deadline() + 5) < 1.0
    with pytest.raises(RateLimited) as refused:
        ratelimit.acquire(engine, deadline=now_deadline() + 0.2)
    assert refused.value.message == (
        "Limited Source is rate limited (2 per 1 minute); no free slot before the deadline."
    )
    # The refused call took no slot: the window still holds exactly the two calls.
    assert ratelimit.state(engine).remaining == 0


def test_a_call_waits_for_the_window_to_free_a_slot(settings: Any, engine) -> None:
    settings.ENGINE_RATE_LIMITS = {engine.id: "1/second"}
    ratelimit.acquire(engine, deadline=now_deadline() + 5)
    waited = ratelimit.acquire(engine, deadline=now_deadline() + 5)
    assert waited > 0.3  # it waited for its turn instead of failing or going over the limit


def test_state_shows_the_limit_the_calls_left_and_the_window_s_reset(engine) -> None:
    fresh = ratelimit.state(engine)
    assert (fresh.limit, fresh.remaining, fresh.paused_for_seconds) == ("2 per 1 minute", 2, 0)
    ratelimit.acquire(engine, deadline=now_deadline() + 5)
    used = ratelimit.state(engine)
    assert used.remaining == 1
    assert 0 < used.resets_in_seconds <= 60


def test_state_as_dict_rounds_to_hundredths() -> None:
    shown = ratelimit.RateState("1 per 1 second", 0, 0.123456, 2.999).as_dict()
    assert shown == {
        "limit": "1 per 1 second",
        "remaining": 0,
        "resets_in_seconds": 0.12,
        "paused_for_seconds": 3.0,
    }


def test_a_pause_holds_every_call_even_with_slots_left(engine) -> None:
    ratelimit.pause(engine.id, 30)
    assert 28 < ratelimit.paused_for(engine.id) <= 30
    assert ratelimit.state(engine).paused_for_seconds > 28
    with pytest.raises(RateLimited):
        ratelimit.acquire(engine, deadline=now_deadline() + 0.2)
    assert ratelimit.state(engine).remaining == 2  # the paused call used no slot


def test_a_shorter_pause_never_cuts_a_longer_one(engine) -> None:
    ratelimit.pause(engine.id, 30)
    ratelimit.pause(engine.id, 2)
    assert ratelimit.paused_for(engine.id) > 28
    ratelimit.pause(engine.id, 45)
    assert ratelimit.paused_for(engine.id) > 43


def test_a_short_pause_ends_and_the_call_goes_through(engine) -> None:
    ratelimit.pause(engine.id, 0.4)
    waited = ratelimit.acquire(engine, deadline=now_deadline() + 5)
    assert waited > 0.2
    assert ratelimit.paused_for(engine.id) == 0.0


def test_reset_forgets_the_counted_calls_and_the_pause(engine) -> None:
    ratelimit.acquire(engine, deadline=now_deadline() + 5)
    ratelimit.pause(engine.id, 30)
    ratelimit.reset(engine)
    assert ratelimit.state(engine).remaining == 2
    assert ratelimit.paused_for(engine.id) == 0.0


class DeadStore:
    """A limiter or cache whose store (Redis) cannot be reached."""

    def __getattr__(self, name: str) -> Any:
        def fail(*args: Any, **kwargs: Any) -> Any:
            raise ConnectionError("Redis is down")

        return fail


def test_with_the_shared_store_down_calls_are_counted_in_process_memory(
    engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="engines.cache")
    with monkeypatch.context() as patch:
        patch.setattr(ratelimit, "_limiter", DeadStore)
        patch.setitem(engine_cache._warned, "at", -1e9)  # the warning is due

        ratelimit.acquire(engine, deadline=now_deadline() + 5)
        ratelimit.acquire(engine, deadline=now_deadline() + 5)
        with pytest.raises(RateLimited):
            ratelimit.acquire(engine, deadline=now_deadline() + 0.2)
        assert ratelimit.state(engine).remaining == 0

    assert "shared store (cache, rate limits) is unreachable" in caplog.text
    ratelimit._local_limiter().clear(ratelimit.rate_for(engine), ratelimit.NAMESPACE, engine.id)


def test_with_the_cache_down_no_pause_is_known_and_pausing_does_not_fail(
    engine, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="engines.cache")
    with monkeypatch.context() as patch:
        patch.setattr(ratelimit, "caches", {"engines": DeadStore()})
        patch.setitem(engine_cache._warned, "at", -1e9)  # the warning is due
        ratelimit.pause(engine.id, 30)  # no exception: the retry's own backoff still waits
        assert "(ConnectionError: Redis is down)" in caplog.text
        assert ratelimit.paused_for(engine.id) == 0.0
    assert ratelimit.paused_for(engine.id) == 0.0  # nothing was stored either

"""Calling engines: plugin discovery, cache, retries, Retry-After, rate-limit queueing and
the fan-out deadline, with plugin engines talking HTTP to a local server."""

from __future__ import annotations

import logging
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from engines import cache, runner
from engines.base import SearchRequest
from engines.registry import registry
from engines.runner import EngineCall, call_engine, run_calls
from engines.selectors import engines_list, engines_markdown
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply, Request

PAPER = {"title": "Attention Is All You Need", "authors": ["Ashish Vaswani"], "year": 2017}


@pytest.fixture
def plugins(settings: Any, tmp_path: Path) -> Iterator[Path]:
    """A private engines/ folder; every engine enabled; calls in this process's threads
    (a Celery worker could not see this folder)."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ENGINES_DIR = tmp_path / "engines"
    settings.ENGINES_ENABLED = []
    settings.ENGINE_MAX_RETRIES = 3
    registry.refresh()
    yield settings.ENGINES_DIR
    registry.refresh()


@pytest.fixture
def fast_backoff(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(runner, "BACKOFF_BASE_SECONDS", 0.01)


def unique(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex[:8]}"


def search(engine_id: str, query: str = "attention") -> EngineCall:
    return EngineCall.search(engine_id, SearchRequest(query=query, max_results=5))


def run(call: EngineCall, timeout: float = 10.0) -> runner.EngineOutcome:
    return call_engine(call.engine, call.operation, call.arguments, timeout_seconds=timeout)


def sequence(*replies: Reply) -> Callable[[Request], Reply]:
    """Answer with each reply in turn, then keep repeating the last."""
    remaining = list(replies)

    def answer(_: Request) -> Reply:
        return remaining.pop(0) if len(remaining) > 1 else remaining[0]

    return answer


def test_plugins_are_discovered_and_broken_ones_reported(
    plugins: Path, replay_server: ReplayServer
) -> None:
    engine_id = unique("good")
    write_plugin(plugins, engine_id, replay_server.url, name="Good Engine")
    (plugins / "broken.py").write_text("def oops(:\n")
    (plugins / "empty.py").write_text("VALUE = 1\n")
    registry.refresh()
    listing = engines_list()
    ids = [engine["id"] for engine in listing["engines"]]
    assert ids[0] == "local" and engine_id in ids
    errors = {error["source"]: error["message"] for error in listing["load_errors"]}
    assert "SyntaxError" in errors["broken.py"]
    assert "no BaseSearchEngine" in errors["empty.py"]
    entry = next(engine for engine in listing["engines"] if engine["id"] == engine_id)
    assert entry["is_available"] is True and "search" in entry["operations"]
    assert entry["rate_limit"]["limit"] == "1000 per 1 second"
    assert "Good Engine" in engines_markdown() and "broken.py" in engines_markdown()


def test_a_plugin_added_later_is_found_when_asked_for(
    plugins: Path, replay_server: ReplayServer
) -> None:
    registry.engines()  # loaded before the plugin exists
    engine_id = unique("late")
    write_plugin(plugins, engine_id, replay_server.url)
    replay_server.add("/search", Reply(200, [PAPER]))
    outcome = run(search(engine_id))
    assert outcome.status == "ok" and outcome.records()[0].title == PAPER["title"]
    assert replay_server.requests[0].query["q"] == ["attention"]


def test_answers_are_cached_per_engine_and_arguments(
    plugins: Path, replay_server: ReplayServer
) -> None:
    engine_id = unique("cached")
    write_plugin(plugins, engine_id, replay_server.url, cache_ttl=600)
    replay_server.add("/search", Reply(200, [PAPER]))
    first, second = run(search(engine_id)), run(search(engine_id))
    other = run(search(engine_id, "transformers"))
    assert first.ok and not first.cached and second.ok and second.cached
    assert second.result == first.result and other.ok and not other.cached
    assert len(replay_server.requests) == 2
    assert cache.stats(engine_id) == {"hits": 1, "misses": 2, "hit_rate": 0.333}


def test_verbose_logs_say_each_engine_call_its_time_and_cache_hits(
    plugins: Path, replay_server: ReplayServer, caplog: pytest.LogCaptureFixture
) -> None:
    engine_id = unique("verbose")
    write_plugin(plugins, engine_id, replay_server.url, cache_ttl=600)
    replay_server.add("/search", Reply(200, [PAPER]))
    with caplog.at_level(logging.DEBUG, logger="engines.runner"):
        run(search(engine_id, "a private question"))
        run(search(engine_id, "a private question"))
    lines = [r.getMessage() for r in caplog.records if r.getMessage().startswith("engine ")]
    assert len(lines) == 2
    assert lines[0].startswith(f"engine {engine_id} search: ok in ") and "cache hit" not in lines[0]
    assert "(cache hit)" in lines[1] and " ms " in lines[1]
    assert not any("private" in line for line in lines)  # the query is the user's


def test_failures_are_not_cached(plugins: Path, replay_server: ReplayServer) -> None:
    engine_id = unique("nocache")
    write_plugin(plugins, engine_id, replay_server.url, cache_ttl=600)
    replay_server.add("/search", sequence(Reply(400, {"error": "bad"}), Reply(200, [PAPER])))
    assert run(search(engine_id)).status == "error"
    again = run(search(engine_id))
    assert again.ok and not again.cached


def test_transient_failures_are_retried_with_backoff(
    plugins: Path, replay_server: ReplayServer, fast_backoff: None
) -> None:
    engine_id = unique("flaky")
    write_plugin(plugins, engine_id, replay_server.url)
    replay_server.add("/search", sequence(Reply(503), Reply(502), Reply(200, [PAPER])))
    outcome = run(search(engine_id))
    assert outcome.ok and outcome.attempts == 3 and len(replay_server.requests) == 3


def test_client_errors_are_not_retried(plugins: Path, replay_server: ReplayServer) -> None:
    engine_id = unique("strict")
    write_plugin(plugins, engine_id, replay_server.url)
    replay_server.add("/search", Reply(400, {"error": "bad query"}))
    outcome = run(search(engine_id))
    assert outcome.status == "error" and outcome.attempts == 1
    assert "bad request 400" in outcome.message and len(replay_server.requests) == 1


def test_retries_stop_after_the_configured_number(
    plugins: Path, replay_server: ReplayServer, fast_backoff: None, settings: Any
) -> None:
    settings.ENGINE_MAX_RETRIES = 2
    engine_id = unique("down")
    write_plugin(plugins, engine_id, replay_server.url)
    replay_server.add("/search", Reply(500))
    outcome = run(search(engine_id))
    # A source answering 500 is unreachable: `unavailable`, as when its breaker opens.
    assert (outcome.status, outcome.outcome) == ("unavailable", "unreachable")
    assert outcome.attempts == 3
    assert len(replay_server.requests) == 3


def test_retry_after_is_respected_by_every_caller(
    plugins: Path, replay_server: ReplayServer
) -> None:
    engine_id = unique("throttled")
    write_plugin(plugins, engine_id, replay_server.url)
    replay_server.add(
        "/search", sequence(Reply(429, {}, {"Retry-After": "2"}), Reply(200, [PAPER]))
    )
    with ThreadPoolExecutor(2) as pool:
        first_call = pool.submit(run, search(engine_id, "first"))
        time.sleep(0.3)  # the 429 has arrived: the engine is paused
        other_call = pool.submit(run, search(engine_id, "other"))
        first, other = first_call.result(), other_call.result()
    assert first.ok and first.attempts == 2 and other.ok and other.attempts == 1
    throttled, *later = replay_server.requests
    # Nobody, not even the other caller, asked again before Retry-After had passed.
    assert len(later) == 2 and all(request.at - throttled.at >= 1.95 for request in later)


def test_rate_limit_turns_a_burst_into_a_queue(plugins: Path, replay_server: ReplayServer) -> None:
    engine_id = unique("limited")
    write_plugin(plugins, engine_id, replay_server.url, rate_limit="4/second")
    replay_server.add("/search", Reply(200, [PAPER]))
    outcomes = [run(search(engine_id, f"q{i}")) for i in range(10)]
    assert all(outcome.ok for outcome in outcomes)
    sent = [float(request.headers["x-sent-at"]) for request in replay_server.requests]
    assert len(sent) == 10
    # Any 5 consecutive calls span the 1-second window (less a few ms: the send time is
    # read just after the limiter granted the slot).
    spans = [sent[index + 4] - sent[index] for index in range(len(sent) - 4)]
    assert min(spans) >= 0.95, spans


def test_a_rate_limited_call_gives_up_at_its_deadline(
    plugins: Path, replay_server: ReplayServer
) -> None:
    engine_id = unique("slowlimit")
    write_plugin(plugins, engine_id, replay_server.url, rate_limit="1/10 seconds")
    replay_server.add("/search", Reply(200, [PAPER]))
    assert run(search(engine_id, "one")).ok
    started = time.monotonic()
    outcome = run(search(engine_id, "two"), timeout=1.0)
    assert outcome.status == "rate_limited" and time.monotonic() - started < 2.0
    assert len(replay_server.requests) == 1


def test_timeouts_and_unsupported_operations_have_their_own_status(
    plugins: Path, replay_server: ReplayServer, settings: Any
) -> None:
    settings.ENGINE_MAX_RETRIES = 0
    engine_id = unique("sleepy")
    write_plugin(plugins, engine_id, replay_server.url, timeout=0.3)
    replay_server.add("/search", Reply(200, [PAPER], delay=2.0))
    assert run(search(engine_id)).status == "timeout"
    categories = run(EngineCall.categories(engine_id))
    assert categories.status == "unsupported" and "categories" in categories.message
    unknown = run(search("no_such_engine"))
    assert unknown.status == "unavailable" and "no_such_engine" in unknown.message


def test_fan_out_returns_by_the_deadline_with_partial_results(
    plugins: Path, replay_server: ReplayServer, settings: Any
) -> None:
    settings.ENGINE_MAX_RETRIES = 0
    fast, slow, failing = unique("fast"), unique("slow"), unique("failing")
    for engine_id in (fast, slow, failing):
        write_plugin(plugins, engine_id, f"{replay_server.url}/{engine_id}", timeout=30)
    replay_server.add(f"/{fast}/search", Reply(200, [PAPER]))
    replay_server.add(f"/{slow}/search", Reply(200, [PAPER], delay=6.0))
    replay_server.add(f"/{failing}/search", Reply(400, {"error": "nope"}))
    started = time.monotonic()
    outcomes = run_calls([search(fast), search(slow), search(failing)], deadline_seconds=1.5)
    elapsed = time.monotonic() - started
    statuses = {outcome.engine: outcome.status for outcome in outcomes}
    assert statuses == {fast: "ok", slow: "timeout", failing: "error"}
    assert elapsed < 3.0
    assert outcomes[0].records()[0].title == PAPER["title"]

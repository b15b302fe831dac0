"""Issue 20: every engine failure bounded and classified, the circuit breaker, and hostile
identifiers that never choose an engine's URL path.

The built-in engines talk to a local server (tests/engines/replay.py) that times out,
answers 401/403/429/500 or slowly; a closed port refuses connections, a `.invalid` host
fails name resolution (RFC 6761 guarantees it never resolves) and HTTPS to a plain-HTTP
server fails the TLS handshake. Nothing leaves the machine.
"""

from __future__ import annotations

import socket
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from engines import breaker, http, probe, ratelimit
from engines.base import (
    DETAILS,
    BadKey,
    EngineError,
    EngineTimeout,
    EngineUnreachable,
    PaperRef,
    RateLimited,
    SearchRequest,
    TransientEngineError,
)
from engines.crossref import CrossrefEngine
from engines.openalex import OpenAlexEngine
from engines.registry import registry
from engines.runner import EngineCall, call_engine, run_calls
from engines.selectors import engines_list
from engines.semantic_scholar import SemanticScholarEngine
from tests.engines.replay import ReplayServer, Reply

KEYLESS = ("arxiv", "crossref", "openalex", "semantic_scholar")
EMPTY_WORKS = {"message-type": "work-list", "message": {"items": []}}
HOSTILE_DOIS = [
    "10.1000/../../../../admin?x=1#frag",
    "10.1000/x/../../admin",
    "10.1000/%2e%2e/%2E%2E/admin",
    "10.1000/%252e%252e/admin",
    "10.1000/./admin",
    "10.1000/a\\..\\admin",
]


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture
def engines_at(settings: Any, replay_server: ReplayServer) -> Iterator[ReplayServer]:
    """The keyless built-in engines pointed at the local server, no cache, calls in this
    process, a fast breaker."""
    settings.ENGINES_ENABLED = list(KEYLESS)
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ENGINE_CACHE_TTLS = dict.fromkeys(KEYLESS, 0)
    settings.ENGINE_RATE_LIMITS = dict.fromkeys(KEYLESS, "1000/second")
    settings.ENGINE_MAX_RETRIES = 2
    settings.ENGINE_BREAKER_FAILURES = 3
    settings.ENGINE_BREAKER_RESET_SECONDS = 30
    settings.ARXIV_API_URL = f"{replay_server.url}/arxiv/api/query"
    settings.CROSSREF_API_URL = f"{replay_server.url}/crossref"
    settings.OPENALEX_API_URL = f"{replay_server.url}/openalex"
    settings.SEMANTIC_SCHOLAR_API_URL = f"{replay_server.url}/s2"
    registry.refresh()
    probe.forget()
    for engine in registry.engines().values():
        ratelimit.reset(engine)  # no Retry-After pause left by another test
    yield replay_server
    for engine in registry.engines().values():
        ratelimit.reset(engine)
    registry.refresh()


def crossref_search(timeout: float = 5.0) -> Any:
    call = EngineCall.search("crossref", SearchRequest(query="attention", max_results=3))
    return call_engine(call.engine, call.operation, call.arguments, timeout_seconds=timeout)


# --- classification ------------------------------------------------------------------------


def get(url: str, **options: Any) -> Any:
    return http.get_json(url, engine_name="Source", timeout=options.pop("timeout", 2.0), **options)


def test_a_name_that_does_not_resolve_is_unreachable_dns_and_not_retryable() -> None:
    with pytest.raises(EngineUnreachable, match="name resolution failed") as caught:
        get("http://api.research-mcp-test.invalid/works")
    assert caught.value.reason == "dns" and caught.value.outcome == "unreachable"
    assert not caught.value.retryable


def test_a_refused_connection_is_unreachable_refused() -> None:
    with pytest.raises(EngineUnreachable, match="refused") as caught:
        get(f"http://127.0.0.1:{free_port()}/works")
    assert caught.value.reason == "refused" and not caught.value.retryable


def test_a_failed_tls_handshake_is_unreachable_tls(replay_server: ReplayServer) -> None:
    with pytest.raises(EngineUnreachable, match="TLS") as caught:
        get(replay_server.url.replace("http://", "https://") + "/works")
    assert caught.value.reason == "tls" and not caught.value.retryable


def test_a_slow_answer_is_a_retryable_read_timeout(replay_server: ReplayServer) -> None:
    replay_server.add("/slow", Reply(200, {}, delay=2.0))
    started = time.monotonic()
    with pytest.raises(EngineTimeout) as caught:
        get(f"{replay_server.url}/slow", timeout=0.3)
    assert time.monotonic() - started < 1.5
    assert caught.value.reason == "read_timeout" and caught.value.retryable


def test_the_call_deadline_cuts_the_engines_own_timeouts(replay_server: ReplayServer) -> None:
    replay_server.add("/slow", Reply(200, {}, delay=3.0))
    started = time.monotonic()
    with http.call_deadline(time.monotonic() + 0.4), pytest.raises(EngineTimeout):
        get(f"{replay_server.url}/slow", timeout=20.0)
    assert time.monotonic() - started < 1.5


@pytest.mark.parametrize(
    ("status", "error", "outcome", "reason"),
    [
        (401, BadKey, "bad_key", "http_401"),
        (403, BadKey, "bad_key", "http_403"),
        (429, RateLimited, "rate_limited", "quota"),
        (500, TransientEngineError, "unreachable", "server_error"),
        (503, TransientEngineError, "unreachable", "server_error"),
    ],
)
def test_http_failures_are_classified(
    replay_server: ReplayServer, status: int, error: type, outcome: str, reason: str
) -> None:
    replay_server.add("/works", Reply(status, {"message": "no"}, {"Retry-After": "7"}))
    with pytest.raises(error) as caught:
        get(f"{replay_server.url}/works")
    assert (caught.value.outcome, caught.value.reason) == (outcome, reason)
    if status in (429, 500, 503):
        assert caught.value.retry_after == 7.0


# --- retries and the breaker, through the runner ----------------------------------------------


def test_name_resolution_failure_is_not_retried_and_opens_the_breaker(
    engines_at: ReplayServer, settings: Any
) -> None:
    settings.CROSSREF_API_URL = "http://api.research-mcp-test.invalid"
    first = crossref_search()
    assert (first.outcome, first.reason, first.attempts) == ("unreachable", "dns", 1)
    assert first.summary()["retry_after_seconds"] > 25

    started = time.monotonic()
    second = crossref_search()
    assert time.monotonic() - started < 0.1
    assert (second.outcome, second.reason, second.attempts) == ("unreachable", "circuit_open", 1)
    assert "name resolution failed" in second.message
    listed = {engine["id"]: engine for engine in engines_list()["engines"]}["crossref"]
    assert listed["is_available"] is False
    assert "name resolution failed" in listed["unavailable_reason"]
    assert listed["breaker"]["state"] == "open"


def test_server_errors_are_retried_then_the_breaker_opens_and_answers_at_once(
    engines_at: ReplayServer,
) -> None:
    engines_at.add("/crossref/works", Reply(500, {"message": "down"}))
    first = crossref_search()
    assert (first.outcome, first.reason, first.attempts) == ("unreachable", "server_error", 3)
    assert len(engines_at.requests) == 3

    started = time.monotonic()
    refused = crossref_search()
    assert time.monotonic() - started < 0.1
    assert refused.reason == "circuit_open" and refused.retry_after and refused.retry_after > 0
    assert len(engines_at.requests) == 3  # the source was not asked again


def test_a_half_open_probe_that_succeeds_closes_the_breaker(
    engines_at: ReplayServer, settings: Any
) -> None:
    settings.ENGINE_BREAKER_RESET_SECONDS = 1
    engines_at.add("/crossref/works", Reply(500, {"message": "down"}))
    assert crossref_search().reason == "server_error"
    assert crossref_search().reason == "circuit_open"

    engines_at.add("/crossref/works", Reply(200, EMPTY_WORKS))
    time.sleep(1.1)
    probe = crossref_search()
    assert probe.status == "ok" and probe.summary()["outcome"] == "no_results"
    assert breaker.state("crossref").state == "closed"
    assert "crossref" not in [
        engine["id"]
        for engine in engines_list()["engines"]
        if engine["id"] == "crossref" and not engine["is_available"]
    ]


def test_a_half_open_probe_that_fails_opens_the_breaker_again(
    engines_at: ReplayServer, settings: Any
) -> None:
    settings.ENGINE_BREAKER_RESET_SECONDS = 1
    settings.ENGINE_MAX_RETRIES = 0
    engines_at.add("/crossref/works", Reply(500, {"message": "down"}))
    for _ in range(3):
        crossref_search()
    assert breaker.state("crossref").open
    time.sleep(1.1)
    probe = crossref_search()
    assert probe.reason == "server_error" and probe.attempts == 1
    assert crossref_search().reason == "circuit_open"


def test_half_open_lets_one_trial_through_while_the_others_answer_at_once(
    engines_at: ReplayServer, settings: Any
) -> None:
    """pybreaker alone lets every call through once the reset time is past: against a
    source that hangs, each would wait for its deadline."""
    settings.ENGINE_BREAKER_RESET_SECONDS = 1
    settings.ENGINE_MAX_RETRIES = 0
    engines_at.add("/crossref/works", Reply(500, {"message": "down"}))
    for _ in range(3):
        crossref_search()
    assert breaker.state("crossref").open
    engines_at.add("/crossref/works", Reply(200, EMPTY_WORKS, delay=2.0))
    time.sleep(1.1)
    before = len(engines_at.requests)
    with ThreadPoolExecutor(max_workers=4) as pool:
        trial = pool.submit(crossref_search)
        time.sleep(0.3)  # the trial is under way
        started = time.monotonic()
        others = [future.result() for future in [pool.submit(crossref_search) for _ in range(3)]]
        waited = time.monotonic() - started
        assert trial.result().status == "ok"
    assert waited < 1.0
    assert [other.reason for other in others] == ["circuit_open"] * 3
    assert len(engines_at.requests) - before == 1
    assert breaker.state("crossref").state == "closed"


def test_a_bad_key_is_reported_at_once_and_does_not_open_the_breaker(
    engines_at: ReplayServer,
) -> None:
    engines_at.add("/crossref/works", Reply(401, {"message": "Invalid key"}))
    outcome = crossref_search()
    summary = outcome.summary()
    assert (summary["outcome"], summary["reason"], summary["attempts"]) == (
        "bad_key",
        "http_401",
        1,
    )
    assert "retry_after_seconds" not in summary
    assert breaker.state("crossref").state == "closed"
    listed = {engine["id"]: engine for engine in engines_list()["engines"]}["crossref"]
    assert listed["is_available"] is False and "credentials" in listed["unavailable_reason"]


def test_quota_with_retry_after_past_the_deadline_is_rate_limited_with_a_hint(
    engines_at: ReplayServer,
) -> None:
    engines_at.add("/crossref/works", Reply(429, {"message": "slow down"}, {"Retry-After": "60"}))
    started = time.monotonic()
    outcome = crossref_search(timeout=3.0)
    assert time.monotonic() - started < 1.0  # no waiting for a Retry-After it cannot reach
    summary = outcome.summary()
    assert (summary["outcome"], summary["reason"]) == ("rate_limited", "quota")
    assert 55 <= summary["retry_after_seconds"] <= 60
    assert breaker.state("crossref").state == "closed"


def test_a_slow_engine_is_bounded_by_the_call_deadline(engines_at: ReplayServer) -> None:
    engines_at.add("/crossref/works", Reply(200, EMPTY_WORKS, delay=5.0))
    started = time.monotonic()
    outcome = crossref_search(timeout=1.0)
    assert time.monotonic() - started < 2.0
    assert outcome.outcome == "timeout"


def test_calls_to_one_engine_beyond_its_concurrency_wait_their_turn(
    engines_at: ReplayServer, settings: Any
) -> None:
    settings.ENGINE_CONCURRENCY = 1
    engines_at.add("/crossref/works", Reply(200, EMPTY_WORKS, delay=1.0))
    request = SearchRequest(query="attention", max_results=3)
    outcomes = run_calls([EngineCall.search("crossref", request)] * 2, deadline_seconds=4)
    assert [outcome.status for outcome in outcomes] == ["ok", "ok"]
    first, second = sorted(request.at for request in engines_at.requests)
    assert second - first >= 0.9  # the second was sent when the first had its answer


def test_statuses_of_a_fan_out_say_what_happened_to_each_engine(
    engines_at: ReplayServer, settings: Any
) -> None:
    settings.OPENALEX_API_URL = "http://api.research-mcp-test.invalid"
    engines_at.add("/crossref/works", Reply(200, EMPTY_WORKS, delay=0.2))
    engines_at.add("/s2/graph/v1/paper/search", Reply(403, {"message": "Forbidden"}))
    request = SearchRequest(query="attention", max_results=3)
    started = time.monotonic()
    outcomes = run_calls(
        [EngineCall.search(name, request) for name in ("crossref", "openalex", "semantic_scholar")],
        deadline_seconds=5,
    )
    wall_ms = (time.monotonic() - started) * 1000
    summaries = {outcome.engine: outcome.summary() for outcome in outcomes}
    assert summaries["crossref"]["outcome"] == "no_results"
    assert (summaries["openalex"]["outcome"], summaries["openalex"]["reason"]) == (
        "unreachable",
        "dns",
    )
    assert summaries["semantic_scholar"]["outcome"] == "bad_key"
    # Each engine's own time: crossref's includes its slow answer; none exceeds the fan-out.
    assert 200 <= summaries["crossref"]["elapsed_ms"] <= wall_ms
    assert all(0 <= summary["elapsed_ms"] <= wall_ms for summary in summaries.values())


def test_the_breaker_is_shared_through_redis(engines_at: ReplayServer, settings: Any) -> None:
    """Another process sees the open breaker: its own breaker objects and storage read the
    same Redis keys (skipped without Redis)."""
    if not settings.REDIS_URL:
        pytest.skip("needs REDIS_URL")
    settings.CROSSREF_API_URL = "http://api.research-mcp-test.invalid"
    crossref_search()
    # What a fresh process has: no breaker objects or storage of its own yet.
    with breaker._storage_lock:
        breaker._shared.clear()
        breaker._memory.clear()
    breaker._local.__dict__.clear()
    assert breaker.state("crossref").open
    assert crossref_search().reason == "circuit_open"


def test_the_listing_probes_each_source_without_sending_a_request(
    engines_at: ReplayServer, settings: Any
) -> None:
    settings.OPENALEX_API_URL = "http://api.research-mcp-test.invalid"
    settings.SEMANTIC_SCHOLAR_API_URL = f"http://127.0.0.1:{free_port()}"
    started = time.monotonic()
    listed = {engine["id"]: engine for engine in engines_list()["engines"]}
    assert time.monotonic() - started < 2.0
    assert listed["openalex"]["is_available"] is False
    assert listed["openalex"]["unavailable_reason"].startswith("no network: name resolution failed")
    assert "refused the connection" in listed["semantic_scholar"]["unavailable_reason"]
    assert listed["crossref"]["is_available"] is True
    assert listed["crossref"]["breaker"] == {"state": "closed"}
    assert engines_at.requests == []  # a TCP connection, no HTTP request


# --- hostile identifiers ----------------------------------------------------------------------


@pytest.mark.parametrize("doi", HOSTILE_DOIS)
def test_hostile_dois_never_reach_any_engine(engines_at: ReplayServer, doi: str) -> None:
    engines = [CrossrefEngine(), OpenAlexEngine(), SemanticScholarEngine()]
    for engine in engines:
        with pytest.raises(EngineError) as caught:
            engine.get_paper_details(doi)
        assert not isinstance(caught.value, TransientEngineError)
    with pytest.raises(EngineError):
        CrossrefEngine().get_bibtex(PaperRef(doi=doi))
    with pytest.raises(EngineError):
        OpenAlexEngine().get_citing_papers(PaperRef(doi=doi), 5)
    with pytest.raises(EngineError):
        SemanticScholarEngine().get_citing_papers(PaperRef(doi=doi), 5)
    assert engines_at.requests == []


@pytest.mark.parametrize(
    ("engine", "paper_id"),
    [
        ("openalex", "W123/../../admin"),
        ("openalex", "https://openalex.org/W1/../x"),
        ("openalex", "pmid:1/../../admin"),
        ("semantic_scholar", "ARXIV:1706.03762/../../admin"),
        ("semantic_scholar", "CorpusId:../../admin"),
        ("semantic_scholar", "URL:https://x.org/../../../admin"),
        ("semantic_scholar", "../../../graph/v1/admin"),
        ("arxiv", "1706.03762/../../admin"),
        ("crossref", "../../admin"),
    ],
)
def test_hostile_engine_ids_never_reach_the_engine(
    engines_at: ReplayServer, engine: str, paper_id: str
) -> None:
    outcome = call_engine(engine, DETAILS, {"paper_id": paper_id}, timeout_seconds=3)
    assert outcome.status == "error" and outcome.attempts == 1
    assert engines_at.requests == []


def test_identifiers_are_sent_as_one_encoded_path_segment(engines_at: ReplayServer) -> None:
    engines_at.add("/crossref/works/10.1000%2Fabc%3Fx%3D1%23frag", Reply(404, {}))
    with pytest.raises(EngineError):
        CrossrefEngine().get_paper_details("10.1000/abc?x=1#frag")
    assert [request.path for request in engines_at.requests] == [
        "/crossref/works/10.1000%2Fabc%3Fx%3D1%23frag"
    ]
    assert "x" not in engines_at.requests[0].query


@pytest.mark.parametrize("value", ["", "a\x00b", "..", ".", "a/../b", "%2e%2e", "a\\b"])
def test_path_segment_refuses_what_is_no_identifier(value: str) -> None:
    with pytest.raises(EngineError):
        http.path_segment(value)


def test_path_segment_encodes_slashes_and_url_syntax() -> None:
    assert http.path_segment("10.1000/a?b#c d") == "10.1000%2Fa%3Fb%23c%20d"
    assert http.path_segment("DOI:10.1/x(1);2") == "DOI:10.1%2Fx(1);2"

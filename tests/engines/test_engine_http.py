"""engines.http: the one GET every keyless engine makes, against a local server.

The error bodies are the shapes the real sources send (see tests/fixtures/*/SOURCE.txt).
"""

from __future__ import annotations

import socket
import time
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from pathlib import Path

import pytest

from engines import http
from engines.base import (
    EngineError,
    EngineTimeout,
    PaperNotFoundAtSource,
    RateLimited,
    TransientEngineError,
)
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


def fixture(path: str) -> bytes:
    return (FIXTURES / path).read_bytes()


def get(server: ReplayServer, path: str = "/x", **kwargs):
    kwargs.setdefault("engine_name", "Source")
    kwargs.setdefault("timeout", 5.0)
    return http.get_json(server.url + path, **kwargs)


def test_json_answer_is_decoded_and_parameters_sent(replay_server, settings):
    settings.CONTACT_EMAIL = ""
    replay_server.add("/x", Reply(200, {"ok": [1, 2]}))

    assert get(replay_server, params={"q": "deep learning", "page": 2, "unset": None}) == {
        "ok": [1, 2]
    }

    request = replay_server.requests[-1]
    assert request.query == {"q": ["deep learning"], "page": ["2"]}
    assert request.headers["accept"] == "application/json"
    assert request.headers["user-agent"].startswith("research-mcp/")
    assert "mailto" not in request.headers["user-agent"]


def test_user_agent_names_the_contact_address(replay_server, settings):
    settings.CONTACT_EMAIL = "librarian@example.org"
    replay_server.add("/x", Reply(200, {}))

    get(replay_server)

    user_agent = replay_server.requests[-1].headers["user-agent"]
    assert user_agent.startswith("research-mcp/")
    assert user_agent.endswith("(mailto:librarian@example.org)")
    assert http.contact_params() == {"mailto": "librarian@example.org"}


def test_429_with_retry_after_seconds_is_rate_limited(replay_server):
    replay_server.add(
        "/x",
        Reply(429, fixture("semantic_scholar/rate_limited.json"), {"Retry-After": "7"}),
    )

    with pytest.raises(RateLimited) as caught:
        get(replay_server)

    assert isinstance(caught.value, TransientEngineError)
    assert caught.value.retry_after == 7
    assert caught.value.http_status == 429
    assert "Too Many Requests" in caught.value.message


def test_429_with_retry_after_http_date(replay_server):
    when = format_datetime(datetime.now(UTC) + timedelta(seconds=120), usegmt=True)
    replay_server.add("/x", Reply(429, {"error": "Rate limit exceeded"}, {"Retry-After": when}))

    with pytest.raises(RateLimited) as caught:
        get(replay_server)

    assert 100 < caught.value.retry_after <= 120


def test_retry_after_parsing():
    assert http.retry_after_seconds("30") == 30
    assert http.retry_after_seconds("1.5") == 1.5
    assert http.retry_after_seconds("-4") == 0
    assert http.retry_after_seconds("Wed, 21 Oct 2015 07:28:00 GMT") == 0  # in the past
    assert http.retry_after_seconds("soon") is None
    assert http.retry_after_seconds("nan") is None
    assert http.retry_after_seconds(None) is None


def test_503_is_transient_but_not_rate_limited(replay_server):
    replay_server.add("/x", Reply(503, "<html><body>Service Unavailable</body></html>"))

    with pytest.raises(TransientEngineError) as caught:
        get(replay_server)

    assert not isinstance(caught.value, RateLimited)
    assert caught.value.http_status == 503
    assert caught.value.message == "Source failed (HTTP 503): Service Unavailable"


def test_400_is_permanent_and_quotes_the_source(replay_server):
    replay_server.add("/x", Reply(400, fixture("crossref/validation_failure.json")))

    with pytest.raises(EngineError) as caught:
        get(replay_server)

    assert not isinstance(caught.value, TransientEngineError)
    assert caught.value.http_status == 400
    assert "Integer specified as notanumber" in caught.value.message


def test_404_is_not_found_only_for_single_lookups(replay_server):
    replay_server.add("/x", Reply(404, fixture("crossref/not_found.txt")))

    with pytest.raises(PaperNotFoundAtSource, match="no such paper"):
        get(replay_server, not_found="Source has no such paper.")
    with pytest.raises(EngineError) as caught:
        get(replay_server)
    assert not isinstance(caught.value, PaperNotFoundAtSource)
    assert caught.value.message == "Source refused the request (HTTP 404): Resource not found."


def test_slow_answer_times_out_as_transient(replay_server):
    replay_server.add("/x", Reply(200, {}, delay=2.0))

    started = time.monotonic()
    with pytest.raises(EngineTimeout) as caught:
        get(replay_server, timeout=0.3)

    assert isinstance(caught.value, TransientEngineError)
    assert time.monotonic() - started < 1.5
    assert "0.3 s" in caught.value.message


def test_refused_connection_is_transient():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    # Nothing listens on the port any more.
    with pytest.raises(TransientEngineError, match="could not be reached"):
        http.get_json(f"http://127.0.0.1:{port}/x", engine_name="Source", timeout=2)


def test_answer_that_is_not_json_is_an_error(replay_server):
    replay_server.add("/x", Reply(200, b"<html>Maintenance</html>", {"Content-Type": "text/html"}))

    with pytest.raises(EngineError, match=r"not JSON \(text/html\)") as caught:
        get(replay_server)
    assert not isinstance(caught.value, TransientEngineError)


def test_oversized_answer_is_refused(replay_server, monkeypatch):
    monkeypatch.setattr(http, "MAX_RESPONSE_BYTES", 1000)
    replay_server.add("/x", Reply(200, {"padding": "x" * 5000}))

    with pytest.raises(EngineError, match="limit is 1,000"):
        get(replay_server)


def test_redirects_are_followed_but_bounded(replay_server):
    replay_server.add("/old", Reply(301, b"", {"Location": "/x"}))
    replay_server.add("/x", Reply(200, {"moved": True}))
    replay_server.add("/loop", Reply(302, b"", {"Location": "/loop"}))

    assert get(replay_server, "/old") == {"moved": True}
    with pytest.raises(EngineError, match="redirected more than 5 times"):
        get(replay_server, "/loop")
    assert len([r for r in replay_server.requests if r.path == "/loop"]) == 6


def test_key_never_appears_in_messages(replay_server):
    key = "s2-secret-key-123"
    replay_server.add("/x", Reply(403, {"message": f"Forbidden: key {key} is not valid"}))

    with pytest.raises(EngineError) as caught:
        get(replay_server, headers={"x-api-key": key}, params={"api_key": key})

    assert replay_server.requests[-1].headers["x-api-key"] == key
    assert key not in caught.value.message
    assert key not in str(caught.value)
    assert "Forbidden: key *** is not valid" in caught.value.message


def test_key_header_is_not_forwarded_to_another_origin(replay_server):
    elsewhere = ReplayServer().start()
    try:
        elsewhere.add("/landing", Reply(200, {"there": True}))
        replay_server.add("/x", Reply(302, b"", {"Location": elsewhere.url + "/landing"}))

        assert get(replay_server, headers={"x-api-key": "k-1"}) == {"there": True}

        assert replay_server.requests[-1].headers["x-api-key"] == "k-1"
        assert "x-api-key" not in elsewhere.requests[-1].headers
    finally:
        elsewhere.stop()


def test_text_answers_use_their_charset(replay_server):
    replay_server.add(
        "/bib",
        Reply(
            200,
            "@misc{k, title={Café}}".encode("latin-1"),
            {"Content-Type": "text/plain; charset=ISO-8859-1"},
        ),
    )

    text = http.get_text(
        replay_server.url + "/bib", accept="application/x-bibtex", engine_name="Source", timeout=5
    )

    assert text == "@misc{k, title={Café}}"
    assert replay_server.requests[-1].headers["accept"] == "application/x-bibtex"

"""Seed 004: Google Scholar's availability "checked via API key validation". SerpApi's free
Account API (no search spent) is asked by `list_search_engines` (engines.selectors.
engines_list, which the tool and engines://list call), on a local server replaying SerpApi's
documented answers; the verdict is kept, and no key reaches the answer."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from django.core.cache import caches

from engines import probe
from engines.registry import registry
from engines.selectors import engines_list
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "serpapi"
KEY = "test-serp-key-0b7d41c2e9"


def load(name: str) -> Any:
    return json.loads((FIXTURES / name).read_text(encoding="utf-8"))


@pytest.fixture
def serpapi(replay_server: ReplayServer, settings) -> ReplayServer:
    settings.ENGINES_ENABLED = ["google_scholar"]
    settings.SERPAPI_URL = replay_server.url
    settings.SERP_API_KEY = KEY
    registry.refresh()
    probe.forget()
    caches["engines"].clear()
    yield replay_server
    caches["engines"].clear()
    registry.refresh()


def scholar() -> dict[str, Any]:
    listed = {engine["id"]: engine for engine in engines_list()["engines"]}
    return listed["google_scholar"]


def account_calls(server: ReplayServer) -> list[Any]:
    return [r for r in server.requests if r.path == "/account.json"]


def test_an_accepted_key_is_available_and_asked_once(serpapi: ReplayServer) -> None:
    serpapi.add("/account.json", Reply(200, load("account_active.json")))

    assert scholar()["is_available"] is True
    assert scholar()["is_available"] is True

    calls = account_calls(serpapi)
    assert len(calls) == 1  # the verdict is kept
    assert calls[0].query["api_key"] == [KEY]
    assert not [r for r in serpapi.requests if r.path == "/search"]  # no search spent


@pytest.mark.parametrize(
    ("reply", "reason"),
    [
        (
            Reply(401, load("error_401_invalid_api_key.json")),
            "SerpApi key rejected: Invalid API key",
        ),
        (
            Reply(200, {**load("account_active.json"), "total_searches_left": 0}),
            "SerpApi quota exhausted: no searches left until the plan renews on 2026-12-17",
        ),
        (
            Reply(200, {**load("account_active.json"), "account_status": "Suspended"}),
            "SerpApi account is suspended",
        ),
        (Reply(200, load("error_sample_account_credit.json")), "SerpApi quota exhausted"),
    ],
)
def test_a_refused_key_or_account_is_unavailable_with_the_reason(
    serpapi: ReplayServer, reply: Reply, reason: str
) -> None:
    serpapi.add("/account.json", reply)

    listed = scholar()

    assert listed["is_available"] is False
    assert listed["unavailable_reason"].startswith(reason)
    assert KEY not in json.dumps(listed)
    assert not [r for r in serpapi.requests if r.path == "/search"]


@pytest.mark.parametrize(
    "reply", [Reply(500, "<html>Internal Server Error</html>"), Reply(404, {"error": "?"})]
)
def test_no_verdict_leaves_the_engine_available_and_asks_again(
    serpapi: ReplayServer, reply: Reply
) -> None:
    serpapi.add("/account.json", reply)

    assert scholar()["is_available"] is True
    assert scholar()["is_available"] is True
    assert len(account_calls(serpapi)) == 2  # nothing learnt, nothing kept


def test_without_a_key_nothing_is_asked(serpapi: ReplayServer, settings) -> None:
    settings.SERP_API_KEY = ""

    listed = scholar()

    assert listed["unavailable_reason"] == "SERP_API_KEY is not set"
    assert serpapi.requests == []

"""Engine rate limits as a user meets them: `ENGINE_RATE_LIMITS` replaces an engine's own
limit (engines/ratelimit.py), `GET /api/engines` shows the limit in force, and a search
beyond it waits for a slot or is reported `rate_limited` without a request being sent."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured

from core.env import env_map
from engines import ratelimit
from engines.registry import registry
from tests.api.conftest import Api, error
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply

pytestmark = pytest.mark.django_db

ENGINE = "fake_limited"
FOUND = [{"title": "Rate Limits in Practice", "authors": ["Ada Lovelace"], "year": 2020}]


@pytest.fixture
def limited_engine(
    settings: Any, tmp_path: Path, replay_server: ReplayServer
) -> Iterator[ReplayServer]:
    """A plugin engine whose own limit is generous (1000/second), called in this process."""
    settings.ENGINES_DIR = tmp_path / "engines"
    settings.ENGINES_ENABLED = [ENGINE]
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ENGINE_RATE_LIMITS = {}
    settings.ENGINE_MAX_RETRIES = 0
    write_plugin(settings.ENGINES_DIR, ENGINE, replay_server.url)
    replay_server.add("/search", Reply(200, FOUND))
    registry.refresh()
    engine = registry.engines()[ENGINE]
    ratelimit.reset(engine)
    yield replay_server
    ratelimit.reset(engine)
    registry.refresh()


def listed_limit(api: Api) -> dict[str, Any]:
    response = api.get("/api/engines")
    assert response.status_code == 200, response.content
    engine = next(e for e in response.json()["engines"] if e["id"] == ENGINE)
    return dict(engine["rate_limit"])


def search(api: Api, query: str) -> dict[str, Any]:
    response = api.post("/api/engines/search", {"query": query, "engines": [ENGINE]})
    if response.status_code == 503:  # nothing found, and the one engine did not answer
        return dict(error(response, 503)["engines"][ENGINE])
    assert response.status_code == 200, response.content
    return dict(response.json()["engines"][ENGINE])


def test_without_an_override_the_engine_keeps_its_own_limit(
    api: Api, limited_engine: ReplayServer
) -> None:
    assert listed_limit(api)["limit"] == "1000 per 1 second"
    statuses = [search(api, f"query {n}")["status"] for n in range(3)]
    assert statuses == ["ok", "ok", "ok"]
    assert len(limited_engine.requests) == 3


def test_the_engine_rate_limits_setting_replaces_the_engines_own_limit(
    api: Api, limited_engine: ReplayServer, settings: Any
) -> None:
    settings.ENGINE_RATE_LIMITS = {ENGINE: "2/minute", "another": "1/second"}
    settings.ENGINE_DEADLINE_SECONDS = 1
    listed = listed_limit(api)
    assert listed["limit"] == "2 per 1 minute" and listed["remaining"] == 2
    assert [search(api, f"query {n}")["status"] for n in range(2)] == ["ok", "ok"]
    assert listed_limit(api)["remaining"] == 0
    started = time.monotonic()
    third = search(api, "query 3")
    # No slot frees up within the deadline: refused before the deadline, nothing sent.
    assert third["status"] == "rate_limited", third
    assert time.monotonic() - started < 5
    assert len(limited_engine.requests) == 2


def test_engine_rate_limits_is_read_as_engine_equals_limit_pairs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ENGINE_RATE_LIMITS", " arxiv=1/3 seconds , openalex=10/second,")
    assert env_map("ENGINE_RATE_LIMITS") == {"arxiv": "1/3 seconds", "openalex": "10/second"}
    for bad in ("arxiv", "arxiv=", "=1/second"):
        monkeypatch.setenv("ENGINE_RATE_LIMITS", bad)
        with pytest.raises(ImproperlyConfigured):
            env_map("ENGINE_RATE_LIMITS")

"""core/throttle.py when its store cannot be reached: the counts go on in this process's
memory (a lockout still happens), nothing raises, one warning per outage, and the store is
not asked again on every call."""

from __future__ import annotations

import logging
import socket
from collections.abc import Iterator
from typing import Any

import pytest
from django.core.cache import caches

from core import throttle

LIMIT = 3


def closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # nothing listens once the socket is closed


@pytest.fixture
def unreachable_store(settings: Any) -> Iterator[None]:
    settings.AUTH_FAILURE_LIMIT = LIMIT
    settings.AUTH_FAILURE_WINDOW_SECONDS = 600
    settings.CACHES = {
        **settings.CACHES,
        "throttle": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"redis://127.0.0.1:{closed_port()}/0",
            "OPTIONS": {"socket_connect_timeout": 0.5, "socket_timeout": 0.5},
        },
    }
    throttle._counts = throttle._Counts()
    yield
    throttle._counts = throttle._Counts()
    caches["throttle"].close()


def test_failures_are_counted_in_memory_while_the_store_is_down(
    unreachable_store: None, caplog: pytest.LogCaptureFixture
) -> None:
    keys = [throttle.address_key("203.0.113.5")]
    with caplog.at_level(logging.WARNING, logger="core.throttle"):
        for _ in range(LIMIT):
            throttle.check("login", keys)  # never raises for the store being down
            throttle.record_failure("login", keys)
        with pytest.raises(throttle.Throttled):
            throttle.check("login", keys)
        throttle.check("login", [throttle.address_key("203.0.113.6")])  # others unaffected
        throttle.clear("login", keys)
        throttle.check("login", keys)
    warnings = [r for r in caplog.records if "store is unreachable" in r.getMessage()]
    assert len(warnings) == 1


def test_the_store_is_not_asked_again_on_every_call(
    unreachable_store: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    asked = []
    cache = caches["throttle"]
    real_get = cache.get

    def counting_get(*args: Any, **kwargs: Any) -> Any:
        asked.append(args)
        return real_get(*args, **kwargs)

    monkeypatch.setattr(cache, "get", counting_get)
    for _ in range(20):
        throttle.check("login", [throttle.address_key("203.0.113.7")])
    assert len(asked) == 1

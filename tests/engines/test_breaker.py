"""The circuit breaker against a source that accepts connections and never answers: one
call probes it, the others do not reach it, and the breaker opens after that one call
(engines/breaker.py). Counts, never timings."""

from __future__ import annotations

import socket
import threading
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest

from engines import breaker
from engines.base import SearchRequest
from engines.registry import registry
from engines.runner import EngineCall, call_engine
from tests.engines.plugins import write_plugin


class HangingServer:
    """Accepts every connection, reads nothing, answers nothing; counts connections."""

    def __init__(self) -> None:
        self.sock = socket.create_server(("127.0.0.1", 0))
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}"
        self.connections: list[socket.socket] = []
        self.closing = threading.Event()
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        while not self.closing.is_set():
            try:
                connection, _ = self.sock.accept()
            except TimeoutError:
                continue
            self.connections.append(connection)

    def close(self) -> None:
        self.closing.set()
        self.thread.join(5)
        for connection in self.connections:
            connection.close()
        self.sock.close()


@pytest.fixture
def hanging(settings: Any, tmp_path: Path) -> Iterator[tuple[str, HangingServer]]:
    """A plugin engine (1 s request timeout) pointing at a HangingServer."""
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.ENGINES_DIR = tmp_path / "engines"
    settings.ENGINES_ENABLED = []
    settings.ENGINE_MAX_RETRIES = 3
    settings.ENGINE_PROBE_WAIT_SECONDS = 1
    server = HangingServer()
    engine_id = f"hanging_{uuid.uuid4().hex[:8]}"
    write_plugin(settings.ENGINES_DIR, engine_id, server.url, timeout=1.0)
    registry.refresh()
    yield engine_id, server
    server.close()
    registry.refresh()


def search(engine_id: str) -> Any:
    call = EngineCall.search(engine_id, SearchRequest(query="attention", max_results=5))
    return call_engine(call.engine, call.operation, call.arguments, timeout_seconds=4.0)


def test_concurrent_calls_to_a_hanging_engine_send_one_probe(
    hanging: tuple[str, HangingServer],
) -> None:
    engine_id, server = hanging
    with ThreadPoolExecutor(12) as pool:
        outcomes = list(pool.map(lambda _: search(engine_id), range(12)))
    assert len(server.connections) == 1  # the probe; the eleven others never reached it
    assert breaker.state(engine_id).open
    assert {outcome.status for outcome in outcomes} <= {"timeout", "unavailable"}
    assert sum(outcome.reason == "circuit_open" for outcome in outcomes) >= 11
    assert len(server.connections) == 1 and search(engine_id).reason == "circuit_open"


def test_one_unanswered_call_opens_the_breaker(
    hanging: tuple[str, HangingServer], settings: Any
) -> None:
    settings.ENGINE_MAX_RETRIES = 0
    engine_id, server = hanging
    assert search(engine_id).status == "timeout"
    assert breaker.state(engine_id).open  # not after ENGINE_BREAKER_FAILURES (3) of them
    assert search(engine_id).reason == "circuit_open"
    assert len(server.connections) == 1

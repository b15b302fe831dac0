from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.engines.replay import ReplayServer

SHARED_FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


@pytest.fixture
def replay_server() -> Iterator[ReplayServer]:
    """A local server answering with recorded responses (see tests/engines/replay.py)."""
    server = ReplayServer().start()
    try:
        yield server
    finally:
        server.stop()

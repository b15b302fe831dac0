"""The recorded arXiv API answers (tests/fixtures/arxiv) and what a replayed request sent."""

from __future__ import annotations

import json
from pathlib import Path

from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "arxiv"


API_PATH = "/api/query"


def recorded(name: str) -> Reply:
    """The recorded answer. The recorder kept the raw bytes decoded as latin-1, so encoding
    back gives exactly what arXiv sent (UTF-8 XML)."""
    data = json.loads((FIXTURES / name).read_text(encoding="utf-8"))
    headers = {"Content-Type": "application/atom+xml; charset=UTF-8"}
    return Reply(data["status_code"], data["body"].encode("latin-1"), headers)


def sent(server: ReplayServer, index: int = -1) -> dict[str, str]:
    """The query parameters of a request the client really sent."""
    return {key: values[0] for key, values in server.requests[index].query.items()}

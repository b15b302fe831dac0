"""The Crossref work of a PLOS paper served by the replay server, for tests that add a paper
from an identifier (engines and the admin's intake)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from engines import registry as registry_module
from tests.engines.replay import ReplayServer, Reply

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"


PLOS_DOI = "10.1371/journal.pone.0033693"


@pytest.fixture
def sources(settings: Any, replay_server: ReplayServer) -> ReplayServer:
    """Every keyless engine pointed at the local server (unknown paths answer 404)."""
    settings.ENGINES_ENABLED = ["arxiv", "crossref", "openalex", "semantic_scholar"]
    settings.CELERY_TASK_ALWAYS_EAGER = True  # a worker would not see these URLs
    settings.ENGINE_CACHE_TTLS = {
        name: 0 for name in ("arxiv", "crossref", "openalex", "semantic_scholar")
    }
    settings.ENGINE_MAX_RETRIES = 0
    settings.ARXIV_API_URL = f"{replay_server.url}/arxiv/api/query"
    settings.CROSSREF_API_URL = f"{replay_server.url}/crossref"
    settings.OPENALEX_API_URL = f"{replay_server.url}/openalex"
    settings.SEMANTIC_SCHOLAR_API_URL = f"{replay_server.url}/s2"
    registry_module.registry.refresh()
    return replay_server


def crossref_work() -> Reply:
    return Reply(200, json.loads((FIXTURES / "crossref" / "work.json").read_text()))

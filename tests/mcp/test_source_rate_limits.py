"""Sources' published rate limits hold under load: 50 agents searching PubMed and Europe PMC
at once over /mcp (SDK clients, the real server; on PostgreSQL + Redis the engine calls run
on a Celery worker and the limit is kept in Redis), against a local server that answers with
recorded real responses and notes when each request arrived.

NCBI allows 10 requests a second with an API key (a PubMed search is two: ESearch, then
EFetch); Europe PMC's throttle is 10 a second, the engine keeps 8 (docs/ENGINES.md).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import mcp
import pytest
from mcp.client.streamable_http import streamable_http_client

from tests.engines.replay import ReplayServer, Reply
from tests.mcp.builders import review_backend
from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    base_env,
    running_server,
    server_database,
    tool_data,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
CLIENTS = 50
LIMITS = {"pubmed": 10, "europepmc": 8}  # requests a second
# Requests arrive some time after their slot was taken: milliseconds on a quiet machine,
# up to a second on a loaded one (two test suites and workers on two cores).
JITTER_SECONDS = 1.0


def xml(path: Path) -> Reply:
    return Reply(200, path.read_bytes(), headers={"Content-Type": "text/xml; charset=UTF-8"})


@pytest.fixture(scope="module")
def sources() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    server.add("/eutils/esearch.fcgi", xml(FIXTURES / "pubmed" / "esearch2.xml"))
    server.add("/eutils/efetch.fcgi", xml(FIXTURES / "pubmed" / "pubmed4.xml"))
    epmc = (FIXTURES / "europepmc" / "search_cancer_core.json").read_bytes()
    server.add("/europepmc/search", Reply(200, epmc, headers={"Content-Type": "application/json"}))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(sources: ReplayServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    directory = tmp_path_factory.mktemp("rate-kb")
    with server_database("mcprates") as database_url:
        env = base_env(directory, database_url)
        env.update(
            ENGINES_ENABLED="local,pubmed,europepmc",
            NCBI_EUTILS_URL=f"{sources.url}/eutils",
            NCBI_API_KEY="test-ncbi-key",
            EUROPEPMC_API_URL=f"{sources.url}/europepmc",
            ENGINE_CACHE_TTLS="pubmed=0,europepmc=0",
            ENGINE_DEADLINE_SECONDS="120",
            EMBEDDINGS_ENABLED="false",
        )
        kb = KnowledgeBase(directory, env)
        with review_backend(kb) as (extra, _), running_server(kb, env=extra) as live:
            yield live


def busiest_window(times: list[float], width: float) -> int:
    """The most requests that arrived within any `width` seconds."""
    times = sorted(times)
    most, start = 0, 0
    for end, at in enumerate(times):
        while at - times[start] > width:
            start += 1
        most = max(most, end - start + 1)
    return most


async def search(url: str, number: int, answers: list[dict[str, Any]]) -> None:
    async with httpx2.AsyncClient(timeout=180) as http_client:
        transport = streamable_http_client(url, http_client=http_client)
        async with mcp.Client(transport, mode="legacy") as client:
            result = await client.call_tool(
                "search_papers",
                {"query": f"telomere{number}*[tiab]", "engines": ["pubmed", "europepmc"],
                 "limit": 5},
            )  # fmt: skip
    assert not result.is_error, result.content[0].text
    answers.append(tool_data(result))


async def test_fifty_concurrent_searches_keep_each_sources_limit(
    server: LiveServer, sources: ReplayServer
) -> None:
    answers: list[dict[str, Any]] = []
    async with anyio.create_task_group() as group:
        for number in range(CLIENTS):
            group.start_soon(search, server.mcp_url, number, answers)
    assert len(answers) == CLIENTS
    for answer in answers:  # every source answered every agent: slowed, not refused
        for engine in LIMITS:
            assert answer["engines"][engine]["status"] == "ok", answer["engines"]
    arrivals = {
        "pubmed": [r.at for r in sources.requests if r.path.startswith("/eutils/")],
        "europepmc": [r.at for r in sources.requests if r.path.startswith("/europepmc/")],
    }
    assert len(arrivals["pubmed"]) == 2 * CLIENTS  # ESearch + EFetch per search
    assert len(arrivals["europepmc"]) == CLIENTS
    for engine, limit in LIMITS.items():
        times = sorted(arrivals[engine])
        # Paced over the whole run: after the first second's `limit`, no faster than the
        # limit (only the run's two ends can be shifted by jitter)...
        assert times[-1] - times[0] >= (len(times) - limit) / limit - JITTER_SECONDS, engine
        # ...and never a burst: a request held up on a loaded machine (in this process, a
        # worker or on the way) may land in the next second's window, so a second may hold
        # part of the next one's allowance, never more (without the limit, the 50 agents'
        # requests would all come within a fraction of a second).
        assert busiest_window(times, 1.0) <= 2 * limit, (engine, times)

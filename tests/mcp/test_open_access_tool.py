"""find_open_access_pdf over /mcp, through the MCP SDK's own client, against a real server
whose OpenAlex is a local replay (tests/fixtures/open_access) that also serves the PDF
(tests/fixtures/pdfs/2304.02623v1.pdf): the PDF it finds is attached and then found by
search_passages. The server allows loopback downloads (PDF_ALLOW_PRIVATE_URLS), as the
download tests do, and indexes in its own process (no broker: a worker of the test run
would have another database)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest

from tests.engines.open_access_builders import FIXTURES, PAGES, serve_pdf, served
from tests.engines.replay import ReplayServer, Reply
from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    mcp_client,
    running_server,
    seeded_knowledge_base,
    tool_data,
    tool_error,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

# The seeded "Attention Is All You Need" (tests/mcp/seed_library.py) has this DOI.
SEEDED_DOI_PATH = "/works/doi:10.5555%2F3295222.3295349"
NO_BROKER = ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")


@dataclass
class Setup:
    kb: KnowledgeBase
    server: LiveServer
    replay: ReplayServer


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    assert (FIXTURES / "openalex_work.json").is_file()
    replay = ReplayServer().start()
    try:
        with seeded_knowledge_base(tmp_path_factory.mktemp("oa-kb"), "mcp_oa") as kb:
            kb.env = {name: value for name, value in kb.env.items() if name not in NO_BROKER}
            env = {
                "OPENALEX_API_URL": replay.url,
                "SEMANTIC_SCHOLAR_API_URL": replay.url,
                "UNPAYWALL_EMAIL": "",
                "ENGINES_ENABLED": "local,openalex,semantic_scholar",
                "PDF_ALLOW_PRIVATE_URLS": "true",
                "PDF_DOWNLOAD_TIMEOUT": "10",
            }
            with running_server(kb, env=env) as server:
                yield Setup(kb, server, replay)
    finally:
        replay.stop()


async def call(setup: Setup, tool: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(setup.server.mcp_url) as client:
        return await client.call_tool(tool, arguments)


async def test_a_pdf_found_through_openalex_is_attached_and_searchable_by_passage(
    setup: Setup,
) -> None:
    replay = setup.replay
    replay.add(SEEDED_DOI_PATH, Reply(200, served("openalex_work.json", replay)))
    replay.add("/arxiv.org/pdf/2304.02623", Reply(404, {"error": "gone"}))  # falls through
    serve_pdf(replay, "/export.arxiv.org/pdf/2304.02623v1")
    paper = setup.kb.paper("attention")
    before = await call(setup, "search_passages", {"query": "ideation during creative writing"})
    assert tool_data(before)["hits"] == []

    located = tool_data(
        await call(setup, "find_open_access_pdf", {"paper_id": paper["citekey"], "attach": False})
    )
    assert located == {
        "paper_id": paper["paper_id"], "status": "found", "source": "openalex",
        "url": f"{replay.url}/arxiv.org/pdf/2304.02623",
    }  # fmt: skip

    found = tool_data(await call(setup, "find_open_access_pdf", {"paper_id": paper["paper_id"]}))
    assert found == {
        "paper_id": paper["paper_id"], "status": "attached", "source": "openalex",
        "url": f"{replay.url}/export.arxiv.org/pdf/2304.02623v1", "pages": PAGES,
        "tried": [f"{replay.url}/arxiv.org/pdf/2304.02623 (http_error)"],
    }  # fmt: skip

    hits = tool_data(
        await call(setup, "search_passages", {"query": "ideation during creative writing"})
    )["hits"]
    assert hits and hits[0]["paper"]["paper_id"] == paper["paper_id"] and hits[0]["page"] == 1


async def test_a_paper_out_of_reach_is_an_error_and_read_only_mode_hides_the_tool(
    setup: Setup,
) -> None:
    missing = await call(setup, "find_open_access_pdf", {"paper_id": 999_999})
    assert tool_error(missing)["code"] == "not_found"
    with running_server(setup.kb, env={"MCP_READ_ONLY": "true"}) as read_only:
        async with mcp_client(read_only.mcp_url) as client:
            names = {tool.name for tool in (await client.list_tools()).tools}
    assert "find_open_access_pdf" not in names and "search_passages" in names

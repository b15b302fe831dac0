"""check_citations over /mcp, through the MCP SDK's own client, against a real server
process: a knowledge base with PDFs attached (`manage.py attach_pdf`) and their passages
indexed, and Crossref replayed by a local server (an unknown DOI answers 404, as Crossref's
recorded answer in tests/fixtures/crossref/not_found.txt).

Paper `attention` has 2304.02623v1.pdf, `bert` papermage.pdf, `resnet` no PDF.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from mcp import MCPError

from tests.engines.replay import ReplayServer, Reply
from tests.mcp.builders import run
from tests.mcp.conftest import (
    SEED_SCRIPT,
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
)
from tests.papers.pdf.builders import EXPOSITORY, PAPERMAGE

pytestmark = [pytest.mark.server, pytest.mark.anyio]

# Page 2 of 2304.02623v1.pdf, as printed (the text runs over two lines there).
QUOTE = (
    "While it contains summaries of relevant previous work, it also elects to group "
    "several papers together as they describe similar concepts"
)
NOT_FOUND = Path(__file__).resolve().parents[1] / "fixtures" / "crossref" / "not_found.txt"


@dataclass
class Setup:
    kb: KnowledgeBase
    server: LiveServer
    crossref: ReplayServer

    def citekey(self, name: str) -> str:
        return str(self.kb.paper(name)["citekey"])


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    directory = tmp_path_factory.mktemp("citecheck-kb")
    crossref = ReplayServer().start()
    crossref.add("/crossref/works/10.5555%2Finvented.2031.1", Reply(404, NOT_FOUND.read_text()))
    try:
        with server_database("mcp_citecheck") as database_url:
            # Tasks (passage indexing after attach_pdf) and engine calls run in the
            # processes here: a broker would hand them to the test run's worker.
            env = {
                name: value
                for name, value in base_env(directory, database_url).items()
                if name not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
            }
            env.update(ENGINES_ENABLED="crossref", CROSSREF_API_URL=f"{crossref.url}/crossref")
            data = json.loads(run(env, str(SEED_SCRIPT)).strip().splitlines()[-1])
            kb = KnowledgeBase(directory, env, data)
            for name, path in (("attention", EXPOSITORY), ("bert", PAPERMAGE)):
                run(env, "manage.py", "attach_pdf", data["papers"][name]["citekey"], str(path))
            run(env, "manage.py", "reindex_passages", "--all", "--no-progress")
            with running_server(kb) as server:
                yield Setup(kb, server, crossref)
    finally:
        crossref.stop()


async def check(setup: Setup, **arguments: Any) -> dict[str, Any]:
    async with mcp_client(setup.server.mcp_url) as client:
        result = await client.call_tool("check_citations", arguments)
    data = tool_data(result)
    assert data is not None, result
    return dict(data)


async def test_check_citations_is_listed_as_a_read_only_open_world_tool(setup: Setup) -> None:
    async with mcp_client(setup.server.mcp_url, mode="auto") as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools["check_citations"]
    assert tool.annotations and tool.annotations.read_only_hint is True
    assert tool.annotations.open_world_hint is True
    assert set(tool.input_schema["properties"]) == {"text", "style_hint", "engines"}


async def test_a_real_quote_is_supported_by_the_right_paper_only(setup: Setup) -> None:
    right, wrong = setup.citekey("attention"), setup.citekey("bert")
    text = (
        f"Experts say that \u201c{QUOTE}\u201d \\cite{{{right}}}. "
        f"Others say that \u201c{QUOTE}\u201d \\cite{{{wrong}}}."
    )
    data = await check(setup, text=text, engines="local")
    supported, unsupported = data["citations"]
    assert (supported["status"], supported["support"], supported["page"]) == (
        "exists", "supported", 2,
    )  # fmt: skip
    assert supported["paper"]["citekey"] == right
    assert supported["similarity"] == 1.0
    assert (unsupported["status"], unsupported["support"]) == ("exists", "unsupported")
    assert unsupported["paper"]["citekey"] == wrong
    assert data["summary"] == {"exists": 2, "support": {"supported": 1, "unsupported": 1}}


async def test_an_invented_reference_is_not_found_and_a_paper_without_pdf_says_so(
    setup: Setup,
) -> None:
    text = (
        "Bees dream in colour [1]. Residual connections ease training (He and Zhang, 2016)."
        "\n\nReferences\n"
        "[1] Q. Nobody, \u201cOn the dreams of honeybees in quantum ecology,\u201d 2031. "
        "doi:10.5555/invented.2031.1\n"
        "[2] K. He and X. Zhang, \u201cDeep residual learning for image recognition,\u201d "
        "CVPR, 2016.\n"
    )
    data = await check(setup, text=text, engines="crossref")
    invented, resnet = data["citations"]
    assert invented["status"] == "not_found"
    assert invented["marker"] == "[1]"
    assert "crossref" in invented["reason"]
    assert data["engines"]["crossref"]["status"] == "not_found"
    assert (resnet["status"], resnet["support"], resnet["metadata"]) == ("exists", "no_pdf", "ok")
    assert resnet["paper"]["citekey"] == setup.citekey("resnet")


async def test_offline_the_same_invented_reference_is_unresolved_not_not_found(
    setup: Setup,
) -> None:
    text = "Bees dream in colour (doi:10.5555/invented.2031.1)."
    data = await check(setup, text=text, engines="local")
    (citation,) = data["citations"]
    assert citation["status"] == "unresolved"
    assert data["engines"] == {}


async def test_a_bad_style_hint_is_invalid_params(setup: Setup) -> None:
    async with mcp_client(setup.server.mcp_url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("check_citations", {"text": "x (A, 2020).", "style_hint": "mla"})
    assert raised.value.error.code == -32602

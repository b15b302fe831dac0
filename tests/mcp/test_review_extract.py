"""A review with data extraction over HTTP /mcp with the SDK client, against a real server
process: extraction chosen at the plan checkpoint, the extract checkpoint after screening
with what it takes to finish, approve refused without a form and while two extractors
disagree, the review complete after adjudication, and PRISMA's reports assessed in the
diagram resource. The extraction itself is recorded by the extraction services in a
process of its own on the server's database (its MCP tools are another tool set). The
engine is a plugin answering from a local replay server; on PostgreSQL + Redis the steps
run on a worker of the test's own (tests/mcp/test_review_tools.py, `review_backend`).
"""

from __future__ import annotations

import subprocess
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest

from projects.review.prisma import prisma_problems
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply
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

ENGINE = "rx_src"
STUDIES = [
    {
        "title": "Longformer: The Long-Document Transformer", "authors": ["Iz Beltagy"],
        "year": 2020, "doi": "10.5555/longformer",
        "abstract": "Longformer combines local windowed attention with global attention.",
    },
    {
        "title": "Big Bird: Transformers for Longer Sequences", "authors": ["Manzil Zaheer"],
        "year": 2020, "doi": "10.5555/bigbird",
        "abstract": "Sparse attention reduces the quadratic dependency to linear.",
    },
]  # fmt: skip
FIELDS = [
    {"key": "method", "type": "text"},
    {"key": "attention", "type": "choice", "choices": ["sparse", "full"]},
]


@pytest.fixture(scope="module")
def kb_and_server(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[tuple[KnowledgeBase, LiveServer]]:
    source = ReplayServer().start()
    source.add(f"/{ENGINE}/search", Reply(200, STUDIES))
    directory = tmp_path_factory.mktemp("extract-kb")
    write_plugin(directory / "engines", ENGINE, f"{source.url}/{ENGINE}", timeout=30)
    try:
        with server_database("mcpextract") as database_url:
            env = base_env(directory, database_url)
            env.update(ENGINES_ENABLED=ENGINE, EMBEDDINGS_ENABLED="false")
            kb = KnowledgeBase(directory, env)
            with review_backend(kb) as (extra, _), running_server(kb, env=extra) as live:
                yield kb, live
    finally:
        source.stop()


def extraction(kb: KnowledgeBase, code: str) -> None:
    """Run extraction services (projects/review/extraction/services.py) on the server's
    database, in a process of their own."""
    script = "from projects.review.extraction.services import *\n" + code
    done = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", script], env=kb.env, cwd=ROOT,
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr


async def call(url: str, tool: str, **arguments: Any) -> Any:
    async with mcp_client(url) as client:
        return await client.call_tool(tool, arguments)


async def ok(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await call(url, tool, **arguments)
    assert not result.is_error, result.content[0].text
    return tool_data(result)


async def refused(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await call(url, tool, **arguments)
    assert result.is_error, result.content[0].text
    return tool_error(result)


async def test_a_review_extracts_data_before_it_completes(
    kb_and_server: tuple[KnowledgeBase, LiveServer],
) -> None:
    kb, server = kb_and_server
    url = server.mcp_url
    state = await ok(url, "start_review", query="long document transformers", limit=10)
    session_id = state["session_id"]
    edit = {"engines": [ENGINE], "extract": True}
    state = await ok(url, "decide", session_id=session_id, action="edit", data=edit, checkpoint=1)
    assert state["current_checkpoint_kind"] == "screen", state
    papers = {
        item["title"]: item["paper_id"] for item in state["checkpoint"]["candidates"]["items"]
    }
    assert sorted(papers) == sorted(study["title"] for study in STUDIES)

    state = await ok(url, "decide", session_id=session_id, action="approve", checkpoint=2)
    assert state["stage"] == "extract" and state["current_checkpoint_kind"] == "extract", state
    payload = state["checkpoint"]["payload"]
    assert payload["studies"] == {"included": 2, "complete": 0, "partly": 0, "not_started": 2}
    assert "extraction_form" in payload["create_form"] and "extract_record" in state["next"]
    error = await refused(url, "decide", session_id=session_id, action="approve", checkpoint=3)
    assert error["code"] == "invalid_decision" and "No extraction form" in error["message"]
    error = await refused(
        url, "decide", session_id=session_id, action="reject", note="redo", checkpoint=3
    )
    assert error["code"] == "invalid_decision"

    longformer = papers[STUDIES[0]["title"]]
    quote = STUDIES[0]["abstract"]
    records = "\n".join(
        f"extract_record(session_id={session_id!r}, paper={longformer}, agent={agent!r}, "
        f"values={{'method': {{'value': 'Longformer', 'quote': {quote!r}}}, "
        f"'attention': {{'value': {attention!r}, 'quote': {quote!r}}}}})"
        for agent, attention in (("claude", "sparse"), ("gpt", "full"))
    )
    extraction(
        kb, f"form_create(session_id={session_id!r}, name='Data', fields={FIELDS!r})\n{records}"
    )
    state = await ok(url, "get_session", session_id=session_id)
    payload = state["checkpoint"]["payload"]
    assert payload["studies"] == {"included": 2, "complete": 1, "partly": 0, "not_started": 1}
    assert payload["disagreements_unresolved"] == 1
    assert payload["agreement"]["compared"] == 2 and payload["agreement"]["agreed"] == 1
    error = await refused(url, "decide", session_id=session_id, action="approve", checkpoint=3)
    assert error["code"] == "invalid_decision" and error["disagreements"] == 1

    extraction(
        kb,
        f"adjudicate(session_id={session_id!r}, paper={longformer}, field='attention', "
        "value='sparse', reason='windowed attention is sparse', agent='lead')",
    )
    state = await ok(url, "decide", session_id=session_id, action="approve", checkpoint=3)
    assert state["is_complete"] and state["result"]["included"] == 2
    flow = state["prisma"]
    assert prisma_problems(flow) == []
    assert flow["databases"]["assessed"] == 1 and flow["databases"]["not_assessed"] == 1
    assert flow["included"] == 1
    async with mcp_client(url) as client:
        content = (await client.read_resource(f"review://{session_id}/prisma.svg")).contents[0]
    root = ET.fromstring(content.text.encode())  # noqa: S314 - our own SVG
    texts = [text.text or "" for text in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "Reports assessed for eligibility (n = 1)" in texts
    assert "Reports not assessed (n = 1)" in texts
    assert "Studies included in review (n = 1)" in texts
    assert [d["kind"] for d in state["decisions"]] == ["plan", "screen", "extract"]

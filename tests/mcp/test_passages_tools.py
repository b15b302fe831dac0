"""search_passages, find_quote, verify_quote and the page resource over /mcp, through the
MCP SDK's own client, against a real server whose PDFs were attached (and so indexed)
with `manage.py attach_pdf`.

Paper `attention` has 2304.02623v1.pdf, `bert` N18-3011.pdf (two columns), `unfiled`
1111.2011v2.pdf (in no project), `resnet` no PDF.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pymupdf
import pytest
from mcp import MCPError
from mcp_types import TextResourceContents

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
    tool_error,
)
from tests.papers.passages.builders import ACL, LIGATURE_QUOTE
from tests.papers.pdf.builders import EXPOSITORY, QUANTUM, WRAPPED

pytestmark = [pytest.mark.server, pytest.mark.anyio]


@dataclass
class Setup:
    kb: KnowledgeBase
    server: LiveServer

    def paper_id(self, name: str) -> int:
        return int(self.kb.paper(name)["paper_id"])


@pytest.fixture(scope="module")
def setup(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Setup]:
    directory = tmp_path_factory.mktemp("passages-kb")
    with server_database("mcp_passages") as database_url:
        # The index task runs in the attaching process: a broker would hand it to the test
        # run's worker, which has another database.
        env = {
            name: value
            for name, value in base_env(directory, database_url).items()
            if name not in ("REDIS_URL", "CELERY_BROKER_URL", "CELERY_RESULT_BACKEND")
        }
        data = json.loads(run(env, str(SEED_SCRIPT)).strip().splitlines()[-1])
        kb = KnowledgeBase(directory, env, data)
        for name, path in (("attention", EXPOSITORY), ("bert", ACL), ("unfiled", QUANTUM)):
            run(env, "manage.py", "attach_pdf", data["papers"][name]["citekey"], str(path))
        with running_server(kb) as server:
            yield Setup(kb, server)


async def call(setup: Setup, tool: str, arguments: dict[str, Any]) -> Any:
    async with mcp_client(setup.server.mcp_url) as client:
        return await client.call_tool(tool, arguments)


async def test_passage_tools_are_listed_in_the_pdf_set(setup: Setup) -> None:
    async with mcp_client(setup.server.mcp_url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    assert {"search_passages", "find_quote", "verify_quote"} <= set(tools)
    assert tools["search_passages"].annotations.read_only_hint is True  # type: ignore[union-attr]
    assert tools["find_quote"].annotations.read_only_hint is False  # type: ignore[union-attr]
    assert "highlight" in tools["verify_quote"].input_schema["properties"]


async def test_search_passages_returns_the_page_and_agrees_with_the_service(
    setup: Setup,
) -> None:
    arguments = {"query": "property graph with directed edges", "limit": 3}
    answer = tool_data(await call(setup, "search_passages", arguments))
    [first, *_] = answer["hits"]
    assert first["paper"]["paper_id"] == setup.paper_id("bert") and first["page"] == 2
    assert "**graph**" in first["snippet"] and len(first["position"]) == 4
    # The service the benchmark measures, run against the server's database, agrees.
    code = (
        "import json; from mcp_endpoint.tools.passages import passages_search; "
        "print(passages_search(query='property graph with directed edges', paper_ids=None, "
        "project_id=None, limit=3).model_dump_json())"
    )
    service = json.loads(run(setup.kb.env, "manage.py", "shell", "-c", code).splitlines()[-1])
    assert service == answer


async def test_search_passages_in_a_project_leaves_other_papers_out(setup: Setup) -> None:
    query = {"query": "quantum criticality Bethe lattice connectivity", "limit": 5}
    everywhere = tool_data(await call(setup, "search_passages", query))
    assert everywhere["hits"][0]["paper"]["paper_id"] == setup.paper_id("unfiled")
    nlp = setup.kb.data["projects"]["nlp"]
    scoped = tool_data(await call(setup, "search_passages", {**query, "project_id": nlp}))
    assert setup.paper_id("unfiled") not in {h["paper"]["paper_id"] for h in scoped["hits"]}


async def test_a_quote_across_a_line_break_is_found_on_its_page(setup: Setup) -> None:
    quote = WRAPPED.replace("new technology", "new tech-\nnology")
    answer = tool_data(await call(setup, "find_quote", {"text": quote}))
    assert answer["status"] == "found" and answer["similarity"] == 1.0
    assert answer["paper"]["paper_id"] == setup.paper_id("attention") and answer["page"] == 1
    assert len(answer["rects"]) == 3
    # The service the benchmark measures, run against the server's database, agrees.
    code = (
        "from mcp_endpoint.tools.passages import quote_answer; "
        f"print(quote_answer(text={quote!r}, paper_ids=None).model_dump_json(exclude_none=True))"
    )
    service = json.loads(run(setup.kb.env, "manage.py", "shell", "-c", code).splitlines()[-1])
    assert service == answer


async def test_the_page_find_quote_gives_is_the_locator_of_the_in_text_citation(
    setup: Setup,
) -> None:
    found = tool_data(await call(setup, "find_quote", {"text": WRAPPED}))
    citekey = setup.kb.paper("attention")["citekey"]
    arguments = {"paper_ids": [citekey], "style": "apa", "locators": {citekey: str(found["page"])}}
    cited = tool_data(await call(setup, "format_citations", arguments))
    assert cited["citation"] == "(Vaswani & Shazeer, 2017, p. 1)"


async def test_a_made_up_quote_is_not_found(setup: Setup) -> None:
    made_up = "Transformers were first proposed to model the migration of monarch butterflies."
    answer = tool_data(await call(setup, "find_quote", {"text": made_up}))
    assert answer["status"] == "not_found" and "matched_text" not in answer


async def test_verify_quote_finds_a_quote_with_changed_words_as_approximate(
    setup: Setup,
) -> None:
    changed = LIGATURE_QUOTE.replace("property graph", "labelled graph")
    answer = tool_data(
        await call(
            setup, "verify_quote", {"paper_id": setup.paper_id("bert"), "text": changed, "page": 3}
        )
    )
    assert (answer["status"], answer["page"]) == ("approximate", 2)
    assert "property graph" in answer["closest_text"] and 0.7 <= answer["similarity"] < 1


async def test_verify_quote_on_a_paper_without_a_pdf_is_refused(setup: Setup) -> None:
    result = await call(
        setup, "verify_quote", {"paper_id": setup.paper_id("resnet"), "text": "Deeper networks"}
    )
    assert tool_error(result)["code"] == "pdf_not_available"


async def test_a_highlight_from_find_quote_is_listed_and_in_the_annotated_pdf(
    setup: Setup,
) -> None:
    paper_id = setup.paper_id("bert")
    answer = tool_data(
        await call(
            setup,
            "find_quote",
            {"text": LIGATURE_QUOTE, "paper_ids": [paper_id], "highlight": True},
        )
    )
    assert answer["status"] == "found" and answer["page"] == 2
    annotation_id = answer["highlight"]["annotation_id"]
    listed = tool_data(await call(setup, "list_annotations", {"paper_id": paper_id, "page": 2}))
    [record] = [a for a in listed["annotations"] if a["annotation_id"] == annotation_id]
    assert record["color_name"] == "positive" and record["rects"] == answer["rects"]
    # The annotated PDF as a user exports it (manage.py export_annotations --format pdf).
    exported = setup.kb.directory / "exports" / f"find-quote-{annotation_id}.pdf"
    run(setup.kb.env, "manage.py", "export_annotations", str(paper_id), "--format", "pdf",
        "-o", str(exported))  # fmt: skip
    with pymupdf.open(exported) as document:
        page = document[1]
        drawn = {a.info["id"]: (a.type[1], page.get_textbox(a.rect)) for a in page.annots()}
    kind, under = drawn[f"research-mcp-{annotation_id}"]
    assert kind == "Highlight" and "property graph" in under


async def test_a_search_hit_goes_straight_to_create_highlight(setup: Setup) -> None:
    paper_id = setup.paper_id("unfiled")
    answer = tool_data(
        await call(
            setup,
            "search_passages",
            {"query": "ordered phase", "paper_ids": [paper_id], "limit": 1},
        )
    )
    [hit] = answer["hits"]
    created = tool_data(
        await call(
            setup,
            "create_highlight",
            {"paper_id": paper_id, "page": hit["page"], "text": hit["snippet"]},
        )
    )
    assert created["page"] == hit["page"] and created["kind"] == "highlight"


async def test_the_page_resource_gives_passages_with_line_boxes(setup: Setup) -> None:
    paper_id = setup.paper_id("bert")
    async with mcp_client(setup.server.mcp_url) as client:
        [content] = (await client.read_resource(f"paper://{paper_id}/passages?page=2")).contents
        assert isinstance(content, TextResourceContents)
        page = json.loads(content.text)
        with pytest.raises(MCPError) as raised:
            await client.read_resource(f"paper://{paper_id}/passages?page=99")
    assert (page["paper_id"], page["page"], page["total_pages"]) == (paper_id, 2, 8)
    orders = [p["order"] for p in page["passages"]]
    assert orders == sorted(orders) and orders[0] == 1
    assert any("property graph" in p["text"] for p in page["passages"])
    assert all(len(rect) == 4 for p in page["passages"] for rect in p["rects"])
    assert raised.value.error.code == -32602 and "1-8" in raised.value.error.message

"""`format_citations` over /mcp with the SDK's own client: references and in-text
citations with page locators in a CSL style, papers named by citekey or paper_id, and the
errors an agent gets for an unknown style or paper; APA, Chicago author-date, IEEE and
Vancouver for a paper with 22 authors, one with no year and a corporate author give the
reference output of tests/papers/citations/test_styles.py (checked against citeproc-js,
docs/CITATIONS.md)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from mcp import MCPError

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
from tests.papers.citations.builders import EXPECTED

pytestmark = [pytest.mark.server, pytest.mark.anyio]


async def test_format_citations_is_listed_read_only(library_server: LiveServer) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        tools = {t.name: t for t in (await client.list_tools()).tools}
    tool = tools["format_citations"]
    assert tool.annotations.read_only_hint is True
    properties = tool.input_schema["properties"]
    assert set(properties) == {"paper_ids", "project_id", "style", "locale", "locators", "format"}
    assert properties["paper_ids"]["maxItems"] == 100


async def test_apa_references_and_in_text_citations_with_a_page(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    attention, bert = knowledge_base.paper("attention"), knowledge_base.paper("bert")
    arguments = {
        "paper_ids": [attention["citekey"], bert["paper_id"]],
        "style": "apa",
        "locators": {attention["citekey"]: "5"},
    }
    async with mcp_client(library_server.mcp_url) as client:
        answer = tool_data(await client.call_tool("format_citations", arguments))
    assert answer["style"] == "apa"
    assert answer["locale"] == "en-US"
    assert answer["entries"] == [
        {
            "paper_id": bert["paper_id"],
            "citekey": bert["citekey"],
            "reference": "Devlin, J., & Chang, M.-W. (2019). BERT: Pre-training of Deep "
            "Bidirectional Transformers. NAACL.",
            "in_text": "(Devlin & Chang, 2019)",
        },
        {
            "paper_id": attention["paper_id"],
            "citekey": attention["citekey"],
            "reference": "Vaswani, A., & Shazeer, N. (2017). Attention Is All You Need. "
            "NeurIPS. https://doi.org/10.5555/3295222.3295349",
            "in_text": "(Vaswani & Shazeer, 2017, p. 5)",
        },
    ]
    assert answer["citation"] == "(Devlin & Chang, 2019; Vaswani & Shazeer, 2017, p. 5)"
    assert "format" not in answer


async def test_numeric_styles_number_the_papers_in_the_order_given(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    attention, bert = knowledge_base.paper("attention"), knowledge_base.paper("bert")
    arguments = {"paper_ids": [attention["paper_id"], bert["citekey"]], "style": "ieee",
                 "locators": {bert["citekey"]: "7"}, "format": "html"}  # fmt: skip
    async with mcp_client(library_server.mcp_url) as client:
        answer = tool_data(await client.call_tool("format_citations", arguments))
    assert [e["in_text"] for e in answer["entries"]] == ["[1]", "[2, p. 7]"]
    assert answer["entries"][0]["reference"] == (
        "[1] A. Vaswani and N. Shazeer, “Attention Is All You Need,” <i>NeurIPS</i>, 2017, "
        "doi: 10.5555/3295222.3295349."
    )


async def test_an_unknown_style_is_32602_with_close_matches(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    arguments = {"paper_ids": [knowledge_base.paper("attention")["paper_id"]], "style": "chicgo"}
    async with mcp_client(library_server.mcp_url) as client:
        with pytest.raises(MCPError) as raised:
            await client.call_tool("format_citations", arguments)
    assert raised.value.error.code == -32602
    assert "chicago" in raised.value.error.data["suggestions"]
    assert "Did you mean" in raised.value.error.message


async def test_an_unknown_paper_is_a_not_found_result(library_server: LiveServer) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        result = await client.call_tool("format_citations", {"paper_ids": ["nobody2099ghost"]})
    error = tool_error(result)
    assert error["code"] == "not_found"
    assert error["paper_ids"] == ["nobody2099ghost"]


# The three papers of the style tests (tests/papers/citations/builders.py), added to a
# knowledge base of the server's own through paper_upsert; their citekeys by name.
ADD_CITED = (
    "import json; from papers.schemas import PaperRecord; "
    "from papers.services import paper_upsert; "
    "from tests.papers.citations.builders import CITED; "
    "print(json.dumps({which: paper_upsert(record=PaperRecord.build(**values))[0].citekey "
    "for which, values in CITED.items()}))"
)


@pytest.fixture(scope="module")
def cited(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, dict[str, str]]]:
    directory: Path = tmp_path_factory.mktemp("cite-kb")
    with server_database("mcp_cite") as database_url:
        env = base_env(directory, database_url)
        data = json.loads(run(env, str(SEED_SCRIPT)).strip().splitlines()[-1])
        citekeys = json.loads(run(env, "manage.py", "shell", "-c", ADD_CITED).splitlines()[-1])
        with running_server(KnowledgeBase(directory, env, data)) as server:
            yield server, citekeys


@pytest.mark.parametrize(("style", "which"), list(EXPECTED))
async def test_the_four_styles_match_the_reference_output_over_mcp(
    cited: tuple[LiveServer, dict[str, str]], style: str, which: str
) -> None:
    server, citekeys = cited
    citekey = citekeys[which]
    arguments = {"paper_ids": [citekey], "style": style, "locators": {citekey: "5"}}
    async with mcp_client(server.mcp_url) as client:
        answer = tool_data(await client.call_tool("format_citations", arguments))
    in_text, reference = EXPECTED[style, which]
    [entry] = answer["entries"]
    assert (entry["citekey"], entry["reference"], entry["in_text"]) == (
        citekey, reference, in_text,
    )  # fmt: skip
    assert answer["citation"] == in_text


async def test_a_project_is_formatted_without_listing_its_papers_first(
    library_server: LiveServer, knowledge_base: KnowledgeBase
) -> None:
    async with mcp_client(library_server.mcp_url) as client:
        by_name = tool_data(
            await client.call_tool("format_citations", {"project_id": "NLP Reading"})
        )
        by_id = tool_data(
            await client.call_tool(
                "format_citations",
                {"project_id": knowledge_base.project("nlp"), "style": "apa"},
            )
        )
        unknown = await client.call_tool("format_citations", {"project_id": "No Such Project"})
        with pytest.raises(MCPError, match="Give paper_ids or a project_id"):
            await client.call_tool("format_citations", {"style": "apa"})
    cited = {entry["paper_id"] for entry in by_name["entries"]}
    assert cited == {knowledge_base.paper(n)["paper_id"] for n in ("attention", "bert")}
    assert by_id["entries"] == by_name["entries"]
    assert by_name["citation"] == "(Devlin & Chang, 2019; Vaswani & Shazeer, 2017)"
    assert "No Such Project" in tool_error(unknown)["message"]

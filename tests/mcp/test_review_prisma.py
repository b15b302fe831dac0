"""Version-aware de-duplication and PRISMA 2020 counts over HTTP /mcp with the SDK client
(issue 23): a preprint found by one engine and its published version found by another are
one candidate, screened once; the counts add up; the diagram is a resource; a wrong group
is split back out with split_duplicate. The engines are plugins answering from a local
replay server; on PostgreSQL + Redis the steps run on a worker of the test's own
(tests/mcp/test_review_tools.py, `review_backend`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from typing import Any

import pytest

from projects.review.prisma import prisma_problems
from tests.engines.plugins import write_plugin
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
    tool_error,
)

pytestmark = [pytest.mark.server, pytest.mark.anyio]

PREPRINTS = "pre_src"  # an arXiv-like source
JOURNALS = "pub_src"  # an OpenAlex-like source
AUTHORS = ["Iz Beltagy", "Matthew E. Peters", "Arman Cohan"]
PREPRINT = {
    "title": "Longformer: The Long-Document Transformer",
    "authors": AUTHORS, "year": 2020, "arxiv_id": "2004.05150",
    "doi": "10.48550/arXiv.2004.05150", "venue": "arXiv",
    "abstract": "Transformer-based models cannot process long sequences; Longformer can.",
}  # fmt: skip
PUBLISHED = {
    "title": "Longformer: the long-document transformer (extended version)",
    "authors": AUTHORS, "year": 2021, "doi": "10.5555/longformer.2021",
    "venue": "Journal of Long Documents", "identifiers": {"openalex": "W3015453090"},
    "abstract": "Transformer-based models cannot process long sequences; Longformer can.",
}  # fmt: skip
# Found by both sources under one DOI: the library's own de-duplication (one paper).
BIGBIRD = {
    "title": "Big Bird: Transformers for Longer Sequences", "authors": ["Manzil Zaheer"],
    "year": 2020, "doi": "10.5555/bigbird", "abstract": "Sparse attention for long inputs.",
}  # fmt: skip
# Similar titles, different works: never grouped.
PART_1 = {
    "title": "Long-document transformers, Part 1", "authors": AUTHORS, "year": 2021,
    "doi": "10.5555/part1", "abstract": "Part one of two.",
}  # fmt: skip
PART_2 = {**PART_1, "title": "Long-document transformers, Part 2", "doi": "10.5555/part2"}
OTHER_AUTHOR = {**PREPRINT, "authors": ["Someone Else"], "arxiv_id": "2004.99999",
                "doi": "10.48550/arXiv.2004.99999"}  # fmt: skip
QUESTION = "How do transformers handle long documents?"


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LiveServer]:
    source = ReplayServer().start()
    source.add(f"/{PREPRINTS}/search", Reply(200, [PREPRINT, BIGBIRD, PART_1, OTHER_AUTHOR]))
    source.add(f"/{JOURNALS}/search", Reply(200, [PUBLISHED, BIGBIRD, PART_2]))
    directory = tmp_path_factory.mktemp("prisma-kb")
    for engine in (PREPRINTS, JOURNALS):
        write_plugin(directory / "engines", engine, f"{source.url}/{engine}", timeout=30)
    try:
        with server_database("mcpprisma") as database_url:
            env = base_env(directory, database_url)
            env.update(ENGINES_ENABLED=f"local,{PREPRINTS},{JOURNALS}", EMBEDDINGS_ENABLED="false")
            kb = KnowledgeBase(directory, env)
            with review_backend(kb) as (extra, _), running_server(kb, env=extra) as live:
                yield live
    finally:
        source.stop()


async def ok(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    async with mcp_client(url) as client:
        result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content[0].text
    return tool_data(result)


async def refused(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    async with mcp_client(url) as client:
        result = await client.call_tool(tool, arguments)
    assert result.is_error, result.content[0].text
    return tool_error(result)


async def diagram(url: str, session_id: str) -> list[str]:
    async with mcp_client(url) as client:
        content = (await client.read_resource(f"review://{session_id}/prisma.svg")).contents[0]
    assert content.mime_type == "image/svg+xml"
    root = ET.fromstring(content.text.encode())  # noqa: S314 - our own SVG
    return [text.text or "" for text in root.iter("{http://www.w3.org/2000/svg}text")]


async def test_a_preprint_and_its_publication_from_two_engines_are_screened_once(
    server: LiveServer,
) -> None:
    url = server.mcp_url
    state = await ok(url, "start_review", query=QUESTION, max_results=20)
    session_id = state["session_id"]
    edit = {"engines": [PREPRINTS, JOURNALS], "queries": ["long documents"]}
    state = await ok(url, "decide", session_id=session_id, action="edit", data=edit,
                     checkpoint=1)  # fmt: skip
    assert state["current_checkpoint_kind"] == "screen", state
    items = {item["title"]: item for item in state["checkpoint"]["candidates"]["items"]}
    # 7 records: BigBird twice (one paper), the preprint grouped under its publication.
    assert sorted(items) == sorted(
        [PUBLISHED["title"], BIGBIRD["title"], PART_1["title"], PART_2["title"],
         OTHER_AUTHOR["title"]]
    )  # fmt: skip
    published = items[PUBLISHED["title"]]
    assert published["engines"] == [JOURNALS]
    [version] = published["versions"]
    assert version["engines"] == [PREPRINTS] and version["source"] == "search"
    assert version["match"].startswith(("same title", "subtitle", "title variant"))
    assert sorted(items[BIGBIRD["title"]]["engines"]) == sorted([PREPRINTS, JOURNALS])
    for title in (PART_1["title"], PART_2["title"], OTHER_AUTHOR["title"]):
        assert "versions" not in items[title]
    counts, prisma = state["counts"], state["prisma"]
    assert counts["identified"] == {PREPRINTS: 4, JOURNALS: 3}
    assert counts["duplicates_removed"] == 2  # BigBird's second record, the preprint
    assert counts["screened"] == 5
    assert prisma_problems(prisma) == []
    assert prisma["databases"]["versions_grouped"] == 1
    texts = await diagram(url, session_id)
    for line in (f"{PREPRINTS} (n = 4)", f"{JOURNALS} (n = 3)", "Total (n = 7)",
                 "Duplicate records removed (n = 2)", "Records screened (n = 5)",
                 "Awaiting a decision (n = 5)"):  # fmt: skip
        assert line in texts, (line, texts)

    # Screening shows the work once.
    batch = await ok(url, "screen_next", session_id=session_id, limit=20)
    assert version["paper_id"] not in {record["paper_id"] for record in batch["records"]}
    assert batch["total"] == 5

    # Split the "Someone Else" record? It was never grouped: refused, naming it.
    other = items[OTHER_AUTHOR["title"]]["paper_id"]
    error = await refused(url, "split_duplicate", session_id=session_id, paper=str(other))
    assert error["code"] == "invalid_decision"

    # Include the publication; the preprint is a second report of the same study.
    decisions = [
        {"paper": item["paper_id"], "decision": "include" if title == PUBLISHED["title"]
         else "exclude", "reason": "not about long documents"}
        for title, item in items.items()
    ]  # fmt: skip
    await ok(url, "screen_decide", session_id=session_id, decisions=decisions)
    state = await ok(url, "decide", session_id=session_id, action="approve", checkpoint=2)
    assert state["is_complete"], state
    prisma = state["prisma"]
    assert prisma_problems(prisma) == []
    assert (prisma["included"], prisma["reports"]) == (1, 2)
    databases = prisma["databases"]
    assert databases["excluded_reasons"] == {"not about long documents": 4}
    assert (databases["sought"], databases["not_retrieved"]) == (1, 1)
    texts = await diagram(url, session_id)
    assert "Studies included in review (n = 1)" in texts
    assert "Reports of included studies (n = 2)" in texts
    error = await refused(url, "split_duplicate", session_id=session_id,
                          paper=str(version["paper_id"]))  # fmt: skip
    assert error["code"] == "session_complete"


async def test_a_wrong_group_is_split_back_out_over_mcp(server: LiveServer) -> None:
    url = server.mcp_url
    state = await ok(url, "start_review", query=QUESTION, max_results=20)
    session_id = state["session_id"]
    edit = {"engines": [PREPRINTS, JOURNALS], "queries": ["long documents"]}
    state = await ok(url, "decide", session_id=session_id, action="edit", data=edit,
                     checkpoint=1)  # fmt: skip
    items = {item["title"]: item for item in state["checkpoint"]["candidates"]["items"]}
    [version] = items[PUBLISHED["title"]]["versions"]
    split = await ok(url, "split_duplicate", session_id=session_id,
                     paper=str(version["paper_id"]))  # fmt: skip
    assert split["was_grouped_with"] == items[PUBLISHED["title"]]["paper_id"]
    state = await ok(url, "get_session", session_id=session_id, limit=20)
    counts = state["counts"]
    assert (counts["duplicates_removed"], counts["screened"], counts["pending"]) == (1, 6, 6)
    assert prisma_problems(state["prisma"]) == []
    assert state["prisma"]["databases"]["versions_grouped"] == 0
    shown = {item["paper_id"] for item in state["checkpoint"]["candidates"]["items"]}
    assert version["paper_id"] in shown
    batch = await ok(url, "screen_next", session_id=session_id, limit=20)
    assert version["paper_id"] in {record["paper_id"] for record in batch["records"]}
    # Unknown sessions: not_found, for the tool and the diagram alike.
    missing = "9c1b2f0e-0000-4000-8000-000000000000"
    error = await refused(url, "split_duplicate", session_id=missing, paper="1")
    assert error["code"] == "not_found"


async def test_a_reviews_search_log_is_a_resource(server: LiveServer) -> None:
    """review://{id}/search-log is listed and read over /mcp, not only callable in-process."""
    url = server.mcp_url
    state = await ok(url, "start_review", query=QUESTION, max_results=20)
    session_id = state["session_id"]
    edit = {"engines": [PREPRINTS], "queries": ["long documents"]}
    await ok(url, "decide", session_id=session_id, action="edit", data=edit, checkpoint=1)
    async with mcp_client(url) as client:
        templates = (await client.list_resource_templates()).resource_templates
        content = (await client.read_resource(f"review://{session_id}/search-log")).contents[0]
    assert "review://{session_id}/search-log" in {t.uri_template for t in templates}
    assert content.mime_type == "application/json"
    log = json.loads(content.text)
    assert log["session_id"] == session_id
    [search] = log["searches"]
    assert (search["source"], search["query"], search["status"]) == (
        PREPRINTS, "long documents", "ok",
    )  # fmt: skip

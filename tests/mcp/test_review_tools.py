"""Literature reviews over HTTP /mcp with the SDK client, against real server processes.

The engines are plugins in the knowledge base calling a local replay server. On the
embedded default the servers run the review's steps in-process. On PostgreSQL + Redis the
steps run on a Celery worker started here, on a queue of its own (a settings module
written for these tests), so that it reads the servers' database and so that a test can
kill it: the suite's shared workers are never touched.
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from mcp import MCPError

from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply, Request
from tests.mcp.builders import BROKER, review_backend
from tests.mcp.conftest import (
    PYTHON,
    ROOT,
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

pytestmark = [pytest.mark.server, pytest.mark.anyio]

needs_worker = pytest.mark.skipif(not BROKER, reason="needs Redis and PostgreSQL (make test-pg)")
FAST, SLOW = "rv_fast", "rv_slow"
SLOW_SECONDS = 3.0
PARALLEL = 10

LONGFORMER = {
    "title": "Longformer: The Long-Document Transformer",
    "authors": ["Iz Beltagy"],
    "year": 2020,
    "arxiv_id": "2004.05150",
    "doi": "10.48550/arxiv.2004.05150",
    "abstract": "Transformer-based models cannot process long sequences; Longformer can.",
}
BIGBIRD = {
    "title": "Big Bird: Transformers for Longer Sequences",
    "authors": ["Manzil Zaheer"],
    "year": 2020,
    "doi": "10.5555/bigbird.2020",
    "abstract": "Sparse attention reduces the quadratic dependency to linear.",
}
HIERARCHICAL = {
    "title": "Hierarchical Transformers for Long Document Classification",
    "authors": ["Raghavendra Pappagari"],
    "year": 2019,
    "doi": "10.1109/asru46091.2019.9003958",
    "abstract": "BERT on long documents, segment by segment.",
}
CITING = {
    "title": "Efficient Long-Range Transformers: A Survey",
    "authors": ["Yi Tay"],
    "year": 2022,
    "doi": "10.1145/3530811",
    "abstract": "A survey of efficient transformers.",
}
SLOW_ONLY = {
    "title": "Slow Engine Exclusive: Memory Transformers",
    "authors": ["Slow Author"],
    "year": 2021,
    "doi": "10.9999/slow.2021",
    "abstract": "Found only by the slow engine.",
}
SHARED = {
    "title": "A Shared Survey Found By Every Review", "authors": ["Sam Shared"], "year": 2021,
    "doi": "10.9999/shared.survey", "abstract": "Every parallel review finds this paper.",
}  # fmt: skip


def topic_papers(topic: str) -> list[dict[str, Any]]:
    """Three papers only the search for `topic` finds."""
    return [
        {"title": f"Paper {letter} on {topic}", "authors": [f"Author {letter}{topic}"],
         "year": 2020 + index, "doi": f"10.9999/{topic}.{letter}",
         "abstract": f"Abstract {letter} of {topic}."}
        for index, letter in enumerate("abc")
    ]  # fmt: skip


def fast_search(request: Request) -> Reply:
    query = request.query.get("q", [""])[0]
    if query.startswith("topic"):
        return Reply(200, [*topic_papers(query), SHARED])
    return Reply(200, [LONGFORMER, BIGBIRD, HIERARCHICAL])


@pytest.fixture(scope="module")
def source() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    server.add(f"/{FAST}/search", fast_search)
    server.add(f"/{FAST}/citing", Reply(200, []))  # routes match newest first
    server.add(f"/{FAST}/citing", Reply(200, [CITING]), query={"doi": LONGFORMER["doi"]})
    server.add(f"/{SLOW}/search", Reply(200, [SLOW_ONLY, LONGFORMER], delay=SLOW_SECONDS))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def review_kb(
    tmp_path_factory: pytest.TempPathFactory, source: ReplayServer
) -> Iterator[KnowledgeBase]:
    directory = tmp_path_factory.mktemp("review-kb")
    for engine_id in (FAST, SLOW):
        write_plugin(directory / "engines", engine_id, f"{source.url}/{engine_id}", timeout=30)
    with server_database("mcprev") as database_url:
        env = base_env(directory, database_url)
        env.update(ENGINES_ENABLED=f"{FAST},{SLOW}", EMBEDDINGS_ENABLED="false")
        seeded = subprocess.run(
            [PYTHON, str(SEED_SCRIPT)], env=env, cwd=ROOT, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        yield KnowledgeBase(directory, env, json.loads(seeded.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def review_env(review_kb: KnowledgeBase) -> Iterator[dict[str, str]]:
    """The servers' extra environment; with a broker, their worker is running meanwhile."""
    with review_backend(review_kb) as (env, _):
        yield env


@pytest.fixture(scope="module")
def review_server(review_kb: KnowledgeBase, review_env: dict[str, str]) -> Iterator[LiveServer]:
    with running_server(review_kb, env=review_env) as server:
        yield server


async def call(url: str, tool: str, **arguments: Any) -> Any:
    """One call on a connection of its own: /mcp keeps nothing between calls."""
    async with mcp_client(url) as client:
        result = await client.call_tool(tool, arguments)
    return result


async def state_of(url: str, tool: str, **arguments: Any) -> dict[str, Any]:
    result = await call(url, tool, **arguments)
    assert not result.is_error, result.content[0].text
    return tool_data(result)


async def until(
    url: str, session_id: str, states: tuple[str, ...], timeout: float = 60
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        state = await state_of(url, "get_session", session_id=session_id)
        if state["state"] in states or time.monotonic() > deadline:
            return state
        await asyncio.sleep(0.5)


# --- one review, end to end ----------------------------------------------------------------------


async def test_a_review_over_http_from_question_to_export(review_server: LiveServer) -> None:
    url = review_server.mcp_url
    async with mcp_client(url) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert {"start_review", "decide", "get_session", "export_results", "cleanup_review"} <= set(
        listed
    )
    assert listed["start_review"].title and listed["get_session"].annotations.read_only_hint

    state = await state_of(
        url,
        "start_review",
        query="How do transformers handle long documents?",
        domain="cs",
        max_results=10,
    )
    assert state["state"] == "waiting" and state["current_checkpoint_kind"] == "plan"
    assert state["checkpoint"]["payload"]["plan"]["engines"] == ["local", FAST, SLOW]
    session_id = state["session_id"]
    # A phrase: the library's own papers mention transformers, but none this phrase.
    edit = {
        "engines": ["local", FAST],
        "queries": ['"long document transformer"'],
        "snowball": True,
    }
    state = await state_of(
        url, "decide", session_id=session_id, action="edit", data=edit, checkpoint=1
    )
    assert state["current_checkpoint_kind"] == "screen"
    page = state["checkpoint"]["candidates"]
    assert [item["title"] for item in page["items"]] == [
        LONGFORMER["title"], BIGBIRD["title"], HIERARCHICAL["title"],
    ]  # fmt: skip
    assert page["items"][0]["abstract"] == LONGFORMER["abstract"]
    assert state["counts"]["identified"] == {"local": 0, FAST: 3}
    second = await state_of(url, "get_session", session_id=session_id, candidates_offset=1, limit=1)
    assert [i["title"] for i in second["checkpoint"]["candidates"]["items"]] == [BIGBIRD["title"]]

    hierarchical = page["items"][2]["paper_id"]
    exclude = {
        "exclude": [hierarchical],
        "reasons": {str(hierarchical): "classification, not modelling"},
    }
    state = await state_of(
        url, "decide", session_id=session_id, action="edit", data=exclude, checkpoint=2
    )
    assert state["current_checkpoint_kind"] == "expand"
    assert [i["title"] for i in state["checkpoint"]["candidates"]["items"]] == [CITING["title"]]
    state = await state_of(
        url, "decide", session_id=session_id, action="approve", note="good", checkpoint=3
    )
    assert state["is_complete"] and state["iteration"] == 3
    counts = state["counts"]
    assert (counts["screened"], counts["excluded"], counts["included"]) == (3, 1, 2)
    assert counts["excluded_reasons"] == {"classification, not modelling": 1}
    assert counts["citation_search"]["included"] == 1 and counts["included_total"] == 3

    for fmt, marker in (("json", '"papers"'), ("bibtex", "@"), ("markdown", "## PRISMA counts"),
                        ("csv", "paper_id,"), ("ris", "TY  - ")):  # fmt: skip
        exported = await state_of(url, "export_results", session_id=session_id, format=fmt)
        assert exported["count"] == 3 and marker in exported["content"], fmt
    listed_papers = await state_of(url, "list_project_papers", project_id=state["project_id"])
    assert {p["title"] for p in listed_papers["papers"]} == {
        LONGFORMER["title"], BIGBIRD["title"], CITING["title"],
    }  # fmt: skip

    complete = await call(url, "decide", session_id=session_id, action="approve")
    assert tool_error(complete)["code"] == "session_complete"


async def test_errors_come_back_as_is_error_results(review_server: LiveServer) -> None:
    url = review_server.mcp_url
    unknown = await call(url, "get_session", session_id=str(uuid.uuid4()))
    assert tool_error(unknown)["code"] == "not_found"
    state = await state_of(url, "start_review", query="long document transformers")
    session_id = state["session_id"]
    async with mcp_client(url) as client:
        with pytest.raises(MCPError) as invalid:
            await client.call_tool("decide", {"session_id": session_id, "action": "perhaps"})
    # A closed set is an enum in the schema: an unknown action never reaches the review.
    assert invalid.value.error.code == -32602 and "approve" in invalid.value.error.message
    early = await call(url, "export_results", session_id=session_id, format="bibtex")
    assert tool_error(early)["code"] == "session_not_complete"
    removed = await state_of(url, "cleanup_review", session_id=session_id)
    assert removed["removed"] is True
    gone = await call(url, "get_session", session_id=session_id)
    assert tool_error(gone)["code"] == "not_found"


async def test_calls_of_one_review_may_reach_different_server_processes(
    review_kb: KnowledgeBase, review_env: dict[str, str], review_server: LiveServer
) -> None:
    with running_server(review_kb, env=review_env) as other:
        first, second = review_server.mcp_url, other.mcp_url
        state = await state_of(first, "start_review", query="long documents")
        session_id = state["session_id"]
        data = {"engines": ["local", FAST], "queries": ["transformer"]}
        state = await state_of(second, "decide", session_id=session_id, action="edit", data=data)
        assert state["current_checkpoint_kind"] == "screen"
        state = await state_of(first, "decide", session_id=session_id, action="approve")
        assert state["is_complete"]
        seen = await state_of(second, "get_session", session_id=session_id)
        assert seen["is_complete"] and [d["action"] for d in seen["decisions"]] == [
            "edit",
            "approve",
        ]


# --- ten reviews at once -------------------------------------------------------------------


async def test_ten_reviews_in_parallel_do_not_interfere(review_server: LiveServer) -> None:
    url = review_server.mcp_url

    async def review(number: int) -> dict[str, Any]:
        topic = f"topic{number}"
        state = await state_of(
            url, "start_review", query=f"What is known about {topic}?", max_results=10
        )
        data = {"engines": ["local", FAST], "queries": [topic]}
        state = await state_of(
            url, "decide", session_id=state["session_id"], action="edit", data=data
        )
        if state["state"] == "running":
            state = await until(url, state["session_id"], ("waiting", "failed"))
        assert state["current_checkpoint_kind"] == "screen", state
        by_title = {
            item["title"]: item["paper_id"] for item in state["checkpoint"]["candidates"]["items"]
        }
        dropped = topic_papers(topic)[number % 3]["title"]
        decision = {
            "exclude": [by_title[dropped]],
            "reasons": {str(by_title[dropped]): f"reason {number}"},
        }
        return await state_of(
            url, "decide", session_id=state["session_id"], action="edit", data=decision
        )

    results = await asyncio.gather(*(review(number) for number in range(PARALLEL)))
    for number, state in enumerate(results):
        topic = f"topic{number}"
        assert state["is_complete"], state
        counts = state["counts"]
        assert counts["identified"] == {"local": 0, FAST: 4}
        assert (
            counts["duplicates_removed"],
            counts["screened"],
            counts["excluded"],
            counts["included"],
        ) == (0, 4, 1, 3)
        assert counts["excluded_reasons"] == {f"reason {number}": 1}
        kept = {p["title"] for p in topic_papers(topic)} - {
            topic_papers(topic)[number % 3]["title"]
        }
        listed = await state_of(url, "list_project_papers", project_id=state["project_id"])
        assert {p["title"] for p in listed["papers"]} == kept | {SHARED["title"]}
    # The paper every review found is one paper of the library, in every project.
    found = await state_of(url, "search_papers", query='"Shared Survey Found"', engines="local")
    assert [r["title"] for r in found["results"]].count(SHARED["title"]) == 1
    assert len({s["project_id"] for s in results}) == PARALLEL


# --- a worker killed mid-search --------------------------------------------------------------


@needs_worker
async def test_a_review_survives_its_worker_being_killed_mid_search(
    review_kb: KnowledgeBase, source: ReplayServer
) -> None:
    with review_backend(review_kb, start_worker=False) as (env, worker):
        assert worker is not None
        with running_server(review_kb, env=env) as server:
            url = server.mcp_url
            # No worker yet: the bounded wait returns the review still running...
            state = await state_of(url, "start_review", query="memory transformers", wait_seconds=1)
            assert state["state"] == "running" and state["stage"] == "plan"
            session_id = state["session_id"]
            worker.start()  # ...and the queued step is done once a worker comes.
            state = await until(url, session_id, ("waiting",))
            assert state["current_checkpoint_kind"] == "plan"

            slow_calls = lambda: sum(r.path == f"/{SLOW}/search" for r in source.requests)  # noqa: E731
            before = slow_calls()
            data = {"engines": ["local", FAST, SLOW], "queries": ['"memory transformers"']}
            state = await state_of(
                url, "decide", session_id=session_id, action="edit", data=data, wait_seconds=0
            )
            assert state["state"] == "running" and state["stage"] == "search"
            deadline = time.monotonic() + 20
            while slow_calls() == before:  # the step is waiting on the slow engine
                assert time.monotonic() < deadline, "the search never reached the slow engine"
                await asyncio.sleep(0.05)
            worker.kill()
            busy = await call(url, "decide", session_id=session_id, action="approve")
            assert tool_error(busy)["code"] == "no_pending_checkpoint"
            worker.start()
            state = await until(url, session_id, ("waiting", "failed"), timeout=90)
            assert state["current_checkpoint_kind"] == "screen", state
            assert slow_calls() == before + 2  # the killed run's call, and the rerun's

            counts = state["counts"]
            assert counts["identified"] == {"local": 0, FAST: 3, SLOW: 2}  # once, not twice
            assert counts["duplicates_removed"] == 1  # Longformer, found by both engines
            titles = [item["title"] for item in state["checkpoint"]["candidates"]["items"]]
            assert sorted(titles) == sorted(
                [LONGFORMER["title"], BIGBIRD["title"], HIERARCHICAL["title"], SLOW_ONLY["title"]]
            )
            state = await state_of(url, "decide", session_id=session_id, action="approve")
            assert state["is_complete"] and state["iteration"] == 2
            listed = await state_of(url, "list_project_papers", project_id=state["project_id"])
            assert sorted(p["title"] for p in listed["papers"]) == sorted(titles)
            for title in titles:  # one paper each in the library, however often it was found
                found = await state_of(url, "search_papers", query=f'"{title}"', engines="local")
                assert [r["title"] for r in found["results"]].count(title) == 1
            checkpoints = [d["kind"] for d in state["decisions"]]
            assert checkpoints == ["plan", "screen"]

"""The `watch` tools over /mcp with the SDK client, against a real server whose engine is a
plugin calling a local HTTP server: save a search, run it twice (the second time the source
has one more paper: only that one is reported), the alerts it raised through get_alerts
and alerts://recent, mark_read, delete; and read-only mode, which hides the write tools.

On the PostgreSQL + Redis run the server hands engine calls to the Celery workers, so the
plugin is also written where the workers look (this test run's RESEARCH_DIRECTORY).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.conf import settings
from mcp import MCPError

from mcp_endpoint.registry import build_registry
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply, Request
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

ENGINE = "fake_watch"
DOWN = "fake_watch_down"  # answers 403 to every search: a permanent failure, no retries
FIRST = {"title": "Watching the literature grow", "authors": ["Ada Lovelace"], "year": 2025,
         "arxiv_id": "2501.00001"}  # fmt: skip
SECOND = {"title": "A paper published after the first run", "authors": ["Alan Turing"],
          "year": 2025, "doi": "10.1234/after"}  # fmt: skip
BUCKLING = {"title": "Creep buckling of slender columns", "authors": ["Grace Hopper"],
            "year": 1960, "doi": "10.1234/buckling"}  # fmt: skip


@pytest.fixture(scope="module")
def answers() -> dict[str, list[dict[str, Any]]]:
    return {"search": [FIRST]}


@pytest.fixture(scope="module")
def source(answers: dict[str, list[dict[str, Any]]]) -> Iterator[ReplayServer]:
    server = ReplayServer().start()

    def reply(request: Request) -> Reply:
        return Reply(200, answers["search"])

    server.add(f"/{ENGINE}/search", reply)
    server.add(f"/{DOWN}/search", Reply(403, {"error": "no access"}))
    yield server
    server.stop()


@pytest.fixture(scope="module")
def watch_kb(
    tmp_path_factory: pytest.TempPathFactory, source: ReplayServer
) -> Iterator[KnowledgeBase]:
    directory = tmp_path_factory.mktemp("watch-kb")
    written = [
        write_plugin(folder, engine_id, f"{source.url}/{engine_id}")
        for folder in (directory / "engines", Path(settings.ENGINES_DIR))
        for engine_id in (ENGINE, DOWN)
    ]
    with server_database("mcpwatch") as database_url:
        env = base_env(directory, database_url)
        env["ENGINES_ENABLED"] = f"{ENGINE},{DOWN}"
        seeded = subprocess.run(
            [PYTHON, str(SEED_SCRIPT)], env=env, cwd=ROOT, capture_output=True, text=True,
            timeout=120, check=False,
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        yield KnowledgeBase(directory, env, json.loads(seeded.stdout.strip().splitlines()[-1]))
    for path in written:
        path.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def watch_server(watch_kb: KnowledgeBase) -> Iterator[LiveServer]:
    with running_server(watch_kb) as server:
        yield server


async def test_a_saved_search_run_twice_reports_only_the_new_paper_and_alerts(
    watch_server: LiveServer, watch_kb: KnowledgeBase, answers: dict[str, list[dict[str, Any]]]
) -> None:
    nlp = watch_kb.project("nlp")
    async with mcp_client(watch_server.mcp_url) as client:
        saved = tool_data(
            await client.call_tool(
                "save_search",
                {
                    "name": "Growth",
                    "query": "literature",
                    "engines": [ENGINE],
                    "project_id": nlp,
                    "schedule": "manual",
                },
            )
        )
        first = tool_data(await client.call_tool("run_saved_search", {"name": "growth"}))
        answers["search"] = [SECOND, FIRST]
        second = tool_data(await client.call_tool("run_saved_search", {"name": "Growth"}))
        listed = tool_data(await client.call_tool("list_saved_searches", {}))
        unread = tool_data(await client.call_tool("get_alerts", {"unread": True}))
        marked = tool_data(
            await client.call_tool("get_alerts", {"unread": True, "mark_read": True})
        )
        after = tool_data(await client.call_tool("get_alerts", {"unread": True}))
        recent = (await client.read_resource("alerts://recent")).contents[0].text
        papers = tool_data(await client.call_tool("list_project_papers", {"project_id": nlp}))
        deleted = tool_data(await client.call_tool("delete_saved_search", {"name": "Growth"}))
        gone = await client.call_tool("run_saved_search", {"name": "Growth"})

    assert saved["created"] is True and saved["engines"] == [ENGINE]
    assert [p["title"] for p in first["new"]] == [FIRST["title"]]
    assert first["engines"][ENGINE]["status"] == "ok" and first["status"] == "ok"
    assert [p["title"] for p in second["new"]] == [SECOND["title"]]
    assert second["found"] == 2
    assert listed["saved_searches"][0]["last_run"]["new"] == 1
    titles = [alert["title"] for alert in unread["alerts"]]
    assert titles == ["1 new paper for saved search 'Growth'"] * 2
    assert unread["alerts"][0]["data"]["paper_ids"] == [second["new"][0]["paper_id"]]
    assert len(marked["alerts"]) == 2 and after["alerts"] == []
    assert "new paper for saved search 'Growth'" in recent
    in_project = {paper["title"] for paper in papers["papers"]}
    assert {FIRST["title"], SECOND["title"]} <= in_project
    assert deleted == {"deleted": "Growth"}
    assert tool_error(gone)["code"] == "not_found"


def alerts_of(listed: dict[str, Any], search: str) -> list[dict[str, Any]]:
    return [a for a in listed["alerts"] if a.get("data", {}).get("saved_search") == search]


async def test_a_saved_search_reports_a_library_paper_it_never_reported_before(
    watch_server: LiveServer, answers: dict[str, list[dict[str, Any]]]
) -> None:
    """A library-only search alerts too: a paper that entered the library after the
    search's first run (here kept by a search_papers call, as an import would) is new to
    the search although no engine created it during the run."""
    async with mcp_client(watch_server.mcp_url) as client:
        await client.call_tool(
            "save_search",
            {"name": "Buckling", "query": "creep buckling", "engines": ["local"],
             "schedule": "manual"},
        )  # fmt: skip
        first = tool_data(await client.call_tool("run_saved_search", {"name": "Buckling"}))
        answers["search"] = [BUCKLING]
        kept = tool_data(
            await client.call_tool("search_papers", {"query": "buckling", "engines": [ENGINE]})
        )
        second = tool_data(await client.call_tool("run_saved_search", {"name": "Buckling"}))
        third = tool_data(await client.call_tool("run_saved_search", {"name": "Buckling"}))
        alerts = alerts_of(
            tool_data(await client.call_tool("get_alerts", {"limit": 100})), "Buckling"
        )
        await client.call_tool("delete_saved_search", {"name": "Buckling"})

    assert BUCKLING["title"] not in [p["title"] for p in first["new"]]
    assert [r["title"] for r in kept["results"]] == [BUCKLING["title"]]
    assert second["status"] == "ok" and [p["title"] for p in second["new"]] == [BUCKLING["title"]]
    assert third["new"] == []  # reported once
    reported = [a for a in alerts if a["kind"] == "new_papers" and not a["data"].get("first_run")]
    assert [a["title"] for a in reported] == ["1 new paper for saved search 'Buckling'"]
    assert reported[0]["data"]["paper_ids"] == [second["new"][0]["paper_id"]]


async def test_a_run_where_some_engines_failed_raises_an_alert_naming_them(
    watch_server: LiveServer,
) -> None:
    async with mcp_client(watch_server.mcp_url) as client:
        await client.call_tool(
            "save_search",
            {"name": "Half dark", "query": "literature", "engines": [ENGINE, DOWN],
             "schedule": "manual"},
        )  # fmt: skip
        run = tool_data(await client.call_tool("run_saved_search", {"name": "Half dark"}))
        alerts = alerts_of(
            tool_data(await client.call_tool("get_alerts", {"limit": 100})), "Half dark"
        )
        await client.call_tool("delete_saved_search", {"name": "Half dark"})

    assert run["status"] == "partial" and run["engines"][ENGINE]["status"] == "ok"
    failed = [a for a in alerts if a["kind"] == "search_failed"]
    assert len(failed) == 1, alerts
    # Named as researchers know the engine, the failure in words, and when it is retried.
    assert (
        failed[0]["title"] == "1 of 2 engines failed for saved search 'Half dark': Fake Watch Down"
    )
    assert failed[0]["data"]["failed_engines"] == [DOWN] and failed[0]["data"]["partial"]
    assert failed[0]["body"] == (
        "- Fake Watch Down failed: bad request 403. It is asked again when the search is next "
        "run (it has no schedule running)."
    )


async def test_saving_a_search_with_bad_arguments_is_refused(watch_server: LiveServer) -> None:
    refused = []
    async with mcp_client(watch_server.mcp_url) as client:
        for tool, arguments in [
            ("save_search", {"name": "Bad", "query": "x", "engines": ["no_such_engine"]}),
            ("save_search", {"name": "Bad", "query": "x", "filters": {"colour": "blue"}}),
            ("get_alerts", {"since": "last tuesday"}),
            ("get_alerts", {"since": "2026-02-30"}),  # well formed, no such day
            ("save_search", {"name": "a/b", "query": "x"}),  # the feed's URL segment
        ]:
            with pytest.raises(MCPError) as error:
                await client.call_tool(tool, arguments)
            refused.append(error.value.error)
        listed = tool_data(await client.call_tool("list_saved_searches", {}))
    assert [error.code for error in refused] == [-32602] * 5
    assert "Unknown engine" in refused[0].message and "since" in refused[2].message
    assert "since" in refused[3].message and "'/'" in refused[4].message
    assert "Bad" not in {search["name"] for search in listed["saved_searches"]}


async def test_read_only_mode_lists_only_the_reading_watch_tools(watch_kb: KnowledgeBase) -> None:
    with running_server(watch_kb, env={"MCP_READ_ONLY": "true"}) as server:
        async with mcp_client(server.mcp_url) as client:
            listed = {tool.name: tool for tool in (await client.list_tools()).tools}
            tools = set(listed)
            with pytest.raises(MCPError) as refused:
                await client.call_tool("get_alerts", {"mark_read": True})
            resources = {str(r.uri) for r in (await client.list_resources()).resources}
    watch = {"save_search", "run_saved_search", "delete_saved_search"}
    assert tools.isdisjoint(watch)
    assert {"list_saved_searches", "get_alerts"} <= tools
    assert "read-only" in refused.value.error.message
    assert "alerts://recent" in resources
    # get_alerts may mark alerts read: not read-only, except on a read-only server.
    assert listed["get_alerts"].annotations.read_only_hint is True
    writable = build_registry(toolsets=["watch"], read_only=False).tools["get_alerts"]
    assert writable.annotations.read_only_hint is False

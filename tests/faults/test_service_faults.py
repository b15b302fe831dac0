"""Faults in the services under a running stack (issue 10 part 2), with a review in
progress throughout: a Celery worker killed mid-task, Redis and PostgreSQL restarted, the
exports disk full, engines answering 500 and 429 for a long time.

The stack is tests/faults/conftest.py's: private PostgreSQL and Redis, `serve --workers 2`,
one Celery worker. The tests run in file order and tell one story: the review started
by the first one must still be there, with every decision, after each fault, and the
last one completes and exports it. Every call has a client-side time limit, so a hung
request fails the test instead of blocking the run.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import subprocess
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest

from tests.engines.replay import ReplayServer, Reply, Request
from tests.faults.conftest import (
    BREAKER_RESET,
    ENGINE_DEADLINE,
    FAST,
    FLAKY,
    LIMITED,
    SLOW,
    Stack,
)
from tests.mcp.conftest import PYTHON, ROOT, mcp_client, tool_data, tool_error

pytestmark = [pytest.mark.server]

SLOW_SECONDS = 3.0
# A call that takes longer than this is hung (the engine deadline plus slack for a busy
# 2-core machine).
CALL_LIMIT = ENGINE_DEADLINE + 15.0
# How long the engines fail in test_engines_failing_for_a_long_time (FAULT_SECONDS).
FAILING_SECONDS = float(os.environ.get("FAULT_SECONDS", "45"))

LONGFORMER: dict[str, Any] = {
    "title": "Longformer: The Long-Document Transformer", "authors": ["Iz Beltagy"],
    "year": 2020, "arxiv_id": "2004.05150", "abstract": "Longformer handles long documents.",
}  # fmt: skip
BIGBIRD: dict[str, Any] = {
    "title": "Big Bird: Transformers for Longer Sequences", "authors": ["Manzil Zaheer"],
    "year": 2020, "doi": "10.5555/bigbird.2020", "abstract": "Sparse attention, linear cost.",
}  # fmt: skip
SLOW_ONLY: dict[str, Any] = {
    "title": "Slow Engine Exclusive: Memory Transformers", "authors": ["Slow Author"],
    "year": 2021, "doi": "10.9999/slow.2021", "abstract": "Found only by the slow engine.",
}  # fmt: skip
CITING: dict[str, Any] = {
    "title": "Efficient Long-Range Transformers: A Survey", "authors": ["Yi Tay"], "year": 2022,
    "doi": "10.1145/3530811", "abstract": "A survey of efficient transformers.",
}  # fmt: skip
RECOVERED: dict[str, Any] = {
    "title": "Recovered Engine Result on Memory", "authors": ["Rae Covered"], "year": 2023,
    "doi": "10.9999/recovered.2023", "abstract": "Found once the engine works again.",
}  # fmt: skip

# What the failing engines answer; tests switch these.
MODES: dict[str, Any] = {FLAKY: "ok", LIMITED: "ok", "citing_delay": 0.0}
RETRY_AFTER = 4


def flaky_search(request: Request) -> Reply:
    if MODES[FLAKY] == "failing":
        return Reply(500, {"error": "internal server error"})
    return Reply(200, [RECOVERED])


def limited_search(request: Request) -> Reply:
    if MODES[LIMITED] == "failing":
        return Reply(429, {"error": "slow down"}, headers={"Retry-After": str(RETRY_AFTER)})
    return Reply(200, [RECOVERED])


def fast_citing(request: Request) -> Reply:
    return Reply(200, [CITING], delay=float(MODES["citing_delay"]))


@pytest.fixture(scope="module")
def source() -> Iterator[ReplayServer]:
    server = ReplayServer().start()
    server.add(f"/{FAST}/search", Reply(200, [LONGFORMER, BIGBIRD]))
    server.add(f"/{FAST}/citing", fast_citing)
    server.add(f"/{SLOW}/search", Reply(200, [SLOW_ONLY, LONGFORMER], delay=SLOW_SECONDS))
    server.add(f"/{SLOW}/citing", Reply(200, []))
    server.add(f"/{FLAKY}/search", flaky_search)
    server.add(f"/{LIMITED}/search", limited_search)
    yield server
    server.stop()


# --- calls with a time limit ----------------------------------------------------------


def call(stack: Stack, tool: str, *, limit: float = CALL_LIMIT, **arguments: Any) -> Any:
    """One tool call with the SDK client on a connection of its own; fails if it takes
    longer than `limit` seconds (a hung request)."""

    async def go() -> Any:
        async with asyncio.timeout(limit), mcp_client(stack.url) as client:
            return await client.call_tool(tool, arguments)

    started = time.monotonic()
    try:
        return asyncio.run(go())
    except TimeoutError:
        raise AssertionError(
            f"{tool} hung: no answer in {time.monotonic() - started:.1f} s"
        ) from None


def ok(stack: Stack, tool: str, **arguments: Any) -> dict[str, Any]:
    result = call(stack, tool, **arguments)
    assert not result.is_error, result.content[0].text
    return dict(tool_data(result))


def until(
    stack: Stack, session_id: str, states: tuple[str, ...], timeout: float = 90
) -> dict[str, Any]:
    deadline = time.monotonic() + timeout
    while True:
        state = ok(stack, "get_session", session_id=session_id)
        if state["state"] in states:
            return state
        assert time.monotonic() < deadline, f"review stuck: {state}"
        time.sleep(0.5)


def requests_to(source: ReplayServer, path: str) -> int:
    return sum(request.path == path for request in source.requests)


def wait_for(condition: Callable[[], bool], what: str, timeout: float = 30) -> None:
    deadline = time.monotonic() + timeout
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.05)


@contextlib.contextmanager
def in_background(function: Callable[[], Any]) -> Iterator[dict[str, Any]]:
    """Run `function` in a thread; the dict gets "result" or "error" once it is done."""
    outcome: dict[str, Any] = {}

    def run() -> None:
        try:
            outcome["result"] = function()
        except BaseException as exc:  # handed to the test
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    yield outcome
    thread.join(CALL_LIMIT + 5)
    assert not thread.is_alive(), "the background call never returned"
    if "error" in outcome:
        raise outcome["error"]


def engine_statuses(answer: dict[str, Any]) -> dict[str, str]:
    return {name: status["status"] for name, status in answer["engines"].items()}


# The review every test keeps alive: its id and the decisions it has taken so far.
REVIEW: dict[str, Any] = {"decisions": []}


def review_intact(stack: Stack) -> dict[str, Any]:
    """The review is still there, with exactly the decisions taken so far."""
    state = ok(stack, "get_session", session_id=REVIEW["session_id"])
    assert state["state"] in ("waiting", "running", "complete"), state
    assert [d["kind"] for d in state["decisions"]] == REVIEW["decisions"], state["decisions"]
    return state


# --- the story ------------------------------------------------------------------------


def test_the_stack_serves_and_a_review_waits_at_its_plan(stack: Stack) -> None:
    paper = stack.kb.paper("attention")
    details = ok(stack, "get_paper_details", paper_id=paper["paper_id"])
    assert details["title"] == "Attention Is All You Need"
    state = ok(stack, "start_review", query="memory transformers", wait_seconds=20)
    if state["state"] == "running":
        state = until(stack, state["session_id"], ("waiting",))
    assert state["current_checkpoint_kind"] == "plan", state
    REVIEW["session_id"] = state["session_id"]


# --- 1. a Celery worker killed mid-task ---------------------------------------------------


def test_a_worker_killed_mid_search_gives_a_timeout_not_a_hang(stack: Stack) -> None:
    before = requests_to(stack.source, f"/{SLOW}/search")
    started = time.monotonic()
    with in_background(
        lambda: call(stack, "search_papers", query="killed worker", engines=["local", SLOW])
    ) as outcome:
        wait_for(lambda: requests_to(stack.source, f"/{SLOW}/search") > before, "the slow call")
        stack.worker.kill()
    result = outcome["result"]
    assert time.monotonic() - started < ENGINE_DEADLINE + 10
    # Nothing in the library and nothing from the engine: the error says which and why.
    error = json.loads(result.content[0].text)["error"]
    assert result.is_error and error["code"] == "engines_unavailable", error
    assert error["engines"][SLOW]["status"] in ("timeout", "error"), error

    stack.worker.start()  # a new worker: the same search works again
    answer = ok(stack, "search_papers", query="killed worker", engines=["local", SLOW])
    assert engine_statuses(answer) == {"local": "ok", SLOW: "ok"}
    assert SLOW_ONLY["title"] in [r["title"] for r in answer["results"]]


def test_a_review_step_survives_its_worker_being_killed(stack: Stack) -> None:
    session_id = REVIEW["session_id"]
    before = requests_to(stack.source, f"/{SLOW}/search")
    data = {
        "engines": ["local", FAST, SLOW],
        "queries": ['"memory transformers"'],
        "snowball": True,
    }
    state = ok(stack, "decide", session_id=session_id, action="edit", data=data, wait_seconds=0)
    REVIEW["decisions"].append("plan")
    assert state["state"] == "running" and state["stage"] == "search"
    wait_for(lambda: requests_to(stack.source, f"/{SLOW}/search") > before, "the slow call")
    stack.worker.kill()
    stack.worker.start()
    state = until(stack, session_id, ("waiting", "failed"))
    assert state["current_checkpoint_kind"] == "screen", state
    identified = state["counts"]["identified"]
    assert (identified[FAST], identified[SLOW]) == (2, 2), identified  # once, not twice
    titles = sorted(item["title"] for item in state["checkpoint"]["candidates"]["items"])
    assert titles == sorted([LONGFORMER["title"], BIGBIRD["title"], SLOW_ONLY["title"]])
    review_intact(stack)


# --- 2. Redis restarted ---------------------------------------------------------------


def test_redis_going_away_and_coming_back(stack: Stack) -> None:
    session_id = REVIEW["session_id"]
    paper_id = stack.kb.paper("bert")["paper_id"]
    stack.redis.kill()
    try:
        # The library does not need Redis.
        assert ok(stack, "get_paper_details", paper_id=paper_id)["paper_id"] == paper_id
        # A search answers within its limit: the library's results, and the engines'
        # status says what went wrong (the queue is gone, so is the shared rate limit).
        started = time.monotonic()
        answer = ok(stack, "search_papers", query="BERT", engines=["local", FAST])
        took = time.monotonic() - started
        print(f"\nsearch with Redis down: {took:.2f} s, engines {engine_statuses(answer)}")
        assert took < ENGINE_DEADLINE + 10
        assert "BERT: Pre-training of Deep Bidirectional Transformers" in [
            r["title"] for r in answer["results"]
        ]
        assert engine_statuses(answer)["local"] == "ok", answer["engines"]
        # A decision taken meanwhile is kept; its step waits for the queue to come back.
        state = ok(
            stack, "decide", session_id=session_id, action="reject",
            note='Focus on "long documents"', wait_seconds=0,
        )  # fmt: skip
        REVIEW["decisions"].append("screen")
        assert state["state"] == "running" and state["stage"] == "plan", state
    finally:
        stack.redis.start()
    # Back: the step is sent again, the worker and the servers reconnect on their own.
    state = until(stack, session_id, ("waiting", "failed"))
    assert state["current_checkpoint_kind"] == "plan", state
    assert '"long documents"' in state["plan"]["queries"], state["plan"]
    answer = ok(stack, "search_papers", query="memory", engines=["local", FAST])
    assert engine_statuses(answer) == {"local": "ok", FAST: "ok"}, answer["engines"]
    review_intact(stack)


# --- 3. PostgreSQL restarted ----------------------------------------------------------


def test_postgresql_restarted_under_a_running_step(stack: Stack) -> None:
    session_id = REVIEW["session_id"]
    data = {"engines": ["local", FAST], "queries": ["memory transformers"], "snowball": True}
    state = ok(stack, "decide", session_id=session_id, action="edit", data=data)
    REVIEW["decisions"].append("plan")
    assert state["current_checkpoint_kind"] == "screen", state
    REVIEW["screened"] = {item["title"] for item in state["checkpoint"]["candidates"]["items"]}
    # A write that was answered before the crash must survive it.
    attention = stack.kb.paper("attention")["paper_id"]
    keyword = "committed-before-the-crash"
    ok(stack, "manage_paper_keywords", paper_ids=attention, action="add", keywords=[keyword])

    created = subprocess.run(
        [PYTHON, "manage.py", "api_token", "create", "--user", "admin", "--name", "faults"],
        cwd=ROOT, env=stack.kb.env, capture_output=True, text=True, timeout=60, check=True,
    )  # fmt: skip
    rest = httpx2.Client(
        base_url=stack.server.base_url, timeout=10,
        headers={"Authorization": f"Bearer {created.stdout.strip().splitlines()[-1]}"},
    )  # fmt: skip
    assert rest.get(f"/api/papers/{attention}").status_code == 200

    MODES["citing_delay"] = SLOW_SECONDS
    before = requests_to(stack.source, f"/{FAST}/citing")
    state = ok(stack, "decide", session_id=session_id, action="approve", wait_seconds=0)
    REVIEW["decisions"].append("screen")
    assert state["state"] == "running" and state["stage"] == "expand", state
    wait_for(lambda: requests_to(stack.source, f"/{FAST}/citing") > before, "the citing call")
    stack.postgres.stop("immediate")  # a crash: no shutdown checkpoint
    try:
        started = time.monotonic()
        result = call(stack, "get_paper_details", paper_id=attention)
        print(f"\nanswer with PostgreSQL down: {time.monotonic() - started:.2f} s")
        assert time.monotonic() - started < 10
        error = tool_error(result)
        assert error["code"] == "database_unavailable", error
        assert "try again" in error["message"].lower(), error
        answer = rest.get(f"/api/papers/{attention}")  # the REST API says the same
        assert answer.status_code == 503, answer.text
        assert answer.headers["Retry-After"] == "5"
        assert answer.json()["error"]["code"] == "database_unavailable"
    finally:
        stack.postgres.start()
    MODES["citing_delay"] = 0.0
    restarted = time.monotonic()
    state = until(stack, session_id, ("waiting", "failed"), timeout=120)
    print(f"review step back at its checkpoint {time.monotonic() - restarted:.1f} s after")
    assert state["current_checkpoint_kind"] == "expand", state
    assert [item["title"] for item in state["checkpoint"]["candidates"]["items"]] == [
        CITING["title"]
    ]
    assert keyword in ok(stack, "get_paper_metadata", paper_id=attention)["keywords"]
    assert rest.get(f"/api/papers/{attention}").status_code == 200
    rest.close()
    review_intact(stack)


# --- 4. the exports disk full -----------------------------------------------------------


@contextlib.contextmanager
def full_disk(folder: Path) -> Iterator[Path]:
    """A 64 KiB tmpfs mounted over `folder`, filled up; yields the filler file."""
    mounted = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", "size=64k,mode=755", "tmpfs", str(folder)],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        filler = folder / "filler"
        with contextlib.suppress(OSError), filler.open("wb") as handle:
            while True:
                handle.write(b"x" * 1024)
                handle.flush()
        assert os.statvfs(folder).f_bavail == 0
        yield filler
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)


def test_a_full_exports_disk_gives_a_clear_error_and_no_half_file(stack: Stack) -> None:
    exports = stack.kb.directory / "exports"
    ids = [paper["paper_id"] for paper in stack.kb.data["papers"].values()]
    with full_disk(exports) as filler:
        result = call(
            stack, "export_search_results", paper_ids=ids, format="json", filename="library"
        )
        error = tool_error(result)
        assert error["code"] == "disk_full", error
        assert "'exports'" in error["message"] and "try again" in error["message"], error
        assert str(stack.kb.directory) not in result.content[0].text
        assert sorted(p.name for p in exports.iterdir()) == ["filler"]  # nothing half-written
        # A backup to a full disk fails the same way, and leaves nothing either.
        backup = subprocess.run(
            [PYTHON, "manage.py", "backup", "--quiet", "--output", str(exports / "b.tar.gz")],
            cwd=ROOT, env=stack.kb.env, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert backup.returncode != 0, backup.stdout
        assert "No space left" in backup.stderr, backup.stderr
        assert "Traceback" not in backup.stderr
        assert sorted(p.name for p in exports.iterdir()) == ["filler"]
        review_intact(stack)

        filler.unlink()  # space again: the same call works
        done = ok(stack, "export_search_results", paper_ids=ids, format="json", filename="library")
        exported = json.loads((exports / done["filename"]).read_text())
        assert len(exported) == len(ids) == done["count"]


# --- 5. engines answering 500 and 429 for a long time -------------------------------------


def test_engines_failing_for_a_long_time(stack: Stack) -> None:
    flaky_before = requests_to(stack.source, f"/{FLAKY}/search")
    limited_before = requests_to(stack.source, f"/{LIMITED}/search")
    MODES[FLAKY] = MODES[LIMITED] = "failing"
    started = time.monotonic()
    searches = 0
    try:
        while time.monotonic() - started < FAILING_SECONDS or searches < 3:
            sent = time.monotonic()
            answer = ok(
                stack, "search_papers", query=f"long outage {searches}",
                engines=["local", FLAKY, LIMITED],
            )  # fmt: skip
            assert time.monotonic() - sent < ENGINE_DEADLINE + 10
            statuses = engine_statuses(answer)
            assert statuses["local"] == "ok", answer["engines"]
            # Failing (500), then refused at once by its open circuit breaker: one status.
            assert statuses[FLAKY] == "unavailable", answer["engines"]
            assert answer["engines"][FLAKY]["outcome"] == "unreachable", answer["engines"]
            assert statuses[LIMITED] in ("rate_limited", "timeout"), answer["engines"]
            assert answer["engines"][FLAKY]["message"], answer["engines"]  # says why
            searches += 1
        review_intact(stack)
    finally:
        MODES[FLAKY] = MODES[LIMITED] = "ok"
    elapsed = time.monotonic() - started
    flaky_sent = requests_to(stack.source, f"/{FLAKY}/search") - flaky_before
    limited_sent = requests_to(stack.source, f"/{LIMITED}/search") - limited_before
    # Retries are bounded (1 + ENGINE_MAX_RETRIES per search) and the 500 engine's breaker
    # opens after a few failures: one probe per BREAKER_RESET from then on. A 429's
    # Retry-After pauses the engine for every process: about one request per pause.
    assert searches >= 3
    assert 1 <= flaky_sent <= 4 + elapsed / BREAKER_RESET + 2, (searches, flaky_sent)
    assert limited_sent <= elapsed / RETRY_AFTER + 3, (searches, limited_sent, elapsed)
    # Once the sources work again (the pause over, the breaker's probe due), so do the
    # searches.
    time.sleep(max(RETRY_AFTER, BREAKER_RESET) + 1)
    answer = ok(stack, "search_papers", query="recovered", engines=["local", FLAKY, LIMITED])
    assert engine_statuses(answer) == {"local": "ok", FLAKY: "ok", LIMITED: "ok"}
    assert RECOVERED["title"] in [r["title"] for r in answer["results"]]
    print(
        f"\nengines failing for {elapsed:.0f} s: {searches} searches, {flaky_sent} requests to "
        f"the 500 engine, {limited_sent} to the 429 engine (Retry-After {RETRY_AFTER} s)"
    )


# --- the end: the review completes, with every decision --------------------------------


def test_the_review_completes_with_every_decision_after_all_faults(stack: Stack) -> None:
    state = ok(stack, "decide", session_id=REVIEW["session_id"], action="approve")
    REVIEW["decisions"].append("expand")
    assert state["is_complete"], state
    state = review_intact(stack)
    assert [d["action"] for d in state["decisions"]] == [
        "edit", "reject", "edit", "approve", "approve"
    ]  # fmt: skip
    listed = ok(stack, "list_project_papers", project_id=state["project_id"])
    titles = {paper["title"] for paper in listed["papers"]}
    assert titles == REVIEW["screened"] | {CITING["title"]}
    exported = ok(stack, "export_results", session_id=REVIEW["session_id"], format="json")
    assert CITING["title"] in json.dumps(exported)
    # Nothing the faults did shows in the servers' log as an unexpected error.
    assert "incident" not in stack.log(), stack.log()[-3000:]
    assert "Exception in ASGI application" not in stack.log()

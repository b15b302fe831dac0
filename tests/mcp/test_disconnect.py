"""Work for a client that went away is cancelled, and a slow engine never holds a tool
thread past the search's deadline (issue 20), through the real server (`manage.py serve`).

Engines point at a local server that counts the requests it gets: `/crossref` is a slow
source (it answers 503 after a while, so the runner would retry it), `/openalex` answers
at once. The server runs with MCP_MAX_THREADS=2, so tools that call the outside world have
a lane of a single place (mcp_endpoint/asgi.py): a request that still held it would make
the next one wait.
"""

from __future__ import annotations

import json
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from mcp_endpoint.asgi import calls_outside_world
from tests.mcp.conftest import KnowledgeBase, LiveServer, call_tool_raw, result_json, running_server

SLOW_SECONDS = 1.0


class CountingSource:
    """`/crossref/...`: 503 after `slow_seconds` (a transient failure); `/openalex/...`:
    an empty OpenAlex page at once. Counts requests by source."""

    def __init__(self) -> None:
        self.counts: dict[str, int] = {"crossref": 0, "openalex": 0}
        self.slow_seconds = SLOW_SECONDS
        self.slow_status = 503
        source = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                name = self.path.strip("/").split("/", 1)[0]
                source.counts[name] = source.counts.get(name, 0) + 1
                if name == "crossref":
                    time.sleep(source.slow_seconds)
                    status = source.slow_status
                    body = b'{"message-type": "work-list", "message": {"items": []}}'
                else:
                    status, body = 200, b'{"meta": {"count": 0}, "results": []}'
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except OSError:
                    pass  # the engine gave up first

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture(scope="module")
def source() -> Iterator[CountingSource]:
    counting = CountingSource()
    yield counting
    counting.close()


@pytest.fixture(scope="module")
def server(knowledge_base: KnowledgeBase, source: CountingSource) -> Iterator[LiveServer]:
    env = {
        "ENGINES_ENABLED": "local,crossref,openalex",
        "CROSSREF_API_URL": f"{source.url}/crossref",
        "OPENALEX_API_URL": f"{source.url}/openalex",
        "MCP_MAX_THREADS": "2",
        "ENGINE_MAX_RETRIES": "10",
        "ENGINE_BREAKER_FAILURES": "100",
        # A call nothing answered opens the breaker at once (engines/breaker.py, probes):
        # tests that follow such a call wait this long for it to let a trial through.
        "ENGINE_BREAKER_RESET_SECONDS": "1",
        "ENGINE_DEADLINE_SECONDS": "3",
        "ENGINE_CACHE_TTLS": "crossref=0,openalex=0",
        # Engine calls on this process's threads, where this test's engine URLs are set
        # (with a broker they would go to the suite's shared Celery workers).
        "REDIS_URL": "",
        "CELERY_BROKER_URL": "",
    }
    with running_server(knowledge_base, env=env) as live:
        yield live


def _tool_call(name: str, arguments: dict[str, Any]) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": name, "arguments": arguments},
    }
    return json.dumps(message).encode()


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    deadline = time.monotonic() + seconds
    while not condition():
        assert time.monotonic() < deadline, "timed out waiting"
        time.sleep(0.02)


def send_and_hang_up(server: LiveServer, body: bytes, when: Callable[[], bool]) -> None:
    """POST `body` to /mcp and close the connection once `when()` is true, unanswered."""
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        head = (
            f"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1:{server.port}\r\n"
            "Content-Type: application/json\r\nAccept: application/json\r\n"
            "MCP-Protocol-Version: 2025-06-18\r\n"
            f"Content-Length: {len(body)}\r\n\r\n"
        ).encode()
        sock.sendall(head + body)
        wait_for(when)


def timed(server: LiveServer, name: str, arguments: dict[str, Any]) -> tuple[float, Any]:
    """Seconds the tool call took, and its JSON-RPC result."""
    started = time.monotonic()
    response = call_tool_raw(server.mcp_url, name, arguments)
    elapsed = time.monotonic() - started
    assert response.status_code == 200, response.text
    return elapsed, response.json()["result"]


def search(server: LiveServer, query: str, engines: list[str]) -> tuple[float, Any]:
    return timed(server, "search_papers", {"query": query, "engines": engines})


def test_a_disconnected_clients_engine_calls_stop_and_its_place_is_freed_at_once(
    server: LiveServer, source: CountingSource
) -> None:
    before = source.counts["crossref"]
    query = f"cancelled {uuid.uuid4().hex[:8]}"
    # The client hangs up while the first crossref request is under way (it answers 503
    # after SLOW_SECONDS); the runner would retry it after a backoff of 0.25-0.75 s, and
    # again until the deadline.
    body = _tool_call("search_papers", {"query": query, "engines": ["crossref"]})
    send_and_hang_up(server, body, when=lambda: source.counts["crossref"] > before)

    # The lane's only place is free at once: the next open-world call does not wait for
    # the abandoned one's retries or deadline.
    elapsed, result = search(server, f"next {uuid.uuid4().hex[:8]}", ["openalex"])
    assert elapsed < 1.5, elapsed
    assert result_json(result)["engines"]["openalex"]["status"] == "ok"

    time.sleep(SLOW_SECONDS + 2.0)  # the first answer, then any retry it would have made
    assert source.counts["crossref"] - before == 1, "no retry starts after the disconnect"
    assert "disconnected before its answer" in server.log()


def test_a_slow_engine_is_reported_timed_out_at_the_deadline_with_the_others_results(
    server: LiveServer, source: CountingSource
) -> None:
    source.slow_seconds = 30.0  # far past ENGINE_DEADLINE_SECONDS=3
    try:
        elapsed, result = search(server, "attention", ["local", "crossref", "openalex"])
        # The tool's thread is back by the deadline: the next open-world call (one lane
        # place) does not queue behind the slow source either.
        second, _ = search(server, f"after {uuid.uuid4().hex[:8]}", ["openalex"])
    finally:
        source.slow_seconds = SLOW_SECONDS
    page = result_json(result)
    assert elapsed < 3 + 1.5, elapsed
    assert second < 1.5, second
    assert page["engines"]["crossref"]["status"] == "timeout"
    assert page["engines"]["openalex"]["status"] == "ok"
    assert page["engines"]["local"]["status"] == "ok" and page["results"]


def test_local_tools_do_not_wait_for_the_open_world_lane(
    server: LiveServer, source: CountingSource
) -> None:
    """Two slow searches hold the lane's place and queue for it; the library's own tools
    (and a search of engines 'local') answer meanwhile."""
    local_calls = (
        ("list_projects", {}),
        ("search_papers", {"query": "attention", "engines": "local"}),
    )
    for name, arguments in local_calls:  # a fresh process's first search loads its indexes
        timed(server, name, arguments)
    source.slow_seconds = 30.0
    slow = [
        threading.Thread(
            target=search, args=(server, f"slow {i} {uuid.uuid4().hex[:6]}", ["crossref"])
        )
        for i in range(2)
    ]
    try:
        for thread in slow:
            thread.start()
        time.sleep(0.3)
        for name, arguments in local_calls:
            elapsed, result = timed(server, name, arguments)
            assert not result.get("isError"), result
            assert elapsed < 1.0, (name, elapsed)
    finally:
        for thread in slow:
            thread.join(10)
        source.slow_seconds = SLOW_SECONDS


def trust_again(server: LiveServer, source: CountingSource) -> None:
    """Earlier tests left crossref unanswered, which opened its breaker: answer it once
    (after the breaker's reset time lets a trial through), so it is trusted and closed."""
    source.slow_seconds, source.slow_status = 0.0, 200
    try:
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            _, result = search(server, f"warm {uuid.uuid4().hex[:6]}", ["local", "crossref"])
            answer = result_json(result)
            if answer.get("engines", {}).get("crossref", {}).get("status") == "ok":
                return
            time.sleep(0.5)
        raise AssertionError(f"crossref was not answering again: {answer}")
    finally:
        source.slow_seconds, source.slow_status = SLOW_SECONDS, 503


def test_time_queued_for_the_lane_comes_out_of_the_engine_deadline(
    server: LiveServer, source: CountingSource
) -> None:
    """The second of two slow searches waits for the lane's place while the first runs
    to ENGINE_DEADLINE_SECONDS=3; it then has no time left, and answers at once."""
    trust_again(server, source)
    source.slow_seconds = 30.0
    answers: list[tuple[float, Any]] = []

    def run(query: str) -> None:
        answers.append(search(server, query, ["local", "crossref"]))

    threads = [
        threading.Thread(target=run, args=(f"queued {i} {uuid.uuid4().hex[:6]}",)) for i in range(2)
    ]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(20)
    finally:
        source.slow_seconds = SLOW_SECONDS
    assert len(answers) == 2
    assert all(elapsed < 3 + 2.5 for elapsed, _ in answers), [e for e, _ in answers]
    # Nothing matches the query in the library: each answer is the error naming the engine.
    crossref = [result_json(result)["error"]["engines"]["crossref"] for _, result in answers]
    assert [status["status"] for status in crossref] == ["timeout", "timeout"]
    # Without the queued time taken off, the second would answer after 3 + 3 s (the bound
    # above). Which reason it gives depends on how far apart the two requests arrived: at
    # once, it waited its whole deadline ("queued"); a moment later, it had a little time
    # left to ask and ran out (the gather's "deadline", or the request's own
    # "read_timeout", whichever fired first). The first one asked.
    reasons = [status["reason"] for status in crossref]
    assert set(reasons) <= {"queued", "deadline", "read_timeout"}, crossref
    assert reasons.count("queued") <= 1, crossref


def test_open_world_tools_take_the_lane_and_library_searches_do_not() -> None:
    def call(name: str, **arguments: Any) -> dict[str, Any]:
        return json.loads(_tool_call(name, arguments))

    def body(*messages: dict[str, Any]) -> bytes:
        return json.dumps(messages[0] if len(messages) == 1 else list(messages)).encode()

    outside = [
        call("search_papers", query="x"),
        call("search_papers", query="x", engines="local,arxiv"),
        call("search_by_author", author_name="Vaswani"),
        call("add_paper", identifier="10.1/x"),
        call("attach_pdf", paper_id=1),
    ]
    inside = [
        call("search_papers", query="x", engines="local"),
        call("search_papers", query="x", engines=[" LOCAL "]),
        call("get_paper_details", paper_id=1),
        call("list_projects"),
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
    ]
    assert all(calls_outside_world(body(message)) for message in outside)
    assert not any(calls_outside_world(body(message)) for message in inside)
    assert calls_outside_world(body(inside[0], outside[0]))  # a batch with one of them
    assert not calls_outside_world(b"{not json")

"""The pure-ASGI front of the site: /mcp without Django's request handler in the way.

`McpRouter` sends /mcp and /mcp/ to `mcp_endpoint.http` (the same rules as the Django
view), /sse and /messages/ to the legacy SSE transport when it is switched on, answers
the ASGI lifespan protocol itself (Django's handler does not speak it), and hands
everything else (the admin, static files) to Django's ASGI application.

Two things happen here around each /mcp request, because only the HTTP front sees them:

- Lanes. Sync tools run on anyio's worker threads, MCP_MAX_THREADS of them per process.
  A tool that calls the outside world (annotated `open_world_hint`: engine searches,
  add_paper, attach_pdf, ...) can hold its thread for as long as its deadline
  (ENGINE_DEADLINE_SECONDS) when the network is down, so such calls first wait for a
  place in their own lane of MCP_MAX_THREADS // 2 places, without a thread while they
  wait: however many of them are under way, the library's own tools (and a search with
  `engines: "local"`) always find the other threads free. The engines' deadline
  (ENGINE_DEADLINE_SECONDS) counts from the request's arrival, so a call that waited for
  its place is not kept longer for it. The library's own calls (and resource reads) have
  a lane of MCP_LIBRARY_CALLS places: their work holds the GIL, and more of them at once
  only contend for it (8 at once served ~25% fewer searches per second than 1 or 2).
- Disconnects. While a request is served, the client's connection is watched; when it
  goes away, the request's `Cancellation` (engines/runner.py) is cancelled, which
  abandons its engine fan-out (queued calls dropped, no further attempt started), so the
  tool returns and its thread and lane place are freed at once; nothing is sent.
"""

from __future__ import annotations

import asyncio
import json
import logging
import threading
import time
import uuid
from functools import cache
from typing import Any

import anyio
from anyio import to_thread
from django.conf import settings
from starlette.exceptions import HTTPException as StarletteHTTPException

from engines.registry import LOCAL_ENGINE
from engines.registry import registry as engine_registry
from engines.runner import Cancellation, cancellation_scope, request_deadline
from mcp_endpoint import http
from mcp_endpoint.registry import TOOLSET_MODULES, build_registry, get_server
from mcp_endpoint.tools.engines_search import rehearse_search_papers
from papers.search import warmup as search_warmup
from projects.watch import scheduler as saved_search_scheduler

logger = logging.getLogger(__name__)

ASGIApp = Any
MCP_PATHS = frozenset({"/mcp", "/mcp/"})


class ClientDisconnected(Exception):
    """The client went away before its request body was read."""


async def read_body(receive: Any, limit: int) -> tuple[bytes, bool]:
    """The request body, or (b"", True) as soon as it passes `limit` bytes."""
    chunks: list[bytes] = []
    size = 0
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise ClientDisconnected
        chunk = message.get("body", b"")
        size += len(chunk)
        if size > limit:
            return b"", True
        chunks.append(chunk)
        if not message.get("more_body", False):
            return b"".join(chunks), False


def to_http_request(scope: dict[str, Any], body: bytes, oversized: bool) -> http.HttpRequest:
    client = scope.get("client")
    return http.HttpRequest(
        method=scope["method"],
        headers=[(k.decode("latin-1"), v.decode("latin-1")) for k, v in scope["headers"]],
        query_string=scope.get("query_string", b"").decode("latin-1"),
        body=body,
        client_host=client[0] if client else None,
        scheme=scope.get("scheme", "http"),
        oversized=oversized,
    )


async def send_response(send: Any, response: http.HttpResponse) -> None:
    headers = [(k.encode("latin-1"), v.encode("latin-1")) for k, v in response.headers]
    headers.append((b"content-length", str(len(response.body)).encode()))
    await send({"type": "http.response.start", "status": response.status, "headers": headers})
    await send({"type": "http.response.body", "body": response.body})


@cache
def open_world_tools() -> frozenset[str]:
    """The tools, in every tool set, that call the outside world (open_world_hint)."""
    registry = build_registry(toolsets=list(TOOLSET_MODULES), read_only=False)
    return frozenset(
        name
        for name, tool in registry.tools.items()
        if tool.annotations is not None and tool.annotations.open_world_hint
    )


def _only_local_engine(arguments: dict[str, Any]) -> bool:
    """`engines: "local"` (or ["local"]): a search of the library alone."""
    engines = arguments.get("engines")
    if isinstance(engines, str):
        engines = engines.split(",")
    if not isinstance(engines, list):
        return False
    names = {name.strip().lower() for name in engines if isinstance(name, str) and name.strip()}
    return names == {LOCAL_ENGINE}


def calls_outside_world(body: bytes) -> bool:
    """Whether the request (or any request of a batch) calls a tool that may wait on the
    outside world. A body that is not JSON is answered without any tool, so it is not."""
    return lane_of(body) == OPEN_WORLD


OPEN_WORLD = "open_world"
LIBRARY = "library"
_THREADED_METHODS = frozenset({"tools/call", "resources/read"})


def lane_of(body: bytes) -> str | None:
    """OPEN_WORLD when the request (or any request of a batch) calls a tool that may wait
    on the outside world; else LIBRARY when it calls a tool or reads a resource (work on a
    tool thread); else None (ping, lists, the handshake, a body that is not JSON)."""
    try:
        decoded = json.loads(body)
    except (ValueError, RecursionError):
        return None
    messages = decoded if isinstance(decoded, list) else [decoded]
    lane = None
    for message in messages:
        # Any JSON value may stand in any field: only strings are looked up (a list or an
        # object cannot be hashed), the rest is the framing's to refuse.
        if not isinstance(message, dict):
            continue
        method = message.get("method")
        if not isinstance(method, str) or method not in _THREADED_METHODS:
            continue
        lane = LIBRARY
        if method != "tools/call":
            continue
        params = message.get("params")
        if not isinstance(params, dict):
            continue
        name = params.get("name")
        if not isinstance(name, str) or name not in open_world_tools():
            continue
        arguments = params.get("arguments")
        if not (isinstance(arguments, dict) and _only_local_engine(arguments)):
            return OPEN_WORLD
    return lane


def open_world_places() -> int:
    """Places in the open-world lane: half the tool threads (at least one)."""
    return max(1, settings.MCP_MAX_THREADS // 2)


def library_places() -> int:
    """Places in the library lane: MCP_LIBRARY_CALLS, within the tool threads."""
    return max(1, min(settings.MCP_LIBRARY_CALLS, settings.MCP_MAX_THREADS))


async def wait_for_disconnect(receive: Any) -> None:
    """Returns when the client has gone away (the request body is already read).

    uvicorn (like any ASGI server) answers `receive()` after the body with
    `http.disconnect` once the client leaves. Any other message means this server cannot
    tell (a test harness repeating the body): then there is nothing to watch.
    """
    if (await receive())["type"] == "http.disconnect":
        return
    await anyio.sleep_forever()


class McpAsgiApp:
    """/mcp as a bare ASGI application over `mcp_endpoint.http.McpEndpoint`."""

    def __init__(self, endpoint: http.McpEndpoint | None = None) -> None:
        self.endpoint = endpoint or http.McpEndpoint()
        self._lanes: dict[str, anyio.CapacityLimiter] = {}

    @property
    def open_world_lane(self) -> anyio.CapacityLimiter:
        return self._lane(OPEN_WORLD, open_world_places())

    @property
    def library_lane(self) -> anyio.CapacityLimiter:
        return self._lane(LIBRARY, library_places())

    def _lane(self, name: str, places: int) -> anyio.CapacityLimiter:
        lane = self._lanes.get(name)
        if lane is None or lane.total_tokens != places:
            lane = self._lanes[name] = anyio.CapacityLimiter(places)
        return lane

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        oversized = False
        declared = _content_length(scope)
        if declared is not None and declared > settings.MCP_MAX_BODY_BYTES:
            body, oversized = b"", True
        else:
            try:
                body, oversized = await read_body(receive, settings.MCP_MAX_BODY_BYTES)
            except ClientDisconnected:
                return
        try:
            request = to_http_request(scope, body, oversized)
            kind = None if oversized else lane_of(body)
            lane = self.open_world_lane if kind == OPEN_WORLD else None
            if kind == LIBRARY and self.library_lane.total_tokens < settings.MCP_MAX_THREADS:
                lane = self.library_lane
            response = await self._answer(request, receive, lane)
        except Exception:
            # MCP clients parse JSON-RPC only: a failure of ours is still one (uvicorn's
            # own answer would be a plain-text 500 that no client can show).
            incident = uuid.uuid4().hex[:12]
            logger.exception("MCP request failed (incident %s)", incident)
            response = http.internal_error(incident)
        if response is not None:
            await send_response(send, response)

    async def _answer(
        self, request: http.HttpRequest, receive: Any, lane: anyio.CapacityLimiter | None
    ) -> http.HttpResponse | None:
        """The endpoint's answer, or None when the client went away first (its work then
        cancelled: see the module docstring).

        The answer runs in this task under a cancel scope, and a watcher task cancels it
        when the client leaves: an anyio task group around the two cost about 0.1 ms of
        CPU per request (its cancellation formats task reprs), a tenth of the endpoint's
        own work. uvicorn serves on asyncio, so the watcher is a plain asyncio task.
        """
        cancellation = Cancellation()
        response: http.HttpResponse | None = None
        answer_by = time.monotonic() + settings.ENGINE_DEADLINE_SECONDS
        with anyio.CancelScope() as scope:
            watcher = asyncio.get_running_loop().create_task(
                _cancel_on_disconnect(receive, cancellation, scope)
            )
            try:
                with cancellation_scope(cancellation), request_deadline(answer_by):
                    if lane is None:
                        response = await self.endpoint.handle(request)
                    else:
                        async with lane:
                            response = await self.endpoint.handle(request)
            finally:
                watcher.cancel()
        return None if cancellation.cancelled else response


async def _cancel_on_disconnect(
    receive: Any, cancellation: Cancellation, scope: anyio.CancelScope
) -> None:
    await wait_for_disconnect(receive)
    logger.info("MCP client disconnected before its answer; its work is cancelled")
    cancellation.cancel()
    scope.cancel()


def _content_length(scope: dict[str, Any]) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class McpRouter:
    """Routes by path; see the module docstring."""

    def __init__(
        self,
        django_app: ASGIApp,
        *,
        sse_app: ASGIApp | None = None,
        static_app: ASGIApp | None = None,
    ) -> None:
        self.django_app = django_app
        self.mcp_app = McpAsgiApp()
        self.sse_app = sse_app
        # Static files (admin CSS/JS) served asynchronously; Django's ASGI handler would
        # have to drain WhiteNoise's synchronous file iterators on a thread.
        self.static_app = static_app
        self.static_prefix = "/" + settings.STATIC_URL.strip("/") + "/"

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        kind = scope["type"]
        if kind == "lifespan":
            await self._lifespan(receive, send)
            return
        if kind == "http":
            path = scope["path"]
            is_sse = path == "/sse" or path.startswith("/messages/")
            if not settings.MCP_ENABLED and (path in MCP_PATHS or is_sse):
                await send_response(send, http.not_found())  # JSON, not Django's HTML page
                return
            if path in MCP_PATHS:
                await self.mcp_app(scope, receive, send)
                return
            if self.sse_app is not None and is_sse:
                await self.sse_app(scope, receive, send)
                return
        if kind == "http" and self.static_app is not None:
            if scope["path"].startswith(self.static_prefix):
                await self._static(scope, receive, send)
                return
        await self.django_app(scope, receive, send)

    async def _static(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        assert self.static_app is not None
        prefix = self.static_prefix.rstrip("/")
        try:
            await self.static_app({**scope, "root_path": prefix}, receive, send)
        except StarletteHTTPException as error:  # StaticFiles raises 404/405 for Starlette
            body = (error.detail or "").encode()
            await send_response(
                send,
                http.HttpResponse(
                    error.status_code, [("content-type", "text/plain; charset=utf-8")], body
                ),
            )

    async def _lifespan(self, receive: Any, send: Any) -> None:
        while True:
            message = await receive()
            if message["type"] == "lifespan.startup":
                # Tools run on anyio's worker threads, each with its own database
                # connection: bound them, so workers x MCP_MAX_THREADS stays under
                # PostgreSQL's max_connections (40 threads each ran it out at 200 clients).
                to_thread.current_default_thread_limiter().total_tokens = settings.MCP_MAX_THREADS
                open_world_tools()  # now, rather than in the event loop of a first request
                http.write_tools()  # likewise (a read-scoped token's first call asks)
                get_server()  # the default tool set's server: not built by a first initialize
                # Saved searches on their schedule, in this server process when there is
                # no broker (with one, Celery beat runs them): projects/watch/scheduler.py.
                saved_search_scheduler.start_in_process()
                # The embedding models load behind start-up, not in a first search; the
                # port opens when the warm-up has ended (`serve` started it early), or
                # after READY_WAIT_SECONDS with the rest of it going on behind.
                search_warmup.start_in_background(rehearse_search_papers)
                await to_thread.run_sync(search_warmup.wait_until_ended)
                # And the search engines' modules, which a first search imported.
                threading.Thread(target=engine_registry.engines, name="engines-warmup",
                                 daemon=True).start()  # fmt: skip
                await send({"type": "lifespan.startup.complete"})
            elif message["type"] == "lifespan.shutdown":
                saved_search_scheduler.stop_in_process()
                await send({"type": "lifespan.shutdown.complete"})
                return

"""MCP over stdin/stdout (`serve --transport stdio`), from the same registry.

The SDK's serving loop does the protocol (both eras: the `initialize` handshake and
2026-07-28 per-request envelopes); this module is the transport around it, in place of the
SDK's `stdio_server()`, whose reader drops every line it cannot validate and whose writer
cannot encode a lone surrogate, so the client waits forever. Here each line goes through
`mcp_endpoint.jsonrpc` first, as on HTTP:

- not JSON: -32700; not a JSON-RPC message (`"id": null` included): -32600; params too
  deep, holding a lone surrogate, or a cursor: -32602 with the request's id;
- a batch is answered (one array of answers, in the batch's order) once the client has
  negotiated 2025-03-26, the one version with batches; otherwise -32600;
- answers are written even when they echo a lone surrogate (escaped, as received);
- a missing resource is -32002 on handshake-era sessions (see `jsonrpc.resource_error_code`).

The server keeps serving after each of these, and answers every request it read before
its input ended (within DRAIN_SECONDS) before it exits. While it runs, fd 0 reads /dev/null and fd 1
points at stderr for everything but the protocol writer (as the SDK's transport does), so a
stray print cannot corrupt the stream.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
import threading
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, BinaryIO

import anyio
import anyio.lowlevel
from django.conf import settings
from mcp.server import stdio as sdk_stdio
from mcp.shared._context_streams import (
    ContextReceiveStream,
    ContextSendStream,
    create_context_streams,
)
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_REQUEST, RequestId, jsonrpc_message_adapter

from core.clients import set_process_place
from core.identity import local_owner_principal, set_process_principal
from mcp_endpoint import jsonrpc
from mcp_endpoint.registry import get_server, lowlevel
from mcp_endpoint.scope import client_scope

logger = logging.getLogger(__name__)

MODERN_ENVELOPE_KEY = "io.modelcontextprotocol/protocolVersion"
DRAIN_SECONDS = 30.0


@dataclass
class _Batch:
    order: list[RequestId | None]  # the batch's requests and refused entries, in order
    answers: dict[int, dict[str, Any]] = field(default_factory=dict)  # position -> answer
    waiting: dict[RequestId, int] = field(default_factory=dict)  # id -> position

    def complete(self) -> bool:
        return not self.waiting


@dataclass
class _Pending:
    what: str  # method and tool or URI, for the debug log
    method: str
    modern: bool
    batch: _Batch | None = None
    started: float = field(default_factory=time.perf_counter)


class StdioFraming:
    """The JSON-RPC framing of one stdio connection: what is read, what is written."""

    def __init__(self, stdout: anyio.AsyncFile[bytes]) -> None:
        self._stdout = stdout
        self._lock = anyio.Lock()
        self.negotiated: str | None = None
        self._pending: dict[RequestId, _Pending] = {}

    async def drained(self, timeout: float) -> None:
        """Wait (up to `timeout` seconds) until every request read has been answered."""
        with anyio.move_on_after(timeout):
            while self._pending:
                await anyio.sleep(0.01)

    async def write(self, body: Any) -> None:
        async with self._lock:
            await self._stdout.write(jsonrpc.dump(body) + b"\n")
            await self._stdout.flush()

    # --- reading --------------------------------------------------------------------

    async def read_line(
        self, raw: bytes, forward: ContextSendStream[SessionMessage | Exception]
    ) -> None:
        line = raw.decode("utf-8", "replace").strip()
        if not line:
            return
        decoded = jsonrpc.parse(line)
        if isinstance(decoded, jsonrpc.Rejection):
            await self.write(decoded.body())
        elif isinstance(decoded, list):
            await self._read_batch(decoded, forward)
        else:
            message = jsonrpc.classify(decoded)
            if isinstance(message, jsonrpc.Rejection):
                await self.write(message.body())
                return
            if message.request is not None:
                if message.request.id in self._pending:
                    await self.write(_duplicate(message.request.id))
                    return
                self._track(message)
            await _forward(message, forward)

    def _track(self, message: jsonrpc.Message, batch: _Batch | None = None) -> None:
        assert message.request is not None
        params = message.request.params or {}
        meta = params.get("_meta")
        modern = isinstance(meta, dict) and MODERN_ENVELOPE_KEY in meta
        what = jsonrpc.describe(message.request.method, params)
        self._pending[message.request.id] = _Pending(what, message.request.method, modern, batch)

    async def _read_batch(
        self, items: list[Any], forward: ContextSendStream[SessionMessage | Exception]
    ) -> None:
        if self.negotiated not in jsonrpc.BATCH_PROTOCOL_VERSIONS:
            version = self.negotiated or "none negotiated yet"
            await self.write(
                jsonrpc.error_body(
                    INVALID_REQUEST,
                    f"JSON-RPC batches are not supported in protocol version {version}: only "
                    "2025-03-26 has them (2025-06-18 removed them); send one message per line",
                )
            )
            return
        if not items:
            await self.write(jsonrpc.error_body(INVALID_REQUEST, "Invalid request: an empty batch"))
            return
        too_long = jsonrpc.batch_too_long(len(items), settings.MCP_MAX_BATCH_LENGTH)
        if too_long is not None:
            await self.write(too_long.body())
            return
        batch = _Batch(order=[])
        accepted: list[jsonrpc.Message] = []
        for item in items:
            message = jsonrpc.classify(item)
            if isinstance(message, jsonrpc.Rejection):
                batch.answers[len(batch.order)] = message.body()
                batch.order.append(None)
                continue
            if message.request is not None:
                request_id = message.request.id
                refusal = None
                if request_id in self._pending or request_id in batch.waiting:
                    refusal = _duplicate(request_id)
                elif message.request.method == "initialize":
                    refusal = jsonrpc.error_body(
                        INVALID_REQUEST,
                        "initialize must not be part of a JSON-RPC batch",
                        request_id=request_id,
                    )
                if refusal is not None:
                    batch.answers[len(batch.order)] = refusal
                    batch.order.append(None)
                    continue
                batch.waiting[request_id] = len(batch.order)
                batch.order.append(request_id)
            accepted.append(message)
        for message in accepted:
            if message.request is not None:
                self._track(message, batch)
        if batch.complete() and batch.answers:
            await self._write_batch(batch)  # nothing to wait for: only refused entries
        for message in accepted:
            await _forward(message, forward)

    # --- writing --------------------------------------------------------------------

    async def write_message(self, session_message: SessionMessage) -> None:
        body = session_message.message.model_dump(mode="json", by_alias=True, exclude_unset=True)
        request_id = jsonrpc.plain_id(body.get("id"))
        pending = None
        if request_id is not None and "method" not in body:
            pending = self._pending.pop(request_id, None)
        if pending is not None and request_id is not None:
            self._observe(pending, body)
            if pending.batch is not None:
                batch = pending.batch
                batch.answers[batch.waiting.pop(request_id)] = body
                if batch.complete():
                    await self._write_batch(batch)
                return
        await self.write(body)

    def _observe(self, pending: _Pending, body: dict[str, Any]) -> None:
        """Remember the negotiated version; give a missing resource its era's code."""
        result = body.get("result")
        if pending.method == "initialize" and isinstance(result, dict):
            version = result.get("protocolVersion")
            self.negotiated = version if isinstance(version, str) else None
        error = body.get("error")
        if logger.isEnabledFor(logging.DEBUG):
            if isinstance(error, dict):
                outcome = f"error {error.get('code')}"
            else:
                outcome = "isError" if isinstance(result, dict) and result.get("isError") else "ok"
            logger.debug(
                "stdio %s (id %r): %s in %.1f ms",
                pending.what,
                body.get("id"),
                outcome,
                (time.perf_counter() - pending.started) * 1000,
            )
        if isinstance(error, dict) and isinstance(error.get("code"), int):
            error["code"] = jsonrpc.resource_error_code(
                pending.method,
                error["code"],
                str(error.get("message", "")),
                error.get("data"),
                modern=pending.modern,
            )

    async def _write_batch(self, batch: _Batch) -> None:
        await self.write([batch.answers[position] for position in sorted(batch.answers)])


def _duplicate(request_id: RequestId) -> dict[str, Any]:
    return jsonrpc.error_body(
        INVALID_REQUEST,
        "Invalid request: this id is already in use by a request still being served",
        request_id=request_id,
    )


async def _forward(
    message: jsonrpc.Message, forward: ContextSendStream[SessionMessage | Exception]
) -> None:
    parsed = jsonrpc_message_adapter.validate_python(message.decoded, by_name=False)
    await forward.send(SessionMessage(parsed))


def _stdin_lines(stdin: BinaryIO) -> asyncio.Queue[bytes | None]:
    """Lines of stdin, read by a daemon thread (None at end of input): a thread blocked in
    read() cannot be cancelled, and a worker thread of anyio's would keep the process alive
    after a signal stopped the server (`serve` with stdio beside HTTP)."""
    loop = asyncio.get_running_loop()
    lines: asyncio.Queue[bytes | None] = asyncio.Queue()

    def pump() -> None:
        try:
            for raw in iter(stdin.readline, b""):
                loop.call_soon_threadsafe(lines.put_nowait, raw)
        except (OSError, ValueError):
            pass  # stdin closed under us
        finally:
            with contextlib.suppress(RuntimeError):  # the loop is already closed
                loop.call_soon_threadsafe(lines.put_nowait, None)

    threading.Thread(target=pump, name="mcp-stdin", daemon=True).start()
    return lines


@asynccontextmanager
async def strict_stdio_server() -> AsyncIterator[
    tuple[ContextReceiveStream[SessionMessage | Exception], ContextSendStream[SessionMessage]]
]:
    """The read and write streams for the SDK's serving loop, over the process's stdin and
    stdout (claimed the way the SDK's `stdio_server()` claims them; mcp==2.3.0)."""
    restore_stdin = restore_stdout = None
    try:
        stdin_buffer, restore_stdin = sdk_stdio._claim_fd(
            0, sys.stdin, "rb", sdk_stdio._open_stdin_diversion
        )
        stdout_buffer, restore_stdout = sdk_stdio._claim_fd(
            1, sys.stdout, "wb", sdk_stdio._open_stdout_diversion
        )
        lines = _stdin_lines(stdin_buffer)
        framing = StdioFraming(anyio.wrap_file(stdout_buffer))
        read_writer, read_stream = create_context_streams[SessionMessage | Exception](0)
        write_stream, write_reader = create_context_streams[SessionMessage](0)

        async def stdin_reader() -> None:
            try:
                async with read_writer:
                    while (raw := await lines.get()) is not None:
                        await framing.read_line(raw, read_writer)
                    # End of input: answer what was asked before closing (the SDK's loop
                    # cancels requests still running when its input ends).
                    await framing.drained(DRAIN_SECONDS)
            except anyio.ClosedResourceError:
                await anyio.lowlevel.checkpoint()

        async def stdout_writer() -> None:
            try:
                async with write_reader:
                    async for session_message in write_reader:
                        await framing.write_message(session_message)
            except anyio.ClosedResourceError:
                await anyio.lowlevel.checkpoint()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(stdin_reader)
            tasks.start_soon(stdout_writer)
            yield read_stream, write_stream
    finally:
        if restore_stdout is not None:
            restore_stdout()
        if restore_stdin is not None:
            restore_stdin()


async def serve_stdio() -> None:
    # The one client is the process that started us, on this machine (attach_pdf's path).
    set_process_place("stdio")
    # And it acts as the local owner (core.identity), as a loopback HTTP client does.
    set_process_principal(local_owner_principal("stdio"))
    server = lowlevel(get_server())
    # The command line's --collections (the process default) scopes every request.
    with client_scope(None):
        async with strict_stdio_server() as (read_stream, write_stream):
            await server.run(read_stream, write_stream, server.create_initialization_options())


def run_stdio() -> None:
    anyio.run(serve_stdio)

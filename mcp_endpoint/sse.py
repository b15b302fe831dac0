"""The legacy HTTP+SSE transport (`serve --transport sse`): GET /sse + POST /messages/.

For older clients (docs/MCP.md): the 2024-11-05 transport is what SSE clients speak. It is
stateful (one server loop per open /sse stream), so it runs beside the stateless /mcp,
over the same registry and behind the same Host/Origin/token rules
(`mcp_endpoint.http.check_access`). The collection scope comes from `?collections=` /
`X-MCP-Collections` on each request, or from `serve --collections`.

The SDK's `SseServerTransport` holds the sessions and writes the stream; the POSTs are read
here, through the same JSON-RPC framing as /mcp and stdio (`mcp_endpoint.jsonrpc`), because
the SDK's handler logs a traceback for every body it cannot parse and drops messages it
cannot validate. A message that cannot be served is answered on the POST itself: 400 with
a JSON-RPC error body (-32700, -32600, or -32602 with the request's id). Batches are not
served on this transport (2024-11-05 clients do not send them): -32600. A missing resource
is -32002, as on the other handshake-era transports.
"""

from __future__ import annotations

from typing import Any
from uuid import UUID

from django.conf import settings
from mcp.server.sse import SseServerTransport
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp_types import INVALID_REQUEST, JSONRPCError, jsonrpc_message_adapter
from starlette.requests import Request

from core import identity
from mcp_endpoint import http, jsonrpc
from mcp_endpoint.asgi import ClientDisconnected, read_body, send_response, to_http_request
from mcp_endpoint.registry import get_server, lowlevel
from mcp_endpoint.scope import InvalidScope, client_scope

SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"


class _ResourceErrorCodes:
    """The server's write stream, with -32002 for a resource that does not exist (the
    SDK and the registry answer 2026-07-28's -32602; this transport is 2024-11-05)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def send(self, item: SessionMessage) -> None:
        message = item.message
        if isinstance(message, JSONRPCError):
            error = message.error
            code = jsonrpc.resource_error_code(
                "resources/read", error.code, error.message, error.data, modern=False
            )
            if code != error.code and _is_resource_answer(error.message, error.data):
                message.error = error.model_copy(update={"code": code})
        await self._stream.send(item)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)

    async def __aenter__(self) -> _ResourceErrorCodes:
        await self._stream.__aenter__()
        return self

    async def __aexit__(self, *exc: Any) -> Any:
        return await self._stream.__aexit__(*exc)


def _is_resource_answer(message: str, data: Any) -> bool:
    # Only resources answer -32602 with a not_found body or "Unknown resource" (tools
    # answer not found as isError results), so no method is needed to recognise them.
    return message.startswith("Unknown resource") or (
        isinstance(data, dict) and data.get("code") == "not_found"
    )


def _refused(status: int, body: dict[str, Any]) -> http.HttpResponse:
    return http.HttpResponse(status, list(http.JSON_HEADERS), jsonrpc.dump(body))


class LegacySseApp:
    def __init__(self) -> None:
        # No SDK security settings: check_access below applies this site's own rules.
        self.transport = SseServerTransport(
            MESSAGES_PATH, max_request_body_size=settings.MCP_MAX_BODY_BYTES
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        request = to_http_request(scope, b"", False)
        access = await http.check_access(request)
        if isinstance(access, http.HttpResponse):
            await send_response(send, access)
            return
        try:
            chosen = http.requested_scope(request)
        except InvalidScope as exc:
            await send_response(
                send, http.jsonrpc_error(400, INVALID_REQUEST, f"Invalid collections: {exc}")
            )
            return
        # The session's server loop runs in this task (GET /sse): its tools act as the
        # principal that opened the stream.
        with client_scope(chosen), identity.acting_as(access):
            if scope["path"] == SSE_PATH:
                if scope["method"] != "GET":
                    await send_response(
                        send,
                        http.jsonrpc_error(
                            405, INVALID_REQUEST, "GET /sse", headers=[("allow", "GET")]
                        ),
                    )
                    return
                server = lowlevel(get_server())
                async with self.transport.connect_sse(scope, receive, send) as (reader, writer):
                    await server.run(
                        reader,
                        _ResourceErrorCodes(writer),  # type: ignore[arg-type]
                        server.create_initialization_options(),
                    )
            else:
                await send_response(send, await self._post(scope, receive))

    async def _post(self, scope: dict[str, Any], receive: Any) -> http.HttpResponse:
        """One POST /messages/?session_id=...: 202 once handed to the session's loop."""
        if scope["method"] != "POST":
            return http.jsonrpc_error(
                405, INVALID_REQUEST, "POST /messages/", headers=[("allow", "POST")]
            )
        query = Request(scope).query_params
        try:
            session_id = UUID(hex=query.get("session_id") or "")
        except ValueError:
            return http.jsonrpc_error(
                400, INVALID_REQUEST, "session_id is missing or invalid: GET /sse first"
            )
        # The SDK keeps no public accessor for its sessions (pinned mcp==2.3.0, tested).
        session = self.transport._read_stream_writers.get(session_id)
        if session is None:
            return http.jsonrpc_error(404, INVALID_REQUEST, "No such session: GET /sse again")
        try:
            body, oversized = await read_body(receive, settings.MCP_MAX_BODY_BYTES)
        except ClientDisconnected:
            return http.HttpResponse(400)  # nobody is left to read it
        if oversized:
            return http.body_too_large()
        decoded = jsonrpc.parse(body)
        if isinstance(decoded, jsonrpc.Rejection):
            return _refused(400, decoded.body())
        if isinstance(decoded, list):
            return _refused(
                400,
                jsonrpc.error_body(
                    INVALID_REQUEST,
                    "JSON-RPC batches are not supported on the SSE transport: POST one message "
                    "per request (or use /mcp)",
                ),
            )
        message = jsonrpc.classify(decoded)
        if isinstance(message, jsonrpc.Rejection):
            return _refused(400, message.body())
        if jsonrpc.holds_surrogate(decoded):
            # The SDK's SSE writer cannot encode one when it echoes the id or the method.
            return _refused(
                400,
                jsonrpc.error_body(
                    INVALID_REQUEST,
                    "Invalid request: it holds invalid Unicode (a lone surrogate such as \\ud800)",
                    request_id=jsonrpc.plain_id(decoded.get("id"))
                    if not jsonrpc.holds_surrogate(decoded.get("id"))
                    else None,
                ),
            )
        parsed = jsonrpc_message_adapter.validate_python(message.decoded, by_name=False)
        metadata = ServerMessageMetadata(request_context=Request(scope))
        await session.send(SessionMessage(parsed, metadata=metadata))
        return http.HttpResponse(202, [("content-type", "text/plain; charset=utf-8")], b"Accepted")

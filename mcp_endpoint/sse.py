"""The legacy HTTP+SSE transport (`serve --transport sse`): GET /sse + POST /messages/.

Seed 004 asks for an SSE mode; the 2024-11-05 transport is what SSE clients speak. It is
stateful (one server loop per open /sse stream), so it runs beside the stateless /mcp,
over the same registry and behind the same Host/Origin/token rules
(`mcp_endpoint.http.check_access`). The collection scope comes from `?collections=` /
`X-MCP-Collections` on each request, or from `serve --collections`.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from mcp.server.sse import SseServerTransport
from mcp_types import INVALID_REQUEST

from mcp_endpoint import http
from mcp_endpoint.asgi import send_response, to_http_request
from mcp_endpoint.registry import get_server, lowlevel
from mcp_endpoint.scope import InvalidScope, client_scope

SSE_PATH = "/sse"
MESSAGES_PATH = "/messages/"


class LegacySseApp:
    def __init__(self) -> None:
        # No SDK security settings: check_access below applies this site's own rules.
        self.transport = SseServerTransport(
            MESSAGES_PATH, max_request_body_size=settings.MCP_MAX_BODY_BYTES
        )

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        request = to_http_request(scope, b"", False)
        if (denied := http.check_access(request)) is not None:
            await send_response(send, denied)
            return
        try:
            chosen = http.requested_scope(request)
        except InvalidScope as exc:
            await send_response(
                send, http.jsonrpc_error(400, INVALID_REQUEST, f"Invalid collections: {exc}")
            )
            return
        with client_scope(chosen):
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
                    await server.run(reader, writer, server.create_initialization_options())
            else:
                await self.transport.handle_post_message(scope, receive, send)

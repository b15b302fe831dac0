"""/mcp as a Django view: the WSGI path and the Django test client.

Under uvicorn the pure-ASGI path in `mcp_endpoint.asgi` answers /mcp first (faster: no
thread hops through Django's handler); both delegate every rule to `mcp_endpoint.http`.
"""

from __future__ import annotations

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from django.views.decorators.csrf import csrf_exempt

from mcp_endpoint import http

_endpoint = http.McpEndpoint()


@csrf_exempt  # a JSON-RPC API authenticated by Origin/loopback/bearer rules, not cookies
async def mcp(request: HttpRequest) -> HttpResponse:
    if not settings.MCP_ENABLED:
        return _as_django(http.not_found())
    oversized = False
    try:
        declared = int(request.META.get("CONTENT_LENGTH") or 0)
    except ValueError:
        declared = 0
    if declared > settings.MCP_MAX_BODY_BYTES:
        oversized = True  # never read it: Django would buffer the whole body
    answer = await _endpoint.handle(
        http.HttpRequest(
            method=request.method or "GET",
            headers=list(request.headers.items()),
            query_string=request.META.get("QUERY_STRING", ""),
            body=b"" if oversized else request.body,
            client_host=request.META.get("REMOTE_ADDR"),
            scheme=request.scheme or "http",
            oversized=oversized,
        )
    )
    return _as_django(answer)


def _as_django(answer: http.HttpResponse) -> HttpResponse:
    response = HttpResponse(answer.body, status=answer.status)
    if not answer.body:
        del response["Content-Type"]
    for name, value in answer.headers:
        response[name] = value
    return response

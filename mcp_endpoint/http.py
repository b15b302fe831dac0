"""The rules of the `/mcp` endpoint, free of any web framework (docs/MCP.md, docs/SECURITY.md).

`McpEndpoint.handle()` takes what an HTTP server knows about a request (method, raw
headers, query string, body, client address) and returns status, headers and body. The
Django view (`mcp_endpoint.views`, WSGI and the Django test client) and the pure-ASGI
path (`research_site.asgi`, what uvicorn serves) are thin adapters over it, so both obey
exactly the same rules:

1. Host must match ALLOWED_HOSTS (Django's matching rules) -> else 421.
2. Origin, when sent, must match MCP_ALLOWED_ORIGINS -> else 403. An entry with a port
   matches that port only; an entry without a port matches any port of that scheme+host.
3. Credentials (`check_access`, docs/AUTH.md), which also say who the request acts as
   (core.identity): `Authorization: Bearer` with MCP_AUTH_TOKEN, a user's API token or an
   OAuth access token for this resource -> else 401 `invalid_token`. No token: 401 with
   MCP_AUTH_TOKEN set; loopback clients act as the local owner; others 401 naming the
   resource metadata (OAUTH_ENABLED) or 403, so binding 0.0.0.0 never exposes an open
   library. A read-only token calling a write tool -> 403 `insufficient_scope`.
4. POST only -> else 405 with `Allow: POST`.
5. `Accept` must allow application/json -> else 406; `Content-Type: application/json`
   -> else 415.
6. `MCP-Protocol-Version`: absent means 2025-03-26; handshake versions and 2026-07-28 are
   served; anything else -> 400 with a JSON-RPC error naming the supported versions.
7. Body over MCP_MAX_BODY_BYTES -> 413; then JSON-RPC framing (`mcp_endpoint.jsonrpc`):
   not JSON -> 400/-32700; not a JSON-RPC message (`"id": null` included) -> 400/-32600;
   params too deep, with a lone surrogate or a cursor -> -32602 with the request's id.
8. A batch (array) where the version has them (2025-03-26, and no header) -> an array of
   answers (202 if it held no request); under any other version -> 400/-32600.
9. A notification, or a JSON-RPC response the client POSTs -> 202 with no body
   (stateless: there is nothing to act on).
10. One request -> the SDK's dispatch kernel (`serve_one`), answered as `application/json`,
    never SSE, never with an `Mcp-Session-Id`. A missing resource is -32002 up to
    2025-11-25 and -32602 at 2026-07-28 (which retired -32002).

Every rejection carries a JSON-RPC error body (`id: null` when the request's id is not
known) so MCP clients can show it.

One module, over 500 lines, because the rules above are one ordered pipeline over one
request: each step's answer depends on the ones before it (a 421 before a 401, the version
before the framing), and the WSGI, ASGI and SSE adapters share it whole.
"""

from __future__ import annotations

import functools
import hmac
import ipaddress
import json
import logging
import time
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import parse_qs, urlsplit

import anyio
from anyio import to_thread
from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.http.request import split_domain_port, validate_host
from mcp.server.connection import Connection
from mcp.server.mcpserver import MCPServer
from mcp.server.runner import serve_one
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import (
    ERROR_CODE_HTTP_STATUS,
    InboundLadderRejection,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    HEADER_MISMATCH,
    INTERNAL_ERROR,
    INVALID_PARAMS,
    INVALID_REQUEST,
    UNSUPPORTED_PROTOCOL_VERSION,
    JSONRPCRequest,
    RequestId,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS, MODERN_PROTOCOL_VERSIONS

from core import identity, throttle
from core.clients import ClientPlace, client_at
from mcp_endpoint import jsonrpc
from mcp_endpoint.registry import TOOLSET_MODULES, build_registry, get_server, lowlevel
from mcp_endpoint.scope import (
    COLLECTIONS_HEADER,
    TOOLSETS_HEADER,
    InvalidScope,
    client_scope,
    client_toolsets,
    current_toolsets,
    parse_collections,
    parse_toolsets,
)

logger = logging.getLogger(__name__)

SUPPORTED_PROTOCOL_VERSIONS: tuple[str, ...] = (
    *HANDSHAKE_PROTOCOL_VERSIONS,
    *MODERN_PROTOCOL_VERSIONS,
)
PROTOCOL_VERSION_HEADER = "mcp-protocol-version"
JSON_HEADERS: tuple[tuple[str, str], ...] = (
    ("content-type", "application/json"),
    ("cache-control", "no-store"),
)
HOST_REJECTED_STATUS = 421  # Misdirected Request: this server does not answer for that host
MCP_TOKEN_SCOPE = "mcp-token"  # noqa: S105 - a throttle scope name (core.throttle)


@dataclass(frozen=True)
class HttpRequest:
    method: str
    headers: Sequence[tuple[str, str]]  # raw pairs as received; names in any case
    query_string: str = ""
    body: bytes = b""
    client_host: str | None = None
    scheme: str = "http"
    # The adapter stopped reading past MCP_MAX_BODY_BYTES; answered 413 after the
    # access and method rules, so an unauthenticated client learns nothing more.
    oversized: bool = False

    def header(self, name: str) -> str | None:
        name = name.lower()
        for key, value in self.headers:
            if key.lower() == name:
                return value
        return None


@dataclass
class HttpResponse:
    status: int
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""

    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


def jsonrpc_error(
    status: int,
    code: int,
    message: str,
    *,
    data: Any = None,
    request_id: RequestId | None = None,
    headers: Sequence[tuple[str, str]] = (),
) -> HttpResponse:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    body = {"jsonrpc": "2.0", "id": request_id, "error": error}
    return HttpResponse(status, [*JSON_HEADERS, *headers], jsonrpc.dump(body))


def _rejected(rejection: jsonrpc.Rejection, version: str | None = None) -> HttpResponse:
    """A message refused before dispatch: 400 for what is not a request at all (-32700,
    -32600); a request whose params cannot be served gets its JSON-RPC error with the
    status its protocol version gives -32602 (200 in the handshake era, as dispatch does)."""
    if rejection.code != INVALID_PARAMS:
        status = 400
    elif version in MODERN_PROTOCOL_VERSIONS:
        status = ERROR_CODE_HTTP_STATUS.get(rejection.code, 400)
    else:
        status = 200
    return HttpResponse(status, list(JSON_HEADERS), jsonrpc.dump(rejection.body()))


def _media_type(value: str) -> str:
    return value.split(";", 1)[0].strip().lower()


def check_media_types(request: HttpRequest) -> HttpResponse | None:
    """`Accept` must allow a JSON answer (406) and the body must be JSON (415), as the
    SDK's own server checks. No Accept header at all accepts anything (RFC 9110)."""
    accept = request.header("accept")
    if accept is not None:
        accepted = {_media_type(part) for part in accept.split(",")}
        if not accepted & {"application/json", "application/*", "*/*"}:
            return jsonrpc_error(
                406,
                INVALID_REQUEST,
                "Not Acceptable: /mcp answers application/json; send "
                "'Accept: application/json, text/event-stream'",
            )
    if _media_type(request.header("content-type") or "") != "application/json":
        return jsonrpc_error(
            415,
            INVALID_REQUEST,
            "Unsupported Media Type: POST the JSON-RPC message with "
            "'Content-Type: application/json'",
        )
    return None


# --- the transport-security rules (shared with the legacy SSE transport) -------------


def _origin_parts(origin: str) -> tuple[str, str, int | None] | None:
    try:
        parts = urlsplit(origin.strip())
        port = parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return None
    if parts.path not in ("", "/") or parts.query or parts.fragment or parts.username:
        return None
    return parts.scheme.lower(), parts.hostname.lower(), port


def origin_allowed(origin: str, allowed: Sequence[str]) -> bool:
    """Exact scheme://host[:port] matching; an entry without a port allows any port."""
    candidate = _origin_parts(origin)
    if candidate is None:
        return False
    scheme, host, port = candidate
    default_port = 443 if scheme == "https" else 80
    for entry in allowed:
        wanted = _origin_parts(entry)
        if wanted is None or wanted[:2] != (scheme, host):
            continue
        if wanted[2] is None or wanted[2] == (port or default_port):
            return True
    return False


def host_allowed(host: str | None, allowed_hosts: Sequence[str]) -> bool:
    if not host:
        return False
    domain, _port = split_domain_port(host)
    if not domain:
        return False
    if settings.DEBUG and not allowed_hosts:
        allowed_hosts = [".localhost", "127.0.0.1", "[::1]"]  # as Django does
    return validate_host(domain, list(allowed_hosts))


def is_loopback(client_host: str | None) -> bool:
    if not client_host:
        return False
    try:
        address = ipaddress.ip_address(client_host.strip("[]"))
    except ValueError:
        return False
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    return address.is_loopback


@functools.lru_cache(maxsize=64)
def _host_served(host: str | None, allowed_hosts: tuple[str, ...], debug: bool) -> bool:
    """`host_allowed`, remembered: a client sends the same Host on every request, and
    Django's matching cost more than the rest of the access rules. `debug` is part of
    the key because `host_allowed` reads settings.DEBUG."""
    return host_allowed(host, allowed_hosts)


# Parsing the client's address is most of what `is_loopback` costs; clients repeat it.
_loopback_client = functools.lru_cache(maxsize=64)(is_loopback)


def check_transport(request: HttpRequest) -> HttpResponse | None:
    """Host and Origin (rules 1 and 2); None when the request may proceed."""
    if not _host_served(request.header("host"), tuple(settings.ALLOWED_HOSTS), settings.DEBUG):
        return jsonrpc_error(
            HOST_REJECTED_STATUS,
            INVALID_REQUEST,
            "Host not allowed: add it to ALLOWED_HOSTS to serve MCP under that name",
        )
    origin = request.header("origin")
    if origin is not None and not origin_allowed(origin, settings.MCP_ALLOWED_ORIGINS):
        return jsonrpc_error(
            403,
            INVALID_REQUEST,
            "Origin not allowed: add it to MCP_ALLOWED_ORIGINS (scheme://host[:port])",
        )
    return None


def resource_url(request: HttpRequest) -> str:
    """This endpoint's canonical URI as an OAuth protected resource (RFC 8707)."""
    return identity.mcp_resource_url(request.scheme, request.header("host") or "")


def _challenge(request: HttpRequest, error: str | None = None, **params: str) -> str:
    """`WWW-Authenticate: Bearer ...`; with OAuth on, it names the protected resource
    metadata (RFC 9728 §5.1), where MCP clients discover the authorization server."""
    parts = ['realm="mcp"']
    if error:
        parts.append(f'error="{error}"')
    parts += [f'{name}="{value}"' for name, value in params.items()]
    if settings.OAUTH_ENABLED:
        metadata = identity.resource_metadata_url(resource_url(request))
        parts.append(f'resource_metadata="{metadata}"')
    return "Bearer " + ", ".join(parts)


async def check_access(request: HttpRequest) -> HttpResponse | identity.Principal:
    """Host, Origin and credentials: the refusal, or the principal the request acts as.

    - `Authorization: Bearer <secret>`: MCP_AUTH_TOKEN (the service identity), a per-user
      API token (its scope applies) or an OAuth access token issued for this resource.
      Anything else is 401 `invalid_token`, counted towards the address's lockout.
    - no token: with MCP_AUTH_TOKEN set, 401; from loopback, the local owner
      (MCP_LOOPBACK_OWNER); else 401 naming the resource metadata when OAuth is on,
      403 when it is off (binding 0.0.0.0 never exposes an open library).
    """
    if (refused := check_transport(request)) is not None:
        return refused
    supplied = _bearer_token(request.header("authorization"))
    keys = [throttle.address_key(request.client_host)]
    if supplied is not None or settings.MCP_AUTH_TOKEN:
        # As for REST API tokens: after AUTH_FAILURE_LIMIT wrong tokens from one address,
        # every request from it is refused (the right token included) until the window
        # has passed; other addresses are not affected.
        try:
            throttle.check(MCP_TOKEN_SCOPE, keys)
        except throttle.Throttled as exc:
            return jsonrpc_error(
                429,
                INVALID_REQUEST,
                f"{exc.message} (too many invalid MCP tokens from this address)",
                headers=[("retry-after", str(exc.retry_after))],
                data={"retry_after_seconds": exc.retry_after},
            )
    if supplied is None:
        if settings.MCP_AUTH_TOKEN:
            return jsonrpc_error(
                401,
                INVALID_REQUEST,
                "Unauthorized: send the header 'Authorization: Bearer <MCP_AUTH_TOKEN>' "
                "(or a user's API token)",
                headers=[("www-authenticate", _challenge(request))],
            )
        if settings.MCP_LOOPBACK_OWNER and _loopback_client(request.client_host):
            return _LOCAL_OWNER
        if settings.OAUTH_ENABLED:
            return jsonrpc_error(
                401,
                INVALID_REQUEST,
                "Unauthorized: sign in with OAuth (the resource_metadata of WWW-Authenticate "
                "names the authorization server) or send 'Authorization: Bearer <API token>'",
                headers=[("www-authenticate", _challenge(request))],
            )
        return jsonrpc_error(
            403,
            INVALID_REQUEST,
            "Forbidden: this server has no MCP_AUTH_TOKEN, so it only answers clients on "
            "this machine (loopback) and clients with a user's API token. Set "
            "MCP_AUTH_TOKEN or OAUTH_ENABLED to serve other machines.",
        )
    token = settings.MCP_AUTH_TOKEN
    if token and hmac.compare_digest(supplied.encode("utf-8"), token.encode("utf-8")):
        return _SERVICE
    try:
        return await to_thread.run_sync(
            identity.authenticate_bearer, supplied, resource_url(request)
        )
    except identity.CredentialRejected as exc:
        throttle.record_failure(MCP_TOKEN_SCOPE, keys)
        return jsonrpc_error(
            401,
            INVALID_REQUEST,
            f"Unauthorized: {exc.reason} Send 'Authorization: Bearer <token>' with "
            "MCP_AUTH_TOKEN, a user's API token or an OAuth access token for this server.",
            headers=[("www-authenticate", _challenge(request, "invalid_token"))],
        )


_LOCAL_OWNER = identity.local_owner_principal()
_SERVICE = identity.service_principal()


@functools.cache
def write_tools() -> frozenset[str]:
    """Every tool, in every tool set, that changes something (read_only_hint False)."""
    registry = build_registry(toolsets=list(TOOLSET_MODULES), read_only=False)
    return frozenset(
        name
        for name, tool in registry.tools.items()
        if tool.annotations is None or not tool.annotations.read_only_hint
    )


def write_refusal(message: JSONRPCRequest) -> dict[str, Any] | None:
    """The JSON-RPC error for a write tool called by a principal that may only read (a
    read-scoped API token, an OAuth token without `write`); None when it may proceed."""
    if identity.current_can_write() or message.method != "tools/call":
        return None
    params = message.params or {}
    name = params.get("name") if isinstance(params, Mapping) else None
    if not isinstance(name, str) or name not in write_tools():
        return None
    principal = identity.current_principal()
    who = f"{principal.client!r} " if principal is not None and principal.client else ""
    return jsonrpc.error_body(
        INVALID_REQUEST,
        f"Forbidden: the token {who}has scope 'read', so it cannot call {name}, which "
        "changes the library. Use a token with scope 'write'.",
        request_id=message.id,
        data={"required_scope": identity.WRITE_SCOPE, "tool": name},
    )


def _bearer_token(value: str | None) -> str | None:
    if not value:
        return None
    scheme, _, credentials = value.strip().partition(" ")
    if scheme.lower() != "bearer" or not credentials.strip():
        return None
    return credentials.strip()


def _query(request: HttpRequest) -> dict[str, list[str]]:
    # Most requests have no query string at all; parse_qs("") still costs microseconds.
    if not request.query_string:
        return {}
    return parse_qs(request.query_string, keep_blank_values=False)


def requested_toolsets(request: HttpRequest) -> tuple[str, ...] | None:
    """`?toolsets=core,pdf` or `X-MCP-Toolsets: core,pdf` (raises InvalidScope): the tool
    sets this client wants listed, within those the operator offers."""
    values = _query(request).get("toolsets", [])
    header = request.header(TOOLSETS_HEADER)
    if header:
        values.append(header)
    toolsets = parse_toolsets(values) if values else None
    if toolsets is not None:
        try:
            get_server(toolsets)
        except ImproperlyConfigured as exc:
            raise InvalidScope(str(exc)) from None
    return toolsets


def requested_scope(request: HttpRequest) -> tuple[str, ...] | None:
    """`?collections=a,b`, `?collection=a` or `X-MCP-Collections: a,b` (raises InvalidScope)."""
    query = _query(request)
    values = [*query.get("collections", []), *query.get("collection", [])]
    header = request.header(COLLECTIONS_HEADER)
    if header:
        values.append(header)
    return parse_collections(values) if values else None


# --- dispatch ---------------------------------------------------------------------


@dataclass
class _SingleExchange:
    """The `DispatchContext` of one POST: JSON answers only, so no back-channel at all."""

    transport: TransportContext
    request_id: RequestId | None
    message_metadata: Any = None
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)
    can_send_request: bool = False

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        logger.debug("dropped %s: JSON responses carry no notifications", method)

    async def progress(
        self, progress: float, total: float | None = None, message: str | None = None
    ) -> None:
        return None


class McpEndpoint:
    """Answers one HTTP request to /mcp. Stateless: any process can answer any request."""

    def __init__(self, server: MCPServer | None = None) -> None:
        self._server = server

    @property
    def server(self) -> MCPServer:
        return self._server if self._server is not None else get_server(current_toolsets())

    async def handle(self, request: HttpRequest) -> HttpResponse:
        access = await check_access(request)
        if isinstance(access, HttpResponse):
            return access
        if request.method.upper() != "POST":
            return jsonrpc_error(
                405,
                INVALID_REQUEST,
                "Method not allowed: /mcp is stateless Streamable HTTP; POST one JSON-RPC "
                "message (no SSE stream is offered)",
                headers=[("allow", "POST")],
            )
        if (refused := check_media_types(request)) is not None:
            return refused
        version = request.header(PROTOCOL_VERSION_HEADER)
        if version is not None and version not in SUPPORTED_PROTOCOL_VERSIONS:
            return jsonrpc_error(
                400,
                UNSUPPORTED_PROTOCOL_VERSION,
                f"Unsupported MCP-Protocol-Version {version[:40]!r}; supported: "
                f"{', '.join(SUPPORTED_PROTOCOL_VERSIONS)}",
                data={"supported": list(SUPPORTED_PROTOCOL_VERSIONS), "requested": version[:40]},
            )
        if request.oversized or len(request.body) > settings.MCP_MAX_BODY_BYTES:
            return body_too_large()
        try:
            scope = requested_scope(request)
        except InvalidScope as exc:
            return jsonrpc_error(400, INVALID_REQUEST, f"Invalid collections: {exc}")
        try:
            toolsets = requested_toolsets(request)
        except InvalidScope as exc:
            return jsonrpc_error(400, INVALID_REQUEST, f"Invalid toolsets: {exc}")

        decoded = jsonrpc.parse(request.body)
        if isinstance(decoded, jsonrpc.Rejection):
            return _rejected(decoded, version)
        place: ClientPlace = "loopback" if _loopback_client(request.client_host) else "remote"
        with (
            client_scope(scope),
            client_toolsets(toolsets),
            client_at(place),
            identity.acting_as(access),
        ):
            if isinstance(decoded, list):
                return await self._batch(request, decoded, version)
            message = jsonrpc.classify(decoded)
            if isinstance(message, jsonrpc.Rejection):
                return _rejected(message, version)
            if message.request is None:
                # A notification or a client's response: accepted, and nothing to act on
                # (stateless: no request of ours is waiting for it).
                return HttpResponse(202)
            return await self._answer(request, message, version)

    async def _answer(
        self, request: HttpRequest, message: jsonrpc.Message, version: str | None
    ) -> HttpResponse:
        assert message.request is not None
        if (refusal := write_refusal(message.request)) is not None:
            # RFC 6750 §3.1: a valid token without the scope the call needs is 403
            # insufficient_scope (the MCP spec's step-up: an OAuth client may ask again).
            challenge = _challenge(
                request, "insufficient_scope", scope=f"{identity.READ_SCOPE} {identity.WRITE_SCOPE}"
            )
            return HttpResponse(
                403, [*JSON_HEADERS, ("www-authenticate", challenge)], jsonrpc.dump(refusal)
            )
        if version in MODERN_PROTOCOL_VERSIONS:
            return await self._dispatch_modern(request, message.decoded, message.request)
        connection = Connection.from_envelope(version or DEFAULT_NEGOTIATED_VERSION, None, None)
        return await self._dispatch(request, message.request, connection, modern=False)

    async def _batch(
        self, request: HttpRequest, batch: list[Any], version: str | None
    ) -> HttpResponse:
        """A JSON-RPC batch, where the protocol version has them (2025-03-26, also what a
        request without MCP-Protocol-Version is taken to be): one answer per request, in
        order, as a JSON array; 202 when it held only notifications and responses."""
        negotiated = version or DEFAULT_NEGOTIATED_VERSION
        if negotiated not in jsonrpc.BATCH_PROTOCOL_VERSIONS:
            return jsonrpc_error(
                400,
                INVALID_REQUEST,
                f"JSON-RPC batches are not supported in protocol version {negotiated} (MCP "
                "removed batching in 2025-06-18): POST one message per request",
            )
        if not batch:
            return jsonrpc_error(400, INVALID_REQUEST, "Invalid request: an empty batch")
        too_long = jsonrpc.batch_too_long(len(batch), settings.MCP_MAX_BATCH_LENGTH)
        if too_long is not None:
            return _rejected(too_long, version)
        budget = settings.MCP_MAX_BATCH_ANSWER_BYTES
        answers: list[Any] = []
        answered_bytes = 0
        for item in batch:
            message = jsonrpc.classify(item)
            if isinstance(message, jsonrpc.Rejection):
                answers.append(message.body())
            elif message.request is not None:
                if message.request.method == "initialize":
                    answers.append(
                        jsonrpc.error_body(
                            INVALID_REQUEST,
                            "initialize must not be part of a JSON-RPC batch",
                            request_id=message.request.id,
                        )
                    )
                    continue
                if answered_bytes > budget:
                    answers.append(_over_budget(message.request.id, budget))
                    continue
                answer = await self._answer(request, message, version)
                answered_bytes += len(answer.body)
                answers.append(json.loads(answer.body))
        if not answers:
            return HttpResponse(202)
        return HttpResponse(200, list(JSON_HEADERS), jsonrpc.dump(answers))

    async def _dispatch_modern(
        self, request: HttpRequest, decoded: dict[str, Any], message: JSONRPCRequest
    ) -> HttpResponse:
        duplicated = find_duplicated_routing_header(request.headers)
        lowered = {name.lower(): value for name, value in request.headers}
        if duplicated is not None:
            verdict: Any = InboundLadderRejection(
                code=HEADER_MISMATCH, message=f"{duplicated} header appears more than once"
            )
        else:
            verdict = classify_inbound_request(decoded, headers=lowered)
        if isinstance(verdict, InboundLadderRejection):
            return jsonrpc_error(
                ERROR_CODE_HTTP_STATUS.get(verdict.code, 400),
                verdict.code,
                verdict.message,
                data=verdict.data,
                request_id=message.id,
            )
        connection = Connection.from_envelope(
            verdict.protocol_version, verdict.client_info, verdict.client_capabilities
        )
        return await self._dispatch(request, message, connection, modern=True)

    async def _dispatch(
        self,
        request: HttpRequest,
        message: JSONRPCRequest,
        connection: Connection,
        *,
        modern: bool,
    ) -> HttpResponse:
        context = _SingleExchange(
            transport=TransportContext(
                kind="streamable-http",
                can_send_request=False,
                headers={name.lower(): value for name, value in request.headers},
            ),
            request_id=message.id,
        )
        started = time.perf_counter()
        try:
            result = await serve_one(
                lowlevel(self.server),
                context,
                message.method,
                message.params,
                connection=connection,
                lifespan_state={},
            )
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                incident = uuid.uuid4().hex[:12]
                logger.exception(
                    "MCP %s failed (JSON-RPC request id %r, incident %s)",
                    message.method,
                    message.id,
                    incident,
                )
                code, text, data = INTERNAL_ERROR, f"Internal error (incident {incident})", None
            else:
                code, text, data = error.code, error.message, error.data
                code = jsonrpc.resource_error_code(message.method, code, text, data, modern=modern)
            # Handshake-era clients expect JSON-RPC errors on 200; the 2026-07-28
            # transport maps codes to statuses (400 bad params, 404 unknown method).
            status = ERROR_CODE_HTTP_STATUS.get(code, 200) if modern else 200
            _log_request(message, started, f"error {code}")
            return jsonrpc_error(status, code, text, data=data, request_id=message.id)
        _log_request(message, started, "isError" if _is_error_result(result) else "ok")
        body = {"jsonrpc": "2.0", "id": message.id, "result": result}
        return HttpResponse(200, list(JSON_HEADERS), jsonrpc.dump(body))


def _over_budget(request_id: RequestId, budget: int) -> dict[str, Any]:
    """The answer of a batched request left unrun: the answers before it filled the batch's
    budget. The client sends it again on its own (nothing of it was done)."""
    return jsonrpc.error_body(
        INVALID_REQUEST,
        f"Not run: this batch's answers passed {budget} bytes (MCP_MAX_BATCH_ANSWER_BYTES); "
        "send this request again in another POST",
        request_id=request_id,
        data={"max_batch_answer_bytes": budget, "not_run": True},
    )


def _log_request(message: JSONRPCRequest, started: float, outcome: str) -> None:
    if logger.isEnabledFor(logging.DEBUG):
        principal = identity.current_principal()
        logger.debug(
            "HTTP %s (id %r): %s in %.1f ms, as %s",
            jsonrpc.describe(message.method, message.params),
            message.id,
            outcome,
            (time.perf_counter() - started) * 1000,
            principal.describe() if principal is not None else "nobody",
        )


def _is_error_result(result: Any) -> bool:
    return isinstance(result, dict) and result.get("isError") is True


def body_too_large() -> HttpResponse:
    return jsonrpc_error(
        413,
        INVALID_REQUEST,
        f"Request body too large (limit {settings.MCP_MAX_BODY_BYTES} bytes, MCP_MAX_BODY_BYTES)",
    )


def internal_error(incident: str) -> HttpResponse:
    """An unexpected failure of ours, as JSON-RPC (-32603, the incident to find in the log)."""
    return jsonrpc_error(500, INTERNAL_ERROR, f"Internal error (incident {incident})")


def not_found() -> HttpResponse:
    return jsonrpc_error(404, INVALID_REQUEST, "Not found: MCP is disabled (MCP_ENABLED=false)")

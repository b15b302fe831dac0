"""The one MCP registry: every tool and resource, for every transport.

`build_server()` assembles an `MCPServer` from the tool-set modules named in
`TOOLSET_MODULES`, honouring `MCP_TOOLSETS` (which sets are listed) and `MCP_READ_ONLY`
(write tools are not registered at all, so they can be neither listed nor called).
A later issue adds a tool set by writing `mcp_endpoint/tools/<set>.py` with a
`register(registry)` function and adding one line to `TOOLSET_MODULES`.

Errors are mapped here, once, for every transport:

- unknown tool, arguments that fail the input schema (missing, wrong type, over a limit)
  and `InvalidInput` from a service: JSON-RPC `-32602` (the SDK would answer the first
  two with `isError` results; the policy middleware checks them before the SDK does);
- any other `DomainError` (not found, conflict, ...): an `isError: true` result whose
  text is `{"error": {"code", "message", ...details}}` and which carries no
  `structuredContent` (TS SDK 1.x clients reject error results that do);
- the database unreachable (PostgreSQL restarting, SQLite locked): an `isError` result
  with code `database_unavailable` and `retry_after_seconds` (resources: `-32603` with
  the same data), never an incident;
- anything unexpected: `-32603` with an incident id; the traceback stays in the log;
- `MCP_REQUIRE_COLLECTION` with an unscoped client: `-32603` saying how to choose one.
"""

from __future__ import annotations

import contextvars
import functools
import importlib
import json
import logging
import unicodedata
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import close_old_connections
from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    CallToolResult,
    TextContent,
    ToolAnnotations,
)
from pydantic import ValidationError

from core.errors import DomainError, InvalidInput, NotFound, database_unavailable
from mcp_endpoint.scope import current_scope

logger = logging.getLogger(__name__)

# Tool set name -> module with a `register(registry)` function. Later issues add
# search, assets, pdf, zotero and review here.
# A set may span several modules (comma-separated), registered in order.
TOOLSET_MODULES: dict[str, str] = {
    "library": "mcp_endpoint.tools.library,mcp_endpoint.tools.engines_library",
    "search": "mcp_endpoint.tools.search,mcp_endpoint.tools.engines_search",
    "assets": "mcp_endpoint.tools.assets",
    "pdf": "mcp_endpoint.tools.pdf",
    "zotero": "mcp_endpoint.tools.zotero",
    "review": "mcp_endpoint.tools.review",
}

INSTRUCTIONS = (
    "A researcher's paper library. Papers are referred to by their integer paper_id, their "
    "human id such as '[Vaswani, A., Shazeer, N. 2017]', or their citekey; any of the three "
    "works wherever a tool takes a paper. Projects (collections) are referred to by id or name."
)

REQUIRE_COLLECTION_MESSAGE = (
    "This server requires a collection to be chosen at client initialisation: add "
    "?collections=<project>[,<project>] to the endpoint URL (or send the X-MCP-Collections "
    "header) over HTTP, or start the stdio server with --collections <project>[,<project>]."
)

# The JSON-RPC id of the request being served, for log lines of tools running on a
# worker thread (anyio copies the context into it).
current_request_id: contextvars.ContextVar[Any] = contextvars.ContextVar(
    "mcp_request_id", default=None
)

FnT = TypeVar("FnT", bound=Callable[..., Any])

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# Tools that ask external engines and add what they find to the library (never deleting).
EXTERNAL_SEARCH = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)


def domain_error_result(exc: DomainError) -> CallToolResult:
    """An `isError` result an agent can act on; text only (see module docstring)."""
    body = json.dumps({"error": exc.as_dict()}, ensure_ascii=False, default=str)
    return CallToolResult(content=[TextContent(type="text", text=body)], is_error=True)


def _internal_error(what: str) -> MCPError:
    incident = uuid.uuid4().hex[:12]
    logger.exception(
        "%s failed (JSON-RPC request id %r, incident %s)", what, current_request_id.get(), incident
    )
    return MCPError(
        code=INTERNAL_ERROR,
        message=f"Internal error while running {what} (incident {incident}; see the server log)",
    )


def _guard_tool(fn: FnT, name: str) -> FnT:
    """Map service errors of one sync tool and keep its database connection healthy.

    Tools run on anyio worker threads, outside Django's request cycle, so nothing else
    closes connections that are broken or older than CONN_MAX_AGE.
    """

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        except InvalidInput as exc:
            raise MCPError(code=INVALID_PARAMS, message=exc.message, data=exc.as_dict()) from exc
        except DomainError as exc:
            return domain_error_result(exc)
        except MCPError:
            raise
        except Exception as exc:
            unavailable = database_unavailable(exc)
            if unavailable is not None:
                logger.warning("tool %s: %s (%s)", name, unavailable.code, exc)
                return domain_error_result(unavailable)
            raise _internal_error(f"tool {name}") from None
        finally:
            close_old_connections()

    return guarded  # type: ignore[return-value]


def _guard_resource(fn: FnT, uri_template: str) -> FnT:
    """Resources answer JSON-RPC errors: not found / bad reference is -32602 (SEP-2164)."""

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        try:
            return fn(*args, **kwargs)
        except (NotFound, InvalidInput) as exc:
            # Not found / bad reference is -32602 (SEP-2164); the structured body rides in
            # `data` so clients get the same fields as from the tools' isError results.
            raise MCPError(INVALID_PARAMS, exc.message, exc.as_dict()) from exc
        except DomainError as exc:
            # The resource exists but could not be produced now (e.g. asset_fetch_failed).
            raise MCPError(INTERNAL_ERROR, exc.message, exc.as_dict()) from exc
        except MCPError:
            raise
        except Exception as exc:
            unavailable = database_unavailable(exc)
            if unavailable is not None:
                logger.warning("resource %s: %s (%s)", uri_template, unavailable.code, exc)
                raise MCPError(INTERNAL_ERROR, unavailable.message, unavailable.as_dict()) from None
            raise _internal_error(f"resource {uri_template}") from None
        finally:
            close_old_connections()

    return guarded  # type: ignore[return-value]


@dataclass
class _ResourceDef:
    uri: str
    fn: Callable[..., Any]
    options: dict[str, Any]


@dataclass
class Registry:
    """What a tool-set module sees: decorators that register guarded tools and resources."""

    read_only: bool
    tools: dict[str, Tool] = field(default_factory=dict)
    toolset_of: dict[str, str] = field(default_factory=dict)
    resources: list[_ResourceDef] = field(default_factory=list)
    _current_set: str = ""

    def tool(
        self,
        *,
        name: str,
        title: str,
        description: str,
        annotations: ToolAnnotations,
        saves_results: bool = False,
    ) -> Callable[[FnT], FnT]:
        """Register a sync tool. Write tools (read_only_hint False) vanish in read-only mode,
        except `saves_results` tools: searches that keep what they find in the library when
        they may, and only return it in read-only mode (check `registry.read_only`)."""
        if annotations.read_only_hint is None:
            raise ImproperlyConfigured(f"tool {name}: annotations must say read_only_hint")

        def decorator(fn: FnT) -> FnT:
            hints = annotations
            if self.read_only and not annotations.read_only_hint:
                if not saves_results:
                    return fn
                # In read-only mode it saves nothing: say so to the client.
                hints = annotations.model_copy(update={"read_only_hint": True})
            if name in self.tools:
                raise ImproperlyConfigured(f"tool {name} is registered twice")
            self.tools[name] = Tool.from_function(
                _guard_tool(fn, name),
                name=name,
                title=title,
                description=description,
                annotations=hints,
                structured_output=True,
            )
            self.toolset_of[name] = self._current_set
            return fn

        return decorator

    def resource(self, uri: str, **options: Any) -> Callable[[FnT], FnT]:
        """Register a sync resource (template); options go to `MCPServer.resource`."""

        def decorator(fn: FnT) -> FnT:
            self.resources.append(_ResourceDef(uri, _guard_resource(fn, uri), options))
            return fn

        return decorator


class PolicyMiddleware:
    """Server middleware: capabilities, collection requirement and -32602 for tools/call.

    Runs before the SDK validates anything (see `mcp.server.context.ServerMiddleware`).
    """

    def __init__(self, tools: dict[str, Tool], *, require_collection: bool) -> None:
        self._tools = tools
        self._require_collection = require_collection

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        method = ctx.method
        if method.startswith("prompts/"):
            # The product exposes tools and resources only (seed 000).
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=method)
        if method in ("tools/call", "resources/read"):
            if self._require_collection and current_scope() is None:
                raise MCPError(code=INTERNAL_ERROR, message=REQUIRE_COLLECTION_MESSAGE)
        if method == "tools/call":
            self._check_tool_call(ctx.params)
        elif method == "resources/read":
            self._check_resource_uri(ctx.params)
        token = current_request_id.set(ctx.request_id)
        try:
            result = await call_next(ctx)
        finally:
            current_request_id.reset(token)
        if method in ("initialize", "server/discover") and isinstance(result, dict):
            capabilities = result.get("capabilities")
            if isinstance(capabilities, dict):
                capabilities.pop("prompts", None)
                capabilities.pop("completions", None)
        return result

    def _check_resource_uri(self, params: Any) -> None:
        """A URI with a control character or a lone surrogate names no resource; caught here
        because the database cannot take either in a query (PostgreSQL refuses NUL, and
        surrogates cannot be encoded at all), which would be an internal error."""
        uri = params.get("uri") if isinstance(params, dict) else None
        if not isinstance(uri, str):
            return  # the SDK's own params validation answers -32602
        if any(unicodedata.category(char) in ("Cc", "Cs") for char in uri):
            raise MCPError(
                code=INVALID_PARAMS,
                message="Invalid resource URI: it contains control characters or lone surrogates",
                data={"uri": uri.encode("utf-8", "backslashreplace").decode()},
            )

    def _check_tool_call(self, params: Any) -> None:
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return  # the SDK's own params validation answers -32602
        name = params["name"]
        tool = self._tools.get(name)
        if tool is None:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Unknown tool: {name}",
                data={"tool": name, "available": sorted(self._tools)},
            )
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            return
        if (where := _nul_character_at(arguments)) is not None:
            # No tool takes one, and PostgreSQL cannot hold one in text (the query would fail).
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Invalid arguments for tool {name}: {where}: contains a NUL character",
                data={
                    "tool": name,
                    "errors": [
                        {"field": where, "message": "contains a NUL character", "type": "nul"}
                    ],
                },
            )
        try:
            tool.fn_metadata.validate_arguments(arguments)
        except ValidationError as exc:
            # Field locations and messages only: the rejected values are the caller's data.
            errors = [
                {
                    "field": ".".join(str(part) for part in error["loc"]),
                    "message": error["msg"],
                    "type": error["type"],
                }
                for error in exc.errors(include_url=False, include_input=False)
            ]
            summary = "; ".join(f"{e['field'] or 'arguments'}: {e['message']}" for e in errors)
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Invalid arguments for tool {name}: {summary}",
                data={"tool": name, "errors": errors},
            ) from None


def _nul_character_at(arguments: dict[str, Any]) -> str | None:
    """The dotted path of the first string (value or key) holding a NUL, if any.

    Iterative: arguments may be nested as deep as the JSON parser allows.
    """
    pending: list[tuple[str, Any]] = [("", arguments)]
    while pending:
        path, value = pending.pop()
        if isinstance(value, str):
            if "\x00" in value:
                return path
        elif isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                if "\x00" in str(key):
                    return where.replace("\x00", "\\x00")
                pending.append((where, item))
        elif isinstance(value, list):
            pending.extend((f"{path}.{index}", item) for index, item in enumerate(value))
    return None


def selected_toolsets(requested: Iterable[str]) -> list[str]:
    """The tool sets to register: all of them when `requested` is empty."""
    names = [name.strip().lower() for name in requested if name.strip()]
    unknown = sorted(set(names) - set(TOOLSET_MODULES))
    if unknown:
        raise ImproperlyConfigured(
            f"MCP_TOOLSETS names unknown tool set(s) {', '.join(unknown)}; "
            f"known: {', '.join(sorted(TOOLSET_MODULES))}"
        )
    return names or list(TOOLSET_MODULES)


def build_server(
    *,
    toolsets: Iterable[str] | None = None,
    read_only: bool | None = None,
    require_collection: bool | None = None,
) -> MCPServer:
    """Assemble the registry from settings (arguments override them, for tests)."""
    read_only = settings.MCP_READ_ONLY if read_only is None else read_only
    if require_collection is None:
        require_collection = settings.MCP_REQUIRE_COLLECTION
    registry = Registry(read_only=read_only)
    for set_name in selected_toolsets(settings.MCP_TOOLSETS if toolsets is None else toolsets):
        registry._current_set = set_name
        for module_name in TOOLSET_MODULES[set_name].split(","):
            importlib.import_module(module_name).register(registry)

    server: MCPServer = MCPServer(
        settings.MCP_SERVER_NAME,
        version=settings.MCP_SERVER_VERSION,
        instructions=INSTRUCTIONS,
        tools=list(registry.tools.values()),
        middleware=[PolicyMiddleware(registry.tools, require_collection=require_collection)],
        # The SDK's in-process subscription bus is for stateful servers; /mcp is stateless.
        subscriptions=False,
    )
    for resource in registry.resources:
        server.resource(resource.uri, **resource.options)(resource.fn)
    return server


@functools.cache
def get_server() -> MCPServer:
    """The process-wide registry (settings do not change while a process runs)."""
    return build_server()


def lowlevel(server: MCPServer) -> Server[Any]:
    """The low-level `Server` behind an `MCPServer`, which the dispatch kernel drives.

    `MCPServer` has no public accessor; the SDK's own client reads the same attribute
    (mcp/client/client.py). Pinned by mcp==2.3.0 and covered by the tests.
    """
    return server._lowlevel_server

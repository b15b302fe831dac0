"""The one MCP registry: every tool and resource, for every transport.

`build_server()` assembles an `MCPServer` from the tool-set modules named in
`TOOLSET_MODULES`, honouring `MCP_TOOLSETS` (which sets are listed) and `MCP_READ_ONLY`
(write tools are not registered at all, so they can be neither listed nor called).
A new tool set is a module `mcp_endpoint/tools/<set>.py` whose tools are module-level
functions declared with `mcp_tool` and whose `register(registry)` lists them, plus one
line in `TOOLSET_MODULES`.

Errors are mapped here, once, for every transport:

- `InvalidInput` from a service: JSON-RPC `-32602`, as for an unknown tool or arguments
  that fail the input schema (missing, wrong type, over a limit), which
  `mcp_endpoint.policy` answers before the SDK would (with `isError` results);
- any other `DomainError` (not found, conflict, ...): an `isError: true` result whose
  text is `{"error": {"code", "message", ...details}}` and which carries no
  `structuredContent` (TS SDK 1.x clients reject error results that do);
- the database unreachable (PostgreSQL restarting, SQLite locked): an `isError` result
  with code `database_unavailable` and `retry_after_seconds` (resources: `-32603` with
  the same data), never an incident;
- anything unexpected: `-32603` with an incident id; the traceback stays in the log;
- `MCP_REQUIRE_COLLECTION` with an unscoped client: `-32603` saying how to choose one
  (`mcp_endpoint.policy`).

One module, over 500 lines, because it is one contract: what a tool-set module declares
(`mcp_tool`, `Registry`), the guard that maps its errors and shapes its answers, and the
server assembled from it are what every transport serves; the per-request checks live in
`mcp_endpoint.policy`.
"""

from __future__ import annotations

import contextvars
import datetime
import functools
import importlib
import json
import logging
import os
import socket
import uuid
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ImproperlyConfigured
from django.db import close_old_connections
from mcp import MCPError
from mcp.server.lowlevel.server import Server
from mcp.server.mcpserver import MCPServer
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp_types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolResult,
    TextContent,
    ToolAnnotations,
)
from pydantic import BaseModel

from core import audit
from core.errors import DomainError, InvalidInput, NotFound, database_unavailable
from mcp_endpoint.policy import PolicyMiddleware, current_request_id, validated_arguments

logger = logging.getLogger(__name__)

# Tool set name -> module with a `register(registry)` function.
# A set may span several modules (comma-separated), registered in order.
TOOLSET_MODULES: dict[str, str] = {
    "library": (
        "mcp_endpoint.tools.library,mcp_endpoint.tools.engines_library,mcp_endpoint.tools.cite"
    ),
    "search": (
        "mcp_endpoint.tools.search,mcp_endpoint.tools.engines_search,mcp_endpoint.tools.citecheck,"
        "mcp_endpoint.tools.snowball"
    ),
    "assets": "mcp_endpoint.tools.assets",
    "pdf": "mcp_endpoint.tools.pdf,mcp_endpoint.tools.passages,mcp_endpoint.tools.open_access",
    "zotero": "mcp_endpoint.tools.zotero",
    "review": "mcp_endpoint.tools.review,mcp_endpoint.tools.screening",
    "extraction": "mcp_endpoint.tools.extraction",
    "watch": "mcp_endpoint.tools.watch,mcp_endpoint.tools.retractions",
}

# The tools every agent needs, whatever else is chosen: tool set `core` is always listed.
# Its budget is 4,000 tokens (tests/mcp/test_tool_budget.py).
CORE = "core"
CORE_TOOLS = frozenset(
    {
        "search_papers",
        "get_paper_details",
        "add_paper",
        "list_projects",
        "create_project",
        "add_papers_to_project",
        "list_project_papers",
        "export_search_results",
    }
)
# Listed only when chosen in MCP_TOOLSETS or when a Zotero is configured or answering.
OPT_IN_TOOLSETS = frozenset({"zotero"})

# Sent once, at initialize: what many tools share is told here rather than in each tool's
# description or schema (docs/MCP.md "Tool budget and tool sets").
INSTRUCTIONS = (
    "A researcher's paper library. A paper argument (paper_id, paper_ids) takes the integer "
    "paper_id, the human id such as '[Vaswani, A., Shazeer, N. 2017]' or the citekey, and "
    "also the paper's DOI, arXiv id, PMID ('pmid:31452104'; bare digits are a paper_id), "
    "PMCID ('PMC6739224') or OpenReview id ('openreview:<id>'). A project (project_id) is its "
    "id (a slug such as 'llm-evaluation') or its name. engines takes engine ids as a list or "
    "'a,b' (list_search_engines); 'local' is the library, offline and fast, the others take "
    "seconds. The searches keep what the engines find in the library, so every result has a "
    "paper_id. filters: all must hold; text matches case-insensitively or as a * ? glob. "
    "Text longer than max_chars (default 20000) is cut with a marker saying how to read on. "
    "PDF pages are 1-based; rectangles are [x1, y1, x2, y2] in PDF points, origin bottom-left."
)

# Appended to the description of tools that keep what they find, on a read-only server.
READ_ONLY_NOTE = "This server is read-only: nothing is kept or written."

# Whether the server answering the tools/call being served is read-only (its registry's
# `read_only`), for the tools that keep what they find only when they may.
_serving_read_only: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "mcp_serving_read_only", default=False
)

FnT = TypeVar("FnT", bound=Callable[..., Any])

READ_ONLY = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
# add_paper: asks external engines and adds the paper to the library (never deleting).
EXTERNAL_SEARCH = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)
# Searches of external engines: they change nothing the user made (projects, keywords,
# notes, records already there); what they find is kept as a cache so that every result
# has a paper_id, and only `project_id`, asked for explicitly, files results. Cautious
# clients would otherwise ask approval for every search.
SEARCH_AND_KEEP = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)


class _ValidatedOnce(FuncMetadata):
    """A tool's argument model, validated once per call.

    PolicyMiddleware validates a call's arguments before the SDK sees them (to answer
    -32602 rather than an `isError` result), then the SDK's `Tool.run` validated the same
    arguments again: the second pass takes the first one's result when it is given the
    same values (the SDK hands the tool a copy of the arguments dict holding the very
    objects the middleware validated). Anything else is validated as usual.
    """

    def validate_arguments(self, arguments_to_validate: dict[str, Any]) -> dict[str, Any]:
        known = validated_arguments.get()
        if known is not None and _same_values(known[0], arguments_to_validate):
            validated_arguments.set(None)  # one tool call, one use
            return known[1]
        return super().validate_arguments(arguments_to_validate)


def _same_values(validated: dict[str, Any], given: dict[str, Any]) -> bool:
    return validated.keys() == given.keys() and all(
        given[key] is value for key, value in validated.items()
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


def _lean(value: Any) -> Any:
    """Drop what costs tokens and says nothing: null fields, at every depth (an absent
    field is null). Empty lists stay: `"keywords": []` and `"results": []` are answers.

    Only containers are recursed into (a call per string or number was most of its cost)."""
    if isinstance(value, dict):
        lean: dict[Any, Any] = {}
        for key, item in value.items():
            if item is None:
                continue
            lean[key] = _lean(item) if isinstance(item, _CONTAINERS) else item
        return lean
    if isinstance(value, list):
        return [_lean(item) if isinstance(item, _CONTAINERS) else item for item in value]
    return value


_CONTAINERS = (dict, list)


def _json_value(value: Any) -> Any:
    """Dates and times as ISO 8601 (what every client parses); anything else as text."""
    if isinstance(value, (datetime.date, datetime.time)):
        return value.isoformat()
    return str(value)


def tool_result(value: Any) -> CallToolResult:
    """A tool's answer as one compact JSON text block (docs/MCP.md "Responses").

    No `structuredContent` beside it: clients hand the model one or the other, and the two
    together cost twice the tokens on the wire for the same data.
    """
    if isinstance(value, CallToolResult):
        return value
    if isinstance(value, BaseModel):
        value = value.model_dump(mode="json", by_alias=True, exclude_none=True)
    text = _compact_json(value)
    if ":null" in text:
        # A null field somewhere (or a string holding ":null"): the answer without them.
        # Most answers have none (model dumps already leave them out), so the walk that
        # drops them is only paid for when the encoding shows one may be there.
        text = _compact_json(_lean(value))
    return CallToolResult(content=[TextContent(type="text", text=text)])


def _compact_json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=_json_value)


def serving_read_only() -> bool:
    """Whether the server running this tool call is read-only (MCP_READ_ONLY, or the
    `read_only` a test built it with): tools that keep what they find ask it per call."""
    return _serving_read_only.get()


def _guard_tool(fn: FnT, name: str, *, read_only: bool = False) -> FnT:
    """Map service errors of one sync tool, shape its answer, and keep its database
    connection healthy.

    Tools run on anyio worker threads, outside Django's request cycle, so nothing else
    closes connections that are broken or older than CONN_MAX_AGE.
    """

    @functools.wraps(fn)
    def guarded(*args: Any, **kwargs: Any) -> Any:
        close_old_connections()
        read_only_token = _serving_read_only.set(read_only)
        try:
            return tool_result(fn(*args, **kwargs))
        except InvalidInput as exc:
            raise MCPError(code=INVALID_PARAMS, message=exc.message, data=exc.as_dict()) from exc
        except DomainError as exc:
            return domain_error_result(exc)
        except MCPError:
            raise
        except RecursionError:
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Invalid arguments for tool {name}: nested too deeply",
            ) from None
        except Exception as exc:
            unavailable = database_unavailable(exc)
            if unavailable is not None:
                logger.warning("tool %s: %s (%s)", name, unavailable.code, exc)
                return domain_error_result(unavailable)
            raise _internal_error(f"tool {name}") from None
        finally:
            _serving_read_only.reset(read_only_token)
            audit.flush_all()  # the entries of this call's writes (core/audit.py)
            close_old_connections()

    guarded.__annotations__ = {**fn.__annotations__, "return": CallToolResult}
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


def compact_schema(schema: Any) -> Any:
    """An input schema as an agent needs it (docs/MCP.md "Tool budget"): no generated
    titles, no `default: null`, optional values without their `null` branch (omitting
    an argument is how an agent says "none"), no `maxLength` (size guards the server
    still enforces, with an error naming the limit; they tell an agent nothing it needs to
    form a call), and every object closed (`additionalProperties: false`) unless it says
    otherwise."""
    if isinstance(schema, list):
        return [compact_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key == "title" and isinstance(value, str):
            continue
        if key == "default" and value is None:
            continue
        if key == "maxLength":
            continue
        if key == "properties" and isinstance(value, dict):
            out[key] = {name: compact_schema(prop) for name, prop in value.items()}
            continue
        out[key] = compact_schema(value)
    branches = out.get("anyOf")
    if isinstance(branches, list):
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1 and isinstance(kept[0], dict):
            out.pop("anyOf")
            out = {**kept[0], **out}
        elif len(kept) < len(branches):
            out["anyOf"] = kept
    if out.get("type") == "object" and "properties" in out:
        out.setdefault("additionalProperties", False)
    return out


@dataclass(frozen=True)
class ToolSpec:
    """What `Registry.tool` takes for one tool, declared beside its function."""

    name: str
    title: str
    description: str
    annotations: ToolAnnotations
    saves_results: bool = False
    aliases: dict[str, str] | None = None


_TOOL_SPEC = "__mcp_tool_spec__"
_RESOURCE_SPEC = "__mcp_resource_spec__"


def mcp_tool(
    *,
    name: str,
    title: str,
    description: str,
    annotations: ToolAnnotations,
    saves_results: bool = False,
    aliases: dict[str, str] | None = None,
) -> Callable[[FnT], FnT]:
    """Declare a module-level function as a tool (arguments as `Registry.tool`); nothing
    is registered until its set's `register()` passes it to `Registry.add_tools`, so each
    tool is one plain typed function and a set's `register()` is the list of its tools."""
    spec = ToolSpec(name, title, description, annotations, saves_results, aliases)

    def decorator(fn: FnT) -> FnT:
        setattr(fn, _TOOL_SPEC, spec)
        return fn

    return decorator


def mcp_resource(uri: str, **options: Any) -> Callable[[FnT], FnT]:
    """Declare a module-level function as a resource (arguments as `Registry.resource`),
    registered by `Registry.add_resources`."""

    def decorator(fn: FnT) -> FnT:
        setattr(fn, _RESOURCE_SPEC, (uri, options))
        return fn

    return decorator


@dataclass
class _ResourceDef:
    uri: str
    fn: Callable[..., Any]
    options: dict[str, Any]


@dataclass
class Registry:
    """What a tool-set module sees: decorators that register guarded tools and resources.

    Every module is registered; a tool that is not listed (its set not chosen, or a write
    tool in read-only mode) is remembered in `disabled` with the reason, so a call to it
    says why instead of "unknown tool".
    """

    read_only: bool
    selected: frozenset[str] = frozenset()
    tools: dict[str, Tool] = field(default_factory=dict)
    toolset_of: dict[str, str] = field(default_factory=dict)
    aliases: dict[str, dict[str, str]] = field(default_factory=dict)
    disabled: dict[str, str] = field(default_factory=dict)
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
        aliases: dict[str, str] | None = None,
    ) -> Callable[[FnT], FnT]:
        """Register a sync tool.

        Write tools (read_only_hint False) are disabled in read-only mode, except
        `saves_results` tools: searches that keep what they find when they may, and only
        return it in read-only mode (check `registry.read_only`). `aliases` maps other
        accepted argument names (`max_results`, which agents also send) to the listed one
        (`limit`).
        """
        if annotations.read_only_hint is None:
            raise ImproperlyConfigured(f"tool {name}: annotations must say read_only_hint")
        toolset = CORE if name in CORE_TOOLS else self._current_set

        def decorator(fn: FnT) -> FnT:
            if name in self.tools or name in self.disabled:
                raise ImproperlyConfigured(f"tool {name} is registered twice")
            hints, text = annotations, description
            if toolset not in self.selected:
                self.disabled[name] = (
                    f"Tool {name} is in tool set '{toolset}', which this server does not list "
                    f"(MCP_TOOLSETS); listed: {', '.join(sorted(self.selected))}."
                )
                return fn
            if self.read_only and not annotations.read_only_hint:
                if not saves_results:
                    self.disabled[name] = (
                        f"Tool {name} is disabled: this server is read-only (MCP_READ_ONLY=true) "
                        f"and {name} changes the library."
                    )
                    return fn
                # In read-only mode it saves nothing: say so to the client.
                hints = annotations.model_copy(update={"read_only_hint": True})
                text = f"{description} {READ_ONLY_NOTE}"
            tool = Tool.from_function(
                _guard_tool(fn, name, read_only=self.read_only),
                name=name,
                title=title,
                description=text,
                annotations=hints,
                structured_output=False,
            )
            tool.parameters = compact_schema(tool.parameters)
            metadata = tool.fn_metadata
            tool.fn_metadata = _ValidatedOnce(
                arg_model=metadata.arg_model,
                output_schema=metadata.output_schema,
                output_model=metadata.output_model,
                wrap_output=metadata.wrap_output,
            )
            self.tools[name] = tool
            self.toolset_of[name] = toolset
            if aliases:
                self.aliases[name] = dict(aliases)
            return fn

        return decorator

    def add_tools(self, *fns: Callable[..., Any]) -> None:
        """Register functions declared with `mcp_tool`, in the order given (the order of
        tools/list)."""
        for fn in fns:
            spec: ToolSpec = getattr(fn, _TOOL_SPEC)
            self.tool(
                name=spec.name,
                title=spec.title,
                description=spec.description,
                annotations=spec.annotations,
                saves_results=spec.saves_results,
                aliases=spec.aliases,
            )(fn)

    def add_resources(self, *fns: Callable[..., Any]) -> None:
        """Register functions declared with `mcp_resource`, in the order given."""
        for fn in fns:
            uri, options = getattr(fn, _RESOURCE_SPEC)
            self.resource(uri, **options)(fn)

    def resource(self, uri: str, **options: Any) -> Callable[[FnT], FnT]:
        """Register a sync resource (template); options go to `MCPServer.resource`."""

        def decorator(fn: FnT) -> FnT:
            if self._current_set in self.selected:
                self.resources.append(_ResourceDef(uri, _guard_resource(fn, uri), options))
            return fn

        return decorator


def _zotero_answers() -> bool:
    """Zotero is configured (ZOTERO_URL set) or a local Zotero accepts connections."""
    if os.environ.get("ZOTERO_URL"):
        return True
    parts = urlsplit(settings.ZOTERO_URL)
    if parts.hostname not in ("localhost", "127.0.0.1", "::1") or parts.port is None:
        return False
    try:
        with socket.create_connection((parts.hostname, parts.port), timeout=0.2):
            return True
    except OSError:
        return False


def selected_toolsets(requested: Iterable[str]) -> list[str]:
    """The tool sets to list: `core` and the requested ones; when none are requested,
    every set (the opt-in `zotero` only when a Zotero is configured or answering)."""
    names = [name.strip().lower() for name in requested if name.strip()]
    unknown = sorted(set(names) - set(TOOLSET_MODULES) - {CORE})
    if unknown:
        raise ImproperlyConfigured(
            f"MCP_TOOLSETS names unknown tool set(s) {', '.join(unknown)}; "
            f"known: {', '.join([CORE, *sorted(TOOLSET_MODULES)])}"
        )
    if not names:
        names = [n for n in TOOLSET_MODULES if n not in OPT_IN_TOOLSETS]
        if _zotero_answers():
            names.append("zotero")
    return [CORE, *(name for name in names if name != CORE)]


def build_registry(*, toolsets: Iterable[str] | None = None, read_only: bool = False) -> Registry:
    """Every tool-set module registered; the chosen sets listed (the rest disabled)."""
    requested = settings.MCP_TOOLSETS if toolsets is None else toolsets
    registry = Registry(read_only=read_only, selected=frozenset(selected_toolsets(requested)))
    for set_name, modules in TOOLSET_MODULES.items():
        registry._current_set = set_name
        for module_name in modules.split(","):
            importlib.import_module(module_name).register(registry)
    return registry


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
    registry = build_registry(toolsets=toolsets, read_only=read_only)
    server: MCPServer = MCPServer(
        settings.MCP_SERVER_NAME,
        version=settings.MCP_SERVER_VERSION,
        instructions=INSTRUCTIONS,
        tools=list(registry.tools.values()),
        middleware=[
            PolicyMiddleware(
                tools=registry.tools,
                disabled=registry.disabled,
                aliases=registry.aliases,
                require_collection=require_collection,
            )
        ],
        # The SDK's in-process subscription bus is for stateful servers; /mcp is stateless.
        subscriptions=False,
    )
    for resource in registry.resources:
        server.resource(resource.uri, **resource.options)(resource.fn)
    return server


def get_server(toolsets: tuple[str, ...] | None = None) -> MCPServer:
    """The process-wide registry (settings do not change while a process runs), or the one
    for the tool sets a client chose when it connected (`?toolsets=core,pdf`)."""
    return _server_for(toolsets)


@functools.cache
def _server_for(toolsets: tuple[str, ...] | None) -> MCPServer:
    if toolsets is None:
        return build_server()
    # A client narrows what the operator listed; it never lists what the operator left out.
    allowed = set(selected_toolsets(settings.MCP_TOOLSETS))
    unknown = sorted(set(toolsets) - set(TOOLSET_MODULES) - {CORE})
    if unknown:
        raise ImproperlyConfigured(
            f"unknown tool set(s) {', '.join(unknown)}; known: "
            f"{', '.join([CORE, *TOOLSET_MODULES])}"
        )
    chosen = [name for name in toolsets if name in allowed] or [CORE]
    return build_server(toolsets=chosen)


def lowlevel(server: MCPServer) -> Server[Any]:
    """The low-level `Server` behind an `MCPServer`, which the dispatch kernel drives.

    `MCPServer` has no public accessor; the SDK's own client reads the same attribute
    (mcp/client/client.py). Pinned by mcp==2.3.0 and covered by the tests.
    """
    return server._lowlevel_server

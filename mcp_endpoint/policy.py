"""Checks on every MCP request before the SDK sees it, for every transport.

`PolicyMiddleware` drops what the product does not offer (prompts, completions), enforces
`MCP_REQUIRE_COLLECTION`, and answers JSON-RPC `-32602` for a tools/call no tool can run:
an unknown or disabled tool (saying why it is disabled), text no tool can take (NUL, a
lone surrogate, nesting deeper than any schema), an unknown argument, or arguments that
fail the tool's input schema (the SDK would answer the last with an `isError` result).
The arguments it validated are handed to the tool (`validated_arguments`), so a call is
validated once. Tool and resource errors are mapped in `mcp_endpoint.registry`.
"""

from __future__ import annotations

import contextvars
import dataclasses
import unicodedata
from collections.abc import Mapping
from typing import Any

from mcp import MCPError
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver.tools import Tool
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, INVALID_REQUEST, METHOD_NOT_FOUND
from pydantic import ValidationError

from core import identity
from core.text import has_lone_surrogate
from mcp_endpoint.scope import current_scope

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

# The arguments of the tools/call being served, as PolicyMiddleware validated them
# (raw, validated): the SDK's `Tool.run` validates them again, and takes these instead.
validated_arguments: contextvars.ContextVar[tuple[dict[str, Any], dict[str, Any]] | None] = (
    contextvars.ContextVar("mcp_validated_arguments", default=None)
)


class PolicyMiddleware:
    """Server middleware: capabilities, collection requirement and -32602 for tools/call.

    Runs before the SDK validates anything (see `mcp.server.context.ServerMiddleware`).
    """

    def __init__(
        self,
        *,
        tools: Mapping[str, Tool],
        disabled: Mapping[str, str],
        aliases: Mapping[str, Mapping[str, str]],
        require_collection: bool,
    ) -> None:
        """`tools` the listed ones, `disabled` why each unlisted tool is, `aliases` the
        other argument names each tool accepts (a registry's fields of the same names)."""
        self._tools = tools
        self._disabled = disabled
        self._aliases = aliases
        self._require_collection = require_collection

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        method = ctx.method
        if method.startswith("prompts/"):
            # The product exposes tools and resources only (docs/MCP.md: no prompts).
            raise MCPError(code=METHOD_NOT_FOUND, message="Method not found", data=method)
        if method in ("tools/call", "resources/read"):
            if self._require_collection and current_scope() is None:
                raise MCPError(code=INTERNAL_ERROR, message=REQUIRE_COLLECTION_MESSAGE)
        validated: tuple[dict[str, Any], dict[str, Any]] | None = None
        if method == "tools/call":
            params, validated = self._check_tool_call(ctx.params)
            if params is not ctx.params:
                ctx = dataclasses.replace(ctx, params=params)
        elif method == "resources/read":
            self._check_resource_uri(ctx.params)
        token = current_request_id.set(ctx.request_id)
        arguments_token = validated_arguments.set(validated)
        try:
            result = await call_next(ctx)
        finally:
            validated_arguments.reset(arguments_token)
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

    def _check_tool_call(
        self, params: Any
    ) -> tuple[Any, tuple[dict[str, Any], dict[str, Any]] | None]:
        """-32602 for what no tool can run; returns the params with aliases renamed, and
        the arguments with what their validation gave (for `_ValidatedOnce`), if any."""
        if not isinstance(params, dict) or not isinstance(params.get("name"), str):
            return params, None  # the SDK's own params validation answers -32602
        name = params["name"]
        tool = self._tools.get(name)
        if tool is None:
            if name in self._disabled:
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=self._disabled[name],
                    data={"tool": name, "disabled": True},
                )
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Unknown tool: {_printable(name)}",
                data={"tool": _printable(name), "available": sorted(self._tools)},
            )
        if not identity.current_can_write() and not (
            tool.annotations is not None and tool.annotations.read_only_hint
        ):
            # A read-scoped API token or an OAuth token without `write`: every transport
            # (over HTTP a single call is answered 403 insufficient_scope before this).
            raise MCPError(
                code=INVALID_REQUEST,
                message=f"Forbidden: this token has scope 'read', so it cannot call {name}, "
                "which changes the library. Use a token with scope 'write'.",
                data={"required_scope": identity.WRITE_SCOPE, "tool": name},
            )
        arguments = params.get("arguments") or {}
        if not isinstance(arguments, dict):
            return params, None
        if (problem := _unusable_text_at(arguments)) is not None:
            # No tool takes one: PostgreSQL cannot hold NUL in text, lone surrogates cannot
            # be encoded at all, and nesting beyond any schema's depth only costs recursion.
            where, what = problem
            raise MCPError(
                code=INVALID_PARAMS,
                message=f"Invalid arguments for tool {name}: {where or 'arguments'}: {what}",
                data={
                    "tool": name,
                    "errors": [{"field": where, "message": what, "type": "invalid_text"}],
                },
            )
        arguments = self._renamed(name, arguments)
        accepted = tool.parameters.get("properties", {})
        unknown = [key for key in arguments if key not in accepted]
        if unknown:
            listed = ", ".join(accepted) or "none"
            raise MCPError(
                code=INVALID_PARAMS,
                message=(
                    f"Invalid arguments for tool {name}: unknown argument(s) "
                    f"{', '.join(_printable(k) for k in unknown)}; accepted: {listed}"
                ),
                data={
                    "tool": name,
                    "unknown": [_printable(k) for k in unknown],
                    "accepted": list(accepted),
                },
            )
        try:
            validated = tool.fn_metadata.validate_arguments(arguments)
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
        checked = (arguments, validated)
        if arguments is params.get("arguments"):
            return params, checked
        return {**params, "arguments": arguments}, checked

    def _renamed(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Accepted other names (`max_results`) under the listed one (`limit`)."""
        aliases = self._aliases.get(name)
        if not aliases or not any(key in aliases for key in arguments):
            return arguments
        renamed: dict[str, Any] = {}
        for key, value in arguments.items():
            target = aliases.get(key, key)
            if target in renamed or (target != key and target in arguments):
                raise MCPError(
                    code=INVALID_PARAMS,
                    message=f"Invalid arguments for tool {name}: {key} and {target} are the "
                    f"same argument; pass only {target}",
                    data={"tool": name, "errors": [{"field": key, "type": "duplicate"}]},
                )
            renamed[target] = value
        return renamed


MAX_ARGUMENT_DEPTH = 32


def _printable(text: str) -> str:
    """Text safe to echo in an error: lone surrogates and control characters escaped."""
    return text.encode("utf-8", "backslashreplace").decode().encode("unicode_escape").decode()


def _bad_text(text: str) -> str | None:
    if "\x00" in text:
        return "contains a NUL character"
    if has_lone_surrogate(text):
        return "contains a lone surrogate (not valid Unicode)"
    return None


def _unusable_text_at(arguments: dict[str, Any]) -> tuple[str, str] | None:
    """The dotted path of the first string (value or key) no tool can take, and why:
    a NUL, a lone surrogate, or nesting deeper than any tool's schema.

    Iterative: arguments may be nested as deep as the JSON parser allows.
    """
    pending: list[tuple[str, Any, int]] = [("", arguments, 0)]
    while pending:
        path, value, depth = pending.pop()
        if depth > MAX_ARGUMENT_DEPTH:
            return path, f"nested deeper than {MAX_ARGUMENT_DEPTH} levels"
        if isinstance(value, str):
            if (why := _bad_text(value)) is not None:
                return path, why
        elif isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                if (why := _bad_text(str(key))) is not None:
                    return _printable(where), why
                pending.append((where, item, depth + 1))
        elif isinstance(value, list):
            pending.extend((f"{path}.{i}", item, depth + 1) for i, item in enumerate(value))
    return None

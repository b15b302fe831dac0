"""JSON-RPC 2.0 framing shared by the transports (HTTP, stdio, SSE): parse, classify, encode.

Every transport reads bytes from a client and must answer whatever arrives the way JSON-RPC
2.0 and the MCP specification say, before the SDK's kernel sees it (the SDK's own stdio
reader drops what it cannot parse, and the client then waits forever):

- not JSON: -32700 with `id: null`;
- JSON that is not a request, notification or response (wrong `jsonrpc`, a method that is
  not a string, `"id": null` or an id that is neither a string nor an integer): -32600, with
  the id when it is usable, else null;
- a request whose params cannot be served: -32602 with the request's id, for params nested
  deeper than MAX_PARAMS_DEPTH (or too deep for the JSON parser itself, which would raise
  RecursionError further in), text holding a lone surrogate (`"\\ud800"`: no database and no
  UTF-8 writer can take it), an integer past 64 bits (no id is: the databases overflow on
  it), or a pagination cursor (this server lists everything in one
  page and never hands one out, so every cursor is bogus);
- a batch (a JSON array) is served only where the negotiated protocol version has batches
  (2025-03-26 alone: 2025-06-18 removed them); elsewhere -32600. A batch longer than the
  server's limit (MCP_MAX_BATCH_LENGTH) is refused whole, -32600 (`batch_too_long`).

`dump()` encodes an answer even when it echoes a lone surrogate the client sent.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any, Literal

from mcp_types import (
    INVALID_PARAMS,
    INVALID_REQUEST,
    PARSE_ERROR,
    JSONRPCNotification,
    JSONRPCRequest,
    RequestId,
    jsonrpc_message_adapter,
)
from pydantic import ValidationError

from core.text import has_lone_surrogate

MAX_PARAMS_DEPTH = 64  # no tool argument comes near; deeper only exhausts the server's stack
# Every integer a tool takes (paper, annotation and page ids, limits) is stored in or
# compared with a 64-bit database integer; past it the databases raise (SQLite:
# OverflowError, PostgreSQL: bigint out of range) where a wrong id should be invalid params.
MAX_INTEGER = 2**63 - 1
MIN_INTEGER = -(2**63)
BATCH_PROTOCOL_VERSIONS = frozenset({"2025-03-26"})
# resources/read of a resource that does not exist: -32002 up to protocol 2025-11-25;
# 2026-07-28 retired the code for -32602 (SEP-2164), which the SDK and registry answer.
RESOURCE_NOT_FOUND = -32002
LIST_METHODS = frozenset(
    {"tools/list", "resources/list", "resources/templates/list", "prompts/list"}
)

Kind = Literal["request", "notification", "response"]


@dataclass(frozen=True)
class Rejection:
    """A JSON-RPC error to send instead of dispatching a message."""

    code: int
    message: str
    request_id: RequestId | None = None
    data: Any = None

    def body(self) -> dict[str, Any]:
        return error_body(self.code, self.message, request_id=self.request_id, data=self.data)


@dataclass(frozen=True)
class Message:
    kind: Kind
    decoded: dict[str, Any]
    request: JSONRPCRequest | None = None  # for kind == "request"

    @property
    def method(self) -> str | None:
        method = self.decoded.get("method")
        return method if isinstance(method, str) else None


def error_body(
    code: int, message: str, *, request_id: RequestId | None = None, data: Any = None
) -> dict[str, Any]:
    error: dict[str, Any] = {"code": code, "message": message}
    if data is not None:
        error["data"] = data
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def dump(body: Any) -> bytes:
    """Compact UTF-8 JSON; a lone surrogate the client sent (as a JSON escape, echoed in an
    id, a method or a message) has no UTF-8 form, so the body is then escaped as received."""
    try:
        return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()
    except UnicodeEncodeError:
        return json.dumps(body, ensure_ascii=True, separators=(",", ":")).encode()


# The id of a message too deep to parse, when it comes before the params (as every client
# writes it): `{"jsonrpc": "2.0", "id": 7, "method": ...`.
_LEADING_ID = re.compile(
    rb'^\s*\{(?:\s*"[a-z]+"\s*:\s*(?:"[^"\\]*"|[-\w.]+)\s*,)*?\s*"id"\s*:\s*(-?\d{1,18}|"[^"\\]{0,200}")'
)


def parse(body: bytes | str) -> Any | Rejection:
    """The decoded JSON, or the error to answer."""
    try:
        return json.loads(body)
    except RecursionError:
        raw = body.encode("utf-8", "replace") if isinstance(body, str) else body
        found = _LEADING_ID.match(raw)
        request_id = json.loads(found.group(1)) if found else None
        return _too_deep(request_id, "params")
    except ValueError:
        return Rejection(PARSE_ERROR, "Parse error: the message is not valid JSON")


def batch_too_long(length: int, limit: int) -> Rejection | None:
    """Why a batch of `length` messages is refused whole, if it is: each request costs what
    a message of its own does, so a long batch only gets round the per-request limits."""
    if length <= limit:
        return None
    return Rejection(
        INVALID_REQUEST,
        f"Invalid request: a batch of {length} messages; at most {limit} per batch "
        "(MCP_MAX_BATCH_LENGTH): send the rest in further requests",
        data={"max_batch_length": limit, "batch_length": length},
    )


def _too_deep(request_id: RequestId | None, where: str) -> Rejection:
    return Rejection(
        INVALID_PARAMS,
        f"Invalid params: {where} is nested more than {MAX_PARAMS_DEPTH} levels deep",
        request_id,
        {"errors": [{"field": where, "message": "nested too deeply", "type": "too_deep"}]},
    )


def plain_id(value: Any) -> RequestId | None:
    """`value` when it is a usable JSON-RPC id (a string or an integer), else None."""
    if isinstance(value, bool):
        return None
    return value if isinstance(value, str | int) else None


def classify(decoded: Any) -> Message | Rejection:
    """One decoded JSON value (not a batch) as a message, or the error to answer."""
    if not isinstance(decoded, dict):
        return Rejection(INVALID_REQUEST, "Invalid request: expected a JSON-RPC object")
    raw_id = decoded.get("id")
    request_id = plain_id(raw_id)
    if decoded.get("jsonrpc") != "2.0":
        return Rejection(INVALID_REQUEST, "Invalid request: 'jsonrpc' must be \"2.0\"", request_id)
    if "method" in decoded:
        if not isinstance(decoded["method"], str):
            return Rejection(
                INVALID_REQUEST, "Invalid request: 'method' must be a string", request_id
            )
        if "id" in decoded and request_id is None:
            return Rejection(
                INVALID_REQUEST,
                "Invalid request: 'id' must be a string or an integer (MCP does not allow null)",
            )
        params = decoded.get("params")
        if params is not None and not isinstance(params, dict):
            if request_id is None:
                return Rejection(
                    INVALID_REQUEST, "Invalid notification: 'params' must be an object"
                )
            return Rejection(
                INVALID_PARAMS, "Invalid params: 'params' must be an object", request_id
            )
        if request_id is None:
            try:
                JSONRPCNotification.model_validate(decoded)
            except ValidationError:
                return Rejection(INVALID_REQUEST, "Invalid notification")
            return Message("notification", decoded)
        if (problem := params_problem(decoded["method"], params, request_id)) is not None:
            return problem
        try:
            request = JSONRPCRequest.model_validate(decoded)
        except ValidationError:
            return Rejection(INVALID_REQUEST, "Invalid request", request_id)
        return Message("request", decoded, request)
    if "result" in decoded or "error" in decoded:
        try:
            jsonrpc_message_adapter.validate_python(decoded, by_name=False)
        except ValidationError:
            return Rejection(INVALID_REQUEST, "Invalid response", request_id)
        return Message("response", decoded)
    return Rejection(
        INVALID_REQUEST,
        "Invalid request: not a JSON-RPC request, notification or response",
        request_id,
    )


def params_problem(method: str, params: Any, request_id: RequestId) -> Rejection | None:
    """Why `params` of a request cannot be served, if they cannot (see the module docstring)."""
    if not isinstance(params, dict):
        return None
    if method in LIST_METHODS and params.get("cursor") is not None:
        return Rejection(
            INVALID_PARAMS,
            "Invalid cursor: this server returns every item in one page and never hands out "
            "a nextCursor, so no cursor is valid",
            request_id,
            {"errors": [{"field": "cursor", "message": "unknown cursor", "type": "cursor"}]},
        )
    prefix = "arguments." if method == "tools/call" else ""
    pending: list[tuple[str, Any, int]] = [("", params, 0)]
    while pending:
        path, value, depth = pending.pop()
        if depth > MAX_PARAMS_DEPTH:
            return _too_deep(request_id, _field(path, prefix) or "params")
        if isinstance(value, str):
            if has_lone_surrogate(value):
                return _invalid_unicode(request_id, _field(path, prefix) or "params")
        elif isinstance(value, int) and not MIN_INTEGER <= value <= MAX_INTEGER:
            return _out_of_range(request_id, _field(path, prefix) or "params")
        elif isinstance(value, dict):
            for key, item in value.items():
                where = f"{path}.{key}" if path else str(key)
                if has_lone_surrogate(str(key)):
                    return _invalid_unicode(request_id, _field(path, prefix) or "params")
                pending.append((where, item, depth + 1))
        elif isinstance(value, list):
            pending.extend((f"{path}.{i}", item, depth + 1) for i, item in enumerate(value))
    return None


def _field(path: str, prefix: str) -> str:
    """A params path as the tools' errors name fields: relative to `arguments` for tools,
    its first parts only when it is long (a deep path would repeat itself for kilobytes)."""
    if prefix and path.startswith(prefix):
        path = path[len(prefix) :]
    if len(path) > 80:
        path = path[:80].rsplit(".", 1)[0] + ".…"
    return path.encode("utf-8", "backslashreplace").decode()


def holds_surrogate(value: Any) -> bool:
    """Whether any string in a decoded JSON value (keys included) holds a lone surrogate."""
    pending = [value]
    while pending:
        item = pending.pop()
        if isinstance(item, str):
            if has_lone_surrogate(item):
                return True
        elif isinstance(item, dict):
            pending.extend(item.keys())
            pending.extend(item.values())
        elif isinstance(item, list):
            pending.extend(item)
    return False


def _out_of_range(request_id: RequestId, where: str) -> Rejection:
    return Rejection(
        INVALID_PARAMS,
        f"Invalid params: {where} is out of range (no id or number here is larger than "
        f"{MAX_INTEGER})",
        request_id,
        {"errors": [{"field": where, "message": "out of range", "type": "out_of_range"}]},
    )


def _invalid_unicode(request_id: RequestId, where: str) -> Rejection:
    return Rejection(
        INVALID_PARAMS,
        f"Invalid params: {where} holds invalid Unicode (a lone surrogate such as \\ud800)",
        request_id,
        {"errors": [{"field": where, "message": "invalid Unicode", "type": "invalid_unicode"}]},
    )


def resource_error_code(
    method: str | None, code: int, message: str, data: Any, *, modern: bool
) -> int:
    """-32002 for a resource that does not exist, on handshake-era connections (their
    specification's code), where the registry and the SDK answer 2026-07-28's -32602: an
    unknown URI, or a paper or project not found."""
    if modern or method != "resources/read" or code != INVALID_PARAMS:
        return code
    if message.startswith("Unknown resource") or (
        isinstance(data, dict) and data.get("code") == "not_found"
    ):
        return RESOURCE_NOT_FOUND
    return code


def describe(method: str, params: Any) -> str:
    """`tools/call search_papers`, `resources/read paper://1/metadata`: for debug logs, with
    no argument values (they are the client's data)."""
    if isinstance(params, dict):
        target = params.get("name") if method == "tools/call" else params.get("uri")
        if isinstance(target, str):
            return f"{method} {target[:80]}".encode("utf-8", "backslashreplace").decode()
    return method.encode("utf-8", "backslashreplace").decode()

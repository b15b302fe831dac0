"""The collection scope of the current MCP client (seed 001: "collections").

A collection is a project. A client chooses its projects once, when it connects:
`?collections=a,b` (or `?collection=a`, or the `X-MCP-Collections` header) on the HTTP
endpoint, `--collection`/`--collections` on the stdio command line. Every tool passes the
scope to the selectors, so two clients with different scopes never see each other's papers.

The scope travels in a contextvar: the HTTP entry sets it around one request, the stdio
entry sets the process default once. Sync tools run on worker threads; anyio copies the
context into them, so the value set by the transport is the value the tool reads.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

MAX_COLLECTIONS = 20
MAX_COLLECTION_CHARS = 200
# Project ids are slugs and names are free text, but a scope value travels in URLs and
# headers: printable characters only, no separators that would make the list ambiguous.
_COLLECTION_RE = re.compile(rf"^[^\x00-\x1f\x7f,]{{1,{MAX_COLLECTION_CHARS}}}$")

COLLECTIONS_HEADER = "x-mcp-collections"
TOOLSETS_HEADER = "x-mcp-toolsets"
_TOOLSET_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
MAX_TOOLSETS = 10

_UNSET: Final = object()  # "the client chose nothing": the process default applies
_request_scope: ContextVar[object] = ContextVar("mcp_collections", default=_UNSET)
_process_default: tuple[str, ...] | None = None
_request_toolsets: ContextVar[tuple[str, ...] | None] = ContextVar("mcp_toolsets", default=None)


class InvalidScope(ValueError):
    """A collection list that cannot be used (too many, too long, bad characters)."""


def parse_collections(raw: str | Sequence[str] | None) -> tuple[str, ...] | None:
    """Parse `a,b` (or several such values) into a tuple of project refs; None if empty."""
    if raw is None:
        return None
    values = [raw] if isinstance(raw, str) else list(raw)
    items: list[str] = []
    for value in values:
        for part in value.split(","):
            part = part.strip()
            if not part:
                continue
            if not _COLLECTION_RE.match(part):
                raise InvalidScope(
                    f"collection names are 1-{MAX_COLLECTION_CHARS} printable characters"
                )
            if part not in items:
                items.append(part)
    if len(items) > MAX_COLLECTIONS:
        raise InvalidScope(f"at most {MAX_COLLECTIONS} collections can be chosen")
    return tuple(items) or None


def set_process_default(scope: tuple[str, ...] | None) -> None:
    """The scope of clients that do not choose one (stdio: the command line)."""
    global _process_default
    _process_default = scope


def current_scope() -> list[str] | None:
    """The project refs the current client may see, or None for the whole library."""
    value = _request_scope.get()
    chosen = _process_default if value is _UNSET else value
    return list(chosen) if isinstance(chosen, tuple) and chosen else None


@contextmanager
def client_scope(scope: tuple[str, ...] | None) -> Iterator[None]:
    """Run a block (one HTTP request) with the scope the client chose.

    None means "the client chose nothing": the process default then applies.
    """
    token = _request_scope.set(_UNSET if scope is None else scope)
    try:
        yield
    finally:
        _request_scope.reset(token)


def parse_toolsets(raw: Sequence[str]) -> tuple[str, ...] | None:
    """`core,pdf` (from `?toolsets=` or X-MCP-Toolsets) into sorted distinct set names; the
    registry checks that they exist. Raises InvalidScope for malformed names."""
    names: set[str] = set()
    for value in raw:
        for part in value.split(","):
            part = part.strip().lower()
            if not part:
                continue
            if not _TOOLSET_RE.match(part):
                raise InvalidScope("tool set names are lower-case letters, digits and '_'")
            names.add(part)
    if len(names) > MAX_TOOLSETS:
        raise InvalidScope(f"at most {MAX_TOOLSETS} tool sets can be chosen")
    return tuple(sorted(names)) or None


def current_toolsets() -> tuple[str, ...] | None:
    """The tool sets the current HTTP client chose at connection, or None (the operator's)."""
    return _request_toolsets.get()


@contextmanager
def client_toolsets(toolsets: tuple[str, ...] | None) -> Iterator[None]:
    token = _request_toolsets.set(toolsets)
    try:
        yield
    finally:
        _request_toolsets.reset(token)

"""Parsing the collection scope an MCP client chooses (and its tool sets).

A collection is a project. A client chooses its projects once, when it connects:
`?collections=a,b` (or `?collection=a`, or the `X-MCP-Collections` header) on the HTTP
endpoint, `--collection`/`--collections` on the stdio command line. The transports set it
with `core.scope` (re-exported here); the services and selectors read it there themselves,
so two clients with different scopes never see each other's papers, whatever the tool.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar

from core.scope import client_scope as client_scope
from core.scope import current_scope as current_scope
from core.scope import set_process_default as set_process_default

MAX_COLLECTIONS = 20
MAX_COLLECTION_CHARS = 200
# Project ids are slugs and names are free text, but a scope value travels in URLs and
# headers: printable characters only, no separators that would make the list ambiguous.
_COLLECTION_RE = re.compile(rf"^[^\x00-\x1f\x7f,]{{1,{MAX_COLLECTION_CHARS}}}$")

COLLECTIONS_HEADER = "x-mcp-collections"
TOOLSETS_HEADER = "x-mcp-toolsets"
_TOOLSET_RE = re.compile(r"^[a-z][a-z0-9_]{0,39}$")
MAX_TOOLSETS = 10

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

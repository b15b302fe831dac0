"""The collection scope of the current client: which projects it may see.

A collection is a project. An MCP client chooses its projects once, when it connects
(mcp_endpoint/scope.py parses the choice); the transport then sets the scope here and the
services and selectors read it themselves (`papers.scoping`, the review, saved-search and
intake services), so every path checks it, whatever tool or resource reached it.

The scope travels in a contextvar: the HTTP entry sets it around one request, the stdio
entry sets the process default once. Sync tools run on worker threads; anyio copies the
context into them, so the value set by the transport is the value the services read.
Outside a client (REST, admin, commands, workers) nothing is set: the whole library, and
the process default does not apply there either.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Final

_OUTSIDE: Final = object()  # no client at all (REST, admin, commands): the whole library
_UNSET: Final = object()  # a client that chose nothing: the process default applies
_request_scope: ContextVar[object] = ContextVar("client_collections", default=_OUTSIDE)
_process_default: tuple[str, ...] | None = None


def set_process_default(scope: tuple[str, ...] | None) -> None:
    """The scope of MCP clients that do not choose one (stdio: the command line; HTTP:
    `serve --collections`). It never applies outside a client (REST, admin, commands)."""
    global _process_default
    _process_default = scope


def current_scope() -> list[str] | None:
    """The project refs (ids or names) the current client may see, or None for the whole
    library."""
    value = _request_scope.get()
    if value is _OUTSIDE:
        return None
    chosen = _process_default if value is _UNSET else value
    return list(chosen) if isinstance(chosen, tuple) and chosen else None


@contextmanager
def client_scope(scope: tuple[str, ...] | None) -> Iterator[None]:
    """Run a block (one HTTP request, a stdio session) with the scope the client chose.

    None means "the client chose nothing": the process default then applies.
    """
    token = _request_scope.set(_UNSET if scope is None else scope)
    try:
        yield
    finally:
        _request_scope.reset(token)


@contextmanager
def unscoped() -> Iterator[None]:
    """Run a block as the library itself (e.g. de-duplication, which must find every
    paper): no client scope, whatever the process default."""
    token = _request_scope.set(())
    try:
        yield
    finally:
        _request_scope.reset(token)

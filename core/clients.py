"""Where the current client is: the stdio peer, a loopback HTTP client, or elsewhere.

Some operations only make sense for a client that shares the server's file system, such as
attaching a PDF by its path. The transport that answers a request knows where its client
is and sets it here; services ask `client_place()`. Anything no transport marked (a remote
HTTP client, a command, a test) is "remote", so a forgotten transport fails closed.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Literal

ClientPlace = Literal["stdio", "loopback", "remote"]

_request_place: ContextVar[ClientPlace | None] = ContextVar("client_place", default=None)
_process_default: ClientPlace = "remote"


def set_process_place(place: ClientPlace) -> None:
    """The stdio transport: its one client is the process that started the server."""
    global _process_default
    _process_default = place


def client_place() -> ClientPlace:
    value = _request_place.get()
    return _process_default if value is None else value


@contextmanager
def client_at(place: ClientPlace) -> Iterator[None]:
    """Run a block (one HTTP request) knowing where its client is."""
    token = _request_place.set(place)
    try:
        yield
    finally:
        _request_place.reset(token)

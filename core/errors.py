"""The one domain error hierarchy, raised by services and selectors.

Each interface maps it once: mcp_endpoint to JSON-RPC codes or `isError` results, the REST
API to HTTP statuses, the admin to a message, management commands to exit codes.
"""

from __future__ import annotations

from typing import Any


class DomainError(Exception):
    """An outcome the caller can act on. `code` is stable and machine-readable."""

    code = "error"

    def __init__(self, message: str, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.details = details

    def as_dict(self) -> dict[str, Any]:
        return {"code": self.code, "message": self.message, **self.details}


class NotFound(DomainError):
    code = "not_found"


class InvalidInput(DomainError):
    """Bad arguments: the caller must change the request (JSON-RPC -32602, HTTP 400)."""

    code = "invalid_input"


class Conflict(DomainError):
    code = "conflict"


class Forbidden(DomainError):
    """The acting user may see the thing but its role does not allow this change (a
    viewer editing a project): HTTP 403. What the user may not see at all is NotFound,
    so that nobody learns it exists."""

    code = "forbidden"


class ReadOnlyMode(DomainError):
    code = "read_only"


class EngineUnavailable(DomainError):
    """A search engine that cannot be searched: unknown, not configured, or down."""

    code = "engine_unavailable"


class EnginesUnavailable(EngineUnavailable):
    """A search found nothing and none of its engines could answer (`engines`: each one
    and why): not an empty answer."""

    code = "engines_unavailable"


class StorageFull(DomainError):
    """The disk holding the knowledge base (or one of its folders) is full."""

    code = "disk_full"


class DatabaseUnavailable(DomainError):
    """The database cannot be reached now (restarting, down, locked): try again shortly."""

    code = "database_unavailable"


# PostgreSQL SQLSTATEs that mean "the server went away", not "your query is wrong":
# connection exceptions (class 08), admin/crash shutdown, cannot connect now, too many
# connections.
_UNAVAILABLE_SQLSTATES = ("08", "57P01", "57P02", "57P03", "53300")
_UNAVAILABLE_SQLITE = ("database is locked", "unable to open database", "disk i/o error")


def database_unavailable(exc: BaseException) -> DatabaseUnavailable | None:
    """A DatabaseUnavailable for a connection-level database failure, else None (so a
    broken query still counts as a bug)."""
    from django.db import InterfaceError, OperationalError

    if isinstance(exc, InterfaceError):
        unavailable = True  # the connection is closed or broken
    elif isinstance(exc, OperationalError):
        cause = exc.__cause__
        sqlstate = getattr(cause, "sqlstate", None)
        if type(cause).__module__.startswith("psycopg"):
            # No SQLSTATE: the connection failed or dropped before the server answered.
            unavailable = sqlstate is None or sqlstate.startswith(_UNAVAILABLE_SQLSTATES)
        else:
            unavailable = str(exc).lower().startswith(_UNAVAILABLE_SQLITE)
    else:
        unavailable = False
    if not unavailable:
        return None
    return DatabaseUnavailable(
        "The database is unavailable right now (restarting or unreachable); nothing was "
        "changed by this call. Try again in a few seconds.",
        retry_after_seconds=5,
    )

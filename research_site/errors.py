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


class ReadOnlyMode(DomainError):
    code = "read_only"


class EngineUnavailable(DomainError):
    """A search engine that cannot be searched: unknown, not configured, or down."""

    code = "engine_unavailable"

"""How the REST API answers errors: one mapping from exceptions to HTTP statuses.

Every error answer has the body `{"error": {"code", "message", ...details}}`, the same
object the MCP tools put in their `isError` results, so a client can handle both alike:

| exception | status | code |
|---|---|---|
| request fails its schema (missing, wrong type, over a limit) | 400 | `invalid_input` |
| `InvalidInput` from a service or selector | 400 | `invalid_input` |
| no credentials / an unusable token | 401 | `unauthorized` / `invalid_token` |
| a write with a read token | 403 | `insufficient_scope` |
| a write by a user in the Readers group | 403 | `forbidden` |
| a write while MCP_READ_ONLY=true (`ReadOnlyMode`) | 403 | `read_only` |
| a change the user's project role does not allow (`Forbidden`) | 403 | `forbidden` |
| `NotFound` (and its subclasses) | 404 | `not_found`, `asset_not_found`, ... |
| `Conflict` | 409 | `conflict` |
| a request body over Django's size limit | 413 | `payload_too_large` |
| `AssetFetchFailed` (the asset store did not answer) | 502 | `asset_fetch_failed` |
| `EngineUnavailable` | 503 | `engine_unavailable` |
| `StorageFull` (no space left for an export, a summary, a PDF) | 507 | `disk_full` |
| the database cannot be reached (restarting, down) | 503, `Retry-After` | `database_unavailable` |
| anything else | 500 | `internal_error`, with an incident id; the traceback stays in the log |

Bad input is always 400 (never 422), like MCP's single `-32602` for both schema and
service validation.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Mapping
from typing import Any

from django.core.exceptions import RequestDataTooBig, SuspiciousOperation
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError

from core.errors import (
    Conflict,
    DatabaseUnavailable,
    DomainError,
    EngineUnavailable,
    Forbidden,
    InvalidInput,
    NotFound,
    ReadOnlyMode,
    StorageFull,
    database_unavailable,
)
from papers.assets import AssetFetchFailed

logger = logging.getLogger(__name__)

BEARER_REALM = 'Bearer realm="research-mcp"'

STATUS_BY_ERROR: dict[type[DomainError], int] = {
    InvalidInput: 400,
    ReadOnlyMode: 403,
    Forbidden: 403,
    NotFound: 404,
    Conflict: 409,
    AssetFetchFailed: 502,
    EngineUnavailable: 503,
    DatabaseUnavailable: 503,
    StorageFull: 507,
}
# Codes for errors ninja raises itself (malformed JSON, 405, ...), by status.
CODE_BY_STATUS = {
    400: "invalid_input",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "payload_too_large",
    429: "throttled",
}


class ApiError(Exception):
    """An HTTP-level refusal raised by the API layer itself (authentication, permissions)."""

    def __init__(
        self,
        status: int,
        code: str,
        message: str,
        *,
        headers: Mapping[str, str] | None = None,
        **details: Any,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.code = code
        self.message = message
        self.headers = dict(headers or {})
        self.details = details


def error_response(
    api: NinjaAPI,
    request: HttpRequest,
    status: int,
    code: str,
    message: str,
    headers: Mapping[str, str] | None = None,
    **details: Any,
) -> HttpResponse:
    body = {"error": {"code": code, "message": message, **details}}
    response = api.create_response(request, body, status=status)
    for name, value in (headers or {}).items():
        response[name] = value
    return response


def domain_status(exc: DomainError) -> int:
    for klass in type(exc).__mro__:
        if klass in STATUS_BY_ERROR:
            return STATUS_BY_ERROR[klass]
    return 500  # a domain error nobody gave a status to: the server could not do it


def _validation_errors(exc: ValidationError) -> list[dict[str, Any]]:
    # Locations and messages only: the rejected values are the caller's own data.
    errors = []
    for error in exc.errors:
        location = [str(part) for part in error.get("loc", ())]
        errors.append(
            {
                "in": location[0] if location else "request",
                "field": ".".join(location[1:]),
                "message": str(error.get("msg", "")),
                "type": str(error.get("type", "")),
            }
        )
    return errors


def install_error_handlers(api: NinjaAPI) -> None:
    """Map every exception the API's operations can raise, once (see the module docstring)."""

    @api.exception_handler(ApiError)
    def api_error(request: HttpRequest, exc: ApiError) -> HttpResponse:
        return error_response(
            api, request, exc.status, exc.code, exc.message, exc.headers, **exc.details
        )

    @api.exception_handler(AuthenticationError)
    def not_authenticated(request: HttpRequest, exc: AuthenticationError) -> HttpResponse:
        message = (
            "Authentication required: send 'Authorization: Bearer <token>' (create a token "
            "with `manage.py api_token create` or in the admin)."
        )
        return error_response(
            api, request, 401, "unauthorized", message, {"WWW-Authenticate": BEARER_REALM}
        )

    @api.exception_handler(ValidationError)
    def invalid_request(request: HttpRequest, exc: ValidationError) -> HttpResponse:
        errors = _validation_errors(exc)
        summary = "; ".join(
            f"{e['field'] or e['in']}: {e['message']}" for e in errors[:10]
        )  # fmt: skip
        return error_response(
            api, request, 400, "invalid_input", f"Invalid request: {summary}", errors=errors
        )

    @api.exception_handler(DomainError)
    def domain_error(request: HttpRequest, exc: DomainError) -> HttpResponse:
        status = domain_status(exc)
        if status >= 500:
            logger.warning("%s %s: %s (%s)", request.method, request.path, exc.code, exc.message)
        details = {k: v for k, v in exc.details.items() if k not in ("code", "message")}
        return error_response(api, request, status, exc.code, exc.message, **details)

    @api.exception_handler(HttpError)
    def http_error(request: HttpRequest, exc: HttpError) -> HttpResponse:
        code = CODE_BY_STATUS.get(exc.status_code, "error")
        return error_response(api, request, exc.status_code, code, exc.message)

    @api.exception_handler(Http404)
    def not_found(request: HttpRequest, exc: Http404) -> HttpResponse:
        return error_response(api, request, 404, "not_found", "Not found.")

    @api.exception_handler(SuspiciousOperation)
    def suspicious(request: HttpRequest, exc: SuspiciousOperation) -> HttpResponse:
        if isinstance(exc, RequestDataTooBig):
            return error_response(
                api, request, 413, "payload_too_large", "The request body is too large."
            )
        return error_response(api, request, 400, "invalid_input", "The request is malformed.")

    @api.exception_handler(Exception)
    def unexpected(request: HttpRequest, exc: Exception) -> HttpResponse:
        unavailable = database_unavailable(exc)
        if unavailable is not None:
            logger.warning(
                "REST %s %s: %s (%s)", request.method, request.path, exc, unavailable.code
            )
            retry = {"Retry-After": str(unavailable.details["retry_after_seconds"])}
            return error_response(
                api, request, 503, unavailable.code, unavailable.message, retry,
                **unavailable.details,
            )  # fmt: skip
        incident = uuid.uuid4().hex[:12]
        logger.error(
            "REST %s %s failed (incident %s)",
            request.method,
            request.path,
            incident,
            exc_info=exc,
        )
        message = f"Internal error (incident {incident}; see the server log)."
        return error_response(api, request, 500, "internal_error", message, incident=incident)

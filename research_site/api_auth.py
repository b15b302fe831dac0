"""Who may call the REST API, and what they may do.

Authentication, tried in order:

1. `Authorization: Bearer <token>`: a per-user API token (`research_site.tokens`). A bad,
   revoked or expired token is refused with 401 even if a session cookie is present; after
   AUTH_FAILURE_LIMIT of those from one address, every token is refused with 429 and
   `Retry-After` for a while (`core.throttle`), so tokens cannot be guessed.
2. The admin's session cookie, for staff users in a browser (the API docs page); writes
   then need the CSRF token in `X-CSRFToken`, as every cookie-authenticated form does.

Permissions follow the HTTP method, so an endpoint added later cannot forget them:
GET/HEAD/OPTIONS read, every other method writes. A write is refused with 403 when the
server is read-only (MCP_READ_ONLY: the database is opened read-only), when the token's
scope is "read", or when the user is in the Readers group.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.http import HttpRequest
from ninja.security import APIKeyCookie, HttpBearer
from ninja.utils import check_csrf

from core import identity, throttle
from core.errors import ReadOnlyMode
from research_site.api_errors import BEARER_REALM, ApiError
from research_site.identity import principal_for_api_token
from research_site.models import ApiToken
from research_site.tokens import TokenRejected, api_token_authenticate, user_is_reader

READ_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
TOKEN_SCOPE = "api-token"  # noqa: S105 - a throttle scope name


def authorize(request: HttpRequest, user: User | AnonymousUser, token: ApiToken | None) -> None:
    """Let reads through; refuse a write that this server, token or user may not make."""
    if request.method in READ_METHODS:
        return
    if settings.MCP_READ_ONLY:
        raise ReadOnlyMode(
            "This server is read-only (MCP_READ_ONLY=true): only GET requests are served."
        )
    if token is not None and not token.can_write:
        raise ApiError(
            403,
            "insufficient_scope",
            f"The token {token.prefix}… has scope 'read': it can only make GET requests. "
            "Create a token with scope 'write' to change the library.",
            headers={"WWW-Authenticate": f'{BEARER_REALM}, error="insufficient_scope"'},
            required_scope="write",
        )
    if user_is_reader(user):
        raise ApiError(
            403,
            "forbidden",
            f"User {user} is in the Readers group: it can only make GET requests.",
        )


class BearerToken(HttpBearer):
    """`Authorization: Bearer rmcp_...`: an API token from `manage.py api_token create`."""

    def authenticate(self, request: HttpRequest, token: str) -> Any:
        keys = [throttle.client_key(request)]
        try:
            throttle.check(TOKEN_SCOPE, keys)
        except throttle.Throttled as exc:
            raise ApiError(
                429,
                "too_many_attempts",
                f"{exc.message} (too many invalid tokens from this address)",
                headers={"Retry-After": str(exc.retry_after)},
                retry_after_seconds=exc.retry_after,
            ) from None
        try:
            api_token = api_token_authenticate(secret=token.strip())
        except TokenRejected as exc:
            throttle.record_failure(TOKEN_SCOPE, keys)
            raise ApiError(
                401,
                "invalid_token",
                exc.reason,
                headers={"WWW-Authenticate": f'{BEARER_REALM}, error="invalid_token"'},
            ) from None
        request.api_token = api_token  # type: ignore[attr-defined]
        # The rest of this request acts as the token's user, with its scope (core.identity).
        identity.set_current(principal_for_api_token(api_token))
        authorize(request, api_token.user, api_token)
        return api_token.user


class StaffSession(APIKeyCookie):
    """The admin's session cookie, for staff users (the docs page's "Try it out")."""

    param_name = settings.SESSION_COOKIE_NAME

    def _get_key(self, request: HttpRequest) -> str | None:
        # Unlike ninja's SessionAuth, check CSRF only for a signed-in user: a script without
        # any credentials must get 401, not a CSRF 403.
        return request.COOKIES.get(self.param_name)

    def authenticate(self, request: HttpRequest, key: str | None) -> Any:
        user = getattr(request, "user", None)
        if key is None or user is None or not (user.is_authenticated and user.is_staff):
            return None
        if request.method not in READ_METHODS and check_csrf(request) is not None:
            raise ApiError(
                403,
                "csrf_failed",
                "CSRF check failed: send the csrftoken cookie's value in X-CSRFToken, or use "
                "a bearer token instead of the session.",
            )
        authorize(request, user, None)
        return user

"""The acting user (core.identity) from this layer's credentials.

- `api_token_principal`: a per-user API token (`rmcp_...`, research_site.tokens), the same
  token, scope and revocation as the REST API, for /mcp.
- `oauth_token_principal`: an OAuth 2.1 access token of the built-in authorization server
  (django-oauth-toolkit), accepted only for the resource it was issued for (RFC 8707).
- `ActingUserMiddleware`: admin pages and REST calls with the admin's session act as the
  signed-in user; the REST API's bearer authentication replaces that with the token's
  principal (`research_site.api_auth`).

`ResearchSiteConfig.ready()` registers the two authenticators with core.identity, which
/mcp asks without importing this layer.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any
from urllib.parse import urlsplit

from django.conf import settings
from django.http import HttpRequest, HttpResponse

from core import identity
from research_site.models import ApiToken
from research_site.tokens import TOKEN_MARKER, TokenRejected, api_token_authenticate, user_is_reader

_DEFAULT_PORTS = {"http": 80, "https": 443}


def api_token_principal(secret: str, resource: str) -> identity.Principal | None:
    if not secret.startswith(TOKEN_MARKER):
        return None
    try:
        token = api_token_authenticate(secret=secret)
    except TokenRejected as exc:
        raise identity.CredentialRejected(exc.reason) from None
    return principal_for_api_token(token)


def principal_for_api_token(token: ApiToken) -> identity.Principal:
    can_write = token.can_write and not user_is_reader(token.user)
    scopes = {identity.READ_SCOPE, identity.WRITE_SCOPE} if token.can_write else {"read"}
    return identity.Principal.for_user(
        token.user,
        "api-token",
        can_write=can_write,
        client=f"API token {token.name} ({token.prefix}…)",
        scopes=frozenset(scopes),
    )


def same_resource(a: str, b: str) -> bool:
    """Two resource URIs name the same resource: scheme, host and port equal (default
    ports filled in), paths equal but for a trailing slash; no query, no user part."""

    def parts(uri: str) -> tuple[str, str, int | None, str] | None:
        try:
            split = urlsplit(uri)
            port = split.port
        except ValueError:
            return None
        if not split.scheme or not split.hostname or split.username or split.fragment:
            return None
        scheme = split.scheme.lower()
        return (
            scheme,
            split.hostname.lower(),
            port or _DEFAULT_PORTS.get(scheme),
            (split.path.rstrip("/") or "/"),
        )

    left, right = parts(a), parts(b)
    return left is not None and left == right


def oauth_token_principal(secret: str, resource: str) -> identity.Principal | None:
    """The principal of an OAuth access token, or None when no such token exists (revoked
    tokens are deleted by the toolkit). Raises CredentialRejected for an expired token,
    one issued for another resource (or for none: every token of ours names one), a
    client registration token, or a disabled user."""
    from oauth2_provider.models import get_access_token_model

    if len(secret) > 512:
        return None
    access_token = get_access_token_model().objects.select_related("application", "user")
    token = access_token.filter(token_checksum=_checksum(secret), application__isnull=False).first()
    if token is None:
        return None
    if token.is_expired():
        raise identity.CredentialRejected("The access token has expired.")
    audiences = token.resource or []
    if not any(same_resource(audience, resource) for audience in audiences):
        # No token passthrough: a token is only good for the resource it names.
        raise identity.CredentialRejected("The access token was not issued for this resource.")
    user = token.user
    if user is None or not user.is_active:
        raise identity.CredentialRejected("The token's user account is disabled.")
    scopes = frozenset(token.scopes)
    if not scopes & {identity.READ_SCOPE, identity.WRITE_SCOPE}:
        raise identity.CredentialRejected("The access token has no scope of this server.")
    return identity.Principal.for_user(
        user,
        "oauth",
        can_write=identity.WRITE_SCOPE in scopes and not user_is_reader(user),
        client=f"OAuth client {token.application.name or token.application.client_id}",
        scopes=scopes,
    )


def _checksum(secret: str) -> str:
    import hashlib

    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def register_authenticators() -> None:
    identity.register_bearer_authenticator(api_token_principal)
    if settings.OAUTH_ENABLED:
        identity.register_bearer_authenticator(oauth_token_principal)


class ActingUserMiddleware:
    """Admin pages and session-authenticated REST calls act as the signed-in user."""

    def __init__(self, get_response: Callable[[HttpRequest], HttpResponse]) -> None:
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        principal = identity.Principal.loaded_by(_session_user(request), "session", client="site")
        with identity.acting_as(principal):
            return self.get_response(request)


def _session_user(request: HttpRequest) -> Callable[[], Any]:
    def load() -> Any:
        user = getattr(request, "user", None)
        return user if user is not None and user.is_authenticated else None

    return load

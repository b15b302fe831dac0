"""Who the current request acts as: one Django user per MCP request, REST call and admin page.

Each transport knows how its client proved who it is and sets the acting `Principal` here
(like `core.scope` holds the client's collections); services read `current_principal()`
or `current_user()` and never look at headers or tokens themselves:

- /mcp over HTTP (`mcp_endpoint.http`): a per-user API token (the REST API's, with its
  scope), an OAuth 2.1 access token (audience-checked), the shared `MCP_AUTH_TOKEN` (the
  service identity) or, from loopback without a token, the local owner;
- stdio (`mcp_endpoint.stdio`): the local owner, for the whole process;
- REST (`research_site.api_auth`) and the admin (`research_site.identity`): the token's
  or the session's user.

Outside any of them (commands, Celery workers, tests) nothing is set and
`current_principal()` is None: the library acting for itself.

Token checks live in the layer that owns the tokens (research_site: API tokens and OAuth)
and are injected here with `register_bearer_authenticator`, so /mcp (a lower layer) can
accept them without importing that layer.

The principal travels in a contextvar: anyio copies the context into the worker threads
that run sync tools, so the value set by the transport is the value the services read.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, Literal
from urllib.parse import urlsplit

from django.conf import settings

PrincipalKind = Literal["local-owner", "service", "api-token", "oauth", "session", "stdio"]
READ_SCOPE = "read"
WRITE_SCOPE = "write"
SERVICE_USERNAME_DEFAULT = "mcp-service"
# The shared identities of a one-person library: not bound by project roles.
UNRESTRICTED_KINDS: frozenset[str] = frozenset({"local-owner", "stdio", "service"})


class _Lazy:
    """A user looked up once, on first use (most requests never ask who they act as)."""

    def __init__(self, load: Callable[[], Any]) -> None:
        self._load = load
        self._lock = threading.Lock()
        self._done = False
        self._value: Any = None

    def get(self) -> Any:
        if not self._done:
            with self._lock:
                if not self._done:
                    self._value = self._load()
                    self._done = True
        return self._value


@dataclass(frozen=True)
class Principal:
    """The Django user a request acts as, how it proved it, and what it may do.

    `can_write` is False for a read-scoped API token or an OAuth token without the
    `write` scope: such a client may call read tools only. `client` names what acted for
    the user (the API token's name, the OAuth client's name), for audit records.
    """

    kind: PrincipalKind
    can_write: bool = True
    client: str = ""
    # The user name when the transport already loaded the user (tokens), for log lines
    # written where the database cannot be asked (the event loop).
    username: str = ""
    scopes: frozenset[str] = frozenset({READ_SCOPE, WRITE_SCOPE})
    user_loader: _Lazy | None = field(default=None, compare=False, repr=False)

    def describe(self) -> str:
        """`alice (oauth: OAuth client Claude)`, `local-owner`: for log lines."""
        if self.username:
            return f"{self.username} ({self.kind}: {self.client})"
        return self.kind

    @property
    def user(self) -> Any:
        """The Django user, or None when there is none (no local owner account yet)."""
        return self.user_loader.get() if self.user_loader is not None else None

    @classmethod
    def for_user(cls, user: Any, kind: PrincipalKind, **kwargs: Any) -> Principal:
        kwargs.setdefault("username", user.get_username() if user is not None else "")
        return cls(kind=kind, user_loader=_Lazy(lambda: user), **kwargs)

    @classmethod
    def loaded_by(cls, load: Callable[[], Any], kind: PrincipalKind, **kwargs: Any) -> Principal:
        return cls(kind=kind, user_loader=_Lazy(load), **kwargs)


_current: ContextVar[Principal | None] = ContextVar("acting_principal", default=None)
_process_default: Principal | None = None


def current_principal() -> Principal | None:
    value = _current.get()
    return _process_default if value is None else value


def current_user() -> Any:
    """The Django user the current request acts as, or None (no request, or no such user)."""
    principal = current_principal()
    return principal.user if principal is not None else None


def unrestricted(principal: Principal | None) -> bool:
    """Whether project roles do not apply to this principal: no principal (commands,
    workers, tests outside a transport), the local owner (loopback without a token,
    stdio), the MCP_AUTH_TOKEN service identity, and superusers. Everyone else sees only
    the projects they are members of (projects/permissions.py, docs/AUTH.md)."""
    if principal is None or principal.kind in UNRESTRICTED_KINDS:
        return True
    user = principal.user
    return bool(user is not None and user.is_active and user.is_superuser)


def current_can_write() -> bool:
    principal = current_principal()
    return principal is None or principal.can_write


@contextmanager
def acting_as(principal: Principal | None) -> Iterator[None]:
    """Run a block (one HTTP request, a REST call) as this principal."""
    token = _current.set(principal)
    try:
        yield
    finally:
        _current.reset(token)


def set_current(principal: Principal | None) -> None:
    """Replace the principal for the rest of the block an `acting_as` opened (the REST
    API's token authentication, inside the site's per-request block)."""
    _current.set(principal)


def set_process_principal(principal: Principal | None) -> None:
    """stdio: its one client acts as this principal for the whole process."""
    global _process_default
    _process_default = principal


# --- the users behind the shared identities ------------------------------------------


def local_owner() -> Any:
    """The user loopback clients without a token (and stdio) act as: LOCAL_OWNER_USERNAME
    when that user exists, else the first active superuser (the `admin` that `serve`
    creates), else None."""
    from django.contrib.auth import get_user_model

    users = get_user_model().objects
    name = getattr(settings, "LOCAL_OWNER_USERNAME", "")
    if name:
        owner = users.filter(username=name, is_active=True).first()
        if owner is not None:
            return owner
    return users.filter(is_superuser=True, is_active=True).order_by("pk").first()


def service_user() -> Any:
    """The user the shared MCP_AUTH_TOKEN acts as (MCP_SERVICE_USER, default
    'mcp-service'), created on first use without a password (it cannot sign in). In
    read-only mode nothing is created: None when it does not exist yet."""
    from django.contrib.auth import get_user_model

    name = getattr(settings, "MCP_SERVICE_USER", "") or SERVICE_USERNAME_DEFAULT
    users = get_user_model().objects
    existing = users.filter(username=name).first()
    if existing is not None or settings.MCP_READ_ONLY:
        return existing
    user, _created = users.get_or_create(username=name, defaults={"is_active": True})
    if _created:
        user.set_unusable_password()
        user.save(update_fields=["password"])
    return user


def local_owner_principal(kind: PrincipalKind = "local-owner") -> Principal:
    return Principal.loaded_by(local_owner, kind, client=kind)


def service_principal() -> Principal:
    return Principal.loaded_by(service_user, "service", client="MCP_AUTH_TOKEN")


# --- bearer tokens, checked by the layer that owns them ------------------------------


class CredentialRejected(Exception):
    """A bearer token that belongs to an authenticator but cannot be used (revoked,
    expired, for another resource, its user disabled); `reason` is said to the client."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


# (secret, resource URL of the request) -> a Principal, or None when the secret is not of
# this authenticator's kind; raises CredentialRejected when it is but cannot be used.
BearerAuthenticator = Callable[[str, str], Principal | None]
_authenticators: list[BearerAuthenticator] = []


def register_bearer_authenticator(authenticator: BearerAuthenticator) -> None:
    if authenticator not in _authenticators:
        _authenticators.append(authenticator)


def authenticate_bearer(secret: str, resource: str) -> Principal:
    """The principal of a bearer token presented to `resource` (the canonical URL of the
    endpoint it was sent to); raises CredentialRejected. Uses the database: call it from a
    worker thread in async code."""
    for authenticator in _authenticators:
        principal = authenticator(secret, resource)
        if principal is not None:
            return principal
    raise CredentialRejected("The token is not valid.")


# --- the MCP endpoint as an OAuth protected resource (RFC 9728, RFC 8707) ------------

MCP_PATH = "/mcp"
RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource"


def mcp_resource_url(scheme: str, host: str) -> str:
    """The canonical URI of /mcp as a protected resource: MCP_PUBLIC_URL when set (behind
    a TLS proxy), else the scheme and Host the request came with (Host is checked against
    ALLOWED_HOSTS before anything asks)."""
    configured = getattr(settings, "MCP_PUBLIC_URL", "")
    if configured:
        return configured.rstrip("/")
    return f"{scheme.lower()}://{host.lower()}{MCP_PATH}"


def resource_metadata_url(resource: str) -> str:
    """Where the protected resource metadata of `resource` is published (RFC 9728 §3.1:
    the well-known path inserted before the resource's path)."""
    parts = urlsplit(resource)
    return f"{parts.scheme}://{parts.netloc}{RESOURCE_METADATA_PATH}{parts.path}"

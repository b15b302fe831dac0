"""API tokens and who may write: services and selectors behind the REST API's
authentication, the `api_token` command and the token admin.

Who may write through the API: an active user outside the "Readers" group, with a token
of scope "write" (or a staff session). Everyone else who is authenticated may read.
"""

from __future__ import annotations

import hashlib
import secrets
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.conf import settings
from django.contrib.auth.models import AnonymousUser, User
from django.db import transaction
from django.db.models import Q
from django.utils import timezone

from core.errors import Conflict, InvalidInput, NotFound
from research_site.models import ApiToken

# A data migration creates this group; its members can only read, whatever their tokens say.
READERS_GROUP = "Readers"
TOKEN_MARKER = "rmcp_"  # noqa: S105 - lets secret scanners and people recognise a leaked token
PREFIX_LENGTH = 12  # "rmcp_" + 7 random characters
NAME_MAX_LENGTH = 100
# last_used_at is written at most once a minute per token: one UPDATE per request would
# serialise every API call on SQLite's single writer.
TOUCH_INTERVAL = timedelta(seconds=60)


class TokenRejected(Exception):
    """The bearer token cannot be used; `reason` says why (for the 401 answer)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


def _hash(secret: str) -> str:
    return hashlib.sha256(secret.encode("utf-8")).hexdigest()


def _clean_name(name: str) -> str:
    cleaned = " ".join((name or "").split())
    if not cleaned:
        raise InvalidInput("A token needs a name, e.g. 'laptop' or 'ci'.", field="name")
    if len(cleaned) > NAME_MAX_LENGTH:
        raise InvalidInput(f"Token names have at most {NAME_MAX_LENGTH} characters.", field="name")
    return cleaned


@transaction.atomic
def api_token_create(
    *,
    user: User,
    name: str,
    scope: str = ApiToken.Scope.READ,
    expires_at: datetime | None = None,
) -> tuple[ApiToken, str]:
    """A new token for `user` and its secret, which is not stored and cannot be shown again.

    Raises InvalidInput for an empty or long name, an unknown scope or an expiry in the
    past, and Conflict if the user has a live token of that name.
    """
    cleaned = _clean_name(name)
    if scope not in ApiToken.Scope.values:
        raise InvalidInput(
            f"Unknown scope {scope!r}; use one of {', '.join(ApiToken.Scope.values)}.",
            field="scope",
        )
    if expires_at is not None and expires_at <= timezone.now():
        raise InvalidInput("The expiry date is in the past.", field="expires_at")
    if ApiToken.objects.filter(user=user, name=cleaned, revoked_at__isnull=True).exists():
        raise Conflict(f"{user} already has a token named {cleaned!r}.", name=cleaned)
    secret = TOKEN_MARKER + secrets.token_urlsafe(32)
    token = ApiToken.objects.create(
        user=user,
        name=cleaned,
        prefix=secret[:PREFIX_LENGTH],
        key_hash=_hash(secret),
        scope=scope,
        expires_at=expires_at,
    )
    return token, secret


@transaction.atomic
def api_token_revoke(*, token: ApiToken | str | int) -> ApiToken:
    """Revoke a token (the object, its id, or its visible prefix); a revoked token keeps its
    row, so lists show when it was last used. Revoking twice changes nothing.

    Raises NotFound for an unknown id or prefix and InvalidInput for an ambiguous prefix.
    """
    target = token if isinstance(token, ApiToken) else api_token_get(ref=token)
    if target.revoked_at is None:
        target.revoked_at = timezone.now()
        target.save(update_fields=["revoked_at", "updated_at"])
    return target


def api_token_get(*, ref: str | int) -> ApiToken:
    """A token by its id or its visible prefix (what `api_token list` prints)."""
    text = str(ref).strip()
    condition = Q(prefix=text)
    if text.isdigit():
        condition |= Q(pk=int(text))
    matches = list(ApiToken.objects.filter(condition)[:2])
    if not matches:
        raise NotFound(f"No API token {text!r}.", token=text)
    if len(matches) > 1:
        raise InvalidInput(f"{text!r} names several tokens; use the id.", field="token")
    return matches[0]


def api_tokens_list(*, users: Sequence[str] = (), include_inactive: bool = False) -> list[ApiToken]:
    """Tokens, newest first: of the given usernames (all users when empty), live ones only
    unless `include_inactive` (then revoked and expired ones too)."""
    queryset = ApiToken.objects.select_related("user")
    if users:
        queryset = queryset.filter(user__username__in=list(users))
    if not include_inactive:
        now = timezone.now()
        queryset = queryset.filter(revoked_at__isnull=True).filter(
            Q(expires_at__isnull=True) | Q(expires_at__gt=now)
        )
    return list(queryset.order_by("-created_at", "-pk"))


def api_token_authenticate(*, secret: str) -> ApiToken:
    """The live token with this secret, its user loaded; records the use (throttled).

    Raises TokenRejected when the secret is unknown, revoked or expired, or its user is
    inactive. Never writes in read-only mode (the database is opened read-only there).
    """
    if not secret.startswith(TOKEN_MARKER) or len(secret) > 200:
        raise TokenRejected("The token is not valid.")
    token = ApiToken.objects.select_related("user").filter(key_hash=_hash(secret)).first()
    if token is None:
        raise TokenRejected("The token is not valid.")
    if token.status != "active":
        raise TokenRejected(f"The token {token.prefix}… is {token.status}.")
    if not token.user.is_active:
        raise TokenRejected("The token's user account is disabled.")
    _touch(token)
    return token


def _touch(token: ApiToken) -> None:
    if settings.MCP_READ_ONLY:
        return
    now = timezone.now()
    if token.last_used_at is not None and now - token.last_used_at < TOUCH_INTERVAL:
        return
    ApiToken.objects.filter(pk=token.pk).filter(
        Q(last_used_at__isnull=True) | Q(last_used_at__lt=now - TOUCH_INTERVAL)
    ).update(last_used_at=now)
    token.last_used_at = now


def user_is_reader(user: User | AnonymousUser) -> bool:
    """True for members of the Readers group: they may read through the API, never write."""
    if isinstance(user, AnonymousUser):
        return False
    return user.groups.filter(name=READERS_GROUP).exists()

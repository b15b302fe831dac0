"""Create, list and revoke REST API tokens.

    manage.py api_token create --user alice --name laptop [--scope write] [--expires-days 90]
    manage.py api_token list [--user alice] [--all]
    manage.py api_token revoke <id or prefix>

`create` prints the secret alone on stdout (so `TOKEN=$(manage.py api_token create ...)`
works) and the details on stderr; the secret cannot be shown again. Exit codes: 0 done,
2 bad arguments (unknown user or token, duplicate name, bad scope).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from core.commands import ResearchCommand
from core.errors import DomainError
from research_site.models import ApiToken
from research_site.tokens import api_token_create, api_token_revoke, api_tokens_list

EXIT_BAD_INPUT = 2


def _when(value: datetime | None) -> str:
    return value.strftime("%Y-%m-%d %H:%M") if value else "-"


class Command(ResearchCommand):
    help = "Create, list and revoke REST API tokens (Authorization: Bearer <token>)."

    def add_arguments(self, parser: CommandParser) -> None:
        actions = parser.add_subparsers(dest="action", required=True)
        create = actions.add_parser("create", help="Create a token and print its secret once.")
        create.add_argument("--user", required=True, help="The username the token acts as.")
        create.add_argument("--name", required=True, help="What the token is for, e.g. 'ci'.")
        create.add_argument(
            "--scope",
            choices=ApiToken.Scope.values,
            default=ApiToken.Scope.READ,
            help="read (GET only, the default) or write.",
        )
        create.add_argument(
            "--expires-days", type=int, help="Expire after this many days (default: never)."
        )
        listing = actions.add_parser("list", help="List tokens (never their secrets).")
        listing.add_argument("--user", action="append", default=[], help="Only this user's.")
        listing.add_argument(
            "--all", action="store_true", help="Include revoked and expired tokens."
        )
        revoke = actions.add_parser("revoke", help="Revoke a token at once.")
        revoke.add_argument("token", help="The token's id or prefix (see `list`).")

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            getattr(self, f"_{options['action']}")(options)
        except DomainError as exc:
            raise CommandError(exc.message, returncode=EXIT_BAD_INPUT) from exc

    def _create(self, options: dict[str, Any]) -> None:
        user_model = get_user_model()
        try:
            user = user_model.objects.get(**{user_model.USERNAME_FIELD: options["user"]})
        except user_model.DoesNotExist:
            raise CommandError(f"No user {options['user']!r}.", returncode=EXIT_BAD_INPUT) from None
        days = options["expires_days"]
        if days is not None and days < 1:
            raise CommandError("--expires-days must be at least 1.", returncode=EXIT_BAD_INPUT)
        expires_at = timezone.now() + timedelta(days=days) if days else None
        token, secret = api_token_create(
            user=user, name=options["name"], scope=options["scope"], expires_at=expires_at
        )
        self.stderr.write(
            f"Created token {token.pk} {token.name!r} ({token.prefix}…) for {user}, scope "
            f"{token.scope}, expires {_when(token.expires_at)}. Copy it now: it is not "
            "shown again."
        )
        self.stdout.write(secret)

    def _list(self, options: dict[str, Any]) -> None:
        tokens = api_tokens_list(users=options["user"], include_inactive=options["all"])
        header = ("id", "prefix", "user", "name", "scope", "status", "created", "last used",
                  "expires")  # fmt: skip
        rows = [header] + [
            (str(t.pk), t.prefix, str(t.user), t.name, t.scope, t.status, _when(t.created_at),
             _when(t.last_used_at), _when(t.expires_at))
            for t in tokens
        ]  # fmt: skip
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        for row in rows:
            self.stdout.write("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)))

    def _revoke(self, options: dict[str, Any]) -> None:
        token = api_token_revoke(token=options["token"])
        self.stdout.write(f"Revoked token {token.pk} {token.name!r} ({token.prefix}…).")

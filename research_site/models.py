"""Site-wide models: the REST API's per-user tokens.

A token's secret is shown once, when it is created, and stored only as its SHA-256 hash:
the secret is 256 random bits, so a fast hash is enough (no salt, no slow KDF) and a
stolen database yields no usable token. A short prefix of the secret stays visible, so
people can tell their tokens apart in lists and logs.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models
from django.db.models import Q
from django.utils import timezone

from core.models import TimeStamped


class ApiToken(TimeStamped):
    class Scope(models.TextChoices):
        READ = "read", "read (GET requests only)"
        WRITE = "write", "read and write"

    user = models.ForeignKey(
        settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="api_tokens"
    )
    name = models.CharField(max_length=100, help_text="What the token is for, e.g. 'laptop'.")
    prefix = models.CharField(
        max_length=16, editable=False, help_text="The secret's first characters, for recognition."
    )
    key_hash = models.CharField(max_length=64, unique=True, editable=False)
    scope = models.CharField(max_length=5, choices=Scope.choices, default=Scope.READ)
    last_used_at = models.DateTimeField(null=True, blank=True, editable=False)
    expires_at = models.DateTimeField(
        null=True, blank=True, help_text="Empty: the token never expires."
    )
    revoked_at = models.DateTimeField(null=True, blank=True, editable=False)

    class Meta:
        verbose_name = "API token"
        ordering = ["-created_at"]
        constraints = [
            models.CheckConstraint(
                condition=Q(scope__in=["read", "write"]), name="apitoken_scope_valid"
            ),
            # A user's live tokens have distinct names, so `api_token revoke` and the
            # admin list are unambiguous; a revoked token's name can be reused.
            models.UniqueConstraint(
                fields=["user", "name"],
                condition=Q(revoked_at__isnull=True),
                name="apitoken_live_name_unique",
                violation_error_message="This user already has a live token with this name.",
            ),
        ]
        # Every authenticated request looks its token up by key_hash (unique, so indexed).

    def __str__(self) -> str:
        return f"{self.name} ({self.prefix}…)"

    @property
    def status(self) -> str:
        """'active', 'revoked' or 'expired'."""
        if self.revoked_at is not None:
            return "revoked"
        if self.expires_at is not None and self.expires_at <= timezone.now():
            return "expired"
        return "active"

    @property
    def can_write(self) -> bool:
        return self.scope == self.Scope.WRITE

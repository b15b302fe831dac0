"""Abstract model bases every app's models share (no tables of their own)."""

from __future__ import annotations

from django.db import models


class TimeStamped(models.Model):
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        abstract = True


class AuditEntry(models.Model):
    """One write to the database (docs/AUTH.md, "The audit log"): who (the Django user and
    the client that acted for them, or `system` for commands and workers), when, what
    (model, object, action) and a short summary naming the changed fields, never their
    values. Written by core/audit.py after the transaction commits; a user or project
    deleted later keeps its entries (names and ids are copied, not linked)."""

    class Action(models.TextChoices):
        CREATE = "create"
        UPDATE = "update"
        DELETE = "delete"
        BULK_CREATE = "bulk-create", "bulk create"
        BULK_UPDATE = "bulk-update", "bulk update"
        BULK_DELETE = "bulk-delete", "bulk delete"

    at = models.DateTimeField(db_index=True)
    user_id = models.IntegerField(null=True, blank=True, help_text="The acting user's id.")
    username = models.CharField(max_length=150, blank=True, help_text="Empty: the system.")
    kind = models.CharField(max_length=16, help_text="How the user was proved, or `system`.")
    client = models.CharField(max_length=200, blank=True)
    action = models.CharField(max_length=16, choices=Action.choices)
    model = models.CharField(max_length=100, help_text="app_label.model")
    object_id = models.CharField(max_length=64, blank=True)
    object_repr = models.CharField(max_length=200, blank=True)
    count = models.PositiveIntegerField(default=1, help_text="Rows this entry stands for.")
    summary = models.CharField(max_length=300, blank=True)
    project_id = models.CharField(max_length=64, blank=True, db_index=True)

    class Meta:
        ordering = ["-at", "-id"]
        verbose_name_plural = "audit entries"
        indexes = [
            models.Index(fields=["username", "-at"], name="auditentry_user_idx"),
            models.Index(fields=["project_id", "-at"], name="auditentry_project_idx"),
        ]

    def __str__(self) -> str:
        who = self.username or "system"
        return f"{self.at:%Y-%m-%d %H:%M:%S} {who} {self.action} {self.model} {self.object_id}"

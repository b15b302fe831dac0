"""API tokens in the admin: create one (its secret is shown once), see when each was last
used, revoke. Tokens are immutable: to change a scope, create a new token and revoke the old.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.utils import timezone

from research_site import audit_admin  # noqa: F401 - registers the audit log's admin
from research_site.models import ApiToken
from research_site.tokens import api_token_create, api_token_revoke

# Where save_model leaves the new secret for response_add, on the request: never stored.
_SECRET_ATTRIBUTE = "_api_token_secret"  # noqa: S105 - an attribute name


class ApiTokenForm(forms.ModelForm):
    class Meta:
        model = ApiToken
        fields = ["user", "name", "scope", "expires_at"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        user, name = cleaned.get("user"), " ".join((cleaned.get("name") or "").split())
        # The live-name constraint has a condition on revoked_at, which is not on this form,
        # so the form's own constraint validation skips it.
        if user and name and user.api_tokens.filter(name=name, revoked_at__isnull=True).exists():
            self.add_error("name", "This user already has a live token with this name.")
        return cleaned

    def clean_expires_at(self) -> Any:
        expires_at = self.cleaned_data.get("expires_at")
        if expires_at is not None and expires_at <= timezone.now():
            raise forms.ValidationError("The expiry date is in the past.")
        return expires_at


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    form = ApiTokenForm
    list_display = ["name", "prefix", "user", "scope", "status", "last_used_at", "expires_at",
                    "created_at"]  # fmt: skip
    list_filter = ["scope", ("revoked_at", admin.EmptyFieldListFilter)]
    search_fields = ["name", "prefix", "user__username"]
    autocomplete_fields = ["user"]
    actions = ["revoke_selected"]

    def get_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Any:
        if obj is None:
            return ["user", "name", "scope", "expires_at"]
        return ["user", "name", "prefix", "scope", "status", "created_at", "last_used_at",
                "expires_at", "revoked_at"]  # fmt: skip

    def get_readonly_fields(self, request: HttpRequest, obj: ApiToken | None = None) -> Any:
        return self.get_fields(request, obj) if obj is not None else []

    @admin.display(description="status")
    def status(self, obj: ApiToken) -> str:
        return obj.status

    def save_model(self, request: HttpRequest, obj: ApiToken, form: Any, change: bool) -> None:
        if change:
            return  # every field is read-only once the token exists
        token, secret = api_token_create(
            user=obj.user, name=obj.name, scope=obj.scope, expires_at=obj.expires_at
        )
        obj.pk, obj.prefix, obj.created_at = token.pk, token.prefix, token.created_at
        setattr(request, _SECRET_ATTRIBUTE, secret)

    def response_add(
        self, request: HttpRequest, obj: ApiToken, post_url_continue: str | None = None
    ) -> HttpResponse:
        """Show the secret once, on this page only: it is in no message, cookie or log."""
        secret = getattr(request, _SECRET_ATTRIBUTE, None)
        if secret is None:
            return super().response_add(request, obj, post_url_continue)
        context = {
            **self.admin_site.each_context(request),
            "opts": self.model._meta,
            "title": "API token created",
            "token": obj,
            "secret": secret,
        }
        response = TemplateResponse(
            request, "admin/research_site/apitoken/token_created.html", context
        )
        return response

    @admin.action(description="Revoke selected tokens")
    def revoke_selected(self, request: HttpRequest, queryset: QuerySet[ApiToken]) -> None:
        tokens = list(queryset.filter(revoked_at__isnull=True))
        for token in tokens:
            api_token_revoke(token=token)
        self.message_user(request, f"Revoked {len(tokens)} token(s).", messages.SUCCESS)

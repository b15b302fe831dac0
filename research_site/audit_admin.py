"""The audit log in the admin (docs/AUTH.md, "The audit log"): read-only, filtered by
project, user, client kind, action, model and time, exported as CSV or JSON.

Who sees it: superusers (every entry), and staff given the "Can view audit entry"
permission, narrowed to the entries of the projects they own (project roles,
projects/permissions.py; `visible_projects` is that one place).
"""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import QuerySet
from django.http import HttpRequest, StreamingHttpResponse
from django.utils import timezone

from core.audit_export import export_lines
from core.models import AuditEntry
from projects import permissions
from projects.models import Project

EXPORT_LIMIT = 100_000


def visible_projects(request: HttpRequest) -> list[str] | None:
    """The projects whose entries this person may see (those they own); None: all (a
    superuser, or a principal project roles do not bind)."""
    if getattr(request.user, "is_superuser", False):
        return None
    return permissions.projects_with(permissions.MANAGE)


class ProjectFilter(admin.SimpleListFilter):
    title = "project"
    parameter_name = "project"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        used = set(
            AuditEntry.objects.exclude(project_id="")
            .values_list("project_id", flat=True)
            .distinct()[:500]
        )
        names = dict(Project.objects.values_list("pk", "name"))
        return sorted(
            ((pk, names.get(_as_key(pk), f"{pk} (deleted)")) for pk in used),
            key=lambda item: item[1].lower(),
        )

    def queryset(
        self, request: HttpRequest, queryset: QuerySet[AuditEntry]
    ) -> QuerySet[AuditEntry]:
        value = self.value()
        return queryset.filter(project_id=value) if value else queryset


class UserFilter(admin.SimpleListFilter):
    title = "user"
    parameter_name = "who"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        names = AuditEntry.objects.exclude(username="").values_list("username", flat=True)
        return [("system", "system"), *((n, n) for n in sorted(set(names.distinct()[:500])))]

    def queryset(
        self, request: HttpRequest, queryset: QuerySet[AuditEntry]
    ) -> QuerySet[AuditEntry]:
        value = self.value()
        if not value:
            return queryset
        return (
            queryset.filter(kind="system") if value == "system" else queryset.filter(username=value)
        )


def _as_key(pk: str) -> Any:
    return int(pk) if pk.isdigit() else pk


@admin.register(AuditEntry)
class AuditEntryAdmin(admin.ModelAdmin):
    list_display = ["at", "who", "client", "action", "model", "object_id", "object_repr",
                    "count", "summary", "project_id"]  # fmt: skip
    list_filter = [ProjectFilter, UserFilter, "kind", "action", "model", "at"]
    date_hierarchy = "at"
    search_fields = ["username", "client", "model", "object_id", "object_repr", "summary"]
    actions = ["export_csv", "export_json"]
    list_per_page = 100
    show_full_result_count = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[AuditEntry]:
        rows = super().get_queryset(request)
        allowed = visible_projects(request)
        return rows if allowed is None else rows.filter(project_id__in=allowed)

    @admin.display(description="who", ordering="username")
    def who(self, entry: AuditEntry) -> str:
        return entry.username or "system"

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def _export(self, queryset: QuerySet[AuditEntry], fmt: str) -> StreamingHttpResponse:
        rows = queryset.order_by("at", "id")[:EXPORT_LIMIT].iterator(chunk_size=2000)
        stamp = timezone.now().strftime("%Y%m%d-%H%M%S")
        response = StreamingHttpResponse(
            export_lines(rows, fmt),
            content_type="text/csv; charset=utf-8" if fmt == "csv" else "application/json",
        )
        response["Content-Disposition"] = f'attachment; filename="audit-{stamp}.{fmt}"'
        return response

    @admin.action(description="Export selected entries as CSV", permissions=["view"])
    def export_csv(
        self, request: HttpRequest, queryset: QuerySet[AuditEntry]
    ) -> StreamingHttpResponse:
        return self._export(queryset, "csv")

    @admin.action(description="Export selected entries as JSON", permissions=["view"])
    def export_json(
        self, request: HttpRequest, queryset: QuerySet[AuditEntry]
    ) -> StreamingHttpResponse:
        return self._export(queryset, "json")

"""Saved searches, their runs and the alerts in the admin: lists with filters, a "Run now"
action (the service the tools call), "Mark read" on alerts, each search's feed link."""

from __future__ import annotations

from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils import timezone
from django.utils.html import format_html

from core.errors import DomainError
from projects.models import Alert, SavedSearch, SavedSearchRun
from projects.watch.services import alerts_mark_read, saved_search_run


@admin.register(SavedSearch)
class SavedSearchAdmin(admin.ModelAdmin):
    list_display = ["name", "query", "schedule", "enabled", "project", "last_run_at", "next_run_at"]
    list_filter = ["schedule", "enabled", "project"]
    search_fields = ["name", "query"]
    readonly_fields = ["last_run_at", "feed"]
    actions = ["run_now"]

    @admin.display(description="Atom feed")
    def feed(self, obj: SavedSearch) -> str:
        if not obj.pk:
            return "-"
        url = reverse("saved_search_feed", args=[obj.name]) + f"?token={obj.feed_token}"
        return format_html('<a href="{}">{}</a>', url, url)

    def save_model(self, request: HttpRequest, obj: SavedSearch, form: Any, change: bool) -> None:
        scheduled = obj.schedule != SavedSearch.Schedule.MANUAL or obj.interval_seconds
        if scheduled and obj.next_run_at is None:
            obj.next_run_at = timezone.now()
        if not scheduled:
            obj.next_run_at = None
        super().save_model(request, obj, form, change)

    @admin.action(description="Run now")
    def run_now(self, request: HttpRequest, queryset: QuerySet[SavedSearch]) -> None:
        for search in queryset.select_related("project"):
            try:
                run = saved_search_run(search=search)
            except DomainError as exc:
                self.message_user(request, f"{search.name}: {exc}", messages.ERROR)
                continue
            self.message_user(
                request, f"{search.name}: {run.status}, {run.found} found, {run.new} new."
            )


@admin.register(SavedSearchRun)
class SavedSearchRunAdmin(admin.ModelAdmin):
    list_display = ["search", "started_at", "trigger", "status", "found", "new"]
    list_filter = ["status", "trigger", "search"]
    readonly_fields = [
        "search", "trigger", "status", "engines", "found", "new", "new_paper_ids", "error",
        "started_at", "finished_at",
    ]  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False


class UnreadFilter(admin.SimpleListFilter):
    title = "read"
    parameter_name = "unread"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("1", "Unread"), ("0", "Read")]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Alert]) -> QuerySet[Alert]:
        if self.value() == "1":
            return queryset.filter(read_at__isnull=True)
        if self.value() == "0":
            return queryset.filter(read_at__isnull=False)
        return queryset


@admin.register(Alert)
class AlertAdmin(admin.ModelAdmin):
    list_display = ["title", "kind", "project", "created_at", "read_at"]
    list_filter = [UnreadFilter, "kind", "project"]
    search_fields = ["title", "body"]
    readonly_fields = [
        "kind", "title", "body", "project", "paper", "link", "data", "key", "created_at",
        "read_at",
    ]  # fmt: skip
    actions = ["mark_read"]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.action(description="Mark read")
    def mark_read(self, request: HttpRequest, queryset: QuerySet[Alert]) -> None:
        changed = alerts_mark_read(alert_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{changed} alert(s) marked read.")

"""Projects in the admin: membership edited inline, deletions through the service."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.db.models import Count, QuerySet
from django.http import HttpRequest

import projects.review.admin  # noqa: F401 - registers the review admin
from projects.models import Project, ProjectPaper
from projects.services import project_create, project_delete, project_rename


class ProjectPaperInline(admin.TabularInline):
    model = ProjectPaper
    extra = 0
    autocomplete_fields = ["paper"]
    readonly_fields = ["added_at"]
    verbose_name = "paper"
    show_change_link = False


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    list_display = ["name", "id", "paper_count", "updated_at"]
    search_fields = ["name", "id", "description"]
    inlines = [ProjectPaperInline]
    actions = ["delete_keeping_papers"]

    def get_fields(self, request: HttpRequest, obj: Project | None = None) -> Any:
        # The id is made from the name by the service on creation and never changes.
        return ["id", "name", "description"] if obj else ["name", "description"]

    def get_readonly_fields(self, request: HttpRequest, obj: Project | None = None) -> list[str]:
        return ["id"] if obj else []

    def save_model(self, request: HttpRequest, obj: Project, form: Any, change: bool) -> None:
        if change:
            project_rename(project=obj, name=obj.name)
            Project.objects.filter(pk=obj.pk).update(description=obj.description)
            return
        created = project_create(name=obj.name, description=obj.description)
        obj.pk, obj.created_at, obj.updated_at = created.pk, created.created_at, created.updated_at
        obj._state.adding = False

    def get_queryset(self, request: HttpRequest) -> QuerySet[Project]:
        return super().get_queryset(request).annotate(paper_total=Count("paper_links"))

    @admin.display(description="papers", ordering="paper_total")
    def paper_count(self, project: Project) -> int:
        return project.paper_total  # type: ignore[attr-defined]

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> Any:
        # Django 6.1 passes where the actions are shown; 5.2 (the 3.11 fallback) does not.
        actions = (
            super().get_actions(request)
            if action_location is None
            else super().get_actions(request, action_location)  # type: ignore[call-arg]
        )
        actions.pop("delete_selected", None)  # replaced by the service-backed action below
        return actions

    @admin.action(description="Delete selected projects (papers are kept)", permissions=["delete"])
    def delete_keeping_papers(self, request: HttpRequest, queryset: QuerySet[Project]) -> None:
        removed = sum(project_delete(project=project) for project in queryset)
        self.message_user(request, f"Deleted; {removed} memberships removed, no papers deleted.")

    def delete_model(self, request: HttpRequest, obj: Project) -> None:
        project_delete(project=obj)

"""Projects in the admin: created, renamed and deleted through the services; each project's
papers, the library to add from and its trends are pages of their own (projects.curation).

Also registers the Paper admin the site uses, `LibraryPaperAdmin` (papers' own, with the
project and engine work papers may not import; projects.curation)."""

from __future__ import annotations

from typing import Any

from django.contrib import admin
from django.contrib.admin.options import IS_POPUP_VAR
from django.db.models import Count, QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.urls import path, reverse
from django.utils.html import format_html

import projects.review.admin  # noqa: F401 - registers the review admin
from core.errors import DomainError, InvalidInput
from papers import scoping
from papers.models import Paper
from projects import members, permissions
from projects.curation import (
    LibraryPaperAdmin,
    library_picker_view,
    project_papers_view,
    project_trends_view,
)
from projects.models import Project, ProjectInvitation, ProjectMember
from projects.review import duplicates_admin  # noqa: F401 - registers grouped versions
from projects.review.extraction_admin import project_extraction_urls
from projects.selectors import MATCH_LIMIT, project_brief, project_match
from projects.services import project_create, project_delete, project_rename
from projects.watch import admin as watch_admin  # noqa: F401 - saved searches and alerts

# papers.admin registered papers' own; it is always imported first (projects.curation
# imports it, and papers comes before projects in INSTALLED_APPS).
admin.site.unregister(Paper)
admin.site.register(Paper, LibraryPaperAdmin)


class ProjectMemberInline(admin.TabularInline):
    """The project's members on its page: owners add (by user name), change and remove
    them; saved through projects.members, like the REST API's."""

    model = ProjectMember
    extra = 1
    fields = ["user", "role", "added_at"]
    readonly_fields = ["added_at"]
    autocomplete_fields = ["user"]

    def _manages(self, request: HttpRequest, obj: Any) -> bool:
        if obj is None:
            return False
        with_role = permissions.role_of(obj.pk)
        return permissions.allows(with_role, permissions.MANAGE)

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._manages(request, obj)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._manages(request, obj)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return self._manages(request, obj)

    def has_view_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return obj is not None


@admin.register(ProjectInvitation)
class ProjectInvitationAdmin(admin.ModelAdmin):
    """Invite links: "Add" makes one (the link is shown once, in the message); the list
    shows who made which, until when, and who used it."""

    list_display = ["project", "role", "created_by", "expires_at", "accepted_by", "accepted_at"]
    list_filter = ["role"]
    fields = ["project", "role"]
    autocomplete_fields = ["project"]

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    def get_queryset(self, request: HttpRequest) -> QuerySet[ProjectInvitation]:
        owned = permissions.projects_with(permissions.MANAGE)
        queryset = super().get_queryset(request).select_related("project", "created_by")
        return queryset if owned is None else queryset.filter(project_id__in=owned)

    def save_model(self, request: HttpRequest, obj: Any, form: Any, change: bool) -> None:
        made = members.invitation_create(project=obj.project, role=obj.role)
        obj.pk = ProjectInvitation.objects.get(token_hash=members.token_hash(made["token"])).pk
        self.message_user(
            request,
            f"Invite link to {obj.project.name!r} as {obj.role} (shown once; it works once, "
            f"for {members.INVITE_DAYS_DEFAULT} days): "
            f"{request.build_absolute_uri(made['path'])}",
        )


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin):
    # Papers are not an inline: a project may hold thousands. Its papers page lists them.
    list_display = ["name", "id", "paper_count", "pages", "updated_at"]
    search_fields = ["name", "id", "description"]
    ordering = ["name"]  # also the order of autocomplete suggestions (papers.pickers)
    actions = ["delete_keeping_papers"]
    inlines = [ProjectMemberInline]

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

    def response_add(
        self, request: HttpRequest, obj: Project, post_url_continue: str | None = None
    ) -> HttpResponse:
        # A new project is empty: "Save" goes where papers are added to it.
        if any(key in request.POST for key in ("_continue", "_addanother", IS_POPUP_VAR)):
            return super().response_add(request, obj, post_url_continue)
        self.message_user(request, f"Project {obj.name!r} created; now add papers to it.")
        return HttpResponseRedirect(reverse("admin:projects_project_papers", args=[obj.pk]))

    def get_queryset(self, request: HttpRequest) -> QuerySet[Project]:
        # A user bound by project roles sees its projects only (projects.permissions).
        queryset = super().get_queryset(request).annotate(paper_total=Count("paper_links"))
        permitted = scoping.permitted_project_ids()
        return queryset if permitted is None else queryset.filter(id__in=permitted)

    def has_change_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_change_permission(request, obj)
        if obj is None or not allowed:
            return allowed
        return permissions.allows(permissions.role_of(obj.pk), permissions.EDIT)

    def has_delete_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        allowed = super().has_delete_permission(request, obj)
        if obj is None or not allowed:
            return allowed
        return permissions.allows(permissions.role_of(obj.pk), permissions.MANAGE)

    def save_formset(self, request: HttpRequest, form: Any, formset: Any, change: bool) -> None:
        if formset.model is not ProjectMember:
            super().save_formset(request, form, formset, change)
            return
        project = form.instance
        # Through the service: owners only, the last owner kept, roles checked.
        for inline_form in formset.forms:
            data = getattr(inline_form, "cleaned_data", None) or {}
            user = data.get("user")
            if user is None:
                continue
            try:
                if data.get("DELETE"):
                    if inline_form.instance.pk is not None:
                        members.member_remove(
                            project=project, username=inline_form.instance.user.get_username()
                        )
                elif inline_form.has_changed():
                    old = (
                        inline_form.instance.pk
                        and ProjectMember.objects.filter(pk=inline_form.instance.pk)
                        .values_list("user__username", flat=True)
                        .first()
                    )
                    if old and old != user.get_username():
                        members.member_remove(project=project, username=old)
                    members.member_set(
                        project=project, username=user.get_username(), role=data["role"]
                    )
            except DomainError as error:
                self.message_user(request, error.message, level="error")

    @admin.display(description="papers", ordering="paper_total")
    def paper_count(self, project: Project) -> int:
        return project.paper_total  # type: ignore[attr-defined]

    @admin.display(description="open")
    def pages(self, project: Project) -> str:
        return format_html(
            '<a href="{}">papers</a> · <a href="{}">trends</a>',
            reverse("admin:projects_project_papers", args=[project.pk]),
            reverse("admin:projects_project_trends", args=[project.pk]),
        )

    def get_urls(self) -> list[Any]:
        view = self.admin_site.admin_view
        return [
            path("match/", view(self.match_view), name="projects_project_match"),
            path("<str:project_id>/papers/", view(self.papers_view),
                 name="projects_project_papers"),
            path("<str:project_id>/papers/add/", view(self.library_view),
                 name="projects_project_add_papers"),
            path("<str:project_id>/trends/", view(self.trends_view),
                 name="projects_project_trends"),
            *project_extraction_urls(self),
            *super().get_urls(),
        ]  # fmt: skip

    def match_view(self, request: HttpRequest) -> JsonResponse:
        """The project picker's listbox (papers/static/papers/project-picker.mjs): the
        projects matching `?q=` that this user may see, as project_match finds them."""
        try:
            limit = int(request.GET.get("limit") or MATCH_LIMIT)
            found = project_match(text=request.GET.get("q", ""), user=request.user, limit=limit)
        except ValueError:
            return JsonResponse({"error": "limit must be a number."}, status=400)
        except InvalidInput as error:
            return JsonResponse({"error": error.message}, status=400)
        shown = [project_brief(project) for project in found]
        return JsonResponse(
            {"projects": [{"id": p["project_id"], "name": p["name"],
                           "paper_count": p["paper_count"]} for p in shown]}
        )  # fmt: skip

    def papers_view(self, request: HttpRequest, project_id: str) -> HttpResponse:
        return project_papers_view(self, request, project_id)

    def library_view(self, request: HttpRequest, project_id: str) -> HttpResponse:
        return library_picker_view(self, request, project_id)

    def trends_view(self, request: HttpRequest, project_id: str) -> HttpResponse:
        return project_trends_view(self, request, project_id)

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

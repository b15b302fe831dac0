"""The Paper admin the site registers, and a project's pages in the admin: its papers, the
library to add papers from, its trends.

`LibraryPaperAdmin` is papers' own Paper admin plus what needs the layers above papers
(docs/LAYERS.md): adding papers to projects and asking the engines for a paper by DOI /
arXiv id / URL (the methods papers.curation leaves to it). projects/admin.py registers it.

The papers page and the library picker are the Paper list itself (same columns, search,
filters and bulk actions; see `papers.curation`), narrowed to one project or to the
papers not in it, with the membership actions added: a ModelAdmin made per request for
the project. `ProjectAdmin.get_urls` routes here.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.db.models import Q, QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from core.errors import InvalidInput
from papers import scoping
from papers.admin import KeywordFilter, PaperAdmin, TextInputFilter, VenueFilter, YearFilter
from papers.charts import Bar, bar_chart, column_chart, fold_timeline
from papers.models import Paper
from papers.search.admin_search import (
    ADMIN_SEARCH_MAX_HITS,
    admin_search_filters,
    identifier_match,
    paper_search_admin,
    with_search_rank,
)
from papers.search.types import SearchFilters
from projects.intake import paper_add_by_identifier
from projects.models import Project
from projects.selectors import project_get
from projects.services import project_add_papers

TOP_ITEMS = 15  # authors, venues and keywords drawn on the trends page


def _project_or_404(project_admin: admin.ModelAdmin, request: HttpRequest, pk: str) -> Project:
    project = Project.objects.filter(pk=pk).first()
    if project is None or not scoping.may_see_project(project.pk):
        raise Http404(f"No project {pk!r}.")
    if not project_admin.has_view_permission(request, project):
        raise PermissionDenied
    return project


class AuthorFilter(TextInputFilter):
    """An author's papers: `?author=<author id>` (the reading page's author links) or the
    author's full name, any case (the trends chart's bars)."""

    title = "author (full name)"
    parameter_name = "author"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Paper]) -> QuerySet[Paper]:
        value = (self.value() or "").strip()
        if not value:
            return queryset
        if value.isdigit():
            return queryset.filter(author_links__author_id=int(value))
        return queryset.filter(author_links__author__name__iexact=value).distinct()


class LibraryPaperAdmin(PaperAdmin):
    """The Paper list, filing papers into projects and asking the engines."""

    # Whether "Delete selected papers" (from the whole library) is offered: on the library's
    # own list, last, after Django's confirmation page with the count; never on the pages of
    # a project, whose actions act on the project.
    library_wide_delete = True

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> Any:
        # Django 6.1 passes where the actions are shown; 5.2 (the 3.11 fallback) does not.
        actions = (
            super().get_actions(request)
            if action_location is None
            else super().get_actions(request, action_location)  # type: ignore[call-arg]
        )
        delete: Any = actions.pop("delete_selected", None)
        if delete is not None and self.library_wide_delete:
            described = "Delete selected papers from the library…"
            # Django 6.1 has Action dataclasses; 5.2 (the 3.11 fallback) plain tuples.
            replaced: Any = (
                dataclasses.replace(delete, description=described)
                if not isinstance(delete, tuple)
                else (delete[0], delete[1], described)
            )
            actions["delete_selected"] = replaced
        return actions

    def get_list_filter(self, request: HttpRequest) -> list[Any]:
        return [*super().get_list_filter(request), AuthorFilter]

    def view_on_site(self, paper: Paper) -> str:
        # The edit form's "View on site" button opens the reading page (projects.reading).
        return reverse("admin:papers_paper_read", args=[paper.pk])

    def get_urls(self) -> list[Any]:
        from django.urls import path

        from projects import reading

        def view(function: Any) -> Any:
            def bound(request: HttpRequest, paper_id: int) -> HttpResponse:
                return function(request, self, paper_id)

            return self.admin_site.admin_view(bound)

        return [
            path("<int:paper_id>/read/", view(reading.paper_read_view), name="papers_paper_read"),
            path("<int:paper_id>/annotations.json", view(reading.paper_annotations_view),
                 name="papers_paper_annotations"),
            path("<int:paper_id>/projects/", view(reading.paper_projects_view),
                 name="papers_paper_projects"),
            path("<int:paper_id>/upload-pdf/", view(reading.paper_upload_view),
                 name="papers_paper_upload_pdf"),
            *super().get_urls(),
        ]  # fmt: skip

    def project_resolve(self, ref: str) -> str:
        return project_get(ref=ref).id

    def project_add_papers(self, *, project: str, paper_ids: Sequence[int]) -> int:
        return project_add_papers(project=project, paper_ids=paper_ids)

    def paper_add_by_identifier(self, *, identifier: str, project: str) -> Any:
        return paper_add_by_identifier(
            identifier=identifier, project_ids=[project] if project else []
        )


class ProjectPapersAdmin(LibraryPaperAdmin):
    """The papers of one project, with the Paper list's tools and the membership ones."""

    change_list_template = "admin/projects/project/papers.html"
    library_wide_delete = False
    results_list = False  # a project's page keeps its columns
    actions = [
        "remove_from_project", "move_to_project", "add_to_project", "add_keywords",
        "set_keywords", "remove_keywords", "export_bibtex", "export_csv", "export_ris",
        "download_pdfs", "attach_pdfs", "reembed",
    ]  # fmt: skip

    def __init__(self, project: Project, admin_site: admin.AdminSite) -> None:
        super().__init__(Paper, admin_site)
        self.project = project
        self.export_name = project.pk

    def get_queryset(self, request: HttpRequest) -> QuerySet[Paper]:
        return super().get_queryset(request).filter(project_links__project=self.project)

    def get_list_filter(self, request: HttpRequest) -> list[Any]:
        return [YearFilter, VenueFilter, KeywordFilter, AuthorFilter]

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Paper], search_term: str
    ) -> tuple[QuerySet[Paper], bool]:
        filters = admin_search_filters(request.GET)
        return project_papers_search(
            queryset, search_term, project=self.project, filters=filters
        ), False

    @admin.action(description="Remove selected papers from this project (papers are kept)",
                  permissions=["curate_projects"])  # fmt: skip
    def remove_from_project(self, request: HttpRequest, queryset: QuerySet[Paper]) -> None:
        from projects.services import project_remove_papers

        ids = self.selected_ids(request, queryset)
        if ids is not None:
            self.run_service(
                request,
                "Remove",
                lambda: (
                    f"{project_remove_papers(project=self.project, paper_ids=ids)} papers "
                    f"removed from {self.project.name}"
                ),
            )

    @admin.action(description="Move selected papers to the project named below",
                  permissions=["curate_projects"])  # fmt: skip
    def move_to_project(self, request: HttpRequest, queryset: QuerySet[Paper]) -> None:
        from projects.transfers import project_move_papers

        ids = self.selected_ids(request, queryset)
        target = request.POST.get("project", "").strip()
        if ids is not None:
            self.run_service(
                request,
                "Move",
                lambda: (
                    f"{project_move_papers(source=self.project, target=target, paper_ids=ids)}"
                    f" papers moved to {target}"
                ),
            )


def project_papers_search(
    queryset: QuerySet[Paper], term: str, *, project: Project, filters: SearchFilters | None = None
) -> QuerySet[Paper]:
    """The project page's search box: the Paper list's (`paper_search_admin`), with the
    full-text part run inside the project. A common word matches tens of thousands of
    the library's papers, more than the library-wide search keeps (and slow to pass on),
    but only the project's papers here."""
    from papers.search.local import local_search_ids

    term = term.strip()
    if not term:
        return queryset
    try:
        ids = local_search_ids(
            query=term, filters=filters, scope=[project.pk], limit=ADMIN_SEARCH_MAX_HITS
        ).ids
    except InvalidInput:
        return paper_search_admin(queryset, term, filters)  # not a valid query: its plain match
    return with_search_rank(queryset.filter(Q(pk__in=ids) | identifier_match(term)), ids)


class LibraryPickerAdmin(LibraryPaperAdmin):
    """The whole library less the project's papers, to search and add from."""

    change_list_template = "admin/projects/project/library_picker.html"
    actions = ["add_to_this_project"]
    library_wide_delete = False
    results_list = False  # the picker keeps its columns

    def __init__(self, project: Project, admin_site: admin.AdminSite) -> None:
        super().__init__(Paper, admin_site)
        self.project = project

    def get_queryset(self, request: HttpRequest) -> QuerySet[Paper]:
        return super().get_queryset(request).exclude(project_links__project=self.project)

    @admin.action(description="Add selected papers to this project",
                  permissions=["curate_projects"])  # fmt: skip
    def add_to_this_project(
        self, request: HttpRequest, queryset: QuerySet[Paper]
    ) -> HttpResponseRedirect | None:
        from projects.services import project_add_papers

        ids = self.selected_ids(request, queryset)
        if ids is None:
            return None
        added = self.run_service(
            request,
            f"Add to {self.project.name}",
            lambda: f"{project_add_papers(project=self.project, paper_ids=ids)} papers added",
        )
        if not added:
            return None
        return HttpResponseRedirect(
            reverse("admin:projects_project_papers", args=[self.project.pk])
        )


def project_papers_view(
    project_admin: admin.ModelAdmin, request: HttpRequest, project_id: str
) -> HttpResponse:
    project = _project_or_404(project_admin, request, project_id)
    papers = ProjectPapersAdmin(project, project_admin.admin_site)
    return papers.changelist_view(
        request, extra_context={"project": project, "title": f"Papers in {project.name}"}
    )


def library_picker_view(
    project_admin: admin.ModelAdmin, request: HttpRequest, project_id: str
) -> HttpResponse:
    project = _project_or_404(project_admin, request, project_id)
    if not project_admin.has_change_permission(request, project):
        raise PermissionDenied
    picker = LibraryPickerAdmin(project, project_admin.admin_site)
    return picker.changelist_view(
        request,
        extra_context={"project": project, "title": f"Add papers to {project.name}"},
    )


# Which filter of the project's papers page a bar of each chart applies.
_BAR_FILTERS = {"authors": "author", "venues": "venue", "keywords": "keyword"}


def _year_bars(timeline: dict[str, Any], papers_url: str) -> list[Bar]:
    """The populated years, the sparse early tail folded into one column, each a link to
    the project's papers of those years."""
    years = [(item["year"], item["paper_count"]) for item in timeline["items"]]
    bars = []
    for label, count, first, last in fold_timeline(years):
        span = str(first) if first == last else f"{first}-{last}"
        name = "" if first == last else f"{first}–{last}"
        bars.append(Bar(label, count, name=name, href=f"{papers_url}?{urlencode({'year': span})}"))
    return bars


def _named_bars(kind: str, items: list[dict[str, Any]], papers_url: str) -> list[Bar]:
    """Authors, venues or keywords, each a link to the project's papers filtered by it.
    A venue is a series (papers/trends.py `_venues`): labelled by its short name ('ACL'),
    its full name on hover, its link listing every edition (the venue filter matches the
    short name too)."""
    parameter = _BAR_FILTERS[kind]
    bars = []
    for item in items:
        hover = item.get("full_name") or item["name"]
        if item.get("venue_records"):
            hover = f"{hover} and {item['venue_records'] - 1} more edition(s)"
        value = item.get("short_name") or item["name"]
        bars.append(
            Bar(item["name"], item["paper_count"], name=hover,
                href=f"{papers_url}?{urlencode({parameter: value})}")
        )  # fmt: skip
    return bars


def project_trends_view(
    project_admin: admin.ModelAdmin, request: HttpRequest, project_id: str
) -> TemplateResponse:
    """Papers per year, top authors, venues and keywords of the project, as charts: the
    same counts as the analyze_paper_trends tool."""
    from papers.trends import MAX_ITEMS, papers_trends_by_ref

    project = _project_or_404(project_admin, request, project_id)

    def trend(kind: str, limit: int = TOP_ITEMS) -> dict[str, Any]:
        return papers_trends_by_ref(analysis_type=kind, project_id=project.pk, limit=limit)

    # Every year, which _year_bars folds into columns one can read.
    timeline = trend("timeline", MAX_ITEMS)
    papers_url = reverse("admin:projects_project_papers", args=[project.pk])
    charts = [("Papers per year", "timeline", column_chart(_year_bars(timeline, papers_url),
                                                           title="Papers per year"))]  # fmt: skip
    for kind, heading in (("authors", "Top authors"), ("venues", "Top venues"),
                          ("keywords", "Top keywords")):  # fmt: skip
        bars = _named_bars(kind, trend(kind)["items"], papers_url)
        charts.append((heading, kind, bar_chart(bars, title=heading)))
    context = {
        **project_admin.admin_site.each_context(request),
        "opts": project_admin.opts,
        "title": f"Trends in {project.name}",
        "project": project,
        "summary": timeline["summary"],
        "notes": timeline["notes"],
        "charts": charts,
    }
    return TemplateResponse(request, "admin/projects/project/trends.html", context)

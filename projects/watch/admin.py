"""Saved searches, their runs and the alerts in the admin: lists with filters, a "Run now"
action (the service the tools call), "Mark read" on alerts, each search's feed link; a
saved search edited with engine checkboxes and filter fields, saved by save_search's
service."""

from __future__ import annotations

import dataclasses
from typing import Any

from django import forms
from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest
from django.urls import reverse
from django.utils.html import format_html

from core.errors import DomainError, InvalidInput
from engines.base import SEARCH
from engines.selectors import engine_choices
from papers import scoping
from papers.pickers import project_field
from papers.search import filters as search_filters
from projects.models import Alert, Project, SavedSearch, SavedSearchRun
from projects.permissions import saved_searches_visible
from projects.selectors import project_get
from projects.watch.services import (
    alerts_mark_read,
    saved_search_check,
    saved_search_run,
    saved_search_save,
)

# The filters a saved search keeps (papers/search/filters.py ALLOWED_KEYS; `year` is the
# range's two ends here), as form fields named filter_<key>, in the order shown.
_TEXT_FILTERS = {
    "venue": "Venue (name or short name, e.g. acl; * and ? as wildcards)",
    "author": "Author",
    "institution": "Institution",
    "keyword": "Keyword",
    "category": "Category (e.g. cs.CL)",
    "source": "Source (e.g. arxiv, acl)",
    "project": "In project (id or name)",
    "doi": "DOI",
    "url": "URL",
}
_BOOLEAN_FILTERS = {"has_pdf": "Has a stored PDF", "has_pdf_url": "Has a PDF link"}
FILTER_FIELDS = ["filter_year_from", "filter_year_to", *(f"filter_{key}" for key in
                 [*_TEXT_FILTERS, *_BOOLEAN_FILTERS])]  # fmt: skip
# Where the service's InvalidInput.field lands on the form.
_ERROR_FIELDS = {"project_id": "project", "date_from": "filter_year_from"}


class SavedSearchForm(forms.ModelForm):
    """Engines as checkboxes (the registry's engines, by name) and the filters as fields
    instead of JSON; checked by `saved_search_check`, the service `save_search` goes
    through, so an error reads as the tool's does, under the field it is about."""

    # The one project picker (papers.pickers): part of a name, by keyboard; it sends the id.
    project = project_field(
        label="Project", help_text="Where the search's new papers go (type part of its name)."
    )
    engines = forms.MultipleChoiceField(
        required=False,
        widget=forms.CheckboxSelectMultiple,
        help_text="None ticked: the library and every available engine of the default set.",
    )
    filter_year_from = forms.IntegerField(required=False, label="From year")
    filter_year_to = forms.IntegerField(required=False, label="To year")
    filter_venue = forms.CharField(required=False, label=_TEXT_FILTERS["venue"])
    filter_author = forms.CharField(required=False, label=_TEXT_FILTERS["author"])
    filter_institution = forms.CharField(required=False, label=_TEXT_FILTERS["institution"])
    filter_keyword = forms.CharField(required=False, label=_TEXT_FILTERS["keyword"])
    filter_category = forms.CharField(required=False, label=_TEXT_FILTERS["category"])
    filter_source = forms.CharField(required=False, label=_TEXT_FILTERS["source"])
    filter_project = forms.CharField(required=False, label=_TEXT_FILTERS["project"])
    filter_doi = forms.CharField(required=False, label=_TEXT_FILTERS["doi"])
    filter_url = forms.CharField(required=False, label=_TEXT_FILTERS["url"])
    filter_has_pdf = forms.NullBooleanField(required=False, label=_BOOLEAN_FILTERS["has_pdf"])
    filter_has_pdf_url = forms.NullBooleanField(
        required=False, label=_BOOLEAN_FILTERS["has_pdf_url"]
    )

    class Meta:
        model = SavedSearch
        fields = [
            "name", "query", "project", "add_to_project", "schedule", "interval_seconds",
            "max_results", "open_access", "enabled",
        ]  # fmt: skip
        widgets = {"query": forms.Textarea(attrs={"rows": 2, "cols": 80})}

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        choices = engine_choices(operation=SEARCH)
        saved = list(self.instance.engines or []) if self.instance.pk else []
        known = {engine_id for engine_id, _ in choices}
        # An engine saved earlier but not loaded now stays ticked, not silently dropped.
        choices += [(engine_id, f"{engine_id} (not loaded)") for engine_id in saved
                    if engine_id not in known]  # fmt: skip
        engines_field = self.fields["engines"]
        assert isinstance(engines_field, forms.MultipleChoiceField)
        engines_field.choices = choices
        if self.instance.pk and not self.is_bound:
            self.initial["engines"] = saved
            self.initial.update(self._filter_initial(self.instance.filters or {}))

    def clean_project(self) -> Project | None:
        ref = str(self.cleaned_data.get("project") or "").strip()
        if not ref:
            return None
        try:
            return project_get(ref=ref)
        except DomainError as error:  # the text typed stays in the box
            raise forms.ValidationError(error.message) from None

    @staticmethod
    def _filter_initial(filters: dict[str, Any]) -> dict[str, Any]:
        try:
            parsed = search_filters.filters_from_payload(filters)
        except InvalidInput:  # saved before a rule changed: shown as saved, checked on save
            parsed = None
        values = dataclasses.asdict(parsed) if parsed else dict(filters)
        if values.get("year") is not None:
            values["year_from"] = values["year_to"] = values["year"]
        return {
            f"filter_{key}": value
            for key, value in values.items()
            if value is not None and f"filter_{key}" in FILTER_FIELDS
        }

    def filters_payload(self) -> dict[str, Any]:
        """The filter fields filled in, as save_search's `filters`."""
        payload: dict[str, Any] = {}
        for name in FILTER_FIELDS:
            value = self.cleaned_data.get(name)
            if isinstance(value, str):
                value = value.strip()
            if value not in (None, ""):
                payload[name.removeprefix("filter_")] = value
        return payload

    def service_arguments(self) -> dict[str, Any]:
        data = self.cleaned_data
        project = data.get("project")
        return {
            "name": data.get("name") or "",
            "query": data.get("query") or "",
            "engines": list(data.get("engines") or []) or None,
            "filters": self.filters_payload(),
            "project": project.pk if project else None,
            "schedule": data.get("schedule") or "",
            "interval_seconds": data.get("interval_seconds"),
            "max_results": data.get("max_results") or 0,
            "add_to_project": bool(data.get("add_to_project")),
            "open_access": bool(data.get("open_access")),
            "enabled": bool(data.get("enabled")),
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        if self.errors:  # a field's own error (not a number...) is shown first
            return cleaned
        arguments = self.service_arguments()
        checked = {k: v for k, v in arguments.items() if k not in ("add_to_project",
                   "open_access", "enabled")}  # fmt: skip
        try:
            saved_search_check(**checked, search=self.instance)
        except DomainError as error:
            self.add_error(self._error_field(getattr(error, "field", None)), error.message)
        return cleaned

    def _error_field(self, field: str | None) -> str | None:
        if not field:
            return None
        field = _ERROR_FIELDS.get(field, field)
        if field.startswith("filters"):
            key = field.partition(".")[2]
            if f"filter_{key}" in self.fields:
                return f"filter_{key}"
            return None
        return field if field in self.fields else None

    def validate_unique(self) -> None:
        """Names are checked by saved_search_check, in the service's words."""


@admin.register(SavedSearch)
class SavedSearchAdmin(admin.ModelAdmin):
    form = SavedSearchForm
    list_display = ["name", "query", "schedule", "enabled", "project", "last_run_at", "next_run_at"]
    list_filter = ["schedule", "enabled", "project"]
    search_fields = ["name", "query"]
    readonly_fields = ["last_run_at", "feed"]
    actions = ["run_now"]
    fieldsets = [
        (None, {"fields": ["name", "query", "engines"]}),
        ("Filters (they narrow the library's part)", {
            "fields": [("filter_year_from", "filter_year_to"), *FILTER_FIELDS[2:]],
        }),
        ("Schedule", {"fields": ["schedule", "interval_seconds", "enabled", "max_results"]}),
        ("Where new papers go", {"fields": ["project", "add_to_project", "open_access"]}),
        ("Runs", {"fields": ["last_run_at", "feed"]}),
    ]  # fmt: skip

    @admin.display(description="Atom feed")
    def feed(self, obj: SavedSearch) -> str:
        if not obj.pk:
            return "-"
        url = reverse("saved_search_feed", args=[obj.name]) + f"?token={obj.feed_token}"
        return format_html('<a href="{}">{}</a>', url, url)

    def save_model(
        self, request: HttpRequest, obj: SavedSearch, form: SavedSearchForm, change: bool
    ) -> None:
        """Saved by the service save_search uses (checked again there, in one transaction)."""
        saved_search_save(**form.service_arguments(), search=obj)

    def get_queryset(self, request: HttpRequest) -> QuerySet[SavedSearch]:
        # A user bound by project roles: its projects' searches and its own.
        return saved_searches_visible(super().get_queryset(request))

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

    def get_queryset(self, request: HttpRequest) -> QuerySet[SavedSearchRun]:
        visible = saved_searches_visible(SavedSearch.objects.all())
        return super().get_queryset(request).filter(search__in=visible)


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

    def get_queryset(self, request: HttpRequest) -> QuerySet[Alert]:
        permitted = scoping.permitted_project_ids()
        queryset = super().get_queryset(request)
        if permitted is None:
            return queryset
        return queryset.filter(scoping.alerts_visible(sorted(permitted)))

    @admin.action(description="Mark read")
    def mark_read(self, request: HttpRequest, queryset: QuerySet[Alert]) -> None:
        changed = alerts_mark_read(alert_ids=list(queryset.values_list("pk", flat=True)))
        self.message_user(request, f"{changed} alert(s) marked read.")

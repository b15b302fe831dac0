"""The admin for the library: built for 100k papers (no full counts, no huge filter lists,
related rows fetched in the list query) and writing only through the services.

The bulk actions live in `papers.curation` (shared with the project pages), adding papers
by identifier or BibTeX in `papers.intake`.

One module because it is the app's admin (`admin.py` in every app's skeleton): the paper
admin and the PDF and annotation admins share the inlines, filters and paginator above, and
splitting them would only move imports around.
"""

from __future__ import annotations

from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.views.main import ORDER_VAR, PAGE_VAR, SEARCH_VAR, ChangeList
from django.core.exceptions import PermissionDenied
from django.core.paginator import Paginator
from django.db import connections
from django.db.models import Count, Prefetch, QuerySet
from django.http import Http404, HttpRequest, HttpResponse
from django.http.response import HttpResponseBase
from django.shortcuts import redirect
from django.urls import reverse
from django.utils.functional import cached_property
from django.utils.html import format_html, format_html_join

from core.errors import DomainError
from papers import scoping
from papers.cite_box import cite_box, cite_box_view
from papers.curation import PaperCurationAdmin
from papers.intake import add_by_identifier_view, import_bibtex_view
from papers.models import (
    Annotation,
    Author,
    Category,
    Citation,
    Institution,
    Keyword,
    Paper,
    PaperAsset,
    PaperAuthor,
    PaperIdentifier,
    PaperKeyword,
    PaperPdf,
    Venue,
)
from papers.results_list import (
    SORT_VAR,
    SORTS,
    attach_records,
    chosen_sort,
    result_row,
    sort_choices,
)
from papers.retraction_admin import RetractionFilter
from papers.search.admin_search import (
    SEARCH_RANK,
    admin_search_filters,
    paper_search_admin_ranked,
)
from papers.search.index import papers_changed


class TextInputFilter(admin.SimpleListFilter):
    """A list filter with a text box instead of a list of every value (venues, keywords
    and years number in the thousands on a real library)."""

    template = "admin/text_input_filter.html"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        return [("", "")]  # Django shows a filter only when it has lookups

    def choices(self, changelist: Any) -> Any:
        yield {
            "selected": self.value() is not None,
            "query_string": changelist.get_query_string(remove=[self.parameter_name]),
            "parameter_name": self.parameter_name,
            "value": self.value() or "",
            # Everything else the list shows stays, as the admin's filter links keep it:
            # the other filters, the search and the sort (one value each).
            "other_params": [
                (k, v) for k, v in changelist.params.items() if k != self.parameter_name
            ],
        }  # fmt: skip


class YearFilter(TextInputFilter):
    title = "year (e.g. 2019 or 2018-2020)"
    parameter_name = "year"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Paper]) -> QuerySet[Paper]:
        value = (self.value() or "").strip()
        if not value:
            return queryset
        low, _, high = value.partition("-")
        try:
            if high:
                return queryset.filter(year__gte=int(low), year__lte=int(high))
            return queryset.filter(year=int(low))
        except ValueError:
            messages.warning(request, f"Year filter {value!r} is not a year or a range.")
            return queryset


class VenueFilter(TextInputFilter):
    title = "venue contains"
    parameter_name = "venue"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Paper]) -> QuerySet[Paper]:
        value = (self.value() or "").strip()
        if not value:
            return queryset
        # A venue's short name ('acl', a trends bar's link) is the whole series, its
        # editions only: not every venue whose name contains the letters.
        if Venue.objects.filter(short_name__iexact=value).exists():
            return queryset.filter(venue__short_name__iexact=value)
        return queryset.filter(venue__name__icontains=value)


class KeywordFilter(TextInputFilter):
    title = "keyword"
    parameter_name = "keyword"

    def queryset(self, request: HttpRequest, queryset: QuerySet[Paper]) -> QuerySet[Paper]:
        value = (self.value() or "").strip()
        return queryset.filter(keywords__name_key=value.casefold()) if value else queryset


class SourceFilter(admin.SimpleListFilter):
    title = "source"
    parameter_name = "source"
    MAX_SOURCES = 50

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        # A handful of sources among 100k papers: one index step per source ("loose index
        # scan"), where DISTINCT reads every row on PostgreSQL (60 ms at 95k papers).
        sources: list[str] = []
        ordered = Paper.objects.order_by("source").values_list("source", flat=True)
        while len(sources) < self.MAX_SOURCES:
            following = ordered.filter(source__gt=sources[-1]) if sources else ordered
            source = following.first()
            if source is None:
                break
            sources.append(source)
        return [(s, s) for s in sources]

    def queryset(self, request: HttpRequest, queryset: QuerySet[Paper]) -> QuerySet[Paper]:
        return queryset.filter(source=self.value()) if self.value() else queryset


class EstimatedCountPaginator(Paginator):
    """Counts exactly, except the whole library on PostgreSQL: there the unfiltered list
    takes the planner's row estimate (pg_class.reltuples, kept by ANALYZE and autovacuum),
    because counting 100k rows costs tens of milliseconds on every page view. SQLite counts
    through a small index in a few milliseconds, and filtered lists are counted exactly."""

    ESTIMATE_FROM = 50_000  # below this an exact count is cheap everywhere

    @cached_property
    def count(self) -> int:
        queryset = self.object_list
        if isinstance(queryset, QuerySet) and not queryset.query.where:
            connection = connections[queryset.db]
            if connection.vendor == "postgresql":
                with connection.cursor() as cursor:
                    cursor.execute(
                        "SELECT reltuples::bigint FROM pg_class WHERE oid = %s::regclass",
                        [queryset.model._meta.db_table],
                    )
                    row = cursor.fetchone()
                if row and row[0] >= self.ESTIMATE_FROM:
                    return int(row[0])
        return int(super().count)


class ProjectFilter(admin.SimpleListFilter):
    title = "project"
    parameter_name = "project"

    def lookups(self, request: HttpRequest, model_admin: Any) -> list[tuple[str, str]]:
        projects: Any = scoping.project_model()._default_manager
        return list(projects.order_by("name").values_list("id", "name")[:200])

    def queryset(self, request: HttpRequest, queryset: QuerySet[Paper]) -> QuerySet[Paper]:
        if not self.value():
            return queryset
        return queryset.filter(pk__in=scoping.scope_paper_ids([str(self.value())]))


class PaperAuthorInline(admin.TabularInline):
    model = PaperAuthor
    extra = 0
    autocomplete_fields = ["author", "affiliation"]
    ordering = ["position"]


class PaperKeywordInline(admin.TabularInline):
    model = PaperKeyword
    extra = 0
    autocomplete_fields = ["keyword"]
    verbose_name = "keyword"


class PaperIdentifierInline(admin.TabularInline):
    model = PaperIdentifier
    extra = 0


class CitationInline(admin.TabularInline):
    model = Citation
    fk_name = "citing"
    extra = 0
    autocomplete_fields = ["cited"]
    verbose_name = "reference (this paper cites)"
    verbose_name_plural = "references (this paper cites)"


class PaperAssetInline(admin.TabularInline):
    """What summaries, source and translations a paper has; the content is managed with
    `manage.py import_assets` or the save_paper_summary tool, so the admin only shows it."""

    model = PaperAsset
    extra = 0
    can_delete = False
    fields = ["kind", "name", "storage", "size", "updated_at"]
    readonly_fields = ["kind", "name", "storage", "size", "updated_at"]
    ordering = ["kind", "name"]
    verbose_name = "asset (summary, source, translation)"
    verbose_name_plural = "assets (summaries, source, translations)"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# --- PDFs and annotations (docs/PDF.md) ---------------------------------------------------


class PaperPdfForm(forms.ModelForm):
    """Upload a PDF for a paper; the service checks it, copies it into downloads/ and
    records its hash and page count (the other fields are the service's)."""

    upload = forms.FileField(
        required=True, help_text="The PDF file (replaces the paper's current PDF)."
    )

    class Meta:
        model = PaperPdf
        fields = ["paper"]

    def clean_upload(self) -> Any:
        upload = self.cleaned_data["upload"]
        if upload.size > settings.PDF_MAX_BYTES:
            raise forms.ValidationError(f"The file is larger than {settings.PDF_MAX_BYTES} bytes.")
        return upload

    def clean(self) -> dict[str, Any]:
        from papers.pdf.services import pdf_attach_upload

        cleaned = super().clean() or {}
        paper, upload = cleaned.get("paper") or self.instance_paper(), cleaned.get("upload")
        if paper is None or upload is None or self.errors:
            return cleaned
        try:
            # The service does the write; the form only shows what it refused.
            self.attached = pdf_attach_upload(
                paper_id=paper.pk, chunks=upload.chunks(), name=upload.name or ""
            )
        except DomainError as error:
            raise forms.ValidationError(error.message) from None
        return cleaned

    def instance_paper(self) -> Paper | None:
        return self.instance.paper if self.instance.pk else None

    def validate_unique(self) -> None:
        """Uploading for a paper that has a PDF replaces it (the service's rule)."""


def _annotations_links(record: PaperPdf) -> str:
    if not record.pk:
        return "-"
    links = [
        format_html(
            '<a href="{}">{}</a>',
            reverse("admin:papers_paperpdf_export", args=[record.pk, fmt]),
            label,
        )
        for fmt, label in (("markdown", "markdown"), ("json", "JSON"), ("pdf", "annotated PDF"))
    ]
    count = Annotation.objects.filter(paper_id=record.paper_id).count()
    return format_html(
        "{} annotations: {}", count, format_html_join(" · ", "{}", ((link,) for link in links))
    )


def _converted(asset: PaperAsset | None) -> str:
    return f"source markdown made ({asset.size} bytes)" if asset else "imported source kept"


class PaperPdfInline(admin.StackedInline):
    """The paper's PDF, read-only: uploads go through the PDF's own admin page."""

    model = PaperPdf
    extra = 0
    can_delete = False
    fields = ["file_name", "page_count", "size", "sha256", "origin", "updated_at", "exports"]
    readonly_fields = ["file_name", "page_count", "size", "sha256", "origin", "updated_at",
                       "exports"]  # fmt: skip
    verbose_name = "PDF"
    verbose_name_plural = "PDF (upload or replace it under Papers › Paper PDFs)"

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False

    @admin.display(description="annotations")
    def exports(self, record: PaperPdf) -> str:
        return _annotations_links(record)


class AnnotationInline(admin.TabularInline):
    """Annotations are made by create_highlight / create_area_annotation (they need the
    PDF's text and geometry); each one's own page recolours, comments or deletes it, so the
    annotated copy is redrawn."""

    model = Annotation
    extra = 0
    can_delete = False
    show_change_link = True
    fields = ["page", "kind", "text", "color", "comment", "updated_at"]
    readonly_fields = ["page", "kind", "text", "color", "comment", "updated_at"]
    ordering = ["page", "pk"]

    def has_add_permission(self, request: HttpRequest, obj: Any = None) -> bool:
        return False


# How many citing papers the paper page lists (the rest are counted).
CITED_BY_SHOWN = 50


# `?exact=1` beside a search: the words as typed, not their correction.
EXACT_VAR = "exact"
# Request attributes: whether `exact` was asked, and the search's ranking (LocalRanking).
EXACT_SEARCH = "paper_search_exact"
SEARCH_RANKING = "paper_search_ranking"


def _search_term(request: HttpRequest) -> str:
    return request.GET.get(SEARCH_VAR, "").strip()


class RelevanceChangeList(ChangeList):
    """A search lists the best matches first (SEARCH_RANK, set by paper_search_admin)
    unless a column was clicked or another sort chosen (`?sort=`, papers.results_list
    SORTS); without a search, the chosen sort, else the model admin's ordering."""

    def get_filters_params(self, params: Any = None) -> Any:
        # The chosen sort is no filter; it stays in self.params, so the filter, page and
        # search links keep it.
        lookup_params = super().get_filters_params(params)
        lookup_params.pop(SORT_VAR, None)
        return lookup_params

    def get_ordering(self, request: HttpRequest, queryset: QuerySet[Any]) -> list[Any]:
        sort = SORTS.get(self.params.get(SORT_VAR, ""))
        if sort is not None and ORDER_VAR not in self.params:
            return list(sort.ordering)
        return super().get_ordering(request, queryset)

    def get_queryset(self, request: HttpRequest, exclude_parameters: Any = None) -> QuerySet[Any]:
        queryset = super().get_queryset(request, exclude_parameters)
        # Django orders before it searches, so the rank is applied here, after both.
        ranked = SEARCH_RANK in queryset.query.annotations
        chosen = ORDER_VAR in self.params or self.params.get(SORT_VAR) in SORTS
        if self.query and ranked and not chosen:
            queryset = queryset.order_by(SEARCH_RANK, "-paper_id")
        elif self.query and ranked:
            # The search orders by its rank (the autocomplete keeps that order); a clicked
            # column or a chosen sort wins in the list, so it is applied again over it.
            queryset = queryset.order_by(*self.get_ordering(request, queryset))
        return queryset


@admin.register(Paper)
class PaperAdmin(PaperCurationAdmin):
    list_display = ["paper_id", "human_id", "title_link", "year", "venue", "keyword_list",
                    "citekey"]  # fmt: skip
    list_display_links = ["paper_id", "human_id"]
    list_select_related = ["venue"]
    list_filter = [YearFilter, VenueFilter, KeywordFilter, SourceFilter, ProjectFilter,
                   RetractionFilter]  # fmt: skip
    search_fields = ["title"]  # the real search is get_search_results below
    search_help_text = (
        "Title or author words, a paper_id, a citekey, an id like [Smith, J. 2024] or a DOI."
    )
    show_full_result_count = False
    paginator = EstimatedCountPaginator
    list_per_page = 50
    ordering = ["-paper_id"]
    change_form_template = "admin/papers/paper/change_form.html"
    readonly_fields = ["paper_id", "human_id", "citekey", "created_at", "updated_at",
                       "pdf_link", "project_links", "cited_by"]  # fmt: skip
    autocomplete_fields = ["venue"]
    inlines = [
        PaperAuthorInline,
        PaperKeywordInline,
        PaperIdentifierInline,
        CitationInline,
        PaperAssetInline,
        PaperPdfInline,
        AnnotationInline,
    ]
    actions = [
        "add_to_project", "add_keywords", "set_keywords", "remove_keywords", "export_bibtex",
        "export_csv", "export_ris", "download_pdfs", "attach_pdfs", "reembed", "convert_pdfs",
    ]  # fmt: skip
    fieldsets = [
        (None, {"fields": ["paper_id", "human_id", "citekey", "entry_type", "title", "abstract"]}),
        ("In the library", {"fields": ["pdf_link", "project_links", "cited_by"]}),
        ("Publication", {"fields": ["year", "publication_date", "venue", "volume", "number",
                                    "pages", "publisher", "publication_info"]}),
        ("Identifiers and links", {"fields": ["doi", "arxiv_id", "source", "source_id",
                                              "source_url", "pdf_url", "citation_count"]}),
        ("Summaries", {"fields": ["preferred_summary_template"]}),
        ("Source data", {"classes": ["collapse"], "fields": ["snippet", "resources", "metadata",
                                                             "created_at", "updated_at"]}),
    ]  # fmt: skip

    def get_queryset(self, request: HttpRequest) -> QuerySet[Paper]:
        # One query for the keywords of a whole page of the list.
        keywords = Keyword.objects.only("id", "name").order_by("name")
        return super().get_queryset(request).prefetch_related(Prefetch("keywords", keywords))

    def save_related(self, request: HttpRequest, form: Any, formsets: Any, change: bool) -> None:
        # Inline edits (authors, keywords) change the paper's search text too.
        super().save_related(request, form, formsets, change)
        papers_changed([form.instance.pk])

    @admin.display(description="title", ordering="title")
    def title_link(self, paper: Paper) -> str:
        # The whole title, to the reading page; the id columns open the edit form.
        return format_html(
            '<a class="result-title" href="{}">{}</a>',
            reverse("admin:papers_paper_read", args=[paper.pk]),
            paper.title,
        )

    @admin.display(description="keywords")
    def keyword_list(self, paper: Paper) -> str:
        return ", ".join(keyword.name for keyword in paper.keywords.all())

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        context = dict(extra_context or {})
        if object_id.isdigit():
            context["cite"] = cite_box(int(object_id), request.GET.get("cite_style"))
        return super().change_view(request, object_id, form_url, context)

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Paper], search_term: str
    ) -> tuple[QuerySet[Paper], bool]:
        found, ranking = paper_search_admin_ranked(
            queryset, search_term, admin_search_filters(request.GET)
        )
        if ranking is not None and ranking.corrected and getattr(request, EXACT_SEARCH, False):
            # "Search instead for <what was typed>": nothing matched it, so nothing is listed.
            found = found.none()
            ranking.corrected = None
        setattr(request, SEARCH_RANKING, ranking)
        return found, False

    # --- the list: a results list for reading (papers/results_list.py) ------------------

    # The library's list shows its papers, searched or not, as results to read; the
    # project pages built on this admin keep their columns.
    results_list = True

    def get_list_display(self, request: HttpRequest) -> Any:
        return ["result"] if self.results_list else super().get_list_display(request)

    def get_list_display_links(self, request: HttpRequest, list_display: Any) -> Any:
        # The title links to the reading page and "edit" to this form.
        return None if self.results_list else super().get_list_display_links(request, list_display)

    def get_sortable_by(self, request: HttpRequest) -> Any:
        # The order is the sort chosen above the list (relevance for a search): no column
        # to sort by, no arrow on one.
        return () if self.results_list else super().get_sortable_by(request)

    @admin.display(description="Papers")
    def result(self, paper: Paper) -> str:
        return result_row(paper)

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        if EXACT_VAR in request.GET:
            # Not a list filter: the admin would refuse it as one.
            params = request.GET.copy()
            setattr(request, EXACT_SEARCH, params.pop(EXACT_VAR) == ["1"])
            request.GET = params  # type: ignore[assignment]
        query = _search_term(request)
        context = {"title": f"Search: {query}" if query else "Papers", **(extra_context or {})}
        response = super().changelist_view(request, context)
        changelist = (getattr(response, "context_data", None) or {}).get("cl")
        if changelist is None or not self.results_list:
            return response
        ranking = getattr(request, SEARCH_RANKING, None)
        corrected = ranking.corrected if ranking is not None and query else None
        changelist.result_list = list(changelist.result_list)
        attach_records(changelist.result_list, corrected or query)
        response.context_data["searched"] = query  # type: ignore[attr-defined]
        # What the search read from the question (an author, years, a venue) and, when
        # that left nothing, that the words were searched as typed.
        notes = ranking.notes if ranking is not None and query else ()
        response.context_data["search_notes"] = [  # type: ignore[attr-defined]
            note.removeprefix("query: ") for note in notes
        ]
        sorts = self._sort_links(changelist, searched=bool(query))
        response.context_data["sorts"] = sorts  # type: ignore[attr-defined]
        if corrected:
            original = request.GET.copy()
            original[EXACT_VAR] = "1"
            response.context_data["corrected"] = {  # type: ignore[attr-defined]
                "query": corrected,
                "original": query,
                "original_url": "?" + original.urlencode(),
            }
        return response

    def get_changelist(self, request: HttpRequest, **kwargs: Any) -> type[ChangeList]:
        return RelevanceChangeList

    @staticmethod
    def _sort_links(changelist: ChangeList, *, searched: bool) -> list[dict[str, Any]]:
        """The sorts the list offers, each a link keeping the query and filters (back to
        the first page), the one shown marked."""
        shown = chosen_sort(changelist.params, searched=searched)
        return [
            {
                "label": label,
                "current": key == shown,
                "url": changelist.get_query_string({SORT_VAR: key}, [PAGE_VAR, ORDER_VAR]),
            }
            for key, label in sort_choices(searched=searched)
        ]

    # --- the paper page ----------------------------------------------------------------

    @admin.display(description="PDF")
    def pdf_link(self, paper: Paper) -> str:
        if paper.pk is None:
            return "-"
        record = PaperPdf.objects.filter(paper=paper).first()
        upload = reverse("admin:papers_paperpdf_add") + f"?paper={paper.pk}"
        if record is not None:
            return format_html(
                '<a href="{}" target="_blank" rel="noopener">Open the PDF</a> ({} pages, {} KB)',
                reverse("admin:papers_paper_pdf", args=[paper.pk]),
                record.page_count,
                max(record.size // 1024, 1),
            )
        if paper.pdf_url:
            return format_html(
                'No PDF yet: fetch it from its pdf_url with the "Fetch PDFs" or "Attach PDFs" '
                "action, or "
                '<a href="{}">upload one</a>.',
                upload,
            )
        return format_html('No PDF. <a href="{}">Upload one</a>.', upload)

    @admin.display(description="projects")
    def project_links(self, paper: Paper) -> str:
        if paper.pk is None:
            return "-"
        projects = list(paper.projects.order_by("name").values_list("id", "name"))
        if not projects:
            return "In no project."
        return format_html_join(
            ", ",
            '<a href="{}">{}</a>',
            (
                (reverse("admin:projects_project_papers", args=[pid]), name)
                for pid, name in projects
            ),
        )

    @admin.display(description="cited by (papers in the library that cite this one)")
    def cited_by(self, paper: Paper) -> str:
        if paper.pk is None:
            return "-"
        citing = Citation.objects.filter(cited=paper).select_related("citing")
        total = citing.count()
        if not total:
            return "No paper in the library cites it."
        shown = citing.order_by("-citing__year", "citing__title")[:CITED_BY_SHOWN]
        links = format_html_join(
            "",
            '<li><a href="{}">{}</a> {} ({})</li>',
            (
                (reverse("admin:papers_paper_change", args=[c.citing_id]), c.citing.human_id,
                 c.citing.title, c.citing.year or "n.d.")
                for c in shown
            ),
        )  # fmt: skip
        more = f"and {total - CITED_BY_SHOWN} more" if total > CITED_BY_SHOWN else ""
        return format_html('<ul style="margin:0">{}</ul>{}', links, more)

    def get_urls(self) -> list[Any]:
        from django.urls import path

        view = self.admin_site.admin_view
        return [
            path("add-by-identifier/", view(self.add_by_identifier),
                 name="papers_paper_add_by_identifier"),
            path("import-bibtex/", view(self.import_bibtex), name="papers_paper_import_bibtex"),
            # Cacheable: the PDF view sets its own Cache-Control (papers.pdf.serving).
            path("<int:paper_id>/pdf/", view(self.pdf_view, cacheable=True),
                 name="papers_paper_pdf"),
            path("<int:paper_id>/pdf/page-1/", view(self.page_image_view, cacheable=True),
                 name="papers_paper_page_image"),
            path("<int:paper_id>/cite.json", view(self.cite_view), name="papers_paper_cite"),
            *super().get_urls(),
        ]  # fmt: skip

    def add_by_identifier(self, request: HttpRequest) -> HttpResponse:
        return add_by_identifier_view(self, request)

    def import_bibtex(self, request: HttpRequest) -> HttpResponse:
        return import_bibtex_view(self, request)

    def cite_view(self, request: HttpRequest, paper_id: int) -> HttpResponse:
        return cite_box_view(self, request, paper_id)

    def pdf_view(self, request: HttpRequest, paper_id: int) -> HttpResponseBase:
        """The paper's PDF file, shown in the browser; byte ranges and revalidation for the
        reading page's pdf.js (papers.pdf.serving)."""
        from papers.pdf.files import stored_path
        from papers.pdf.serving import pdf_file_response

        record = PaperPdf.objects.select_related("paper").filter(paper_id=paper_id).first()
        if record is None:
            raise Http404("This paper has no PDF.")
        if not self.has_view_permission(request, record.paper):
            raise PermissionDenied
        try:
            path = stored_path(record.file_name)
        except DomainError:
            raise Http404("This PDF's file name is invalid.") from None
        if not path.is_file():
            raise Http404("The PDF file is missing from the downloads folder.")
        return pdf_file_response(request, path, file_name=record.file_name)

    def page_image_view(self, request: HttpRequest, paper_id: int) -> HttpResponseBase:
        """Page 1 of the paper's PDF as a picture (papers.pdf.page_image), which the reading page
        shows until pdf.js has drawn it; the same permission as the PDF. A PDF that cannot
        be drawn (damaged, no pages) is a 422 saying so, a missing one a 404."""
        from papers.pdf.errors import PdfFileMissing
        from papers.pdf.page_image import CONTENT_TYPE, image_version, image_width, page_image
        from papers.pdf.serving import page_image_response

        record = PaperPdf.objects.select_related("paper").filter(paper_id=paper_id).first()
        if record is None:
            raise Http404("This paper has no PDF.")
        if not image_width():
            raise Http404("Page pictures are turned off (READER_PAGE_IMAGE_WIDTH=0).")
        if not self.has_view_permission(request, record.paper):
            raise PermissionDenied
        try:
            path = page_image(record)
        except PdfFileMissing:
            raise Http404("The PDF file is missing from the downloads folder.") from None
        except DomainError as error:
            return HttpResponse(
                f"Page 1 of this PDF cannot be drawn: {error.message}",
                status=422,
                content_type="text/plain; charset=utf-8",
            )
        return page_image_response(
            request, path, version=image_version(record), content_type=CONTENT_TYPE
        )

    @admin.action(description="Convert PDFs to source markdown", permissions=["change"])
    def convert_pdfs(self, request: HttpRequest, queryset: QuerySet[Paper]) -> None:
        from papers.pdf.services import pdf_source_markdown_save

        converted = 0
        for paper_id in queryset.filter(pdf__isnull=False).values_list("pk", flat=True):

            def convert(paper_id: int = paper_id) -> str:
                return _converted(pdf_source_markdown_save(paper_id=paper_id))

            self.run_service(request, f"Paper {paper_id}", convert)
            converted += 1
        if not converted:
            self.message_user(request, "None of the selected papers has a PDF.", messages.WARNING)


@admin.register(Author)
class AuthorAdmin(admin.ModelAdmin):
    list_display = ["name", "family_name", "given_name"]
    search_fields = ["name", "family_name"]
    show_full_result_count = False
    ordering = ["family_name", "given_name"]


@admin.register(Institution)
class InstitutionAdmin(admin.ModelAdmin):
    search_fields = ["name"]
    show_full_result_count = False


@admin.register(Venue)
class VenueAdmin(admin.ModelAdmin):
    list_display = ["name", "short_name"]
    search_fields = ["name", "short_name"]
    show_full_result_count = False


class KeywordForm(forms.ModelForm):
    class Meta:
        model = Keyword
        fields = ["name"]

    def clean_name(self) -> str:
        from papers.schemas import keyword_clean, keyword_key

        try:
            name = keyword_clean(self.cleaned_data["name"])
        except DomainError as error:
            raise forms.ValidationError(error.message) from None
        clash = Keyword.objects.filter(name_key=keyword_key(name)).exclude(pk=self.instance.pk)
        if clash.exists():
            raise forms.ValidationError(f"The keyword {name!r} exists already.")
        self.instance.name_key = keyword_key(name)
        return name


@admin.register(Keyword)
class KeywordAdmin(admin.ModelAdmin):
    form = KeywordForm
    list_display = ["name", "paper_count"]
    search_fields = ["name"]
    ordering = ["name_key"]  # also the order of autocomplete suggestions (papers.pickers)

    def get_queryset(self, request: HttpRequest) -> QuerySet[Keyword]:
        return super().get_queryset(request).annotate(paper_total=Count("paper_links"))

    @admin.display(description="papers", ordering="paper_total")
    def paper_count(self, keyword: Keyword) -> int:
        return keyword.paper_total  # type: ignore[attr-defined]


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ["name", "scheme"]
    search_fields = ["name"]


@admin.register(PaperPdf)
class PaperPdfAdmin(admin.ModelAdmin):
    form = PaperPdfForm
    list_display = ["paper", "page_count", "size", "origin", "updated_at"]
    list_select_related = ["paper"]
    list_filter = ["origin"]
    search_fields = ["paper__title", "paper__citekey", "file_name"]
    show_full_result_count = False
    autocomplete_fields = ["paper"]
    readonly_fields = [
        "file_name", "annotated_file_name", "sha256", "size", "page_count", "origin",
        "original_name", "source_url", "created_at", "updated_at", "exports",
    ]  # fmt: skip

    def get_fields(self, request: HttpRequest, obj: Any = None) -> Any:
        return ["paper", "upload", *(self.readonly_fields if obj else [])]

    def get_readonly_fields(self, request: HttpRequest, obj: Any = None) -> list[str]:
        return [*self.readonly_fields, "paper"] if obj else list(self.readonly_fields)

    def get_changeform_initial_data(self, request: HttpRequest) -> dict[str, Any]:
        return {"paper": request.GET.get("paper")}

    def save_model(self, request: HttpRequest, obj: PaperPdf, form: Any, change: bool) -> None:
        # The form's clean() attached the file through the service; show its record.
        obj.pk = form.attached.pk
        obj.refresh_from_db()

    def delete_model(self, request: HttpRequest, obj: PaperPdf) -> None:
        from papers.pdf.services import pdf_detach

        pdf_detach(paper_id=obj.paper_id)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[PaperPdf]) -> None:
        from papers.pdf.services import pdf_detach

        for paper_id in list(queryset.values_list("paper_id", flat=True)):
            pdf_detach(paper_id=paper_id)

    def get_urls(self) -> list[Any]:
        from django.urls import path

        export = self.admin_site.admin_view(self.export_view)
        return [
            path("<int:pk>/export/<str:fmt>/", export, name="papers_paperpdf_export"),
            *super().get_urls(),
        ]

    def export_view(self, request: HttpRequest, pk: int, fmt: str) -> HttpResponse:
        from papers.pdf.selectors import annotations_export_text
        from papers.pdf.services import annotated_pdf_path

        record = PaperPdf.objects.select_related("paper").filter(pk=pk).first()
        if record is None or fmt not in ("markdown", "json", "pdf"):
            raise Http404("No such PDF or format.")
        stem = record.file_name.removesuffix(".pdf")
        try:
            if fmt == "pdf":
                data: bytes | str = annotated_pdf_path(paper=record.paper).read_bytes()
                response = HttpResponse(data, content_type="application/pdf")
                name = f"{stem}.annotated.pdf"
            else:
                data = annotations_export_text(paper=record.paper, format=fmt)
                content_type = "application/json" if fmt == "json" else "text/markdown"
                response = HttpResponse(data, content_type=f"{content_type}; charset=utf-8")
                name = f"{stem}.annotations.{'json' if fmt == 'json' else 'md'}"
        except DomainError as error:
            self.message_user(request, error.message, level=messages.ERROR)
            return redirect("admin:papers_paperpdf_change", pk)
        response["Content-Disposition"] = f'attachment; filename="{name}"'
        return response

    @admin.display(description="annotations")
    def exports(self, record: PaperPdf) -> str:
        return _annotations_links(record)


class AnnotationForm(forms.ModelForm):
    color = forms.CharField(
        max_length=20,
        help_text="#rrggbb or section1, section2, section3, positive, detail, negative, code.",
    )

    class Meta:
        model = Annotation
        fields = ["color", "comment"]

    def clean_color(self) -> str:
        from papers.pdf.spec import color_resolve

        try:
            return color_resolve(self.cleaned_data["color"])
        except DomainError as error:
            raise forms.ValidationError(error.message) from None


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    form = AnnotationForm
    list_display = ["pk", "paper", "page", "kind", "swatch", "short_text", "comment", "created_at"]
    list_display_links = ["pk"]
    list_select_related = ["paper"]
    list_filter = ["kind", "color"]
    search_fields = ["text", "comment", "paper__title", "paper__citekey"]
    show_full_result_count = False
    ordering = ["-pk"]
    fields = ["paper", "page", "kind", "text", "rects", "color", "comment", "pdf_sha256",
              "created_at", "updated_at"]  # fmt: skip
    readonly_fields = ["paper", "page", "kind", "text", "rects", "pdf_sha256", "created_at",
                       "updated_at"]  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    @admin.display(description="colour", ordering="color")
    def swatch(self, annotation: Annotation) -> str:
        return format_html(
            '<span style="display:inline-block;width:1em;height:1em;background:{}"></span> {}',
            annotation.color,
            annotation.color,
        )

    @admin.display(description="text")
    def short_text(self, annotation: Annotation) -> str:
        return annotation.text if len(annotation.text) <= 80 else annotation.text[:79] + "…"

    def save_model(self, request: HttpRequest, obj: Annotation, form: Any, change: bool) -> None:
        from papers.pdf.services import annotation_update

        try:
            annotation_update(annotation_id=obj.pk, color=obj.color, comment=obj.comment)
        except DomainError as error:
            self.message_user(request, error.message, level=messages.ERROR)

    def delete_model(self, request: HttpRequest, obj: Annotation) -> None:
        from papers.pdf.services import annotation_delete

        annotation_delete(annotation_id=obj.pk)

    def delete_queryset(self, request: HttpRequest, queryset: QuerySet[Annotation]) -> None:
        from papers.pdf.services import annotation_delete

        for pk in list(queryset.values_list("pk", flat=True)):
            annotation_delete(annotation_id=pk)

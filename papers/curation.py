"""The admin's bulk actions on papers, shared by the Paper list and the project pages.

Each action is a thin adapter: it reads the action bar's fields, calls one service (the
same ones MCP and REST call) and reports the outcome, or the service's DomainError, as a
message. Who may run what: keyword, PDF and embedding actions need permission to change
papers; project membership needs permission to change projects; exports only to view.

Projects and the search engines are layers above papers (docs/LAYERS.md), so what needs
them is left to three methods that projects.curation.LibraryPaperAdmin, the Paper admin the
site registers, implements: `project_resolve`, `project_add_papers` and
`paper_add_by_identifier` (used here and by the intake pages, papers/intake.py).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.helpers import ActionForm
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse
from django.utils.html import format_html
from django.utils.safestring import SafeString
from django.utils.translation import gettext as _

from core.errors import DomainError
from papers import pickers
from papers.models import Paper
from papers.pdf.fetch import paper_pdf_attach
from papers.selectors import with_relations
from papers.services import paper_keywords_update

# One action works on at most this many papers: a request must finish in seconds, and a
# bigger job has its command (export_library, import_*, reindex_embeddings).
MAX_SELECTION = 10_000
# Without a broker, downloads run in the request that asks for them, one after another.
INLINE_DOWNLOADS_MAX = 20
# Set by papers/static/papers/progress-line.js; sent back as a cookie with the export.
DOWNLOAD_TOKEN = re.compile(r"[0-9]{1,40}")
EXPORT_CONTENT_TYPES = {
    "bibtex": "application/x-bibtex",
    "csv": "text/csv",
    "ris": "application/x-research-info-systems",
}


class PaperActionForm(ActionForm):
    """The action bar: which action, and the project or keywords some actions need, each an
    autocomplete box (papers.pickers)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.fields["project"] = pickers.project_field()
        self.fields["keywords"] = pickers.keywords_field()


def keywords_from(request: HttpRequest) -> list[str]:
    """The keyword names of the action bar: one value per keyword from the autocomplete
    box, or one comma-separated value from a plain form."""
    return [k for raw in request.POST.getlist("keywords") for k in pickers.keyword_names(raw)]


class PaperCurationAdmin(admin.ModelAdmin):
    """Bulk actions over selected papers; subclasses choose which to offer in `actions`."""

    action_form = PaperActionForm
    export_name = "papers"  # the downloaded file's name, before the extension

    class Media:
        js = ["papers/progress-line.js"]  # a status line while an export runs

    def has_curate_projects_permission(self, request: HttpRequest) -> bool:
        return bool(request.user.has_perm("projects.change_project"))

    # --- what the layers above papers supply (LibraryPaperAdmin) -------------------------

    def project_resolve(self, ref: str) -> str:
        """The id of the project `ref` names (its id or name); a DomainError if none does."""
        raise NotImplementedError("the registered Paper admin resolves projects")

    def project_add_papers(self, *, project: str, paper_ids: Sequence[int]) -> int:
        """Add papers to a project (id or name); how many were not in it yet."""
        raise NotImplementedError("the registered Paper admin adds papers to projects")

    def paper_add_by_identifier(self, *, identifier: str, project: str) -> Any:
        """Add the paper a DOI, arXiv id or URL names, asking the engines, and to `project`
        unless it is ''. Returns what it became (`paper`, `created`, `notes`); raises a
        DomainError when it cannot."""
        raise NotImplementedError("the registered Paper admin asks the engines")

    # --- the list --------------------------------------------------------------------

    def action_checkbox(self, obj: Paper) -> SafeString:
        """The row's selection box, as Django's own (`ModelAdmin.action_checkbox`) renders
        it, written here: Django renders a CheckboxInput through the form template engine
        for every row, a fifth of a search page's time (50 rows)."""
        return format_html(
            '<input type="checkbox" name="{}" value="{}" class="action-select" aria-label="{}">',
            helpers.ACTION_CHECKBOX_NAME,
            obj.pk,
            format_html(_("Select this object for an action - {}"), str(obj)),
        )

    # --- helpers -----------------------------------------------------------------------

    def selected_ids(self, request: HttpRequest, queryset: QuerySet[Paper]) -> list[int] | None:
        """The selected paper_ids, or None (after saying why) when there are too many."""
        ids = list(queryset.order_by().values_list("pk", flat=True)[: MAX_SELECTION + 1])
        if len(ids) > MAX_SELECTION:
            self.message_user(
                request,
                f"Select at most {MAX_SELECTION:,} papers for one action (narrow the list "
                "with search or filters; larger jobs have management commands).",
                level=messages.ERROR,
            )
            return None
        return ids

    def run_service(self, request: HttpRequest, label: str, call: Callable[[], str]) -> bool:
        """Call a service and report its outcome; False when it refused (DomainError)."""
        try:
            outcome = call()
        except DomainError as error:
            self.message_user(request, f"{label}: {error.message}", level=messages.ERROR)
            return False
        self.message_user(request, f"{label}: {outcome}", level=messages.SUCCESS)
        return True

    # --- projects ----------------------------------------------------------------------

    @admin.action(
        description="Add selected papers to the project named below",
        permissions=["curate_projects"],
    )
    def add_to_project(self, request: HttpRequest, queryset: QuerySet[Paper]) -> None:
        ids = self.selected_ids(request, queryset)
        if ids is None:
            return
        project = request.POST.get("project", "").strip()
        self.run_service(
            request,
            "Add to project",
            lambda: f"{self.project_add_papers(project=project, paper_ids=ids)} papers added",
        )

    # --- keywords ----------------------------------------------------------------------

    @admin.action(description="Add the keywords below to selected papers", permissions=["change"])
    def add_keywords(self, request: HttpRequest, queryset: QuerySet[Paper]) -> None:
        self._keywords_update(request, queryset, "add")

    @admin.action(
        description="Set (replace) the keywords of selected papers", permissions=["change"]
    )
    def set_keywords(self, request: HttpRequest, queryset: QuerySet[Paper]) -> None:
        self._keywords_update(request, queryset, "set")

    @admin.action(
        description="Remove the keywords below from selected papers", permissions=["change"]
    )
    def remove_keywords(self, request: HttpRequest, queryset: QuerySet[Paper]) -> None:
        self._keywords_update(request, queryset, "remove")

    def _keywords_update(
        self, request: HttpRequest, queryset: QuerySet[Paper], action: str
    ) -> None:
        ids = self.selected_ids(request, queryset)
        if ids is None:
            return
        refs: list[str | int] = list(ids)
        keywords = keywords_from(request)
        self.run_service(
            request,
            f"Keywords ({action})",
            lambda: (
                f"{len(paper_keywords_update(refs=refs, action=action, keywords=keywords))} "
                "papers updated"
            ),
        )

    # --- exports -----------------------------------------------------------------------

    @admin.action(description="Export selected papers as BibTeX", permissions=["view"])
    def export_bibtex(self, request: HttpRequest, queryset: QuerySet[Paper]) -> Any:
        return self._export(request, queryset, "bibtex")

    @admin.action(description="Export selected papers as CSV", permissions=["view"])
    def export_csv(self, request: HttpRequest, queryset: QuerySet[Paper]) -> Any:
        return self._export(request, queryset, "csv")

    @admin.action(description="Export selected papers as RIS", permissions=["view"])
    def export_ris(self, request: HttpRequest, queryset: QuerySet[Paper]) -> Any:
        return self._export(request, queryset, "ris")

    def _export(
        self, request: HttpRequest, queryset: QuerySet[Paper], fmt: str
    ) -> HttpResponse | None:
        from papers.exports import EXTENSIONS, render_export

        ids = self.selected_ids(request, queryset)
        if ids is None:
            return None
        papers = with_relations(Paper.objects.filter(pk__in=ids).order_by("paper_id"))
        try:
            content = render_export(papers, fmt)
        except DomainError as error:
            self.message_user(request, f"Export: {error.message}", level=messages.ERROR)
            return None
        response = HttpResponse(content, content_type=f"{EXPORT_CONTENT_TYPES[fmt]}; charset=utf-8")
        filename = f"{self.export_name}.{EXTENSIONS[fmt]}"
        response["Content-Disposition"] = f'attachment; filename="{filename}"'
        token = request.POST.get("download_token", "")
        if DOWNLOAD_TOKEN.fullmatch(token):  # the page's progress line: the file has come
            response.set_cookie("download_token", token, max_age=60, samesite="Lax")
        return response

    # --- background work ---------------------------------------------------------------

    @admin.action(
        description="Fetch PDFs from their pdf_url (queued in the background)",
        permissions=["change"],
    )
    def download_pdfs(self, request: HttpRequest, queryset: QuerySet[Paper]) -> None:
        from papers.pdf.services import pdf_download_schedule

        ids = self.selected_ids(request, queryset)
        if ids is None:
            return
        if settings.CELERY_TASK_ALWAYS_EAGER and len(ids) > INLINE_DOWNLOADS_MAX:
            self.message_user(
                request,
                f"Without a Celery worker PDFs download while this page waits: select at most "
                f"{INLINE_DOWNLOADS_MAX} papers, or run a worker (REDIS_URL) for more.",
                level=messages.ERROR,
            )
            return
        self.run_service(
            request,
            "Fetch PDFs",
            lambda: (
                f"{pdf_download_schedule(paper_ids=ids)} of {len(ids)} papers have a pdf_url "
                "and are being downloaded; see their PDF section (failures are logged)"
            ),
        )

    @admin.action(
        description="Attach PDFs from open-access locations (pdf_url, arXiv, ACL Anthology)",
        permissions=["change"],
    )
    def attach_pdfs(self, request: HttpRequest, queryset: QuerySet[Paper]) -> None:
        """attach_pdf for each selected paper, in this request (at most
        INLINE_DOWNLOADS_MAX): the locations its metadata names, first PDF wins."""
        ids = self.selected_ids(request, queryset)
        if ids is None:
            return
        if len(ids) > INLINE_DOWNLOADS_MAX:
            self.message_user(
                request,
                f"PDFs are fetched while this page waits: select at most "
                f'{INLINE_DOWNLOADS_MAX} papers ("Fetch PDFs" queues many pdf_url downloads).',
                level=messages.ERROR,
            )
            return
        attached, failures = 0, []
        for paper_id in ids:
            try:
                paper_pdf_attach(ref=paper_id)
                attached += 1
            except DomainError as error:
                failures.append(f"paper {paper_id}: {error.message}")
        if attached:
            self.message_user(
                request, f"Attach PDFs: {attached} of {len(ids)} papers have their PDF."
            )
        for failure in failures[:10]:
            self.message_user(request, f"Attach PDFs: {failure}", level=messages.WARNING)

    @admin.action(
        description="Re-embed selected papers for semantic search (missing or outdated vectors)",
        permissions=["change"],
    )
    def reembed(self, request: HttpRequest, queryset: QuerySet[Paper]) -> None:
        from papers.search import semantic

        ids = self.selected_ids(request, queryset)
        if ids is None:
            return
        if not settings.EMBEDDINGS_ENABLED:
            self.message_user(
                request, "Embeddings are turned off (EMBEDDINGS_ENABLED).", level=messages.WARNING
            )
            return
        semantic.schedule_embedding(ids)
        if settings.CELERY_TASK_ALWAYS_EAGER and len(ids) > semantic.EAGER_INLINE_MAX:
            note = (
                "outdated vectors were dropped; without a Celery worker they are embedded by "
                "the next semantic search or `manage.py reindex_embeddings`"
            )
        elif settings.CELERY_TASK_ALWAYS_EAGER:
            note = "embedded"
        else:
            note = "queued for a worker"
        self.message_user(request, f"Re-embed: {len(ids)} papers {note}.", messages.SUCCESS)

"""Adding papers from the admin: by DOI / arXiv id / URL (the `add_paper` service, which
asks the search engines), and by BibTeX, previewed entry by entry before anything is saved.

Views only: they parse forms, call `papers.duplicates.bibtex_preview` and
`papers.imports.import_records` (what `manage.py import_bibtex` runs), and show the
outcome. `PaperAdmin.get_urls` routes them. Asking the engines and filing papers into a
project go through the model admin's `paper_add_by_identifier`, `project_resolve` and
`project_add_papers` (papers/curation.py says why).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from django import forms
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse

from core.errors import DomainError
from papers import pickers
from papers.curation import PaperCurationAdmin
from papers.models import Paper

MAX_IDENTIFIERS = 20
# The text travels back with the confirmation (multipart, so it is not %-encoded), and the
# whole request must stay under Django's DATA_UPLOAD_MAX_MEMORY_SIZE (2.5 MB).
MAX_BIBTEX_BYTES = 2_000_000


def _project_id(value: str, resolve: Callable[[str], str]) -> str:
    """The id of the project named (id or name), or '' for none; ValidationError if unknown."""
    text = (value or "").strip()
    if not text:
        return ""
    try:
        return resolve(text)
    except DomainError as error:
        raise forms.ValidationError(error.message) from None


class ProjectForm(forms.Form):
    """A form with a `project` field, checked with the model admin's `project_resolve`."""

    def __init__(self, *args: Any, resolve_project: Callable[[str], str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.resolve_project = resolve_project
        shown = self.fields["project"]
        if not shown.widget.is_hidden:  # typed in: an autocomplete box over the projects
            self.fields["project"] = pickers.project_field(help_text=str(shown.help_text))

    def clean_project(self) -> str:
        return _project_id(self.cleaned_data.get("project", ""), self.resolve_project)


class IdentifiersForm(ProjectForm):
    identifiers = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 6, "cols": 70}),
        help_text=(
            f"One a line, at most {MAX_IDENTIFIERS}: a DOI (10.xxxx/...), an arXiv id "
            "(2106.01234), an OpenAlex id (W...), or a doi.org / arxiv.org / openalex.org / "
            "semanticscholar.org URL. Papers already in the library are not fetched again."
        ),
    )
    project = forms.CharField(
        required=False, help_text="Also add the papers to this project (id or name)."
    )

    def clean_identifiers(self) -> list[str]:
        lines = [line.strip() for line in self.cleaned_data["identifiers"].splitlines()]
        identifiers = list(dict.fromkeys(line for line in lines if line))
        if len(identifiers) > MAX_IDENTIFIERS:
            raise forms.ValidationError(
                f"{len(identifiers)} identifiers: give at most {MAX_IDENTIFIERS} at a time."
            )
        return identifiers


@dataclass
class IdentifierOutcome:
    identifier: str
    paper: Paper | None = None
    created: bool = False
    error: str = ""
    notes: list[str] = field(default_factory=list)


def add_by_identifier_view(model_admin: PaperCurationAdmin, request: HttpRequest) -> HttpResponse:
    """Look each identifier up (engines are asked outside any transaction) and show what
    became of it: added, already in the library, or why not."""
    if not model_admin.has_add_permission(request):
        raise PermissionDenied
    form = IdentifiersForm(
        request.POST if request.method == "POST" else None,
        initial={"project": request.GET.get("project", "")},
        resolve_project=model_admin.project_resolve,
    )
    outcomes: list[IdentifierOutcome] = []
    if form.is_valid():
        project = form.cleaned_data["project"]
        for identifier in form.cleaned_data["identifiers"]:
            outcome = IdentifierOutcome(identifier)
            try:
                added = model_admin.paper_add_by_identifier(identifier=identifier, project=project)
            except DomainError as error:
                outcome.error = error.message
            else:
                outcome.paper, outcome.created, outcome.notes = (
                    added.paper, added.created, added.notes
                )  # fmt: skip
            outcomes.append(outcome)
        added_count = sum(1 for o in outcomes if o.created)
        model_admin.message_user(
            request,
            f"{added_count} added, {sum(1 for o in outcomes if o.paper and not o.created)} "
            f"already in the library, {sum(1 for o in outcomes if o.error)} failed.",
            messages.SUCCESS if not any(o.error for o in outcomes) else messages.WARNING,
        )
    context = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Add papers by DOI, arXiv id or URL",
        "form": form,
        "outcomes": outcomes,
        "project": request.GET.get("project") or request.POST.get("project", ""),
    }
    return TemplateResponse(request, "admin/papers/paper/add_by_identifier.html", context)


# --- BibTeX -------------------------------------------------------------------------------


class BibtexUploadForm(ProjectForm):
    file = forms.FileField(required=False, help_text="A .bib file (UTF-8), at most 2 MB.")
    text = forms.CharField(
        required=False,
        label="or paste BibTeX",
        widget=forms.Textarea(attrs={"rows": 8, "cols": 80}),
    )
    project = forms.CharField(
        required=False, help_text="Add the imported papers to this project (id or name)."
    )

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        upload, text = cleaned.get("file"), (cleaned.get("text") or "").strip()
        if bool(upload) == bool(text):
            raise forms.ValidationError("Choose a file or paste BibTeX text (one of the two).")
        if upload is not None:
            if upload.size > MAX_BIBTEX_BYTES:
                raise forms.ValidationError(
                    "The file is over 2 MB: import it with `manage.py import_bibtex FILE`."
                )
            try:
                text = upload.read().decode("utf-8-sig")
            except UnicodeDecodeError:
                raise forms.ValidationError("The file is not UTF-8 text.") from None
        if len(text.encode()) > MAX_BIBTEX_BYTES:
            raise forms.ValidationError("The text is over 2 MB: use `manage.py import_bibtex`.")
        cleaned["bibtex"] = text
        return cleaned


class BibtexConfirmForm(ProjectForm):
    bibtex = forms.CharField(widget=forms.Textarea(attrs={"hidden": True}), strip=False)
    project = forms.CharField(required=False, widget=forms.HiddenInput)
    skip_duplicates = forms.BooleanField(
        required=False,
        label="Skip entries already in the library",
        help_text=(
            "Unticked, they are merged into those papers: empty fields are filled and "
            "differing values kept as alternates; nothing is duplicated either way."
        ),
    )

    def clean_bibtex(self) -> str:
        text = str(self.cleaned_data["bibtex"])
        if len(text.encode()) > MAX_BIBTEX_BYTES:
            raise forms.ValidationError("The text is over 2 MB.")
        return text


def import_bibtex_view(model_admin: PaperCurationAdmin, request: HttpRequest) -> HttpResponse:
    """Step 1: upload or paste, then a preview of every entry (new, in the library,
    repeated, unreadable). Step 2 ("_import"): import it as `import_bibtex` would."""
    from papers.duplicates import bibtex_preview

    if not model_admin.has_add_permission(request):
        raise PermissionDenied
    context: dict[str, Any] = {
        **model_admin.admin_site.each_context(request),
        "opts": model_admin.opts,
        "title": "Import BibTeX",
    }
    resolve = model_admin.project_resolve
    if request.method == "POST" and "_import" in request.POST:
        confirm = BibtexConfirmForm(request.POST, resolve_project=resolve)
        if confirm.is_valid():
            return _import(model_admin, request, confirm.cleaned_data)
        upload = BibtexUploadForm(
            initial={"project": request.POST.get("project", "")}, resolve_project=resolve
        )
        context.update(form=upload, errors=confirm.errors)
    elif request.method == "POST":
        upload = BibtexUploadForm(request.POST, request.FILES, resolve_project=resolve)
        if upload.is_valid():
            preview = bibtex_preview(text=upload.cleaned_data["bibtex"])
            context["preview"] = preview
            context["confirm"] = BibtexConfirmForm(
                initial={
                    "bibtex": upload.cleaned_data["bibtex"],
                    "project": upload.cleaned_data["project"],
                },
                resolve_project=resolve,
            )
        context["form"] = upload
    else:
        context["form"] = BibtexUploadForm(
            initial={"project": request.GET.get("project", "")}, resolve_project=resolve
        )
    return TemplateResponse(request, "admin/papers/paper/import_bibtex.html", context)


def _import(
    model_admin: PaperCurationAdmin, request: HttpRequest, data: dict[str, Any]
) -> HttpResponse:
    from papers.bibtex import read_bibtex, record_from_bibtex
    from papers.duplicates import bibtex_preview
    from papers.imports import import_records

    text, project = data["bibtex"], data["project"]
    if data["skip_duplicates"]:
        entries = bibtex_preview(text=text).entries
        items = [entry.item for entry in entries if entry.existing is None]
        skipped = len(entries) - len(items)
    else:
        items, skipped = list(read_bibtex(text)), 0

    def file_into_project(paper_ids: list[int]) -> None:
        model_admin.project_add_papers(project=project, paper_ids=paper_ids)

    report = import_records(
        items, build=record_from_bibtex, on_saved=file_into_project if project else None
    )
    summary = report.summary() + (
        f"; {skipped} skipped as already in the library" if skipped else ""
    )
    model_admin.message_user(
        request,
        f"BibTeX import: {summary}.",
        messages.WARNING if report.failed else messages.SUCCESS,
    )
    for location, reason in report.failures[:20]:
        model_admin.message_user(request, f"{location}: {reason}", messages.ERROR)
    if project:
        return HttpResponseRedirect(reverse("admin:projects_project_papers", args=[project]))
    return HttpResponseRedirect(reverse("admin:papers_paper_changelist"))

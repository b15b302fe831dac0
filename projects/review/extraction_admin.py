"""Data extraction in the admin (docs/EXTRACTION.md, "Admin"): the page "Extraction" of a
review (`/admin/projects/reviewsession/<id>/extraction/`) and of a project
(`/admin/projects/project/<id>/extraction/`), linked from their change pages. It shows

- the form as a table of fields, one row per field, edited in place (a formset: a blank row
  to add a field, "Add a row" for more, "remove" and "position" per row) and saved through
  form_create / form_update, so a changed field makes a new version;
- the evidence table (evidence_rows): a row per study, a column per field; each cell's
  value, its flag and its quote, linked to the paper's reading page at the quote's page
  (`?page=&quote=`, projects/reading.py, which flashes the quote there);
- the agreement between two extractors (extraction_agreement), per field and overall,
  and each unresolved disagreement with a small form that adjudicates it as the signed-in
  person (`user:<username>`).

The services decide everything: which papers are studies, what a valid form or value is,
who disagrees; their refusals come back as messages. Writes need the change permission of
the review (or project) and are refused on a read-only server, where the forms are not
shown. No script: "Add a row" is a submit button, so the page works under the site's CSP.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any
from urllib.parse import urlencode

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import Model
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, QueryDict
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse

from core.errors import DomainError
from projects.models import ExtractionField, Project, ReviewSession
from projects.review.extraction.agreement import CATEGORICAL, extraction_agreement
from projects.review.extraction.evidence import evidence_rows
from projects.review.extraction.selectors import extraction_owner, form_current, form_describe
from projects.review.extraction.services import adjudicate, form_create, form_update

DISAGREEMENTS_SHOWN = 100
# The quote in a reading-page link: enough to find it, short enough for any URL limit.
LINK_QUOTE_CHARS = 400
TEMPLATE = "admin/projects/extraction.html"


# --- the form editor ------------------------------------------------------------------------


class FieldRow(forms.Form):
    """One field of the form as the editor shows it. Only parsed here (text, a number, a
    box); forms.py checks the definition when the service saves it."""

    key = forms.CharField(required=False, widget=forms.TextInput(attrs={"size": 14}))
    label = forms.CharField(required=False, widget=forms.TextInput(attrs={"size": 16}))
    type = forms.ChoiceField(choices=ExtractionField.Type.choices, initial="text")
    unit = forms.CharField(required=False, widget=forms.TextInput(attrs={"size": 8}))
    # One choice per line (the page says so; no help_text, whose aria-describedby would
    # name an element the table does not render).
    choices = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 16}))
    tolerance = forms.FloatField(required=False, widget=forms.NumberInput(attrs={"step": "any"}))
    description = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2, "cols": 24})
    )
    quote_required = forms.BooleanField(required=False, initial=True)

    def definition(self) -> dict[str, Any]:
        """The field as form_create / form_update take it."""
        data = self.cleaned_data
        entry: dict[str, Any] = {
            "key": data["key"].strip(),
            "type": data["type"],
            "unit": data["unit"],
            "choices": [line.strip() for line in data["choices"].splitlines() if line.strip()],
            "description": data["description"],
            "quote_required": data["quote_required"],
        }
        if data["label"].strip():
            entry["label"] = data["label"]  # else the service makes one from the key
        if data["tolerance"] is not None:
            entry["tolerance"] = data["tolerance"]
        return entry


FieldRows = forms.formset_factory(FieldRow, extra=1, can_delete=True, can_order=True)


def _rows_initial(described: dict[str, Any] | None) -> list[dict[str, Any]]:
    if described is None:
        return []
    return [
        {
            **field,
            "choices": "\n".join(field.get("choices", [])),
            "ORDER": order,
        }
        for order, field in enumerate(described["fields"], start=1)
    ]


def _with_row_added(data: QueryDict) -> QueryDict:
    """The rows as typed and one blank row more, shown as the first blank row is (type
    text, quote required ticked): a bound row shows only what was sent, and an unticked
    box would make the untouched row a changed one, refused for its missing key on
    saving. A tampered count is left to the formset, which refuses it."""
    more = data.copy()
    total = data.get("form-TOTAL_FORMS", "")
    if total.isascii() and total.isdigit():
        more["form-TOTAL_FORMS"] = str(int(total) + 1)
        more[f"form-{total}-type"] = FieldRow.base_fields["type"].initial
        more[f"form-{total}-quote_required"] = "on"
    return more


def _rows_named(message: str, rows: list[int]) -> str:
    """The service counts the fields it was sent (`fields[2].choices`); the editor's rows
    include blank and removed ones: name the row the person sees."""

    def row(found: re.Match[str]) -> str:
        index = int(found.group(1))
        return f"row {rows[index]}" if index < len(rows) else found.group(0)

    return re.sub(r"fields\[(\d+)\]", row, message)


# --- the page -------------------------------------------------------------------------------


class ExtractionPage:
    """The extraction page of one review or project."""

    def __init__(self, model_admin: admin.ModelAdmin, request: HttpRequest, obj: Model) -> None:
        self.model_admin, self.request, self.obj = model_admin, request, obj
        if isinstance(obj, ReviewSession):
            self.owner: dict[str, Any] = {"session_id": str(obj.pk)}
            self.name = f"review “{obj.query[:80]}”"
            self.url = reverse("admin:projects_reviewsession_extraction", args=[obj.pk])
            self.change_url = reverse("admin:projects_reviewsession_change", args=[obj.pk])
        else:
            assert isinstance(obj, Project)
            self.owner = {"project_id": obj.pk}
            self.name = f"project “{obj.name}”"
            self.url = reverse("admin:projects_project_extraction", args=[obj.pk])
            self.change_url = reverse("admin:projects_project_change", args=[obj.pk])
        self.person = request.user.get_username()  # type: ignore[union-attr]

    def why_not(self) -> str:
        """Why this person cannot change the extraction here ('' when they can)."""
        if settings.MCP_READ_ONLY:
            return "This server is read-only (MCP_READ_ONLY=true): nothing can be changed."
        if not self.model_admin.has_change_permission(self.request, self.obj):
            return "You may view this extraction but not change it."
        return ""

    def back(self, anchor: str = "") -> HttpResponseRedirect:
        return HttpResponseRedirect(self.url + anchor)

    # --- writes

    def save_form(self) -> HttpResponse:
        """Save the editor's rows as the form (version 1, or the next version when
        anything changed); on bad input, the page again with the rows as typed."""
        data = self.request.POST
        if "add_row" in data:
            return self.render(rows=FieldRows(_with_row_added(data)))
        rows = FieldRows(data)
        if not rows.is_valid():
            messages.error(self.request, "Correct the rows marked below.")
            return self.render(rows=rows)
        ordered = list(rows.ordered_forms)  # without blank and removed rows
        numbers = [rows.forms.index(row) + 1 for row in ordered]
        fields = [row.definition() for row in ordered]
        by = f"admin:{self.person}"
        current = form_current(extraction_owner(**self.owner))
        try:
            if current is None:
                made = form_create(
                    **self.owner, name=data.get("name", ""), fields=fields, created_by=by
                )
            else:
                made = form_update(
                    **self.owner, name=data.get("name", ""), fields=fields, created_by=by
                )
        except DomainError as error:
            messages.error(self.request, _rows_named(error.message, numbers))
            return self.render(rows=rows, name=data.get("name", ""))
        if current is not None and made.version == current.version:
            messages.info(self.request, f"Nothing changed: the form stays at v{made.version}.")
        else:
            messages.success(self.request, f"Form saved as version {made.version}.")
        return self.back("#extraction-form")

    def adjudicate(self) -> HttpResponse:
        data = self.request.POST
        paper, field = data.get("paper", ""), data.get("field", "")
        value: Any = None if data.get("not_reported") else data.get("value", "").strip()
        if value == "":
            messages.error(self.request, "Give the value that stands, or tick “not reported”.")
            return self.back("#agreement")
        page = data.get("page", "").strip()
        if page and not (page.isascii() and page.isdigit()):
            messages.error(self.request, "The page must be a page number (from 1).")
            return self.back("#agreement")
        try:
            adjudicate(
                **self.owner,
                paper=paper,
                field=field,
                value=value,
                reason=data.get("reason", ""),
                quote=data.get("quote") or None,
                page=int(page) if page else None,
                user=self.request.user,
            )
        except DomainError as error:
            messages.error(self.request, f"{field} of paper {paper}: {error.message}")
        else:
            messages.success(self.request, f"Adjudicated {field} of paper {paper}.")
        return self.back("#agreement")

    # --- the page

    def render(self, rows: Any = None, name: str | None = None) -> TemplateResponse:
        current = form_current(extraction_owner(**self.owner))
        described = form_describe(current) if current is not None else None
        why_not = self.why_not()
        context: dict[str, Any] = {
            **self.model_admin.admin_site.each_context(self.request),
            "opts": self.model_admin.opts,
            "title": f"Extraction: {self.name}",
            "object": self.obj,
            "change_url": self.change_url,
            "url": self.url,
            "form": described,
            "name": described["name"] if name is None and described else (name or ""),
            "rows": rows if rows is not None else FieldRows(initial=_rows_initial(described)),
            "why_not": why_not,
            "can_change": not why_not,
            "person": f"user:{self.person}",
        }
        if current is not None:
            context.update(self._evidence(described))
            context.update(self._agreement(described))
        return TemplateResponse(self.request, TEMPLATE, context)

    def _evidence(self, described: Any) -> dict[str, Any]:
        table = evidence_rows(**self.owner)
        fields = described["fields"]
        rows = []
        for row in table["rows"]:
            read = reverse("admin:papers_paper_read", args=[row["paper_id"]])
            cells = [
                _cell_shown(row["cells"][field["key"]], read, row["paper_id"], field["key"])
                for field in fields
            ]
            rows.append({**row, "read_url": read, "shown": cells})
        return {"fields": fields, "evidence": rows}

    def _agreement(self, described: Any) -> dict[str, Any]:
        agreement = extraction_agreement(
            owner=extraction_owner(**self.owner), shown=DISAGREEMENTS_SHOWN
        )
        by_key = {field["key"]: field for field in described["fields"]}
        per_field = [
            {
                "field": by_key[key],
                "kappa": None,
                **tally,
                "categorical": by_key[key]["type"] in CATEGORICAL,
            }
            for key, tally in agreement["fields"].items()
        ]
        disagreements = [
            {
                **item,
                "spec": by_key[item["field"]],
                "shown": [(who, _value_shown(value)) for who, value in item["values"].items()],
                "anchor": f"adjudicate-{item['paper_id']}-{item['field']}",
            }
            for item in agreement["disagreements"]
        ]
        return {"agreement": agreement, "per_field": per_field, "disagreements": disagreements}


def _number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() and abs(value) < 1e15 else str(value)


def _value_shown(value: Any) -> str:
    """A stored value as a person reads it (and as the adjudication form takes it back)."""
    if value is None:
        return "not reported"
    if isinstance(value, dict) and "low" in value:
        text = f"{_number(value['low'])}–{_number(value['high'])}"
        return f"{text} {value.get('unit') or ''}".strip()
    if isinstance(value, dict) and "value" in value:
        return f"{_number(value['value'])} {value.get('unit') or ''}".strip()
    return str(value)


def _cell_shown(cell: dict[str, Any] | None, read_url: str, paper_id: int, key: str) -> Any:
    """What an evidence cell shows: the value, the flag, the quote and its link."""
    if cell is None:
        return None
    if cell["source"] == "disagreement":
        values = [(who, _value_shown(value)) for who, value in cell["values"].items()]
        return {
            "flag": "disagreement",
            "values": values,
            "anchor": f"adjudicate-{paper_id}-{key}",
        }
    shown = {
        "value": _value_shown(cell["value"]),
        "flag": cell["anchor"] if cell["flagged"] else "",
        "flag_label": str(cell["anchor"]).replace("_", " ") if cell["flagged"] else "",
        "quote": cell["quote"],
        "page": cell["page"],
        "source": cell["source"],
        "decided_by": cell.get("decided_by", ""),
        "extractors": cell["extractors"],
    }
    if cell["quote"]:
        # The reading page opens at the page and flashes the quote (projects/reading.py).
        query = {"quote": cell["quote"][:LINK_QUOTE_CHARS]}
        if cell["page"]:
            query = {"page": cell["page"], **query}
        shown["link"] = f"{read_url}?{urlencode(query)}"
    return shown


def extraction_view(
    model_admin: admin.ModelAdmin, request: HttpRequest, obj: Model | None
) -> HttpResponse:
    """GET: the page. POST `action=form` (the editor; with `add_row`, one more blank row)
    or `action=adjudicate`: the change permission is needed (403), and on a read-only
    server the write is refused with a message."""
    if obj is None:
        raise Http404("No such review or project.")
    if not model_admin.has_view_permission(request, obj):
        raise PermissionDenied
    page = ExtractionPage(model_admin, request, obj)
    if request.method != "POST":
        return page.render()
    if not model_admin.has_change_permission(request, obj):
        raise PermissionDenied
    if settings.MCP_READ_ONLY:
        messages.error(request, page.why_not())
        return page.back()
    action = request.POST.get("action")
    if action == "form":
        return page.save_form()
    if action == "adjudicate":
        return page.adjudicate()
    messages.error(request, "Nothing to do: use the form editor or an adjudication form.")
    return page.back()


def _view(model_admin: admin.ModelAdmin) -> Callable[..., HttpResponse]:
    def view(request: HttpRequest, object_id: str) -> HttpResponse:
        return extraction_view(
            model_admin, request, model_admin.get_object(request, unquote(object_id))
        )

    return model_admin.admin_site.admin_view(view)


def review_extraction_urls(model_admin: admin.ModelAdmin) -> list[URLPattern]:
    """The review admin's extraction page (ReviewSessionAdmin.get_urls adds it)."""
    return [
        path("<path:object_id>/extraction/", _view(model_admin),
             name="projects_reviewsession_extraction"),
    ]  # fmt: skip


def project_extraction_urls(model_admin: admin.ModelAdmin) -> list[URLPattern]:
    """The project admin's extraction page (ProjectAdmin.get_urls adds it)."""
    return [
        path("<str:object_id>/extraction/", _view(model_admin),
             name="projects_project_extraction"),
    ]  # fmt: skip

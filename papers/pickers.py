"""Pickers for the admin's own forms (the action bar, add-by-identifier, BibTeX import) and
the reading page's "add to project".

Projects: one picker everywhere, `ProjectPicker` (papers/static/papers/project-picker.mjs,
an ARIA combobox): part of a name typed in, the matching projects listed by the projects
app's match endpoint (`admin:projects_project_match`, projects.selectors.project_match,
which checks the user's permission and scope), one chosen by keyboard or mouse; the form
then submits the project's id. Keywords: the admin's autocomplete endpoint with select2
(KeywordAdmin's `search_fields` decide what matches).

The fields stay lenient: what they submit is read by the same code as before (a project id
or name, comma-separated keyword names), so a form posted without JavaScript, or by a test
or a script, still works, and an unknown project is refused by the service, not the form.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.widgets import AutocompleteSelectMultiple
from django.urls import reverse

from papers import scoping
from papers.models import PaperKeyword


class ProjectPicker(forms.Widget):
    """A text box that lists the projects matching what is typed and submits the chosen
    one's id (the script moves the field's name to a hidden input). Without the script
    the typed text is submitted, which the services resolve as an id or a name."""

    template_name = "papers/widgets/project_picker.html"

    def get_context(self, name: str, value: Any, attrs: dict[str, Any] | None) -> dict[str, Any]:
        context = super().get_context(name, value, attrs)
        chosen = str(value or "").strip()
        manager: Any = scoping.project_model()._default_manager
        named = manager.filter(pk=chosen).values_list("name", flat=True).first() if chosen else None
        widget = context["widget"]
        widget["source"] = reverse("admin:projects_project_match")
        widget["shown"] = named or chosen
        widget["chosen"] = chosen if named else ""
        widget["id"] = widget["attrs"].pop("id", None) or f"id_{name}"
        return context


class KeywordAutocomplete(AutocompleteSelectMultiple):
    """Existing keywords from the autocomplete endpoint, and new ones typed in; both are
    submitted by name (papers/static/papers/keyword-picker.js), so the server reads names
    only, as from the plain comma-separated box."""

    def build_attrs(self, base_attrs: dict[str, Any], extra_attrs: Any = None) -> dict[str, Any]:
        attrs = super().build_attrs(base_attrs, extra_attrs)
        # Not "admin-autocomplete": Django's script would start it without new keywords.
        attrs["class"] = "keyword-autocomplete"
        return attrs

    def optgroups(
        self, name: str, value: Sequence[str], attrs: dict[str, Any] | None = None
    ) -> Any:
        chosen = [v for text in value for v in keyword_names(text)]
        options = [self.create_option(name, v, v, True, i) for i, v in enumerate(chosen)]
        return [(None, options, 0)]

    @property
    def media(self) -> forms.Media:
        # One list, so the merged page media keep it after select2 and jquery.init.js.
        inherited: Any = super().media  # _css / _js: the merged lists (not in the stubs)
        return forms.Media(css=inherited._css, js=[*inherited._js, "papers/keyword-picker.js"])


def keyword_names(raw: str) -> list[str]:
    """Keyword names from one submitted value (a name, or several separated by commas)."""
    return [k for k in (part.strip() for part in raw.split(",")) if k]


class LenientMultipleChoiceField(forms.ModelMultipleChoiceField):
    """Every name submitted (each value may hold several, comma-separated), unchecked."""

    def clean(self, value: Any) -> Any:  # names, not a QuerySet: the action reads them
        values = value if isinstance(value, list | tuple) else [value or ""]
        return [name for text in values for name in keyword_names(str(text))]


def project_field(*, label: str = "project", help_text: str = "", required: bool = False) -> Any:
    """A project box: a ProjectPicker; the text submitted is left for the service to check."""
    # Named by aria-label too: the action bar wraps it in a <label> with its live status.
    widget = ProjectPicker(attrs={"aria-label": label.capitalize()})
    return forms.CharField(required=required, label=label, help_text=help_text, widget=widget)


def keywords_field(*, label: str = "keywords") -> Any:
    """A keywords box: existing keywords (KeywordAdmin.search_fields) and new ones."""
    link = PaperKeyword._meta.get_field("keyword")
    return LenientMultipleChoiceField(
        queryset=link.related_model._default_manager.all(),  # type: ignore[union-attr]
        required=False,
        label=label,
        widget=KeywordAutocomplete(link, admin.site, attrs={"style": "width: 20em"}),
    )

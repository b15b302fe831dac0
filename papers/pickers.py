"""Autocomplete boxes for the admin's own forms (the action bar, add-by-identifier, BibTeX
import): projects and keywords picked through the admin's autocomplete endpoint, the one
`autocomplete_fields` use (ProjectAdmin's and KeywordAdmin's `search_fields` decide what
matches), with the admin's select2.

The fields stay lenient: what they submit is read by the same code as before (a project id
or name, comma-separated keyword names), so a form posted without JavaScript, or by a test
or a script, still works, and an unknown project is refused by the service, not the form.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django import forms
from django.contrib import admin
from django.contrib.admin.widgets import AutocompleteSelect, AutocompleteSelectMultiple
from django.db.models import Model

from papers import scoping
from papers.models import PaperKeyword


class ProjectAutocomplete(AutocompleteSelect):
    """A project chosen by name; submits its id. A value that is not a project id (a name
    typed without JavaScript) is shown back as itself instead of vanishing."""

    def optgroups(
        self, name: str, value: Sequence[str], attrs: dict[str, Any] | None = None
    ) -> Any:
        groups = super().optgroups(name, value, attrs)
        shown = {str(option["value"]) for _, options, _ in groups for option in options}
        for index, text in enumerate(v for v in value if v and str(v) not in shown):
            groups[0][1].append(self.create_option(name, text, text, True, index + 1))
        return groups


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


class LenientChoiceField(forms.ModelChoiceField):
    """The text submitted, unchecked: the service resolves it and says what is wrong."""

    def to_python(self, value: Any) -> str:
        return str(value or "").strip()

    def validate(self, value: Any) -> None:
        if self.required and not value:
            raise forms.ValidationError(self.error_messages["required"], code="required")


class LenientMultipleChoiceField(forms.ModelMultipleChoiceField):
    """Every name submitted (each value may hold several, comma-separated), unchecked."""

    def clean(self, value: Any) -> Any:  # names, not a QuerySet: the action reads them
        values = value if isinstance(value, list | tuple) else [value or ""]
        return [name for text in values for name in keyword_names(str(text))]


def project_field(*, label: str = "project", help_text: str = "", required: bool = False) -> Any:
    """A project box: search projects by name or id (ProjectAdmin.search_fields)."""
    link = scoping.membership_model()._meta.get_field("project")
    project_model: type[Model] = scoping.project_model()
    field = LenientChoiceField(
        queryset=project_model._default_manager.all(),
        required=required,
        label=label,
        help_text=help_text,
        widget=ProjectAutocomplete(link, admin.site, attrs={"style": "width: 16em"}),
    )
    return field


def keywords_field(*, label: str = "keywords") -> Any:
    """A keywords box: existing keywords (KeywordAdmin.search_fields) and new ones."""
    link = PaperKeyword._meta.get_field("keyword")
    return LenientMultipleChoiceField(
        queryset=link.related_model._default_manager.all(),  # type: ignore[union-attr]
        required=False,
        label=label,
        widget=KeywordAutocomplete(link, admin.site, attrs={"style": "width: 20em"}),
    )

"""The forms of the review pages in the admin (projects/review/admin.py): starting a review,
and the decision on its pending checkpoint, with the plan as fields at `plan`.

They parse and check what a person typed; the work is the services' (`review_start`,
`review_decide`), called by the admin with what `cleaned_data` holds. The plan's fields are
checked with the planner's own `plan_edit` (a pure function), so a mistyped query is shown
beside its field with the person's text kept, instead of as a message after a redirect.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django import forms
from django.conf import settings
from django.http import QueryDict

from engines.base import SEARCH
from engines.registry import LOCAL_ENGINE, registry
from engines.services import engines_available
from projects.models import ReviewSession
from projects.review import planning
from projects.review.planning import Plan, plan_edit
from projects.review.selectors import review_pending_checkpoint
from projects.review.services import DEFAULT_MAX_RESULTS
from projects.review.workflow import DecisionAction

# The plan's fields as the form shows them, in the order of planning.EDITABLE.
PLAN_FIELDS = (
    "queries", "engines", "date_from", "date_to", "criteria", "snowball", "snowball_direction",
    "extract",
)  # fmt: skip
# What the start form carries to the plan form (the planner proposes the rest).
CARRIED = ("engines", "criteria", "snowball", "extract")


def engine_choices(engine_ids: list[str]) -> list[tuple[str, str]]:
    """Checkbox choices for engine ids: the engine's name, then its id."""
    engines = registry.engines()
    labels = {LOCAL_ENGINE: "This library"}
    return [
        (engine, f"{labels.get(engine) or getattr(engines.get(engine), 'name', engine)} ({engine})")
        for engine in engine_ids
    ]


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class StartReviewForm(forms.Form):
    """Start a review: what `review_start` takes (question, domain, max results), and the
    plan's choices a person already knows (sources, criteria, snowball, extract), which
    the plan checkpoint shows filled in for approval (the planner proposes first)."""

    query = forms.CharField(
        label="Research question",
        widget=forms.Textarea(attrs={"rows": 2, "cols": 80}),
        # The service's limit, or the column's where that is smaller.
        max_length=min(
            settings.MAX_QUERY_CHARS,
            ReviewSession._meta.get_field("query").max_length or settings.MAX_QUERY_CHARS,
        ),
        help_text="A question in words, e.g. “How do transformers handle long documents "
        "since 2019?” (a year range in it becomes the plan's dates).",
    )
    domain = forms.ChoiceField(
        label="Field",
        choices=[(key, domain.label) for key, domain in planning.DOMAINS.items()],
        initial="general",
        help_text="Orders the sources and adds the field's usual inclusion criteria.",
    )
    engines = forms.MultipleChoiceField(
        label="Sources",
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="None ticked: the planner picks for the field. At most "
        f"{planning.MAX_EXTERNAL_ENGINES + 1}.",
    )
    criteria = forms.CharField(
        label="Inclusion criteria",
        widget=forms.Textarea(attrs={"rows": 3, "cols": 80}),
        required=False,
        help_text="One a line. Empty: the planner's for the question and field.",
    )
    max_results = forms.IntegerField(
        label="Most candidates",
        min_value=1,
        max_value=settings.MAX_PAGE_SIZE,
        initial=DEFAULT_MAX_RESULTS,
        help_text=f"Records to screen in a round (1-{settings.MAX_PAGE_SIZE}).",
    )
    snowball = forms.BooleanField(
        label="Follow citations of the included papers (snowball)", required=False
    )
    extract = forms.BooleanField(
        label="Extract data from the included studies (an extraction stage)", required=False
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        engines = self.fields["engines"]
        assert isinstance(engines, forms.MultipleChoiceField)
        engines.choices = engine_choices(engines_available(operation=SEARCH))

    def clean_engines(self) -> list[str]:
        chosen = list(self.cleaned_data.get("engines") or [])
        if len(chosen) > planning.MAX_EXTERNAL_ENGINES + 1:
            raise forms.ValidationError(
                f"At most {planning.MAX_EXTERNAL_ENGINES + 1} sources in a plan."
            )
        return chosen

    def clean_criteria(self) -> list[str]:
        criteria = _lines(self.cleaned_data.get("criteria") or "")
        if len(criteria) > planning.MAX_CRITERIA:
            raise forms.ValidationError(f"At most {planning.MAX_CRITERIA} criteria.")
        if any(len(line) > planning.MAX_TEXT for line in criteria):
            raise forms.ValidationError(
                f"Each criterion is at most {planning.MAX_TEXT} characters."
            )
        return criteria

    def carried(self) -> QueryDict:
        """The plan's choices made here, as the plan form reads them from its address."""
        carried = QueryDict(mutable=True)
        carried.setlist("engines", self.cleaned_data["engines"])
        if self.cleaned_data["criteria"]:
            carried["criteria"] = "\n".join(self.cleaned_data["criteria"])
        for flag in ("snowball", "extract"):
            if self.cleaned_data[flag]:
                carried[flag] = "on"
        return carried


class DecisionForm(forms.ModelForm):
    """The decision on the pending checkpoint; no field of the session itself is edited.

    At `plan` the plan is shown as fields (queries one a line, engines as checkboxes, the
    dates, criteria, snowball, extract), filled from the plan, or from the start form's
    choices carried in the page's address (`prefill`). "Approve and search" records
    `approve` when nothing was changed and `edit` with the changed fields otherwise."""

    prefill: Mapping[str, Any] = {}  # the page's query string (ReviewSessionAdmin.get_form)

    action = forms.ChoiceField(
        choices=[("", "(no decision)"), *[(a.value, a.value) for a in DecisionAction]],
        required=False,
    )
    note = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        required=False,
        help_text="Kept with the decision; a rejected plan is planned again with it.",
    )
    edit_data = forms.JSONField(
        label="Data (JSON)",
        required=False,
        help_text='For edit, instead of the ticks: {"include": [paper_id, ...]} or '
        '{"exclude": [...], "reasons": {"<paper_id>": "why"}}.',
    )
    exclude = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Papers to exclude with “Exclude the ticked”.",
    )
    exclude_reason = forms.CharField(required=False, help_text="Why the ticked papers go.")
    checkpoint = forms.IntegerField(widget=forms.HiddenInput, required=False)
    # The plan, at `plan`:
    queries = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        required=False,
        help_text=f"One a line, at most {planning.MAX_QUERIES}: words with AND / OR / NOT, "
        '"phrases", prefix*, or a PubMed-style search string (docs/SEARCH-STRINGS.md).',
    )
    engines = forms.MultipleChoiceField(
        label="Sources",
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text=f"At most {planning.MAX_EXTERNAL_ENGINES + 1}, the library included.",
    )
    date_from = forms.CharField(
        label="Published from", required=False, max_length=10, help_text="YYYY, YYYY-MM or "
        "YYYY-MM-DD; empty: any time.",
    )  # fmt: skip
    date_to = forms.CharField(
        label="Published to", required=False, max_length=10, help_text="Empty: until now."
    )
    criteria = forms.CharField(
        label="Inclusion criteria",
        widget=forms.Textarea(attrs={"rows": 4, "cols": 80}),
        required=False,
        help_text="One a line.",
    )
    snowball = forms.BooleanField(
        label="Follow citations (snowball)",
        required=False,
        help_text="After screening, search the papers citing (or cited by) the included ones.",
    )
    snowball_direction = forms.ChoiceField(
        label="Citations to follow",
        choices=[
            ("citing", "papers citing the included ones"),
            ("references", "papers the included ones cite"),
            ("both", "both"),
        ],
        required=False,
    )
    extract = forms.BooleanField(
        label="Extract data",
        required=False,
        help_text="After screening, an extraction stage (the Extraction page) before completing.",
    )

    class Meta:
        model = ReviewSession
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        pending = review_pending_checkpoint(self.instance) if self.instance.pk else None
        self.kind = pending.kind if pending else ""
        self.fields["checkpoint"].initial = pending.sequence if pending else None
        self.plan_changes: dict[str, Any] = {}
        self.carried: list[str] = []
        if self.kind == "plan":
            self._plan_initial()
        source = {"screen": "search", "expand": "citation"}.get(self.kind)
        candidates = (
            self.instance.candidates.filter(source=source, status="pending")
            .select_related("paper")
            .order_by("rank")
            if source
            else []
        )
        exclude = self.fields["exclude"]
        assert isinstance(exclude, forms.MultipleChoiceField)
        exclude.choices = [
            (str(c.paper_id), f"{c.paper.title} ({c.paper.year or 'n.d.'})") for c in candidates
        ]

    def _stored_plan(self) -> Plan:
        return Plan.from_dict(self.instance.plan)

    def _plan_initial(self) -> None:
        plan = self._stored_plan()
        engines = self.fields["engines"]
        assert isinstance(engines, forms.MultipleChoiceField)
        allowed = list(self.instance.engines_allowed or [])
        engines.choices = engine_choices([*allowed, *(e for e in plan.engines if e not in allowed)])
        initial = {
            "queries": "\n".join(plan.queries),
            "engines": plan.engines,
            "date_from": plan.date_from or "",
            "date_to": plan.date_to or "",
            "criteria": "\n".join(plan.criteria),
            "snowball": plan.snowball,
            "snowball_direction": plan.snowball_direction,
            "extract": plan.extract,
        }
        # Choices made on the start form, carried in the address (StartReviewForm.carried).
        prefill = self.prefill
        if prefill.get("engines"):
            wanted = [e for e in _getlist(prefill, "engines") if e in dict(engines.choices)]
            if wanted:
                initial["engines"] = wanted
                self.carried.append("sources")
        if str(prefill.get("criteria") or "").strip():
            initial["criteria"] = str(prefill["criteria"])
            self.carried.append("criteria")
        for flag in ("snowball", "extract"):
            if prefill.get(flag):
                initial[flag] = True
                self.carried.append(flag)
        for name, value in initial.items():
            self.fields[name].initial = value

    def _plan_values(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {
            "queries": _lines(data.get("queries") or ""),
            "engines": list(data.get("engines") or []),
            "date_from": (data.get("date_from") or "").strip() or None,
            "date_to": (data.get("date_to") or "").strip() or None,
            "criteria": _lines(data.get("criteria") or ""),
            "snowball": bool(data.get("snowball")),
            "snowball_direction": data.get("snowball_direction") or "citing",
            "extract": bool(data.get("extract")),
        }

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        # The plan's fields count only when the page showed them (`plan_form`): a decision
        # posted without them (a script, an older page) is taken as it is.
        if self.kind != "plan" or not self.data.get("plan_form"):
            return cleaned
        if cleaned.get("action") not in ("approve", "edit"):
            return cleaned
        plan = self._stored_plan()
        stored = plan.as_dict()
        changes = {k: v for k, v in self._plan_values().items() if v != stored[k]}
        allowed = list(self.instance.engines_allowed or [])
        for name, value in changes.items():  # each field's own error, beside it
            try:
                plan_edit(plan, {name: value}, engines_allowed=allowed)
            except ValueError as exc:
                self.add_error(name, str(exc))
        if not self.errors:
            try:
                plan_edit(plan, changes, engines_allowed=allowed)
            except ValueError as exc:  # the fields together (date_from after date_to)
                self.add_error(None, str(exc))
        self.plan_changes = changes
        return cleaned

    def decision_action(self) -> str:
        """The action to record: at `plan`, "approve" with changes is their `edit`."""
        action = self.cleaned_data.get("action") or ""
        if self.kind == "plan" and action in ("approve", "edit") and self.plan_changes:
            return "edit"
        return action

    def decision_data(self) -> dict[str, Any]:
        if self.kind == "plan" and self.plan_changes:
            return dict(self.plan_changes)
        data = self.cleaned_data.get("edit_data") or {}
        ticked = self.cleaned_data.get("exclude") or []
        if self.cleaned_data.get("action") == "edit" and not data and ticked:
            reason = (self.cleaned_data.get("exclude_reason") or "").strip()
            data = {"exclude": [int(pk) for pk in ticked]}
            if reason:
                data["reasons"] = {pk: reason for pk in ticked}
        return data


def _getlist(values: Mapping[str, Any], key: str) -> list[str]:
    if isinstance(values, QueryDict):
        return values.getlist(key)
    value = values.get(key)
    return list(value) if isinstance(value, list | tuple) else [str(value)]

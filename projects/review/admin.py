"""Reviews in the admin: listed with their state, checkpoints and decisions; a person can
answer the pending checkpoint on the review's page (the same service as MCP's `decide`).

At the screen checkpoint the page shows "Next to screen" (the order `screen_next` gives,
docs/SCREENING.md) where a person includes or excludes each record with a button, and the
screeners' disagreements, each resolved with a button: both post to `screen_view`, which
calls the service behind MCP's `screen_decide` as `admin:<username>`. The buttons belong
to a form of their own, outside the change form (HTML `form` attribute), so the change
form's Save never records a screening decision and vice versa.
"""

from __future__ import annotations

import json
from typing import Any

from django import forms
from django.conf import settings
from django.contrib import admin, messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.urls import URLPattern, path, reverse
from django.utils.decorators import method_decorator
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.views.decorators.http import require_POST

from core.errors import DomainError
from projects.models import ReviewCandidate, ReviewSession
from projects.review.extract_stage import extract_status
from projects.review.extraction_admin import review_extraction_urls
from projects.review.screening import DECISIONS, screening_decide, screening_next, screening_status
from projects.review.selectors import review_counts, review_pending_checkpoint
from projects.review.services import review_cleanup, review_decide
from projects.review.workflow import DecisionAction

ABSTRACT_PREVIEW = 300
NEXT_SHOWN = 10
SUMMARY_FIELDS = [
    "query", "domain", "max_results", "status", "stage", "iteration", "round", "error",
    "project", "created_at", "completed_at",
]  # fmt: skip


class DecisionForm(forms.ModelForm):
    """The decision on the pending checkpoint; no field of the session itself is edited."""

    action = forms.ChoiceField(
        choices=[("", "(no decision)"), *[(a.value, a.value) for a in DecisionAction]],
        required=False,
    )
    note = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), required=False)
    edit_data = forms.JSONField(
        label="data",
        required=False,
        help_text='For edit: at plan e.g. {"queries": ["..."], "snowball": true}; at screen '
        '{"include": [paper_id, ...]} or {"exclude": [...], "reasons": {"<paper_id>": "why"}}.',
    )
    exclude = forms.MultipleChoiceField(
        widget=forms.CheckboxSelectMultiple,
        required=False,
        help_text="Screening: papers to exclude with action edit (when data is empty).",
    )
    exclude_reason = forms.CharField(required=False, help_text="Why the ticked papers go.")
    checkpoint = forms.IntegerField(widget=forms.HiddenInput, required=False)

    class Meta:
        model = ReviewSession
        fields: list[str] = []

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        pending = review_pending_checkpoint(self.instance) if self.instance.pk else None
        self.fields["checkpoint"].initial = pending.sequence if pending else None
        source = {"screen": "search", "expand": "citation"}.get(pending.kind if pending else "")
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

    def decision_data(self) -> dict[str, Any]:
        data = self.cleaned_data.get("edit_data") or {}
        ticked = self.cleaned_data.get("exclude") or []
        if self.cleaned_data.get("action") == "edit" and not data and ticked:
            reason = (self.cleaned_data.get("exclude_reason") or "").strip()
            data = {"exclude": [int(pk) for pk in ticked]}
            if reason:
                data["reasons"] = {pk: reason for pk in ticked}
        return data


@admin.register(ReviewSession)
class ReviewSessionAdmin(admin.ModelAdmin):
    form = DecisionForm
    list_display = [
        "short_query", "status", "stage", "pending", "iteration", "round", "domain",
        "project", "created_at",
    ]  # fmt: skip
    list_filter = ["status", "stage", "domain"]
    search_fields = ["query"]
    list_select_related = ["project"]
    actions = ["remove_reviews"]
    readonly_fields = [
        "query", "domain", "max_results", "status", "stage", "iteration", "round", "error",
        "project", "created_at", "completed_at", "task_id", "attempt", "checkpoint_view",
        "decisions_view", "plan_view", "counts_view",
    ]  # fmt: skip

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False  # reviews start from an agent (start_review)

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        fieldsets: list[tuple[str, dict[str, Any]]] = [
            ("Review", {"fields": SUMMARY_FIELDS}),
            ("Pending checkpoint", {"fields": ["checkpoint_view"]}),
        ]
        # "Next to screen" follows "Pending checkpoint": change_form.html places it.
        pending = review_pending_checkpoint(obj) if obj is not None else None
        # The decision's fields are not the model's: a view-only user could not see them.
        can_decide = self.has_change_permission(request, obj)
        if pending is not None and obj.status == ReviewSession.Status.WAITING and can_decide:
            decision = ["action", "edit_data", "note", "checkpoint"]
            if pending.kind == "extract":  # approve only: no data to give
                decision.remove("edit_data")
            elif pending.kind != "plan":
                decision[2:2] = ["exclude", "exclude_reason"]
            fieldsets.append(("Decide", {"fields": decision}))
        fieldsets += [
            ("Checkpoints and decisions", {"fields": ["decisions_view"]}),
            ("Plan", {"fields": ["plan_view"], "classes": ["collapse"]}),
            ("Counts (PRISMA)", {"fields": ["counts_view"]}),
            ("Step", {"fields": ["task_id", "attempt"], "classes": ["collapse"]}),
        ]
        return fieldsets

    @admin.display(description="question", ordering="query")
    def short_query(self, session: ReviewSession) -> str:
        return session.query if len(session.query) <= 80 else session.query[:79] + "…"

    @admin.display(description="pending checkpoint")
    def pending(self, session: ReviewSession) -> str:
        if session.status != ReviewSession.Status.WAITING:
            return "-"
        checkpoint = review_pending_checkpoint(session)
        return f"#{checkpoint.sequence} {checkpoint.kind}" if checkpoint else "-"

    @admin.display(description="pending checkpoint")
    def checkpoint_view(self, session: ReviewSession) -> SafeString | str:
        checkpoint = review_pending_checkpoint(session)
        if checkpoint is None:
            return "None"
        if checkpoint.kind == "plan":
            return format_html(
                "<p>#{} plan (round {})</p>{}", checkpoint.sequence, checkpoint.round,
                self._plan_html(checkpoint.payload.get("plan", {})),
            )  # fmt: skip
        if checkpoint.kind == "extract":
            return self._extract_html(checkpoint.sequence, extract_status(session=session))
        source = "search" if checkpoint.kind == "screen" else "citation"
        candidates = (
            session.candidates.filter(source=source, status=ReviewCandidate.Status.PENDING)
            .select_related("paper")
            .order_by("rank")
        )
        rows = format_html_join(
            "",
            "<tr><td>{}</td><td><a href='{}'>{}</a> ({})<br><small>{}</small></td><td>{}</td></tr>",
            (
                (
                    candidate.rank,
                    reverse("admin:papers_paper_change", args=[candidate.paper_id]),
                    candidate.paper.title,
                    candidate.paper.year or "n.d.",
                    (candidate.paper.abstract or candidate.paper.snippet)[:ABSTRACT_PREVIEW],
                    ", ".join(candidate.engines),
                )
                for candidate in candidates
            ),
        )
        return format_html(
            "<p>#{} {}: {} candidates</p><table><tr><th>rank</th><th>paper</th>"
            "<th>engines</th></tr>{}</table>",
            checkpoint.sequence, checkpoint.kind, candidates.count(), rows,
        )  # fmt: skip

    @admin.display(description="history")
    def decisions_view(self, session: ReviewSession) -> SafeString:
        rows = []
        for checkpoint in session.checkpoints.select_related("decision").order_by("sequence"):
            decision = getattr(checkpoint, "decision", None)
            rows.append(
                (
                    checkpoint.sequence,
                    checkpoint.kind,
                    checkpoint.round,
                    checkpoint.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                    decision.action if decision else "pending",
                    decision.decided_by if decision else "",
                    decision.note if decision else "",
                )
            )
        return format_html(
            "<table><tr><th>#</th><th>checkpoint</th><th>round</th><th>raised</th>"
            "<th>decision</th><th>by</th><th>note</th></tr>{}</table>",
            format_html_join("", "<tr>" + "<td>{}</td>" * 7 + "</tr>", rows),
        )

    @admin.display(description="plan")
    def plan_view(self, session: ReviewSession) -> SafeString:
        return self._plan_html(session.plan or {})

    @admin.display(description="counts")
    def counts_view(self, session: ReviewSession) -> SafeString:
        counts = review_counts(session=session)
        not_reached = [
            (f"{engine}: {outcome.replace('_', ' ')}", _failure_text(counts, engine))
            for block in (counts, counts.get("citation_search", {}))
            for engine, outcome in block.get("not_reached", {}).items()
        ]
        if not not_reached:
            return format_html("<pre>{}</pre>", _pretty(counts))
        # Said first and plainly: a source never reached found nothing only because it
        # was never asked, which a 0 would hide.
        return format_html(
            "<p><strong>Sources not reached</strong> (their records are not counted):</p>"
            "<ul>{}</ul><pre>{}</pre>",
            format_html_join("", "<li>{} {}</li>", not_reached),
            _pretty(counts),
        )

    def _plan_html(self, plan: dict[str, Any]) -> SafeString:
        items = [
            ("queries", "; ".join(plan.get("queries", []))),
            ("engines", ", ".join(plan.get("engines", []))),
            ("dates", f"{plan.get('date_from') or 'any'} to {plan.get('date_to') or 'now'}"),
            ("criteria", "; ".join(plan.get("criteria", []))),
            ("snowball", "yes" if plan.get("snowball") else "no"),
            ("extract data", "yes" if plan.get("extract") else "no"),
            ("rationale", " ".join(plan.get("rationale", []))),
        ]
        return format_html("<dl>{}</dl>", format_html_join("", "<dt>{}</dt><dd>{}</dd>", items))

    def _extract_html(self, sequence: int, status: dict[str, Any]) -> SafeString:
        """The extract checkpoint as things stand: the form, how far the included studies
        are extracted, flagged values, unresolved disagreements and agreement."""
        form = status["form"]
        studies = status["studies"]
        agreement = status["agreement"]
        items = [
            (
                "form",
                f"{form['name']} (version {form['version']}): {', '.join(form['fields'])}"
                if form
                else status["create_form"],
            ),
            (
                "included studies",
                f"{studies['included']}: {studies['complete']} complete, {studies['partly']} "
                f"partly extracted, {studies['not_started']} not started",
            ),
            ("flagged values", status["flagged"]),
            ("unresolved disagreements", status["disagreements_unresolved"]),
            (
                "agreement",
                f"{agreement['agreed']} of {agreement['compared']} "
                f"({' and '.join(agreement['extractors'])})"
                if agreement
                else "not yet (needs two extractors)",
            ),
        ]
        return format_html(
            "<p>#{} extract: approve completes the review once a form exists and no "
            "disagreement is unresolved.</p><dl>{}</dl>",
            sequence,
            format_html_join("", "<dt>{}</dt><dd>{}</dd>", items),
        )

    def save_model(self, request: HttpRequest, obj: ReviewSession, form: Any, change: bool) -> None:
        action = form.cleaned_data.get("action")
        if not action:
            return
        try:
            review_decide(
                session_id=str(obj.pk),
                action=action,
                data=form.decision_data(),
                note=form.cleaned_data.get("note"),
                expected_sequence=form.cleaned_data.get("checkpoint"),
                decided_by=f"admin:{request.user.get_username()}",
            )
        except DomainError as error:
            self.message_user(request, error.message, level=messages.ERROR)
        else:
            self.message_user(request, f"Decision recorded: {action}.")

    def change_view(
        self,
        request: HttpRequest,
        object_id: str,
        form_url: str = "",
        extra_context: dict[str, Any] | None = None,
    ) -> HttpResponse:
        session = self.get_object(request, unquote(object_id))
        extra = dict(extra_context or {})
        if session is not None:
            extra["screening"] = self._screening_panel(request, session)
        return super().change_view(request, object_id, form_url, extra)

    def _screening_panel(self, request: HttpRequest, session: ReviewSession) -> Any:
        """What "Next to screen" shows (None away from the screen checkpoint): the next
        records for this person as a screener, the stopping rule's say, the disagreements
        to resolve, and whether this person may decide here."""
        pending = review_pending_checkpoint(session)
        if pending is None or pending.kind != "screen" or session.status != "waiting":
            return None
        screener = f"admin:{request.user.get_username()}"
        try:
            upcoming = screening_next(session=session, limit=NEXT_SHOWN, screener=screener)
        except DomainError as exc:
            return {"error": str(exc)}
        status = screening_status(session=session) or {}
        if settings.MCP_READ_ONLY:
            why_not = "This server is read-only (MCP_READ_ONLY=true): nothing can be decided."
        elif not self.has_change_permission(request, session):
            why_not = "You may view this review but not decide on it."
        else:
            why_not = ""
        for record in upcoming["records"]:
            record["url"] = reverse("admin:papers_paper_change", args=[record["paper_id"]])
            abstract = record["abstract"] or ""
            record["preview"] = abstract[:ABSTRACT_PREVIEW]
        return {
            "upcoming": upcoming,
            "stop": upcoming["stopping"],
            "agreement": status.get("agreement"),
            "screener": screener,
            "why_not": why_not,
            "can_decide": not why_not,
            "url": reverse("admin:projects_reviewsession_screen", args=[session.pk]),
        }

    def get_urls(self) -> list[URLPattern]:
        screen = path(
            "<path:object_id>/screen/",
            self.admin_site.admin_view(self.screen_view),
            name="projects_reviewsession_screen",
        )
        return [screen, *review_extraction_urls(self), *super().get_urls()]

    @method_decorator(require_POST)
    def screen_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """One record's decision from "Next to screen" (`screen=include:<paper_id>` and
        `reason-<paper_id>`), or one disagreement's resolution (`resolve=...` and
        `resolve-reason-<paper_id>`), as admin:<username>; back to the review's page with
        what happened as a message. 403 without the change permission; refused in
        read-only mode."""
        session = self.get_object(request, unquote(object_id))
        if session is None:
            raise Http404("No such review.")
        if not self.has_change_permission(request, session):
            raise PermissionDenied
        back = HttpResponseRedirect(
            reverse("admin:projects_reviewsession_change", args=[session.pk])
        )
        if settings.MCP_READ_ONLY:
            self.message_user(request, "This server is read-only.", level=messages.ERROR)
            return back
        resolve = "resolve" in request.POST
        decision, _, paper = request.POST.get("resolve" if resolve else "screen", "").partition(":")
        if decision not in DECISIONS or not paper.isdigit():
            self.message_user(request, "Choose include or exclude on a record.", messages.ERROR)
            return back
        reason = request.POST.get(f"{'resolve-' if resolve else ''}reason-{paper}", "")
        try:
            screening_decide(
                session_id=session.pk,
                decisions=[{"paper": int(paper), "decision": decision, "reason": reason}],
                decided_by=f"admin:{request.user.get_username()}",
                resolve=resolve,
            )
        except DomainError as error:
            self.message_user(request, error.message, level=messages.ERROR)
        else:
            done = "Resolved" if resolve else "Recorded"
            self.message_user(request, f"{done}: {decision} paper {paper}.")
        return back

    def response_change(self, request: HttpRequest, obj: ReviewSession) -> HttpResponse:
        # Back to the review, which now shows the next checkpoint (or that it is working).
        return HttpResponseRedirect(request.path)

    def get_actions(self, request: HttpRequest, action_location: Any = None) -> Any:
        actions = (
            super().get_actions(request)
            if action_location is None
            else super().get_actions(request, action_location)  # type: ignore[call-arg]
        )
        actions.pop("delete_selected", None)  # replaced by remove_reviews (cancels work)
        return actions

    @admin.action(
        description="Remove selected reviews (cancels their work)", permissions=["delete"]
    )
    def remove_reviews(self, request: HttpRequest, queryset: QuerySet[ReviewSession]) -> None:
        removed = 0
        for pk in list(queryset.values_list("pk", flat=True)):
            try:
                review_cleanup(session_id=str(pk))
                removed += 1
            except DomainError:
                continue  # removed meanwhile
        self.message_user(request, f"Removed {removed} reviews; papers and projects are kept.")

    def delete_model(self, request: HttpRequest, obj: ReviewSession) -> None:
        review_cleanup(session_id=str(obj.pk))


def _pretty(value: Any) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False)


def _failure_text(counts: dict[str, Any], engine: str) -> str:
    failure = counts.get("sources", {}).get(engine, {}).get("last_failure", {})
    return f"({failure['message']})" if failure.get("message") else ""

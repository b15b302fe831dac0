"""Reviews in the admin (docs/ADMIN.md, "Reviews in the browser"): listed with their state,
started from a form, and decided on the review's page through the services behind MCP's
tools.

- *Start a review* (the add page) calls `review_start`, as `start_review` does; the
  plan's choices made there (sources, criteria, snowball, extract) are carried to the plan
  checkpoint, where the planner's proposal is shown with them filled in.
- At `plan`, the plan is a form of fields (admin_forms.DecisionForm): "Approve and
  search" records `approve`, or `edit` with what was changed; "Reject" plans again with
  the note. At `screen`, the screening panel (screening_views.py) screens one record at a
  time without reloading the page; "Finish screening" closes the checkpoint. Every
  decision is `review_decide`'s, as `admin:<username>`, with the page's checkpoint number,
  so a page someone else answered first is refused.
- The page shows the PRISMA 2020 diagram, the recall curve and the counts as tables.
- Who decided what (issue 39 item 4): the history names the person and client of each
  checkpoint decision, and "screeners" lists each screener with the person and clients
  behind it, their decisions and Cohen's kappa between the two busiest.

Decision buttons are the change form's own (`name="action"`); the screening panel's
buttons belong to a form of their own outside it (HTML `form` attribute), so neither can
submit the other's decision. Each form's first submit button is a disabled one, so Enter
in a text box records nothing.
"""

from __future__ import annotations

from typing import Any, cast

from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from core.errors import DomainError
from projects import permissions
from projects.models import ReviewCandidate, ReviewSession
from projects.review.admin_forms import DecisionForm, StartReviewForm
from projects.review.extract_stage import extract_status
from projects.review.extraction_admin import review_extraction_urls
from projects.review.figures import review_figures
from projects.review.screening_views import (
    finish_label,
    prisma_svg_view,
    review_state_view,
    screening_form_view,
    screening_json_view,
    screening_panel,
)
from projects.review.selectors import review_pending_checkpoint, screeners
from projects.review.services import review_cleanup, review_decide, review_start, review_wait

ABSTRACT_PREVIEW = 300
# How long "Start" waits for the planner before showing the review (it shows a running
# review too, and the page follows it): the planner needs no network, so a second or two.
START_WAIT_SECONDS = 10
SUMMARY_FIELDS = [
    "query", "domain", "max_results", "status", "stage", "iteration", "round", "error",
    "project", "created_at", "completed_at",
]  # fmt: skip
PLAN_DECISION = [
    "queries", "engines", ("date_from", "date_to"), "criteria", ("snowball", "snowball_direction"),
    "extract", "note", "checkpoint",
]  # fmt: skip
STEP_NAMES = {"plan": "planning", "search": "searching", "expand": "following citations"}
NEXT_STEP = {
    "plan": "check the plan below, change what you need, then approve it (or reject it "
    "with a note to plan again).",
    "screen": "screen the records below one at a time; finish screening when the stopping "
    "rule says it is safe to stop, or when all are screened.",
    "expand": "decide on the citation search's candidates below.",
    "extract": "extract data on the Extraction page, then complete the review below.",
}


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
        "decisions_view", "screeners_view", "plan_view",
    ]  # fmt: skip

    def get_form(
        self, request: HttpRequest, obj: Any = None, change: bool = False, **kwargs: Any
    ) -> Any:
        form = super().get_form(request, obj, change, **kwargs)
        # The start form's choices, carried in the address (StartReviewForm.carried).
        return type(form.__name__, (form,), {"prefill": request.GET})

    def _decides(self, request: HttpRequest, session: ReviewSession | None) -> str:
        """The pending checkpoint's kind when this person may answer it here, else ""."""
        if session is None or session.status != ReviewSession.Status.WAITING:
            return ""
        pending = review_pending_checkpoint(session)
        # The decision's fields are not the model's: a view-only user could not see them.
        if pending is None or not self.has_change_permission(request, session):
            return ""
        return pending.kind

    def get_fieldsets(self, request: HttpRequest, obj: Any = None) -> Any:
        kind = self._decides(request, obj)
        fieldsets: list[tuple[str, dict[str, Any]]] = []
        if kind == "plan":
            fieldsets.append(("Decide: the plan", {"fields": PLAN_DECISION}))
        elif kind:
            fieldsets.append(("Decide", {"fields": ["note", "checkpoint"]}))
        if kind in ("screen", "expand"):
            fieldsets.append(
                (
                    "Decide on several records at once",
                    {"fields": ["exclude", "exclude_reason", "edit_data"], "classes": ["collapse"]},
                )
            )
        # At screen the panel shows the records one at a time: their list is folded away.
        folded = ["collapse"] if kind == "screen" else []
        # The plan is open where it is not shown as fields: to a view-only user at `plan`.
        pending = review_pending_checkpoint(obj) if obj is not None else None
        at_plan = pending is not None and pending.kind == "plan" and kind != "plan"
        if pending is not None:
            fieldsets.append(
                ("Pending checkpoint", {"fields": ["checkpoint_view"], "classes": folded})
            )
        fieldsets += [
            ("Checkpoints and decisions", {"fields": ["decisions_view", "screeners_view"]}),
            ("Plan", {"fields": ["plan_view"], "classes": [] if at_plan else ["collapse"]}),
            ("Review", {"fields": SUMMARY_FIELDS, "classes": ["collapse"]}),
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
            # The plan itself is in "Decide: the plan" (or "Plan" for a view-only user).
            plan = checkpoint.payload.get("plan", {})
            return format_html(
                "<p>#{} plan (round {}). Why the planner chose it:</p><ul>{}</ul>",
                checkpoint.sequence, checkpoint.round,
                format_html_join("", "<li>{}</li>", ((r,) for r in plan.get("rationale", []))),
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
                    reverse("admin:papers_paper_read", args=[candidate.paper_id]),
                    candidate.paper.title,
                    candidate.paper.year or "n.d.",
                    (candidate.paper.abstract or candidate.paper.snippet)[:ABSTRACT_PREVIEW],
                    ", ".join(candidate.engines),
                )
                for candidate in candidates
            ),
        )
        return format_html(
            "<p>#{} {}: {} candidates pending</p><table><thead><tr><th scope='col'>rank</th>"
            "<th scope='col'>paper</th><th scope='col'>engines</th></tr></thead>"
            "<tbody>{}</tbody></table>",
            checkpoint.sequence, checkpoint.kind, candidates.count(), rows,
        )  # fmt: skip

    @admin.display(description="history")
    def decisions_view(self, session: ReviewSession) -> SafeString:
        rows = []
        checkpoints = session.checkpoints.select_related("decision", "decision__user")
        for checkpoint in checkpoints.order_by("sequence"):
            decision = getattr(checkpoint, "decision", None)
            rows.append(
                (
                    checkpoint.sequence,
                    checkpoint.kind,
                    checkpoint.round,
                    checkpoint.created_at.strftime("%Y-%m-%d %H:%M:%S"),
                    decision.action if decision else "pending",
                    _decider(decision) if decision else "",
                    decision.note if decision else "",
                )
            )
        head = "".join(
            f"<th scope='col'>{name}</th>"
            for name in ("#", "checkpoint", "round", "raised", "decision", "by", "note")
        )
        return format_html(
            "<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>",
            SafeString(head),
            format_html_join("", "<tr>" + "<td>{}</td>" * 7 + "</tr>", rows),
        )

    @admin.display(description="screeners")
    def screeners_view(self, session: ReviewSession) -> SafeString:
        """Each screener (the label its decisions are kept under), the person and clients
        behind it, its decisions; Cohen's kappa of the two busiest."""
        people = screeners(session)
        if not people["screeners"]:
            return SafeString("No screening decisions recorded one by one.")
        rows = [
            (row["screener"], row["user"] or "-", ", ".join(row["clients"]) or "-",
             row["include"], row["exclude"], row["maybe"], row["resolved"])
            for row in people["screeners"]
        ]  # fmt: skip
        head = "".join(
            f"<th scope='col'>{name}</th>"
            for name in ("screener", "person", "clients", "include", "exclude", "maybe",
                         "resolutions")
        )  # fmt: skip
        agreement = people["agreement"]
        kappa = (
            format_html(
                "<p>Cohen's kappa {} vs {}: {} over {} records both screened.</p>",
                *agreement["compared"],
                "n/a" if agreement["kappa"] is None else agreement["kappa"],
                agreement["both_screened"],
            )
            if agreement
            else ""
        )
        return format_html(
            "<table><thead><tr>{}</tr></thead><tbody>{}</tbody></table>{}",
            SafeString(head),
            format_html_join("", "<tr>" + "<td>{}</td>" * 7 + "</tr>", rows),
            kappa,
        )

    @admin.display(description="plan")
    def plan_view(self, session: ReviewSession) -> SafeString:
        return self._plan_html(session.plan or {})

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
        action = form.decision_action()
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
            changed = ", ".join(form.plan_changes) if action == "edit" and form.plan_changes else ""
            self.message_user(
                request, f"Decision recorded: {action}" + (f" ({changed})." if changed else ".")
            )

    def add_view(
        self, request: HttpRequest, form_url: str = "", extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """*Start a review*: the form, then `review_start` (as MCP's start_review), a short
        wait for the planner, and the review's page with the form's plan choices filled
        into the plan checkpoint."""
        if not self.has_add_permission(request):
            raise PermissionDenied
        form = StartReviewForm(request.POST or None)
        if request.method == "POST" and form.is_valid():
            try:
                session = review_start(
                    query=form.cleaned_data["query"],
                    domain=form.cleaned_data["domain"],
                    max_results=form.cleaned_data["max_results"],
                )
            except DomainError as error:
                field = error.details.get("field")
                form.add_error(field if field in form.fields else None, error.message)
            else:
                review_wait(session_id=str(session.pk), timeout=START_WAIT_SECONDS)
                self.message_user(request, "Review started: the planner proposed the plan below.")
                page = reverse("admin:projects_reviewsession_change", args=[session.pk])
                carried = form.carried().urlencode()
                return HttpResponseRedirect(page + (f"?{carried}" if carried else ""))
        context = {
            **self.admin_site.each_context(request),
            "opts": self.opts,
            "title": "Start a review",
            # A plain form: AdminForm reads only its fields, for the admin's fieldset look.
            "adminform": helpers.AdminForm(
                cast(Any, form),
                [("The review", {"fields": list(form.fields)})],
                {},
                model_admin=self,
            ),
            "has_view_permission": self.has_view_permission(request),
            **(extra_context or {}),
        }
        return TemplateResponse(request, "admin/projects/reviewsession/start.html", context)

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
            kind = self._decides(request, session)
            panel = screening_panel(self, request, session)
            extra.update(
                {
                    "title": session.query,
                    "subtitle": None,
                    "review_state": self._state(session),
                    "screening": panel,
                    "figures": review_figures(session),
                    "decide": _buttons(kind, panel, session),
                    # Nothing of the session is edited: decisions have buttons of their own.
                    "show_save": False,
                    "show_save_and_continue": False,
                    "show_save_and_add_another": False,
                }
            )
        return super().change_view(request, object_id, form_url, extra)

    def _state(self, session: ReviewSession) -> dict[str, Any]:
        """The line at the top of a review's page: where it is and what comes next."""
        pending = review_pending_checkpoint(session)
        plan = session.plan or {}
        state: dict[str, Any] = {
            "status": session.status,
            "facts": [
                ("field", session.domain),
                ("most candidates", session.max_results),
                ("round", session.round),
                ("decisions so far", session.iteration),
                ("started", session.created_at.strftime("%Y-%m-%d %H:%M")),
            ],
            "state_url": reverse("admin:projects_reviewsession_state", args=[session.pk]),
        }
        if session.status == ReviewSession.Status.RUNNING:
            step = STEP_NAMES.get(session.stage, session.stage)
            state["headline"] = f"Working: {step}. This page follows it and shows the result."
        elif session.status == ReviewSession.Status.WAITING and pending is not None:
            state["headline"] = (
                f"Waiting for a decision at the {pending.kind} checkpoint (#{pending.sequence}): "
                + NEXT_STEP.get(pending.kind, "decide below.")
            )
        elif session.status == ReviewSession.Status.COMPLETE:
            state["headline"] = "Complete."
            if session.project is not None:
                state["project"] = (
                    session.project.name,
                    reverse("admin:projects_project_papers", args=[session.project.pk]),
                )
        else:
            state["headline"] = f"Failed: {session.error}"
        if plan.get("extract"):
            state["extraction_url"] = reverse(
                "admin:projects_reviewsession_extraction", args=[session.pk]
            )
        return state

    def get_urls(self) -> list[URLPattern]:
        def view(function: Any) -> Any:
            def wrapped(request: HttpRequest, object_id: str) -> HttpResponse:
                return function(request, self, object_id)

            return self.admin_site.admin_view(wrapped)

        pages = [
            ("screen/", screening_form_view, "screen"),
            ("screening/", screening_json_view, "screening"),
            ("prisma.svg", prisma_svg_view, "prisma"),
            ("state/", review_state_view, "state"),
        ]
        own = [
            path(
                f"<path:object_id>/{suffix}", view(function), name=f"projects_reviewsession_{name}"
            )
            for suffix, function, name in pages
        ]
        return [*own, *review_extraction_urls(self), *super().get_urls()]

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

    def get_queryset(self, request: HttpRequest) -> QuerySet[ReviewSession]:
        # A user bound by project roles: its projects' reviews (projects.permissions).
        return permissions.reviews_visible(super().get_queryset(request))


def _buttons(
    kind: str, panel: dict[str, Any] | None, session: ReviewSession
) -> dict[str, list[tuple[str, str, str]]]:
    """The decision buttons under "Decide" (and under "Decide on several records at once"):
    (action, label, extra class)."""
    if kind == "plan":
        main = [
            ("approve", "Approve and search", "default"),
            ("reject", "Reject and plan again", ""),
        ]
        return {"main": main, "several": []}
    if kind == "extract":
        return {"main": [("approve", "Complete the review", "default")], "several": []}
    if kind == "screen":
        finish = finish_label((panel or {}).get("progress") or {})
        main = [
            ("approve", finish, "default"),
            ("reject", "Reject: discard these and plan again", ""),
        ]
        return {"main": main, "several": [("edit", "Exclude the ticked, include the rest", "")]}
    if kind == "expand":
        main = [("approve", "Include them all", "default"), ("reject", "Exclude them all", "")]
        return {"main": main, "several": [("edit", "Exclude the ticked, include the rest", "")]}
    return {"main": [], "several": []}


def _decider(decision: Any) -> str:
    """`user:alice (alice, API token laptop (rmcp_ab…))`; the label alone for decisions
    recorded before people were named."""
    who = ", ".join(x for x in (getattr(decision.user, "username", ""), decision.client) if x)
    return f"{decision.decided_by} ({who})" if who else decision.decided_by

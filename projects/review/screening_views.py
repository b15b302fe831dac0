"""Screening one record at a time on a review's page (docs/ADMIN.md, "Reviews in the
browser"), and the page's other small views.

The panel shows the record `screening_next(screener="admin:<user>", limit=1)` puts first:
title, authors, year, venue, abstract and why it ranks there; progress (screened / total)
and the stopping rule's estimate; the screeners' disagreements side by side. It is one
template (admin/projects/reviewsession/screening.html) drawn into the page and, after each
decision, sent back by the JSON endpoint with the figures (figures.py) for
projects/static/projects/review_page.mjs to put in place, so the page never reloads.

Views (ReviewSessionAdmin.get_urls wires them, behind `admin_view`: staff, CSRF):

- `screening_json_view`, `<id>/screening/`: GET the panel as JSON; POST one decision as
  JSON `{"paper", "decision": "include"|"exclude"|"maybe", "reason", "resolve"}` to
  `screening_decide` as `admin:<user>`, then the panel. Errors are
  `{"error": {"code", "message"}}`: 400 bad input or a decision that does not fit, 403
  without the change permission or on a read-only server, 404 no such review, 409 the
  review is no longer at its screen checkpoint.
- `screening_form_view`, `<id>/screen/`: the same decision from the panel's plain form
  (no JavaScript), back to the page with a message.
- `prisma_svg_view`, `<id>/prisma.svg`: the PRISMA 2020 diagram as a file.
- `review_state_view`, `<id>/state/`: the review's status, polled while a step works (a
  step whose worker was lost is sent again, as get_session does).

Nothing here decides anything: every write is `screening_decide`'s.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.template.loader import render_to_string
from django.urls import reverse
from django.views.decorators.http import require_GET, require_http_methods, require_POST

from core.errors import DomainError, InvalidInput, NotFound
from papers.models import Paper
from papers.selectors import paper_brief, with_relations
from projects.models import ReviewSession
from projects.review.figures import review_figures
from projects.review.prisma import prisma_svg
from projects.review.screening import (
    CHOICES,
    MAYBE,
    screening_decide,
    screening_next,
    screening_status,
)
from projects.review.selectors import review_pending_checkpoint, review_prisma
from projects.review.services import review_resume
from projects.review.workflow import InvalidDecision

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

PANEL_TEMPLATE = "admin/projects/reviewsession/screening.html"
FIGURES_TEMPLATE = "admin/projects/reviewsession/figures.html"
AUTHORS_SHOWN = 8
READ_ONLY = "This server is read-only (MCP_READ_ONLY=true): nothing can be decided."
PAST_TENSE = {"include": "Included", "exclude": "Excluded", MAYBE: "Maybe (back later)"}


def screener_of(request: HttpRequest) -> str:
    return f"admin:{request.user.get_username()}"


def why_not_decide(
    model_admin: ModelAdmin[ReviewSession], request: HttpRequest, session: Any
) -> str:
    """Why this person may not screen here ("" if they may)."""
    if settings.MCP_READ_ONLY:
        return READ_ONLY
    if not model_admin.has_change_permission(request, session):
        return "You may view this review but not decide on it."
    return ""


def screening_panel(
    model_admin: ModelAdmin[ReviewSession], request: HttpRequest, session: ReviewSession
) -> dict[str, Any] | None:
    """What the panel shows (None away from the screen checkpoint): the record to screen
    next for this person, the tallies, the stopping rule's say, the disagreements, and
    whether this person may decide here."""
    pending = review_pending_checkpoint(session)
    if pending is None or pending.kind != "screen" or session.status != "waiting":
        return None
    screener = screener_of(request)
    try:
        upcoming = screening_next(session=session, limit=1, screener=screener)
    except DomainError as exc:
        return {"error": exc.message}
    status = screening_status(session=session) or {}
    why_not = why_not_decide(model_admin, request, session)
    record = upcoming["records"][0] if upcoming["records"] else None
    if record is not None:
        record = _with_details(record)
    total, left = upcoming["total"], upcoming["pending"]
    return {
        "checkpoint": upcoming["checkpoint"],
        "record": record,
        "progress": {
            "screened": total - left,
            "total": total,
            "pending": left,
            "maybe": upcoming["maybe"],
            "to_go": left - upcoming["maybe"],
            "included": upcoming["included"],
            "excluded": upcoming["excluded"],
        },
        "stopping": upcoming["stopping"],
        "agreement": _side_by_side(status.get("agreement")),
        "screener": screener,
        "why_not": why_not,
        "can_decide": not why_not,
        "json_url": reverse("admin:projects_reviewsession_screening", args=[session.pk]),
        "form_url": reverse("admin:projects_reviewsession_screen", args=[session.pk]),
    }


def finish_label(progress: dict[str, Any]) -> str:
    """The label of the button that closes the screen checkpoint (`approve`): what it will
    do with the decisions made so far (projects/review/screening.py, screening_on_approve)."""
    left, done = progress.get("pending", 0), progress.get("screened", 0)
    if done:
        return f"Finish screening: keep the {done} decisions, exclude the {left} not screened"
    return f"Include all {left} candidates"


def _with_details(record: dict[str, Any]) -> dict[str, Any]:
    """The record with what a screener reads besides the abstract: authors, venue, a link
    to the paper's reading page."""
    paper = with_relations(Paper.objects.filter(pk=record["paper_id"])).first()
    if paper is None:  # removed from the library meanwhile
        return record
    brief = paper_brief(paper)
    authors = brief["authors"]
    shown = ", ".join(authors[:AUTHORS_SHOWN]) + (" et al." if len(authors) > AUTHORS_SHOWN else "")
    return {
        **record,
        "authors": shown,
        "venue": brief["venue"] or brief["publication"] or "",
        "url": reverse("admin:papers_paper_read", args=[paper.pk]),
    }


def _side_by_side(agreement: dict[str, Any] | None) -> dict[str, Any] | None:
    """The agreement with each unresolved disagreement's votes in one column per screener
    (the two compared first), for a table that sets them side by side."""
    if not agreement:
        return None
    screeners = list(agreement.get("compared") or [])
    for item in agreement.get("disagreements", []):
        screeners += [name for name in item["votes"] if name not in screeners]
    rows = [
        {**item, "columns": [item["votes"].get(name, "") for name in screeners]}
        for item in agreement.get("disagreements", [])
    ]
    return {**agreement, "columns": screeners, "rows": rows}


def _panel_html(request: HttpRequest, panel: dict[str, Any] | None) -> str:
    return render_to_string(PANEL_TEMPLATE, {"screening": panel}, request=request)


def _session(
    model_admin: ModelAdmin[ReviewSession], request: HttpRequest, object_id: str
) -> ReviewSession | None:
    return model_admin.get_object(request, unquote(object_id))


def _error(status: int, code: str, message: str) -> JsonResponse:
    return JsonResponse({"error": {"code": code, "message": message}}, status=status)


def _domain_error(error: DomainError) -> JsonResponse:
    if isinstance(error, NotFound):
        status = 404
    elif isinstance(error, InvalidInput | InvalidDecision):
        status = 400  # the decision does not fit: already screened, not a candidate, ...
    else:
        status = 409  # the review moved on: checkpoint closed, complete, failed
    return _error(status, error.code, error.message)


def _parsed(body: bytes) -> dict[str, Any]:
    """The decision posted as JSON; InvalidInput saying what is wrong."""
    try:
        data = json.loads(body or b"null")
    except (ValueError, UnicodeDecodeError):
        raise InvalidInput("Send the decision as JSON.") from None
    if not isinstance(data, dict):
        raise InvalidInput('Send a JSON object: {"paper": ..., "decision": ...}.')
    paper = data.get("paper")
    if isinstance(paper, str) and paper.strip().isdigit():
        paper = int(paper)
    if isinstance(paper, bool) or not isinstance(paper, int) or paper < 1:
        raise InvalidInput("paper must be a paper_id (a whole number).", field="paper")
    decision = data.get("decision")
    if decision not in CHOICES:
        raise InvalidInput("decision must be include, exclude or maybe.", field="decision")
    reason = data.get("reason") or ""
    if not isinstance(reason, str):
        raise InvalidInput("reason must be text.", field="reason")
    resolve = data.get("resolve", False)
    if not isinstance(resolve, bool):
        raise InvalidInput("resolve must be true or false.", field="resolve")
    return {"paper": paper, "decision": decision, "reason": reason, "resolve": resolve}


def _confirmation(decision: dict[str, Any]) -> str:
    """What was recorded, naming the paper by its title."""
    title = (
        Paper.objects.filter(pk=decision["paper"]).values_list("title", flat=True).first()
        or f"paper {decision['paper']}"
    )
    if decision["resolve"]:
        return f"Resolved as {decision['decision']}: {title}"
    done = PAST_TENSE[decision["decision"]]
    reason = " ".join(decision["reason"].split())
    kept = reason and decision["decision"] != "include"
    return f"{done}: {title}" + (f" (reason: {reason})" if kept else "")


@require_http_methods(["GET", "POST"])
def screening_json_view(
    request: HttpRequest, model_admin: ModelAdmin[ReviewSession], object_id: str
) -> JsonResponse:
    """The screening panel as JSON (GET), or one decision then the panel (POST); the
    module docstring lists the answers."""
    session = _session(model_admin, request, object_id)
    if session is None:
        return _error(404, "not_found", "No such review.")
    if not model_admin.has_view_permission(request, session):
        return _error(403, "forbidden", "You may not see this review.")
    answer: dict[str, Any] = {}
    if request.method == "POST":
        if settings.MCP_READ_ONLY:
            return _error(403, "read_only", READ_ONLY)
        if not model_admin.has_change_permission(request, session):
            return _error(403, "forbidden", "You may view this review but not decide on it.")
        try:
            decision = _parsed(request.body)
            screening_decide(
                session_id=session.pk,
                decisions=[{key: decision[key] for key in ("paper", "decision", "reason")}],
                decided_by=screener_of(request),
                resolve=decision["resolve"],
            )
        except DomainError as error:
            return _domain_error(error)
        answer["recorded"] = {**decision, "message": _confirmation(decision)}
        session.refresh_from_db()
    panel = screening_panel(model_admin, request, session)
    if panel is None or "error" in panel:
        message = (panel or {}).get(
            "error"
        ) or "This review is not waiting at its screen checkpoint."
        return _error(409, "no_pending_checkpoint", message)
    figures = {"figures": review_figures(session)}
    answer.update(
        {
            "session_id": str(session.pk),
            **{key: panel[key] for key in ("checkpoint", "record", "progress", "stopping")},
            "agreement": panel["agreement"],
            "finish_label": finish_label(panel["progress"]),
            "html": _panel_html(request, panel),
            "figures_html": render_to_string(FIGURES_TEMPLATE, figures, request=request),
        }
    )
    return JsonResponse(answer)


@require_POST
def screening_form_view(
    request: HttpRequest, model_admin: ModelAdmin[ReviewSession], object_id: str
) -> HttpResponse:
    """One decision from the panel's plain form (`screen=include:<paper_id>` with
    `reason-<paper_id>`, or `resolve=...` with `resolve-reason-<paper_id>`), as
    admin:<username>; back to the review's page with what happened as a message. 403
    without the change permission; refused with a message in read-only mode."""
    session = _session(model_admin, request, object_id)
    if session is None:
        raise Http404("No such review.")
    if not model_admin.has_change_permission(request, session):
        raise PermissionDenied
    back = HttpResponseRedirect(
        reverse("admin:projects_reviewsession_change", args=[session.pk]) + "#screening-panel"
    )
    if settings.MCP_READ_ONLY:
        model_admin.message_user(request, "This server is read-only.", level=messages.ERROR)
        return back
    resolve = "resolve" in request.POST
    decision, _, paper = request.POST.get("resolve" if resolve else "screen", "").partition(":")
    if decision not in CHOICES or not paper.isdigit():
        model_admin.message_user(
            request, "Choose include, exclude or maybe on a record.", messages.ERROR
        )
        return back
    reason = request.POST.get(f"{'resolve-' if resolve else ''}reason-{paper}", "")
    chosen = {"paper": int(paper), "decision": decision, "reason": reason, "resolve": resolve}
    try:
        screening_decide(
            session_id=session.pk,
            decisions=[{"paper": int(paper), "decision": decision, "reason": reason}],
            decided_by=screener_of(request),
            resolve=resolve,
        )
    except DomainError as error:
        model_admin.message_user(request, error.message, level=messages.ERROR)
    else:
        model_admin.message_user(request, _confirmation(chosen))
    return back


@require_GET
def prisma_svg_view(
    request: HttpRequest, model_admin: ModelAdmin[ReviewSession], object_id: str
) -> HttpResponse:
    """The review's PRISMA 2020 flow diagram as an SVG file (as the REST API serves it)."""
    session = _session(model_admin, request, object_id)
    if session is None:
        raise Http404("No such review.")
    if not model_admin.has_view_permission(request, session):
        raise PermissionDenied
    svg = prisma_svg(review_prisma(session=session), title=session.query)
    response = HttpResponse(svg, content_type="image/svg+xml; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="prisma-{session.pk}.svg"'
    return response


@require_GET
def review_state_view(
    request: HttpRequest, model_admin: ModelAdmin[ReviewSession], object_id: str
) -> JsonResponse:
    """The review's status and stage, for a page waiting on a step; a step whose lease ran
    out (its worker lost) is sent again first, as get_session does."""
    session = _session(model_admin, request, object_id)
    if session is None:
        return _error(404, "not_found", "No such review.")
    if not model_admin.has_view_permission(request, session):
        return _error(403, "forbidden", "You may not see this review.")
    if not settings.MCP_READ_ONLY:
        review_resume(session_id=str(session.pk))
        session.refresh_from_db()
    return JsonResponse({"status": session.status, "stage": session.stage})

"""The site's home page at `/`, the admin's "View site".

Signed in as staff: the alerts inbox (unread alerts, newest first, each marked read with a
button: `alerts_mark_read`, the page's one write, a CSRF-checked POST), the library at a
glance (counts, recent papers and annotations, projects with their size, reviews waiting
for a decision, the saved searches with their last run, the engines' status from their
circuit breakers) and a quick search that opens the paper list.
Signed out (or not staff): what this server is, and where to go next:
the admin, the REST docs and an MCP client configuration to copy.

It lives in `projects` because it reads the layers below (papers, engines) and projects'
own reviews; research_site only routes to it. Reads only: every figure comes from a
selector that costs a handful of indexed queries, so the page stays fast at 95k papers.
"""

from __future__ import annotations

import json
from typing import Any

from django.conf import settings
from django.contrib import admin
from django.contrib.admin.views.decorators import staff_member_required
from django.db.models import Count
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_POST, require_safe

from engines.selectors import engines_list
from papers import scoping
from papers.models import Annotation, Paper, PaperPdf
from projects.models import Alert, Project, ReviewSession, SavedSearch
from projects.permissions import saved_searches_visible
from projects.review.selectors import review_visible
from projects.watch.selectors import saved_searches_recent
from projects.watch.services import alerts_mark_read

RECENT = 8
INBOX = 10


def home_overview() -> dict[str, Any]:
    """What the signed-in home page shows. No network: engines are described from their
    configuration and breakers only (`probe=False`, `engine_status`: the same words
    list_search_engines gives), never probed from a page load."""
    engines = [
        {
            "name": entry.get("name") or entry["id"],
            # The breakers' real state in the words list_search_engines gives (one path).
            "status": entry["status"],
            "available": entry["status"].startswith("available"),
        }
        for entry in engines_list(probe=False)["engines"]
    ]
    projects = Project.objects.annotate(size=Count("paper_links")).order_by("-updated_at")
    waiting = ReviewSession.objects.filter(status=ReviewSession.Status.WAITING).order_by(
        "-updated_at"
    )
    unread = Alert.objects.filter(read_at__isnull=True).order_by("-created_at", "-id")
    # A user bound by project roles sees its projects' (and the open ones') only.
    permitted = scoping.permitted_project_ids()
    if permitted is not None:
        projects = projects.filter(pk__in=permitted)
        unread = unread.filter(scoping.alerts_visible(sorted(permitted)))
    reviews = [
        review
        for review in waiting[: RECENT * 10]
        if permitted is None
        or (not review.project_id and not review.collections)
        or review_visible(permitted, project_id=review.project_id, collections=review.collections)
    ][:RECENT]
    return {
        "counts": {
            "papers": Paper.objects.count(),
            "with_pdf": PaperPdf.objects.count(),
            "annotations": Annotation.objects.count(),
            "projects": projects.count(),
        },
        "recent_papers": list(
            Paper.objects.order_by("-created_at").only("paper_id", "title", "year")[:RECENT]
        ),
        "recent_annotations": list(
            Annotation.objects.select_related("paper")
            .only("id", "page", "kind", "text", "comment", "color", "paper__title")
            .order_by("-created_at")[:RECENT]
        ),
        "projects": list(projects[:RECENT]),
        "reviews_waiting": reviews,
        "alerts": list(unread[:INBOX]),
        "alerts_unread": unread.count(),
        "engines": engines,
        "saved_searches": saved_searches_recent(limit=RECENT),
        "saved_searches_total": saved_searches_visible(SavedSearch.objects.all()).count(),
    }


def mcp_client_config(request: HttpRequest) -> str:
    """A client configuration for this server, as MCP clients' JSON files spell it."""
    url = request.build_absolute_uri("/mcp")
    config: dict[str, Any] = {"mcpServers": {settings.MCP_SERVER_NAME: {"url": url}}}
    if settings.MCP_AUTH_TOKEN:
        config["mcpServers"][settings.MCP_SERVER_NAME]["headers"] = {
            "Authorization": "Bearer <MCP_AUTH_TOKEN>"
        }
    return json.dumps(config, indent=2)


@require_safe
def home(request: HttpRequest) -> HttpResponse:
    signed_in = request.user.is_authenticated and request.user.is_staff
    context: dict[str, Any] = {
        **admin.site.each_context(request),
        "title": "Research MCP",
        "signed_in": signed_in,
        "api_enabled": settings.API_ENABLED,
        "mcp_enabled": settings.MCP_ENABLED,
        "read_only": settings.MCP_READ_ONLY,
    }
    if signed_in:
        context.update(home_overview())
    else:
        context["mcp_config"] = mcp_client_config(request)
        context["is_nav_sidebar_enabled"] = False  # it would only say "no permission"
    return render(request, "projects/home.html", context)


@require_POST
@staff_member_required
def alerts_read(request: HttpRequest) -> HttpResponse:
    """Mark one alert (`alert`) or every alert (`all`) read, then back to the home page.
    Refused on a read-only server."""
    if settings.MCP_READ_ONLY:
        return HttpResponse("The server is read-only.", status=403)
    if request.POST.get("all"):
        alerts_mark_read(everything=True)
    elif (alert_id := request.POST.get("alert", "")).isdigit():
        alerts_mark_read(alert_ids=[int(alert_id)])
    return HttpResponseRedirect(reverse("home") + "#home-alerts")

"""Reading saved searches, their runs and the alerts, for the tools, the admin and feeds."""

from __future__ import annotations

import datetime
from typing import Any

from django.db.models import F, OuterRef, QuerySet, Subquery

from papers.models import Paper
from papers.scoping import alerts_visible, project_scope
from papers.selectors import paper_brief, with_relations
from projects.models import Alert, SavedSearch, SavedSearchRun
from projects.permissions import saved_searches_visible


def saved_searches_list(searches: QuerySet[SavedSearch]) -> list[dict[str, Any]]:
    """These saved searches with their settings and their last run's summary, by name."""
    searches = searches.order_by("name")
    latest = SavedSearchRun.objects.filter(search=OuterRef("pk")).order_by("-started_at")
    with_last = searches.annotate(last_run_id=Subquery(latest.values("pk")[:1]))
    rows = list(with_last)
    runs = SavedSearchRun.objects.in_bulk([s.last_run_id for s in rows if s.last_run_id])
    return [saved_search_summary(s, runs.get(s.last_run_id)) for s in rows]


def saved_searches_recent(*, limit: int) -> list[dict[str, Any]]:
    """The home page's panel: the saved searches that ran last first (then those never run,
    by name), each with its last run (None before the first). Two queries whatever the
    number of searches and runs (the latest run per search through
    savedsearchrun_recent_idx)."""
    latest = SavedSearchRun.objects.filter(search=OuterRef("pk")).order_by("-started_at", "-id")
    searches = list(
        saved_searches_visible(SavedSearch.objects.all())
        .annotate(last_run_id=Subquery(latest.values("pk")[:1]))
        .order_by(F("last_run_at").desc(nulls_last=True), "name")
        .only(
            "pk", "name", "enabled", "schedule", "interval_seconds", "next_run_at", "last_run_at"
        )[:limit]
    )
    runs = SavedSearchRun.objects.only("pk", "status", "new", "started_at", "finished_at").in_bulk(
        [s.last_run_id for s in searches if s.last_run_id]
    )
    return [{"search": s, "last_run": runs.get(s.last_run_id)} for s in searches]


def saved_search_summary(search: SavedSearch, last_run: SavedSearchRun | None) -> dict[str, Any]:
    summary: dict[str, Any] = {
        "name": search.name,
        "query": search.query,
        "engines": search.engines or "all available",
        "schedule": search.schedule
        if not search.interval_seconds
        else f"every {search.interval_seconds} s",
        "enabled": search.enabled,
        "project_id": search.project_id,
        "next_run_at": search.next_run_at.isoformat() if search.next_run_at else None,
    }
    if search.filters:
        summary["filters"] = search.filters
    if last_run is not None:
        summary["last_run"] = {
            "at": last_run.started_at.isoformat(),
            "status": last_run.status,
            "new": last_run.new,
            "found": last_run.found,
        }
    return summary


def run_new_papers(run: SavedSearchRun) -> list[dict[str, Any]]:
    """The run's new papers (brief records), best first."""
    papers = {p.pk: p for p in with_relations(Paper.objects.filter(pk__in=run.new_paper_ids))}
    return [paper_brief(papers[pk]) for pk in run.new_paper_ids if pk in papers]


def search_runs_with_new(search: SavedSearch, *, limit: int = 20) -> QuerySet[SavedSearchRun]:
    """The search's latest runs that found new papers, newest first (its feed)."""
    return SavedSearchRun.objects.filter(search=search, new__gt=0).order_by("-started_at")[:limit]


def alerts_list(
    *,
    since: datetime.datetime | None = None,
    unread: bool = False,
    limit: int = 20,
    project_ids: list[str] | None = None,
) -> list[Alert]:
    """Alerts newest first: raised after `since`, only unread ones, only of these projects
    when `project_ids` is given (a client scoped to collections: not the library-wide ones,
    which name papers outside them)."""
    alerts = Alert.objects.all()
    allowed = project_scope(None)  # the client's collections, the principal's projects
    if allowed is not None:
        alerts = alerts.filter(alerts_visible(allowed))
    if since is not None:
        alerts = alerts.filter(created_at__gt=since)
    if unread:
        alerts = alerts.filter(read_at__isnull=True)
    if project_ids is not None:
        alerts = alerts.filter(project_id__in=project_ids)
    return list(alerts.order_by("-created_at", "-id")[:limit])


def alert_as_dict(alert: Alert) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "id": alert.pk,
        "kind": alert.kind,
        "title": alert.title,
        "created_at": alert.created_at.isoformat(),
        "read": alert.read_at is not None,
    }
    if alert.body:
        entry["body"] = alert.body
    if alert.project_id:
        entry["project_id"] = alert.project_id
    if alert.paper_id:
        entry["paper_id"] = alert.paper_id
    if alert.link:
        entry["link"] = alert.link
    if alert.data:
        entry["data"] = alert.data
    return entry


def alerts_markdown(alerts: list[Alert]) -> str:
    """Alerts as a Markdown list (the alerts://recent resource)."""
    if not alerts:
        return "No alerts."
    lines = ["# Recent alerts", ""]
    for alert in alerts:
        mark = "" if alert.read_at else " **(unread)**"
        lines.append(f"- {alert.created_at:%Y-%m-%d %H:%M} [{alert.kind}] {alert.title}{mark}")
    return "\n".join(lines)

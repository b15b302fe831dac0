"""The retraction watch: which papers to check, the check (engines/retractions.py), and an
alert to every project that holds a flagged paper. It lives here because alerts and
projects are this app's (docs/LAYERS.md).

Three ways in, one service:
- on demand: the `check_retractions` tool and `manage.py check_retractions` call
  `retractions_check` (a project's papers, or the client's library, least recently
  checked first, at most RETRACTION_CHECK_LIMIT);
- on a schedule: `retractions_check_due` (Celery task `projects.check_retractions_due`),
  the papers never checked or checked over RETRACTION_RECHECK_DAYS ago;
- on import: `retractions_check_soon` queues a check of papers just added (a Celery task
  with a broker, a thread of this process on the embedded default) once the adding
  transaction commits, so adding never waits for Crossref or OpenAlex.

Alerts: kind `retraction` (retracted, withdrawn, expression of concern) keyed
`retraction:<paper_id>:<project_id>`, or `correction` keyed `correction:<paper_id>:<project_id>`
(so a later retraction of a corrected paper still alerts); a flagged paper no project
holds gets one library alert (`...:<paper_id>:library`). `notify` raises each key once, so
checking again never repeats an alert.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction
from django.db.models import F

from engines.retractions import RetractionCheck, papers_check_retractions, papers_due
from papers.models import Paper
from papers.retractions import RETRACTION_LIKE, notice_label
from papers.scoping import papers_in_project, papers_in_scope
from projects.alerts import notify
from projects.dispatch import retraction_check_send
from projects.models import Alert, Project, ProjectPaper
from projects.selectors import project_get

logger = logging.getLogger(__name__)


@dataclass
class RetractionReport:
    check: RetractionCheck
    alerts: int
    remaining: int  # papers of the selection with a DOI left for a later check

    def summary(self) -> dict[str, Any]:
        """The tool's answer: counts, and only the flagged papers."""
        flagged = Paper.objects.filter(pk__in=list(self.check.flagged)).only(
            "paper_id", "citekey", "title", "retraction_status", "retraction_notices"
        )
        return {
            "checked": len(self.check.checked),
            "failed": len(self.check.failed),
            "remaining": self.remaining,
            "flagged": [
                {
                    "paper_id": paper.pk,
                    "citekey": paper.citekey,
                    "title": paper.title[:120],
                    "status": paper.retraction_status,
                    "notice": next(
                        (n["doi"] for n in paper.retraction_notices if n.get("doi")), None
                    ),
                    "new": paper.pk in self.check.changed,
                }
                for paper in flagged
            ],
            "alerts_raised": self.alerts,
            "engines": {
                engine: {k: v for k, v in status.items() if k in ("status", "reason")}
                for engine, status in self.check.engines.items()
            },
        }


def retractions_check(
    *,
    project_ref: str | None = None,
    scope: Sequence[str] | None = None,
    paper_ids: Sequence[int] | None = None,
    limit: int | None = None,
) -> RetractionReport:
    """Check a project's papers, given papers, or the client's whole library (each with a
    DOI), least recently checked first, at most `limit` (RETRACTION_CHECK_LIMIT), and
    alert the projects holding what is flagged. Raises NotFound for an unknown project."""
    papers = papers_in_scope(scope)
    if project_ref:
        papers = papers.filter(pk__in=papers_in_project(project_get(ref=project_ref, scope=scope)))
    if paper_ids is not None:
        papers = papers.filter(pk__in=list(paper_ids))
    papers = papers.filter(doi__isnull=False).order_by(
        F("retraction_checked_at").asc(nulls_first=True), "paper_id"
    )
    return _check(papers, limit)


def retractions_check_due(*, limit: int | None = None) -> dict[str, Any]:
    """The scheduled check: papers never checked or checked over RETRACTION_RECHECK_DAYS
    ago, at most `limit` (RETRACTION_CHECK_LIMIT) per run. For Celery beat and the
    in-process scheduler; returns the counts (checked, failed, flagged, remaining,
    alerts_raised)."""
    report = _check(papers_due(older_than_days=settings.RETRACTION_RECHECK_DAYS), limit)
    return {
        "checked": len(report.check.checked),
        "failed": len(report.check.failed),
        "flagged": len(report.check.flagged),
        "remaining": report.remaining,
        "alerts_raised": report.alerts,
    }


def retractions_check_soon(paper_ids: Sequence[int]) -> None:
    """Queue a check of these just-added papers once the current transaction commits
    (at once outside one), RETRACTION_CHECK_LIMIT papers a task; never waits for the
    engines."""
    ids = [int(pk) for pk in paper_ids]
    if not ids or not settings.RETRACTION_CHECK_ON_IMPORT:
        return
    size = settings.RETRACTION_CHECK_LIMIT
    for start in range(0, len(ids), size):
        chunk = ids[start : start + size]
        transaction.on_commit(lambda chunk=chunk: _send(chunk))  # type: ignore[misc]


def _send(paper_ids: list[int]) -> None:
    try:
        retraction_check_send(paper_ids=paper_ids)
    except Exception as exc:  # broker down: the scheduled check picks these papers up
        logger.warning("Could not queue a retraction check (%s); the schedule will", exc)


def _check(papers: Any, limit: int | None) -> RetractionReport:
    limit = settings.RETRACTION_CHECK_LIMIT if limit is None else limit
    ids = list(papers.values_list("paper_id", flat=True)[: limit + 1])
    remaining = max(0, papers.count() - limit) if len(ids) > limit else 0
    check = papers_check_retractions(paper_ids=ids[:limit])
    return RetractionReport(check, retraction_alerts(check), remaining)


def retraction_alerts(check: RetractionCheck) -> int:
    """Alert every project holding a paper the check flagged (once per paper, project
    and kind); returns how many alerts were raised now."""
    raised = 0
    holders: dict[int, list[Project]] = {}
    links = ProjectPaper.objects.filter(paper_id__in=list(check.flagged)).select_related("project")
    for link in links:
        holders.setdefault(link.paper_id, []).append(link.project)
    for paper in Paper.objects.filter(pk__in=list(check.flagged)):
        status = paper.retraction_status
        kind = Alert.Kind.RETRACTION if status in RETRACTION_LIKE else Alert.Kind.CORRECTION
        notice = next((n["doi"] for n in paper.retraction_notices if n.get("doi")), "")
        body = f"Notice: https://doi.org/{notice}" if notice else "Reported by OpenAlex."
        for project in holders.get(paper.pk, [None]):  # type: ignore[list-item]
            where = project.pk if project is not None else "library"
            alert = notify(
                str(kind),
                f"{notice_label(status)}: {paper.title}",
                key=f"{kind}:{paper.pk}:{where}",
                body=body,
                project=project,
                paper=paper,
                link=f"/admin/papers/paper/{paper.pk}/change/",
                data={"status": status, "notice_doi": notice or None, "doi": paper.doi},
            )
            raised += alert is not None
    return raised

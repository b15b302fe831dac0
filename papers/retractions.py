"""Retractions, corrections and expressions of concern: the words the sources use, the one
status a paper keeps (`Paper.retraction_status`), and writing what a check found.

The sources: Crossref update notices (`updated-by` on the work, `update-to` on the notice;
types from https://www.crossref.org/documentation/crossmark/) and OpenAlex `is_retracted`.
engines/retractions.py asks them; engines/citecheck/checks.py reads the same mapping for the
works a draft cites. A notice is kept as {"type", "doi" (of the notice), "date", "source"
(crossref | openalex), "reported_by" (Crossref's own source: publisher, retraction-watch)}.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import Any

from django.db import transaction

from papers.models import Paper

RETRACTED = "retracted"
WITHDRAWN = "withdrawn"
CONCERN = "expression_of_concern"
CORRECTED = "corrected"

# Crossref update types (and OpenAlex's is_retracted, as "retraction") by the status they
# give the paper. Partial retractions leave most of the paper standing: a correction.
UPDATE_STATUSES = {
    "retraction": RETRACTED,
    "removal": RETRACTED,
    "withdrawal": WITHDRAWN,
    "expression_of_concern": CONCERN,
    "partial_retraction": CORRECTED,
    "correction": CORRECTED,
    "erratum": CORRECTED,
    "corrigendum": CORRECTED,
    "addendum": CORRECTED,
}
# The gravest status wins when a paper has several notices.
SEVERITY = (RETRACTED, WITHDRAWN, CONCERN, CORRECTED)
# Statuses that raise a `retraction` alert (the rest raise a `correction` alert).
RETRACTION_LIKE = frozenset({RETRACTED, WITHDRAWN, CONCERN})
NOTICE_KEYS = ("type", "doi", "date", "source", "reported_by")


def update_status(update_type: object) -> str:
    """The status an update type gives ('retraction' -> 'retracted'); '' for other types
    (new versions, comments, ...)."""
    return UPDATE_STATUSES.get(str(update_type or "").replace("-", "_").lower(), "")


def status_of(notices: Iterable[dict[str, Any]]) -> str:
    """The gravest status the notices give; '' when none gives one."""
    found = {update_status(notice.get("type")) for notice in notices}
    return next((status for status in SEVERITY if status in found), "")


def notice_label(status: str) -> str:
    """'Retracted', 'Expression of concern', ... for exports and the admin."""
    return status.replace("_", " ").capitalize()


def retraction_note(paper: Paper) -> str:
    """What exports say about a flagged paper, e.g. 'Retracted: 10.1016/s0140-6736(10)60175-4'
    (the notice's DOI when one is known); '' for a paper with no status."""
    status = paper.retraction_status
    if not status:
        return ""
    dois = [
        str(notice["doi"])
        for notice in paper.retraction_notices or []
        if notice.get("doi") and update_status(notice.get("type")) == status
    ]
    return f"{notice_label(status)}: {dois[0]}" if dois else notice_label(status)


def _merged(old: list[dict[str, Any]], new: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Notices of both lists, each (type, notice DOI, source) once, the newer entry kept."""
    merged: dict[tuple[str, str, str], dict[str, Any]] = {}
    for notice in [*old, *new]:
        key = (str(notice.get("type", "")), str(notice.get("doi", "")), str(notice.get("source")))
        merged[key] = {k: notice[k] for k in NOTICE_KEYS if notice.get(k)}
    return list(merged.values())


@transaction.atomic
def paper_retraction_update(
    *, paper_id: int, notices: list[dict[str, Any]], complete: bool, checked_at: datetime
) -> tuple[str, str]:
    """Record what a check found for one paper; returns (status before, status after).

    `complete`: every source asked answered, so the notices are the whole truth: they
    replace the stored ones and the paper counts as checked at `checked_at`. Otherwise
    (a source failed) the notices found are added to the stored ones and the paper stays
    due: a failed source never makes a paper look clean. Raises Paper.DoesNotExist.
    """
    paper = (
        Paper.objects.select_for_update()
        .only("paper_id", "retraction_status", "retraction_notices", "retraction_checked_at")
        .get(pk=paper_id)
    )
    before = paper.retraction_status
    kept = _merged([], notices) if complete else _merged(paper.retraction_notices or [], notices)
    after = status_of(kept)
    fields: dict[str, Any] = {"retraction_notices": kept, "retraction_status": after}
    if complete:
        fields["retraction_checked_at"] = checked_at
    Paper.objects.filter(pk=paper_id).update(**fields)
    return before, after


def papers_retraction_clear(*, paper_ids: list[int], checked_at: datetime) -> None:
    """Record that every source answered with no notice for these papers: no status, no
    notices, checked at `checked_at`. One statement for the whole batch (most papers of a
    check), where paper_retraction_update takes one transaction a paper."""
    Paper.objects.filter(pk__in=paper_ids).update(
        retraction_status="", retraction_notices=[], retraction_checked_at=checked_at
    )

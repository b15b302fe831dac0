"""Checking papers for retractions, corrections and expressions of concern.

The papers' DOIs go to Crossref (the works' `updated-by`, and the notices whose
`update-to` names them) and OpenAlex (`is_retracted`), BATCH_DOIS at a time, each batch one
`get_update_notices` call per engine through the runner (rate limits, retries, the breaker,
deadlines; never the cache, so a check always asks the source). Batches go out ROUND_CALLS
calls at a time, so a long check never queues more than the engines' rate limits pass in
one deadline.

A paper is checked when every engine asked answered for its DOI: its notices then replace
the stored ones (papers.retractions.paper_retraction_update). When an engine fails (down,
timed out, rate limited), what the others found is still recorded (a retraction is a
retraction), but the paper is not marked checked and stays due: an unreachable source
never makes a paper look clean. The alerts are raised a layer up (projects/retractions.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import timedelta
from typing import Any

from django.db.models import F, Q, QuerySet
from django.utils import timezone

from engines.base import UPDATES
from engines.registry import registry
from engines.runner import EngineCall, EngineOutcome, run_calls
from papers.models import Paper
from papers.retractions import paper_retraction_update, papers_retraction_clear

# The engines asked, when enabled and available.
RETRACTION_ENGINES = ("crossref", "openalex")
BATCH_DOIS = 50
# Calls started together: two engines x this many batches of BATCH_DOIS DOIs.
ROUND_CALLS = 8


@dataclass
class RetractionCheck:
    """What one check did: papers checked (every engine answered), failed (not checked:
    an engine failed, or none could be asked), flagged (with a status now, as ids), and
    newly flagged (no status before, or a different one), per engine the last status."""

    checked: list[int] = field(default_factory=list)
    failed: list[int] = field(default_factory=list)
    flagged: dict[int, str] = field(default_factory=dict)
    changed: dict[int, tuple[str, str]] = field(default_factory=dict)
    engines: dict[str, dict[str, Any]] = field(default_factory=dict)


def retraction_engine_ids() -> list[str]:
    """The engines a check asks: Crossref and OpenAlex, where enabled and usable here."""
    engines = registry.engines()
    return [
        engine_id
        for engine_id in RETRACTION_ENGINES
        if engine_id in engines
        and UPDATES in engines[engine_id].operations
        and engines[engine_id].is_available()
    ]


def papers_due(*, older_than_days: int) -> QuerySet[Paper]:
    """Papers with a DOI never checked, or last checked over `older_than_days` ago,
    never-checked first, then longest ago (served by paper_retraction_due_idx). DOIs
    holding ',' or '|' are left out: the sources' batch filters cannot name them, so they
    would stay never-checked and first in line, and the schedule would stall on them."""
    cutoff = timezone.now() - timedelta(days=older_than_days)
    return (
        Paper.objects.filter(doi__isnull=False)
        .exclude(doi__contains=",")
        .exclude(doi__contains="|")
        .filter(Q(retraction_checked_at__isnull=True) | Q(retraction_checked_at__lt=cutoff))
        .order_by(F("retraction_checked_at").asc(nulls_first=True), "paper_id")
    )


def papers_check_retractions(*, paper_ids: Sequence[int]) -> RetractionCheck:
    """Ask the engines about these papers (those with a DOI; the rest are skipped) and
    record what they say on each paper. Never raises for an engine's failure: the papers
    it concerns are reported `failed`. Makes no network call inside a transaction."""
    report = RetractionCheck()
    rows = list(
        Paper.objects.filter(pk__in=list(paper_ids), doi__isnull=False).values_list(
            "paper_id", "doi"
        )
    )
    by_doi: dict[str, list[int]] = {}
    for paper_id, doi in rows:
        by_doi.setdefault(str(doi).lower(), []).append(paper_id)
    engine_ids = retraction_engine_ids()
    if not engine_ids:
        report.failed = [paper_id for paper_id, _ in rows]
        report.engines = {e: {"status": "unavailable"} for e in RETRACTION_ENGINES}
        return report
    dois = list(by_doi)
    batches = [dois[i : i + BATCH_DOIS] for i in range(0, len(dois), BATCH_DOIS)]
    calls = [EngineCall.update_notices(e, batch) for batch in batches for e in engine_ids]
    outcomes: list[EngineOutcome] = []
    for start in range(0, len(calls), ROUND_CALLS):
        outcomes += run_calls(calls[start : start + ROUND_CALLS])

    answered: dict[str, set[str]] = {doi: set() for doi in dois}
    notices: dict[str, list[dict[str, Any]]] = {doi: [] for doi in dois}
    for outcome in outcomes:
        report.engines[outcome.engine] = outcome.summary()
        if not outcome.ok:
            continue
        for entry in outcome.result or []:
            doi = str(entry.get("doi") or "").lower()
            if doi in answered:
                answered[doi].add(outcome.engine)
                notices[doi] += [
                    {**notice, "source": outcome.engine} for notice in entry.get("notices") or []
                ]
    now = timezone.now()
    clean = [
        paper_id
        for doi, ids in by_doi.items()
        if answered[doi] >= set(engine_ids) and not notices[doi]
        for paper_id in ids
    ]
    papers_retraction_clear(paper_ids=clean, checked_at=now)
    report.checked += clean
    for doi, paper_ids_of_doi in by_doi.items():
        complete = answered[doi] >= set(engine_ids)
        if complete and not notices[doi]:
            continue
        for paper_id in paper_ids_of_doi:
            try:
                before, after = paper_retraction_update(
                    paper_id=paper_id, notices=notices[doi], complete=complete, checked_at=now
                )
            except Paper.DoesNotExist:  # deleted meanwhile
                continue
            (report.checked if complete else report.failed).append(paper_id)
            if after:
                report.flagged[paper_id] = after
            if after and after != before:
                report.changed[paper_id] = (before, after)
    return report

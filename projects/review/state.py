"""What get_session, start_review and decide show of a review: its state and stage, the
pending checkpoint with what each action does there, a page of candidates at a search's
checkpoint, the state of the extraction at `extract`, PRISMA numbers, and what to do next.

Apart from selectors.py (the reads every interface shares: counts, candidates, exports)
because the extract checkpoint's payload reads the extraction (extract_stage.py), which
itself resolves reviews through selectors.py.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings

from core.errors import InvalidInput
from projects.models import ReviewCheckpoint, ReviewSession
from projects.review.extract_stage import extract_status
from projects.review.prisma import prisma_counts
from projects.review.screening import screening_status
from projects.review.selectors import (
    review_candidates,
    review_counts,
    review_decisions,
    review_pending_checkpoint,
)

# A checkpoint's page of candidates (decide, get_session): five records with abstracts cut
# at ABSTRACT_PREVIEW_CHARS keep an answer within the token budget of docs/REVIEW.md;
# screen_next gives whole abstracts, get_session pages through the rest.
DEFAULT_PAGE = 5
ABSTRACT_PREVIEW_CHARS = 200
# Authors a checkpoint page names per record (then "et al.").
AUTHORS_SHOWN = 3
# The plan as shown past its own checkpoint: what was searched and the criteria to screen
# by; the rationale and the notes of rejected rounds were shown at the plan checkpoint.
PLAN_SHOWN = (
    "queries", "engines", "date_from", "date_to", "criteria", "snowball", "extract"
)  # fmt: skip
# Empty or default values a candidate's brief record leaves out of a checkpoint page, and
# fields a screening decision does not need: other names and links of the paper (paper_id
# refers to it; get_paper_details has the rest), the score the rank already orders.
EMPTY: tuple[Any, ...] = (None, [], {}, "", 0, False)
NOT_SHOWN = ("id", "citekey", "doi", "arxiv_id", "url", "pdf_url", "source", "score")

ACTIONS: dict[str, dict[str, str]] = {
    "plan": {
        "approve": "Search with this plan.",
        "edit": (
            "Change any of queries, engines, date_from, date_to, criteria, snowball, "
            "snowball_direction (citing, references, both), extract (true: extract data "
            "from the included studies after screening) and search, e.g. "
            'data={"queries": ["..."], "snowball": true, "extract": true}.'
        ),
        "reject": "Plan again; say what to change in the note.",
    },
    "screen": {
        "approve": (
            "Include every candidate (after screen_decide: keep those decisions, exclude "
            "the unscreened)."
        ),
        "edit": (
            'data={"include": [paper_id, ...]} keeps only those; {"exclude": [...], '
            '"reasons": {"<paper_id>": "why"}} drops those and keeps the rest.'
        ),
        "reject": "Discard these candidates and plan again; say why in the note.",
    },
    "expand": {
        "approve": "Include every paper the citation search found.",
        "edit": 'As at screen: data={"include": [...]} or {"exclude": [...], "reasons": {...}}.',
        "reject": "Exclude every paper the citation search found (the note is the reason).",
    },
    "extract": {
        "approve": (
            "Complete the review. Refused while there is no form or a disagreement between "
            "extractors is not adjudicated."
        ),
        "edit": "Refused: nothing to edit here (extract_record records values).",
        "reject": "Refused: inclusion was decided at screen.",
    },
}


def review_state(
    *, session: ReviewSession, offset: int = 0, limit: int = DEFAULT_PAGE
) -> dict[str, Any]:
    """Everything an agent needs to carry on: get_session's fields (session_id, query,
    is_complete, has_pending_checkpoint, current_checkpoint_kind, error), the state and
    stage, the counts, the pending checkpoint with a page of its candidates (abstracts
    included) and what each action would do, and the result once complete."""
    if not 0 <= offset <= settings.MAX_OFFSET or not 1 <= limit <= settings.MAX_PAGE_SIZE:
        raise InvalidInput(
            f"candidates_offset must be 0-{settings.MAX_OFFSET} and candidates_limit "
            f"1-{settings.MAX_PAGE_SIZE}.",
            field="candidates_limit",
        )
    pending = review_pending_checkpoint(session) if session.status == "waiting" else None
    counts = review_counts(session=session)
    state: dict[str, Any] = {
        "session_id": str(session.pk),
        "query": session.query,
        "domain": session.domain,
        "max_results": session.max_results,
        "state": session.status,
        "stage": session.stage,
        "is_complete": session.status == ReviewSession.Status.COMPLETE,
        "has_pending_checkpoint": pending is not None,
        "current_checkpoint_kind": pending.kind if pending else None,
        "iteration": session.iteration,
        "round": session.round,
        "error": session.error or None,
        "plan": _plan_shown(session.plan, pending),
        "counts": counts,
        "prisma": prisma_counts(session=session, counts=counts) if session.identification else None,
        "checkpoint": _checkpoint(session, pending, offset, limit) if pending else None,
        "decisions": review_decisions(session=session),
        "result": None,
        "project_id": session.project_id,
        "created_at": session.created_at.isoformat(timespec="seconds"),
        "updated_at": session.updated_at.isoformat(timespec="seconds"),
    }
    if state["is_complete"]:
        blocks = [counts, counts.get("citation_search", {})]
        screened = sum(block.get("screened", 0) for block in blocks)
        identified = sum(block.get("identified_total", 0) for block in blocks)
        included = counts["included_total"]
        state["result"] = {
            "included": included,
            "project_id": session.project_id,
            "summary": (
                f"{included} papers included of {screened} screened ({identified} records "
                f"identified); saved in project {session.project_id!r}."
            ),
        }
    if session.status == ReviewSession.Status.RUNNING:
        state["running"] = review_running(session)
    if pending is not None and pending.kind == ReviewCheckpoint.Kind.SCREEN:
        # Record-by-record screening: tallies, estimated recall, safe to stop.
        state["screening"] = screening_status(session=session)
    if session.search_log:
        # The log itself is in export_results and the review's search-log resource.
        state["searches_logged"] = len(session.search_log)
    state["next"] = _next_hint(session, pending)
    return state


def review_running(session: ReviewSession) -> dict[str, Any]:
    """What a running review is doing: the step (plan, search, expand), whether it has
    started (`started_at`) or waits for a worker, its attempt, and where it runs."""
    return {
        "step": {"screen": "search", "expand": "expand"}.get(session.stage, session.stage),
        "started_at": session.started_at.isoformat() if session.started_at else None,
        "attempt": session.attempt,
        "runs_in": (
            "background threads of this server"
            if settings.CELERY_TASK_ALWAYS_EAGER
            else "a Celery worker"
        ),
    }


def _checkpoint(
    session: ReviewSession, checkpoint: ReviewCheckpoint, offset: int, limit: int
) -> dict[str, Any]:
    shown: dict[str, Any] = {
        "sequence": checkpoint.sequence,
        "kind": checkpoint.kind,
        "round": checkpoint.round,
        "payload": checkpoint.payload,
        "actions": ACTIONS[checkpoint.kind],
    }
    if checkpoint.kind == ReviewCheckpoint.Kind.EXTRACT:
        # As things stand now: extractors record values while the checkpoint waits.
        shown["payload"] = extract_status(session=session)
    if checkpoint.kind in ("screen", "expand"):
        source = "search" if checkpoint.kind == "screen" else "citation"
        shown["payload"] = _search_payload_shown(session, checkpoint.payload, source)
        items, total = review_candidates(
            session=session, source=source, offset=offset, limit=limit, pending_only=True,
            abstract_chars=ABSTRACT_PREVIEW_CHARS,
        )  # fmt: skip
        more = offset + len(items) < total
        queries = list((session.plan or {}).get("queries", []))
        shown["candidates"] = {
            "total": total,
            "offset": offset,
            "limit": limit,
            "has_more": more,
            "next_offset": offset + len(items) if more else None,
            "items": [_item_shown(item, queries) for item in items],
        }
    return shown


def _plan_shown(plan: dict[str, Any] | None, pending: ReviewCheckpoint | None) -> Any:
    if not plan or (pending is not None and pending.kind == ReviewCheckpoint.Kind.PLAN):
        return plan or None
    return {key: plan[key] for key in PLAN_SHOWN if key in plan}


def _search_payload_shown(
    session: ReviewSession, payload: dict[str, Any], source: str
) -> dict[str, Any]:
    """A search checkpoint's payload without what the answer says elsewhere: its counts
    are the state's `counts`; each engine's outcome over the step, with the failure's
    message once, is `counts.sources`, so the per-query statuses (kept on the checkpoint,
    shown in the admin) and the notes that repeat a failure are left out."""
    key = "search" if source == "search" else "citations"
    sources = (session.identification or {}).get(key, {}).get("sources", {})
    failures = [
        str(summary.get("last_failure", {}).get("message") or "")
        for summary in sources.values()
        if summary.get("outcome") != "ok"
    ]
    notes = [
        note
        for note in payload.get("notes", [])
        if not any(message and message in note for message in failures)
    ]
    shown = {k: v for k, v in payload.items() if k not in ("counts", "engines", "notes")}
    if notes:
        shown["notes"] = notes
    return shown


def _item_shown(item: dict[str, Any], queries: list[str]) -> dict[str, Any]:
    """A candidate as a checkpoint page shows it: no empty or default fields, the first
    AUTHORS_SHOWN authors, the publication only when it says more than the venue, and the
    plan's queries that found it by number (1 = the plan's first query)."""
    shown = {
        key: value
        for key, value in item.items()
        if key not in NOT_SHOWN and (value not in EMPTY or key == "abstract")
    }
    if shown.get("publication") == shown.get("venue"):
        shown.pop("publication", None)
    authors = shown.get("authors") or []
    if len(authors) > AUTHORS_SHOWN:
        shown["authors"] = [*authors[:AUTHORS_SHOWN], "et al."]
    if "queries" in shown:
        shown["queries"] = [
            queries.index(query) + 1 if query in queries else query for query in shown["queries"]
        ]
    shown["status"] = item["status"]
    return shown


def _next_hint(session: ReviewSession, pending: ReviewCheckpoint | None) -> str:
    if session.status == ReviewSession.Status.COMPLETE:
        return "Complete: export_results(session_id, format) gives the included papers."
    if session.status == ReviewSession.Status.FAILED:
        return "Failed (see error); start a new review, or cleanup_review this one."
    if pending is not None and pending.kind == ReviewCheckpoint.Kind.EXTRACT:
        return (
            f"Waiting at checkpoint {pending.sequence} (extract): "
            + ("create the form with extraction_form, then " if not _has_form(session) else "")
            + "extract each included study with extract_next and extract_record, settle "
            "disagreements with extract_record(adjudicate=true), then "
            f"decide(session_id, 'approve', checkpoint={pending.sequence})."
        )
    if pending is not None:
        return (
            f"Waiting at checkpoint {pending.sequence} ({pending.kind}): show it to the person "
            f"and call decide(session_id, action, data, note, checkpoint={pending.sequence})."
        )
    return f"Working on {session.stage}: call get_session(session_id) again in a few seconds."


def _has_form(session: ReviewSession) -> bool:
    return session.extraction_forms.exists()

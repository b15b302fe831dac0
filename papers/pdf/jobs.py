"""attach_pdf in the background (docs/MCP.md): a download that outlasts the caller's wait goes
on without it, and the caller gets its outcome by asking again with the same arguments.

`pdf_attach_job` does at once what needs no network (the paper in scope, the url checked,
a PDF already in the library returned as it is, no known location refused), then runs the
download as a job and waits up to `wait_seconds` for it: a fast download answers with
its outcome; a slow one answers `{"job": {"state": "running", ...}}`. One job per paper and
url at a time: a second call while it runs joins it instead of downloading again.

The job's state lives in the engines cache (Redis when REDIS_URL is set, seen by every
process and worker; a file cache under the knowledge base otherwise, seen by this
machine's processes), as review steps keep theirs in the database: `running` under a lease
that outlasts the download (a process that dies mid-download leaves it to run out, and
the next call starts the job again), then the outcome, kept for OUTCOME_SECONDS and
handed to the first call that sees it. The PDF itself is in the library once attached.

The download runs where review steps run (papers/dispatch.py): a Celery worker when a
broker is configured, a thread of this process on the embedded default; never inside
the request that asked for it.
"""

from __future__ import annotations

import hashlib
import logging
import time
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from django.conf import settings
from django.core.cache import caches

from core.errors import DomainError
from papers.dispatch import pdf_attach_send
from papers.models import Paper
from papers.pdf import fetch
from papers.selectors import paper_brief, paper_get

logger = logging.getLogger(__name__)

RUNNING, ATTACHED, FAILED = "running", "attached", "failed"
# How long a finished job's outcome waits for a caller to collect it.
OUTCOME_SECONDS = 600
POLL_SECONDS = 0.2
# Locations attach_pdf may try in one job (pdf_url, arXiv, ACL Anthology, or one url).
MAX_LOCATIONS = 3


class JobFailed(DomainError):
    """A background download's failure, as it was raised in the job (same code, message
    and details, so the answer is the one an inline download would have given)."""

    def __init__(self, error: dict[str, Any]) -> None:
        details = {key: value for key, value in error.items() if key not in ("code", "message")}
        super().__init__(str(error.get("message", "The PDF download failed.")), **details)
        self.code = str(error.get("code", "error"))


def _cache() -> Any:
    return caches["engines"]


def job_key(paper_id: int, url: str | None) -> str:
    digest = hashlib.sha256((url or "").encode("utf-8", "surrogatepass")).hexdigest()[:16]
    return f"pdf-attach:{paper_id}:{digest}"


def lease_seconds() -> int:
    """Longer than any download the job can make (each location within its timeout)."""
    return MAX_LOCATIONS * int(settings.PDF_DOWNLOAD_TIMEOUT) + 60


def pdf_attach_job(
    *,
    ref: str | int,
    url: str | None = None,
    scope: Sequence[str] | None = None,
    wait_seconds: float,
) -> dict[str, Any]:
    """attach_pdf (papers.pdf.fetch.paper_pdf_attach) that returns by `wait_seconds`.

    Returns the attached paper's record (as paper_pdf_attach does), or, while the
    download goes on, the paper's brief record with `has_pdf` false and `job`: {state
    `running`, job_id, started_at, url}. Raises what paper_pdf_attach raises, at once for
    what needs no network and when collected for a failed download (same code and
    details).
    """
    paper = paper_get(ref=ref, scope=scope)
    target = fetch.checked_url(url)
    if target is None:
        current = fetch.intact_pdf(paper)
        if current is not None:
            return fetch.attached_record(paper, scope, current, tried=[])
        if not fetch.pdf_locations(paper):
            raise fetch.no_location(paper)
    key = job_key(paper.pk, target)
    state = _cache().get(key)
    if state is None:
        state = _start(key, paper.pk, target)
    deadline = time.monotonic() + max(0.0, wait_seconds)
    while state is not None and state["state"] == RUNNING and time.monotonic() < deadline:
        time.sleep(min(POLL_SECONDS, max(0.0, deadline - time.monotonic())))
        state = _cache().get(key)
    if state is None:  # the outcome was collected by another caller meanwhile
        state = {"state": RUNNING, "job_id": "", "started_at": "", "url": target}
    if state["state"] == RUNNING:
        return _running(paper, state)
    _cache().delete(key)  # collected: the next call starts afresh
    if state["state"] == FAILED:
        raise JobFailed(state["error"])
    paper.refresh_from_db()
    current = fetch.intact_pdf(paper)
    if current is None:  # replaced or removed since: say so rather than guess
        raise JobFailed({"code": "pdf_not_available", "message": "The PDF is gone again."})
    return fetch.attached_record(paper, scope, current, tried=state.get("tried", []))


def _start(key: str, paper_id: int, url: str | None) -> dict[str, Any] | None:
    job_id = uuid.uuid4().hex
    state = {
        "state": RUNNING,
        "job_id": job_id,
        "started_at": datetime.now(UTC).isoformat(timespec="seconds"),
        "url": url,
    }
    if not _cache().add(key, state, timeout=lease_seconds()):
        return _cache().get(key)  # another caller started it first: join that one
    try:
        pdf_attach_send(job_key=key, paper_id=paper_id, url=url, job_id=job_id)
    except Exception:
        _cache().delete(key)
        raise
    return state


def _running(paper: Paper, state: dict[str, Any]) -> dict[str, Any]:
    return {
        **paper_brief(paper),
        "has_pdf": False,
        "job": {key: state.get(key) for key in ("state", "job_id", "started_at", "url")},
        "hint": "Still downloading: call attach_pdf again with the same arguments to get the "
        "outcome.",
    }


def pdf_attach_run(*, job_key: str, paper_id: int, url: str | None) -> dict[str, Any]:
    """The job itself (papers.attach_pdf task): download and attach, then leave the
    outcome where the callers look for it. Never raises for a failed download."""
    try:
        record = fetch.paper_pdf_attach(ref=paper_id, url=url)
    except DomainError as error:
        logger.info("paper %s: background PDF download failed: %s", paper_id, error.message)
        outcome: dict[str, Any] = {"state": FAILED, "error": error.as_dict()}
    else:
        outcome = {"state": ATTACHED, "tried": record.get("tried", [])}
    _cache().set(job_key, outcome, timeout=OUTCOME_SECONDS)
    return {"paper_id": paper_id, **outcome}

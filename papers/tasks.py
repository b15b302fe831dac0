"""Background work on papers, run by a Celery worker (or in-process without a broker).

Thin wrappers over the services, which start them by name through papers/dispatch.py; the
names stay as they are, since messages already queued carry them."""

from __future__ import annotations

import logging
from typing import Any

from celery import shared_task
from django.db import DatabaseError

from core.errors import DomainError
from papers.passages.services import passages_index
from papers.pdf.errors import DownloadFailed
from papers.pdf.jobs import pdf_attach_run
from papers.pdf.services import pdf_download, pdf_source_markdown_save
from papers.search import semantic

logger = logging.getLogger(__name__)


@shared_task(
    name="papers.embed_papers",
    autoretry_for=(DatabaseError,),
    retry_backoff=5,
    retry_jitter=True,
    max_retries=3,
    # TASK_BATCH (2,000) papers take 2-15 s on a busy 2-core machine.
    soft_time_limit=300,
    time_limit=360,
    serializer="json",
)
def embed_papers_task(paper_ids: list[int]) -> dict[str, Any]:
    """Embed these papers (skipping unchanged text); returns the counts as JSON."""
    return semantic.embed_papers(paper_ids).as_dict()


@shared_task(
    name="papers.embed_papers_strong",
    autoretry_for=(DatabaseError,),
    retry_backoff=5,
    retry_jitter=True,
    max_retries=3,
    # STRONG_TASK_BATCH (200) papers: ~10 s on one free core, a minute on a busy machine.
    soft_time_limit=600,
    time_limit=660,
    serializer="json",
)
def embed_papers_strong_task(paper_ids: list[int]) -> dict[str, Any]:
    """Second-tier vectors for these papers (papers/search/strong_tier.py); JSON counts."""
    from papers.search import strong_tier

    return strong_tier.embed_papers_strong(paper_ids).as_dict()


class TransientDownloadError(Exception):
    """A download that may work later (timeout, refused connection, HTTP 5xx/429)."""


@shared_task(
    name="papers.download_pdf",
    autoretry_for=(TransientDownloadError,),
    retry_backoff=30,
    retry_jitter=True,
    max_retries=3,
    # PDF_DOWNLOAD_TIMEOUT (60 s by default) for the transfer, then checks and the write.
    soft_time_limit=180,
    time_limit=240,
    serializer="json",
    bind=True,
)
def download_pdf_task(self: Any, paper_id: int, url: str | None = None) -> dict[str, Any]:
    """Download the paper's pdf_url (or `url`) and attach it. Permanent failures (refused
    address, 404, not a PDF, too large) are reported in the result, not retried; nor is
    anything in-process, where a retry would block the caller."""
    try:
        record = pdf_download(paper_id=paper_id, url=url)
    except DownloadFailed as error:
        if error.retryable and not self.request.is_eager:
            raise TransientDownloadError(error.message) from error
        logger.warning("paper %s: PDF download failed: %s", paper_id, error.message)
        return {"paper_id": paper_id, "status": "failed", "error": error.as_dict()}
    except DomainError as error:
        logger.warning("paper %s: PDF download failed: %s", paper_id, error.message)
        return {"paper_id": paper_id, "status": "failed", "error": error.as_dict()}
    return {
        "paper_id": paper_id,
        "status": "attached",
        "sha256": record.sha256,
        "page_count": record.page_count,
    }


@shared_task(
    name="papers.pdf_source_markdown",
    autoretry_for=(DatabaseError,),
    retry_backoff=5,
    retry_jitter=True,
    max_retries=3,
    # About 10 ms a page; a 500-page book takes a few seconds.
    soft_time_limit=120,
    time_limit=150,
    serializer="json",
)
def pdf_source_markdown_task(paper_id: int, replace: bool = False) -> dict[str, Any]:
    """Make the paper's source markdown from its PDF (keeping a hand-imported source unless
    `replace`)."""
    asset = pdf_source_markdown_save(paper_id=paper_id, replace=replace)
    if asset is None:
        return {"paper_id": paper_id, "status": "kept"}
    return {"paper_id": paper_id, "status": "converted", "size": asset.size}


@shared_task(
    name="papers.attach_pdf",
    # Up to papers.pdf.jobs.MAX_LOCATIONS downloads of PDF_DOWNLOAD_TIMEOUT (60 s) each.
    soft_time_limit=300,
    time_limit=330,
    serializer="json",
)
def attach_pdf_task(job_key: str, paper_id: int, url: str | None = None) -> dict[str, Any]:
    """attach_pdf's background job (papers/pdf/jobs.py): the outcome goes where its callers
    poll for it. Not retried: a caller who wants another try calls attach_pdf again."""
    return pdf_attach_run(job_key=job_key, paper_id=paper_id, url=url)


@shared_task(
    name="papers.index_passages",
    autoretry_for=(DatabaseError,),
    retry_backoff=5,
    retry_jitter=True,
    max_retries=3,
    # About 30 pages a second to split and embed; a 500-page book takes under a minute.
    soft_time_limit=300,
    time_limit=330,
    serializer="json",
)
def index_passages_task(paper_id: int, force: bool = False) -> dict[str, Any]:
    """Rebuild the passage index of the paper's PDF (papers/passages/services.py); a file
    that cannot be read is reported in the result, not retried."""
    try:
        return passages_index(paper_id=paper_id, force=force).as_dict()
    except DomainError as error:
        logger.warning("paper %s: passages not indexed: %s", paper_id, error.message)
        return {"paper_id": paper_id, "status": "failed", "error": error.as_dict()}

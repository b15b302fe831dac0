"""Starting the papers app's background work (papers/tasks.py), by task name.

Services call these and never import the tasks, which call the services (core/tasks.py says
why). On the embedded default (CELERY_TASK_ALWAYS_EAGER) the work runs here and now with
`apply()` (`delay()` would also set up a broker connection and warn that none is
configured); with a broker it goes to a worker. Callers choose when: most enqueue from
`transaction.on_commit`.
"""

from __future__ import annotations

import logging
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from django.conf import settings
from django.db import connections

from core.tasks import registered_task

logger = logging.getLogger(__name__)

EMBED_PAPERS = "papers.embed_papers"
EMBED_PAPERS_STRONG = "papers.embed_papers_strong"
DOWNLOAD_PDF = "papers.download_pdf"
PDF_SOURCE_MARKDOWN = "papers.pdf_source_markdown"
ATTACH_PDF = "papers.attach_pdf"
INDEX_PASSAGES = "papers.index_passages"
# Background PDF downloads this process runs at once on the embedded default.
ATTACH_PDF_THREADS = 4


def embed_papers_enqueue(paper_ids: list[int]) -> None:
    """Embed these papers; in-process, a failure is raised (the caller logs it)."""
    task = registered_task(EMBED_PAPERS)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        task.apply(args=[paper_ids], throw=True)
    else:
        task.delay(paper_ids)


def embed_papers_strong_enqueue(paper_ids: list[int]) -> None:
    """Queue the second-tier vectors of these papers for a worker (scale-out path only:
    the embedded default backfills in a thread of its own, papers/search/strong_tier.py)."""
    registered_task(EMBED_PAPERS_STRONG).delay(paper_ids)


def pdf_download_enqueue(paper_id: int) -> None:
    """Download the paper's pdf_url and attach it; the outcome is logged, not raised."""
    task = registered_task(DOWNLOAD_PDF)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        task.apply(args=[paper_id])
    else:
        task.delay(paper_id)


def pdf_source_markdown_enqueue(paper_id: int) -> None:
    """Make the paper's source markdown from its PDF, keeping a hand-imported source."""
    task = registered_task(PDF_SOURCE_MARKDOWN)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        task.apply(args=[paper_id], kwargs={"replace": False})
    else:
        task.delay(paper_id, replace=False)


def passages_index_enqueue(paper_id: int) -> None:
    """Rebuild the passage index of the paper's PDF (papers/passages); in-process, a
    failure is logged by the task and the attach it follows stands."""
    task = registered_task(INDEX_PASSAGES)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        task.apply(args=[paper_id])
    else:
        task.delay(paper_id)


def pdf_attach_send(*, job_key: str, paper_id: int, url: str | None, job_id: str) -> None:
    """Start attach_pdf's background job (papers/pdf/jobs.py) under `job_id`: on a Celery
    worker with a broker, else on a thread of this process, never in the caller's request
    (the same split as review steps, projects/dispatch.py). Raises whatever the broker
    raises when it cannot take the message."""
    task = registered_task(ATTACH_PDF)
    args = (job_key, paper_id, url)
    if settings.CELERY_TASK_ALWAYS_EAGER:
        _attach_pool().submit(_run_here, task, args, job_id)
        return
    task.apply_async(args=args, task_id=job_id)


_pool_lock = threading.Lock()
_pool: ThreadPoolExecutor | None = None


def _attach_pool() -> ThreadPoolExecutor:
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(ATTACH_PDF_THREADS, thread_name_prefix="attach-pdf")
        return _pool


def _run_here(task: Any, args: tuple[str, int, str | None], job_id: str) -> None:
    try:
        task.apply(args=args, task_id=job_id)
    except Exception:  # the job records its own failures; this is a bug around it
        logger.exception("attach_pdf job for paper %s failed", args[1])
    finally:
        connections.close_all()  # this thread's connections; the pool thread lives on

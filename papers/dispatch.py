"""Starting the papers app's background work (papers/tasks.py), by task name.

Services call these and never import the tasks, which call the services (core/tasks.py says
why). On the embedded default (CELERY_TASK_ALWAYS_EAGER) the work runs here and now with
`apply()` (`delay()` would also set up a broker connection and warn that none is
configured); with a broker it goes to a worker. Callers choose when: most enqueue from
`transaction.on_commit`.
"""

from __future__ import annotations

from django.conf import settings

from core.tasks import registered_task

EMBED_PAPERS = "papers.embed_papers"
EMBED_PAPERS_STRONG = "papers.embed_papers_strong"
DOWNLOAD_PDF = "papers.download_pdf"
PDF_SOURCE_MARKDOWN = "papers.pdf_source_markdown"


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

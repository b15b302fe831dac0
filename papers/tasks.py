"""Background work on papers, run by a Celery worker (or in-process without a broker)."""

from __future__ import annotations

from typing import Any

from celery import shared_task
from django.db import DatabaseError

from papers.search import semantic


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

"""Attaching a PDF makes its source markdown after commit on both setups: in-process on
the embedded default, by a real Celery worker where a broker is configured (CI's second
run, `make test-pg`), which shares this run's database and knowledge-base directory."""

from __future__ import annotations

import os
import time

import pytest
from django.conf import settings

from papers import assets
from papers.pdf import services
from papers.schemas import PaperRecord
from papers.services import paper_upsert
from tests.papers.pdf.builders import EXPOSITORY


@pytest.mark.django_db(transaction=True)
def test_source_markdown_is_made_after_commit_in_process_or_by_the_worker() -> None:
    if not settings.CELERY_TASK_ALWAYS_EAGER and not os.environ.get("CELERY_WORKER_RUNNING"):
        pytest.skip("a broker is configured but no worker was started (use make test-pg)")
    paper, _ = paper_upsert(record=PaperRecord.build(title="Beyond Summarization", year=2023))
    services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    deadline = time.monotonic() + 60
    while not paper.assets.filter(kind=assets.Kind.SOURCE).exists():
        assert time.monotonic() < deadline, "the source markdown was never made"
        time.sleep(0.2)
    text = assets.source_get(paper=paper).text
    assert text.startswith(services.CONVERTED_MARKER) and "<!-- page 4 -->" in text

"""A paper deleted while a background writer stores a row pointing at it (its embedding,
written by a Celery worker after the paper was saved). On PostgreSQL the two transactions
really interleave: before the delete locked its papers first, a writer could commit between
the cascade and the paper's own DELETE, which then failed on the foreign key (CI saw it as
an IntegrityError from deleting a paper a saved search had just added). SQLite runs write
transactions one at a time, so the interleaving cannot happen there."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest
from django.db import connection, transaction

from papers.models import Paper, PaperEmbedding, lock_papers
from papers.search import semantic
from papers.search.vector_store import EmbedOutcome

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(
        connection.vendor != "postgresql", reason="SQLite runs write transactions one at a time"
    ),
]


def in_thread(work: Callable[[], object], errors: list[str]) -> threading.Thread:
    def run() -> None:
        try:
            work()
        except Exception as exc:  # collected: the tests assert there are none
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            connection.close()

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def waiting_for_a_lock(thread: threading.Thread) -> bool:
    """True once `thread` is blocked (it has not finished after a moment)."""
    time.sleep(0.5)
    return thread.is_alive()


def without_its_embedding(paper: Paper) -> None:
    """Wait for the embedding saving the paper asked for (made at once in-process, soon by
    a worker), then delete it: the test's writer must insert a new row, not update one."""
    deadline = time.monotonic() + 15
    while time.monotonic() < deadline and not PaperEmbedding.objects.filter(paper=paper).exists():
        time.sleep(0.1)
    PaperEmbedding.objects.filter(paper=paper).delete()


def test_a_delete_that_starts_while_an_embedding_is_being_written_removes_both(
    make_paper: Callable[..., Paper],
) -> None:
    paper = make_paper("Sparse attention for long documents")
    without_its_embedding(paper)
    written, release = threading.Event(), threading.Event()
    errors: list[str] = []

    def write() -> None:  # the writer's side of the protocol, held open before its commit
        with transaction.atomic():
            assert lock_papers(Paper.objects.filter(pk=paper.pk), no_key=True) == {paper.pk}
            PaperEmbedding.objects.create(
                paper_id=paper.pk, model="m", dimensions=1, vector=b"\0" * 4, text_hash="h"
            )
            written.set()
            release.wait(10)

    writer = in_thread(write, errors)
    assert written.wait(10)
    deleter = in_thread(lambda: Paper.objects.filter(pk=paper.pk).delete(), errors)
    assert waiting_for_a_lock(deleter)
    release.set()
    writer.join(10)
    deleter.join(10)

    assert errors == []
    assert not Paper.objects.filter(pk=paper.pk).exists()
    assert not PaperEmbedding.objects.filter(paper_id=paper.pk).exists()


def test_an_embedding_written_while_its_paper_is_being_deleted_is_skipped(
    make_paper: Callable[..., Paper],
) -> None:
    paper = make_paper("Dense retrieval for open-domain questions")
    pk = paper.pk  # paper.delete() sets paper.pk to None
    deleted, release = threading.Event(), threading.Event()
    errors: list[str] = []
    outcomes: list[EmbedOutcome] = []
    semantic.load_model()  # loaded now, so the writer below waits only for the lock

    def delete() -> None:  # a delete held open before its commit
        with transaction.atomic():
            paper.delete()
            deleted.set()
            release.wait(10)

    deleter = in_thread(delete, errors)
    assert deleted.wait(10)
    writer = in_thread(lambda: outcomes.append(semantic.embed_papers([pk], force=True)), errors)
    assert waiting_for_a_lock(writer), (outcomes, errors)
    release.set()
    deleter.join(10)
    writer.join(10)

    assert errors == []
    assert [(o.embedded, o.missing) for o in outcomes] == [(0, 1)]
    assert not PaperEmbedding.objects.filter(paper_id=pk).exists()

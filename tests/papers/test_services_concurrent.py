"""Writers racing each other (engine searches, reviews, parallel clients) on the same new
papers: papers_upsert_retrying gives one paper per real paper and no error. On PostgreSQL
the race is real (two transactions commit the same DOI / citekey); SQLite serialises
writers, so there the test checks the same outcome without a collision."""

from __future__ import annotations

import threading
from collections.abc import Callable

import pytest
from django.db import connection

from papers.models import Paper
from papers.schemas import PaperRecord
from papers.services import papers_upsert_retrying

pytestmark = pytest.mark.django_db(transaction=True)


def race(make: Callable[[int], PaperRecord], runs: int = 10) -> list[str]:
    errors: list[str] = []
    for run in range(runs):
        barrier = threading.Barrier(2)

        def save(index: int, run: int = run, barrier: threading.Barrier = barrier) -> None:
            try:
                barrier.wait()
                papers_upsert_retrying(records=[make(run * 10 + index)])
            except Exception as exc:  # collected: the test asserts there are none
                errors.append(f"{type(exc).__name__}: {exc}")
            finally:
                connection.close()

        threads = [threading.Thread(target=save, args=(index,)) for index in range(2)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    return errors


def test_the_same_new_paper_saved_twice_at_once_is_one_paper() -> None:
    def shared(_: int) -> PaperRecord:
        return PaperRecord.build(
            title="A Shared Survey", authors=["Sam Shared"], year=2021, doi="10.9999/race.shared"
        )

    assert race(shared) == []
    assert Paper.objects.filter(doi="10.9999/race.shared").count() == 1


def test_different_papers_wanting_the_same_citekey_both_get_one() -> None:
    def similar(index: int) -> PaperRecord:
        return PaperRecord.build(title=f"Paper on topic {index}", authors=["Author B"], year=2021)

    assert race(similar) == []
    citekeys = list(Paper.objects.values_list("citekey", flat=True))
    assert len(citekeys) == 20 and len(set(citekeys)) == 20

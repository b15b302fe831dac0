"""An import on the embedded default leaves embedding to later: once it has passed
EAGER_INLINE_MAX records, none of its batches (however few papers a late batch touches)
embeds inline or wakes the second tier's background thread, which would otherwise embed
the whole import beside it (CPU, the SQLite writer and the models' memory). A small import
is embedded at once, like any edit."""

from __future__ import annotations

from typing import Any

import pytest

from papers.imports import RawItem, import_records
from papers.models import PaperEmbedding
from papers.schemas import PaperRecord
from papers.search import semantic, strong_tier
from tests.papers.search.builders import fake_strong, fresh_indexes  # noqa: F401 (fixtures)

pytestmark = pytest.mark.django_db


def items(count: int, start: int = 0) -> list[RawItem]:
    return [
        RawItem(
            f"line {i}",
            {
                "title": f"Protein folding study {i}",
                "abstract": "Predicting protein structure from sequence.",
                "authors": [f"Author {i}"],
                "year": 2020,
            },
        )
        for i in range(start, start + count)
    ]


def build(data: dict[str, Any]) -> PaperRecord:
    return PaperRecord.build(**data)


@pytest.fixture
def woken(
    fake_strong: str,  # noqa: F811
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> list[str]:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EMBEDDINGS_ENABLED = True
    calls: list[str] = []
    monkeypatch.setattr(strong_tier.Backfill, "wake", lambda self: calls.append("wake"))
    return calls


@pytest.fixture
def run_import(django_capture_on_commit_callbacks: Any) -> Any:
    """import_records with each batch's after-commit work run, as outside a test."""

    def run(*args: Any, **kwargs: Any) -> Any:
        with django_capture_on_commit_callbacks(execute=True):
            return import_records(*args, **kwargs)

    return run


def test_a_large_import_embeds_nothing_inline_after_its_first_batches(
    woken: list[str], run_import: Any
) -> None:
    batch = 30  # under EAGER_INLINE_MAX, so only the bulk mode keeps later batches out
    assert batch < semantic.EAGER_INLINE_MAX < 3 * batch
    report = run_import(items(3 * batch + 5), build=build, batch_size=batch)

    assert report.created == 3 * batch + 5
    # The first batch came before the import was known to be large: embedded like an edit.
    assert PaperEmbedding.objects.count() == batch
    assert woken == ["wake"]  # by that first batch only


def test_a_small_import_is_embedded_at_once(woken: list[str], run_import: Any) -> None:
    report = run_import(items(5), build=build, batch_size=2)

    assert report.created == 5
    assert PaperEmbedding.objects.count() == 5
    assert woken == ["wake", "wake", "wake"]


def test_bulk_writes_ends_with_its_block(woken: list[str], run_import: Any) -> None:
    run_import(items(semantic.EAGER_INLINE_MAX + 1), build=build, batch_size=1000)
    assert PaperEmbedding.objects.count() == 0  # one batch over the limit: bulk anyway
    run_import(items(2, start=500), build=build)
    assert PaperEmbedding.objects.count() == 2  # a later edit-sized import: inline again


def test_a_bulk_import_on_sqlite_writes_with_a_larger_page_cache_then_restores_it() -> None:
    from django.db import connection

    from papers.imports import BULK_SQLITE_CACHE_KIB

    if connection.vendor != "sqlite":
        pytest.skip("SQLite's page cache")

    def cache_size() -> int:
        with connection.cursor() as cursor:
            cursor.execute("PRAGMA cache_size")
            return int(cursor.fetchone()[0])

    before = cache_size()
    during: list[int] = []
    report = import_records(
        items(60), build=build, batch_size=30, on_saved=lambda ids: during.append(cache_size())
    )
    assert report.created == 60
    # The first batch (30 records) is not yet bulk; the second, past EAGER_INLINE_MAX, is.
    assert during == [before, -BULK_SQLITE_CACHE_KIB]
    assert cache_size() == before

"""papers/search/postings.py's bulk load on PostgreSQL: a bulk import into an empty
library fills the posting table without its primary key and builds the key once after,
whether the import ends well or fails; a library with papers keeps its key throughout;
a key a killed import left missing is built again, duplicate rows dropped first."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from django.db import connection

from papers.imports import RawItem, import_records
from papers.schemas import PaperRecord
from papers.search import postings
from papers.search.semantic import EAGER_INLINE_MAX
from papers.services import papers_upsert

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="a PostgreSQL bulk path"),
]

# Batches large enough that the import is a bulk one from its first (papers/imports.py).
BATCH = EAGER_INLINE_MAX + 10
RECORDS = 3 * BATCH


@pytest.fixture(autouse=True)
def _key_restored() -> Iterator[None]:
    yield
    postings.restore_primary_key()  # whatever a failing test left, for the next ones


def _has_key() -> bool:
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_constraint WHERE conname = %s", [postings.PG_PRIMARY_KEY])
        return cursor.fetchone() is not None


def _items(count: int) -> list[RawItem]:
    return [
        RawItem(
            f"line {n}",
            data={"title": f"Parsing study number {n}", "year": 2020, "authors": ["Ann Lee"]},
        )
        for n in range(count)
    ]


def _build(data: dict[str, Any]) -> PaperRecord:
    return PaperRecord.build(**data)


def _postings() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {postings.POSTING_TABLE}")  # noqa: S608
        return int(cursor.fetchone()[0])


def test_a_bulk_import_into_an_empty_library_builds_the_key_once_after() -> None:
    key_during: list[bool] = []
    report = import_records(
        _items(RECORDS),
        build=_build,
        batch_size=BATCH,
        on_saved=lambda ids: key_during.append(_has_key()),
    )
    assert report.created == RECORDS
    assert key_during == [False, False, False]
    assert _has_key()
    assert _postings() > RECORDS


def test_a_library_with_papers_keeps_its_key() -> None:
    papers_upsert(records=[PaperRecord.build(title="Already here", year=2019)])
    key_during: list[bool] = []
    import_records(
        _items(RECORDS),
        build=_build,
        batch_size=BATCH,
        on_saved=lambda ids: key_during.append(_has_key()),
    )
    assert all(key_during) and _has_key()


def test_a_failed_import_builds_the_key_back() -> None:
    def build(data: dict[str, Any]) -> PaperRecord:
        if data["title"].endswith(f" {RECORDS - 1}"):
            raise RuntimeError("the reader broke")
        return _build(data)

    with pytest.raises(RuntimeError):
        import_records(_items(RECORDS), build=build, batch_size=BATCH)
    assert _has_key()


def test_a_missing_key_is_built_again_without_duplicate_rows() -> None:
    import_records(_items(RECORDS), build=_build, batch_size=BATCH)
    count = _postings()
    with connection.cursor() as cursor:  # as a killed import leaves it, and a paper twice
        cursor.execute(
            f"ALTER TABLE {postings.POSTING_TABLE} DROP CONSTRAINT {postings.PG_PRIMARY_KEY}"
        )
        cursor.execute(
            f"INSERT INTO {postings.POSTING_TABLE} "  # noqa: S608
            f"SELECT * FROM {postings.POSTING_TABLE} ORDER BY paper_id LIMIT 5"
        )
    assert postings.restore_primary_key() is True
    assert _has_key() and _postings() == count
    assert postings.restore_primary_key() is False

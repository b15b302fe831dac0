"""papers/bulk.py: the import's fast inserts write what row-by-row inserts wrote. On
PostgreSQL they are one statement a batch (an INSERT of unnested arrays, a COPY), and must
still skip conflicting rows, give ids in the rows' order, reject a value too long for its
column and store JSON and timestamps as the ORM does. Both databases."""

from __future__ import annotations

import pytest
from django.db import DataError, IntegrityError, connection, transaction

from papers.bulk import insert_objects, insert_rows
from papers.models import Keyword, Paper, PaperEmbedding, PaperIdentifier

pytestmark = pytest.mark.django_db


def test_insert_rows_skips_conflicts_and_gives_ids_in_row_order() -> None:
    Keyword.objects.create(name_key="known", name="Known Before")
    insert_rows(
        Keyword,
        ["name_key", "name"],
        [("b", "Bea"), ("known", "Known Again"), ("a", "Ann"), ("b", "Bea Twice"), ("c", "Cy")],
    )
    rows = list(Keyword.objects.order_by("id").values_list("name_key", "name"))
    assert rows == [("known", "Known Before"), ("b", "Bea"), ("a", "Ann"), ("c", "Cy")]
    assert all(k.created_at is not None for k in Keyword.objects.all())


def test_insert_rows_of_nothing_writes_nothing() -> None:
    insert_rows(Keyword, ["name_key", "name"], [])
    assert not Keyword.objects.exists()


@pytest.mark.skipif(
    connection.vendor != "postgresql", reason="SQLite does not enforce varchar lengths"
)
def test_insert_rows_rejects_a_value_longer_than_its_column() -> None:
    paper = _paper("A paper with an identifier")
    insert_objects([paper])
    too_long = "s" * (PaperIdentifier._meta.get_field("scheme").max_length + 1)  # type: ignore[operator]
    with pytest.raises(DataError), transaction.atomic():
        # Cast to varchar(32), the value would be cut short and stored.
        insert_rows(PaperIdentifier, ["paper", "scheme", "value"], [(paper.pk, too_long, "v")])
    assert not PaperIdentifier.objects.exists()


def test_insert_rows_replacing_on_a_key_updates_the_stored_row_and_its_stamp() -> None:
    first, second = _paper("First"), _paper("Second")
    insert_objects([first, second])
    columns = ["paper", "model", "dimensions", "vector", "text_hash"]
    insert_rows(PaperEmbedding, columns, [(first.pk, "old", 2, b"\x00" * 8, "h1")])
    before = PaperEmbedding.objects.get(pk=first.pk).updated_at
    insert_rows(
        PaperEmbedding,
        columns,
        [(first.pk, "new", 1, b"\x01" * 4, "h2"), (second.pk, "new", 1, b"\x02" * 4, "h3")],
        replace_on=["paper"],
    )
    stored = {e.paper_id: e for e in PaperEmbedding.objects.all()}
    assert (stored[first.pk].model, bytes(stored[first.pk].vector)) == ("new", b"\x01" * 4)
    assert stored[first.pk].text_hash == "h2" and stored[first.pk].dimensions == 1
    assert stored[first.pk].updated_at > before
    assert bytes(stored[second.pk].vector) == b"\x02" * 4 and len(stored) == 2


def test_insert_objects_gives_ids_and_stores_json_and_timestamps() -> None:
    first = _paper("First", metadata={"sources": ["acl"], "nested": {"a": [1, "ü", None]}})
    second = _paper("Second", resources=[{"kind": "pdf", "url": "https://example.org/x.pdf"}])
    insert_objects([first, second])
    assert first.pk and second.pk and second.pk > first.pk
    stored = Paper.objects.get(pk=first.pk)
    assert stored.metadata == {"sources": ["acl"], "nested": {"a": [1, "ü", None]}}
    assert stored.created_at == first.created_at and stored.updated_at == first.updated_at
    assert Paper.objects.get(pk=second.pk).resources == second.resources
    assert stored.human_id == first.human_id and stored.citekey == first.citekey


def _paper(title: str, **values: object) -> Paper:
    key = title.lower().replace(" ", "")
    return Paper(
        title=title,
        title_key=key,
        human_id=f"{key}-2020",
        human_id_base=f"{key}-2020",
        human_id_seq=1,
        citekey=f"{key}2020",
        citekey_base=f"{key}2020",
        year=2020,
        source="test",
        **values,  # type: ignore[arg-type]
    )


def test_insert_objects_raises_integrity_error_on_a_taken_unique_value() -> None:
    insert_objects([_paper("Taken")])
    # papers_upsert_retrying retries on IntegrityError: the driver's own error would escape.
    with pytest.raises(IntegrityError), transaction.atomic():
        insert_objects([_paper("Taken")])

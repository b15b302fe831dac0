"""papers/search/source.py: on PostgreSQL the statements that read the papers' search text
to index them (the full-text upsert, the postings' source rows) run without JIT, whose
compilation of their over-estimated plans cost more than running them during an import;
the writer's own setting is back after them."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection, transaction

from papers.schemas import PaperRecord
from papers.search.source import FTS_TABLE, without_jit
from papers.services import papers_upsert

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.skipif(connection.vendor != "postgresql", reason="JIT is PostgreSQL's"),
]


def _jit() -> str:
    with connection.cursor() as cursor:
        cursor.execute("SELECT current_setting('jit')")
        return str(cursor.fetchone()[0])


def test_without_jit_turns_it_off_inside_and_restores_the_setting() -> None:
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL jit = on")
            with without_jit(cursor):
                assert _jit() == "off"
        assert _jit() == "on"


def test_indexing_statements_run_without_jit() -> None:
    seen: list[str] = []

    def wrapper(
        execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        if f"INSERT INTO {FTS_TABLE}" in sql or sql.lstrip().startswith("SELECT p.paper_id"):
            raw = context["cursor"].cursor  # the driver's cursor: not through this wrapper
            raw.execute("SELECT current_setting('jit')")
            seen.append(raw.fetchone()[0])
        return execute(sql, params, many, context)

    records = [PaperRecord.build(title=f"Paper {n}", year=2020, authors=["Ann Lee"]) for n in "ab"]
    with transaction.atomic():
        with connection.cursor() as cursor:
            cursor.execute("SET LOCAL jit = on")
        with connection.execute_wrapper(wrapper):
            papers_upsert(records=records)
        assert _jit() == "on"
    assert seen == ["off", "off"]  # the full-text upsert and the postings' source rows

"""Inserting many plain rows fast, for imports.

Django's bulk_create compiles SQL per object, which was over half the time of importing
the ACL corpus. Link and lookup rows need no ids back, so they go through one prepared
`executemany` on SQLite instead. `ON CONFLICT DO NOTHING` is understood by SQLite (3.24+)
and PostgreSQL alike.

PostgreSQL: Django's psycopg cursors bind parameters on the client, so an `executemany`
sends every row as a statement of its own, which the server parses and plans. There the
rows go in one statement instead: `COPY` for new papers, and an INSERT of `unnest`ed
column arrays for the rows that may already exist (COPY cannot skip conflicts).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from typing import Any

from django.db import connection, models
from django.utils import timezone

from core import audit


def insert_rows(
    model: type[models.Model],
    fields: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    replace_on: Sequence[str] = (),
) -> None:
    """INSERT rows of `fields` values into the model's table, skipping ones that would
    break a unique constraint; with `replace_on` (the fields of one unique constraint), a
    row whose key is taken replaces the stored row's other values instead (the rows' keys
    must then differ). Timestamp fields (`created_at`, `updated_at`, `added_at`) present
    on the model are filled with now (a replaced row keeps its `created_at`)."""
    meta = model._meta
    stamp_fields = [
        f.name
        for f in meta.concrete_fields
        if f.name in ("created_at", "updated_at", "added_at") and f.name not in fields
    ]
    now = connection.ops.adapt_datetimefield_value(timezone.now())
    columns = [str(meta.get_field(name).column) for name in (*fields, *stamp_fields)]  # type: ignore[union-attr]
    quote = connection.ops.quote_name
    insert = f"INSERT INTO {quote(meta.db_table)} ({', '.join(quote(c) for c in columns)}) "
    extra = (now,) * len(stamp_fields)
    params = [(*row, *extra) for row in rows]
    if not params:
        return
    conflict = "ON CONFLICT DO NOTHING"
    if replace_on:
        key = [str(meta.get_field(name).column) for name in replace_on]  # type: ignore[union-attr]
        kept = {*key, "created_at", "added_at"}
        replaced = ", ".join(f"{quote(c)} = excluded.{quote(c)}" for c in columns if c not in kept)
        conflict = f"ON CONFLICT ({', '.join(quote(c) for c in key)}) DO UPDATE SET {replaced}"
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # One statement: the rows' columns as arrays, unnested in the rows' order (so
            # ids are given as executemany gave them). Cast to the column's type without
            # its length: an explicit cast to varchar(n) would cut a long value short
            # where the INSERT's own conversion rejects it.
            types = [
                _TYPMOD.sub("", str(meta.get_field(name).db_type(connection)))  # type: ignore[union-attr]
                for name in (*fields, *stamp_fields)
            ]
            arrays = ", ".join(f"%s::{t}[]" for t in types)
            cursor.execute(
                insert + f"SELECT * FROM unnest({arrays}) {conflict}",  # noqa: S608
                [list(column) for column in zip(*params, strict=True)],
            )
            return
        placeholders = ", ".join(["%s"] * len(columns))
        cursor.executemany(
            insert + f"VALUES ({placeholders}) {conflict}",
            params,
        )


# A column type's length or precision: varchar(255) -> varchar.
_TYPMOD = re.compile(r"\(.*\)")


def allocate_ids(model: type[models.Model], count: int) -> list[int]:
    """Reserve `count` primary keys for rows about to be inserted with explicit ids.

    PostgreSQL: the column's own sequence. SQLite: the AUTOINCREMENT counter, read inside
    the write transaction (IMMEDIATE mode holds the database write lock), so ids of deleted
    papers are never handed out again, as with ordinary inserts.
    """
    if count <= 0:
        return []
    table = model._meta.db_table
    pk_column = str(model._meta.pk.column)  # type: ignore[union-attr]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT nextval(pg_get_serial_sequence(%s, %s)) FROM generate_series(1, %s)",
                [table, pk_column, count],
            )
            return [row[0] for row in cursor.fetchall()]
        cursor.execute(
            f"SELECT MAX({connection.ops.quote_name(pk_column)}) FROM "  # noqa: S608
            f"{connection.ops.quote_name(table)}"
        )
        highest = cursor.fetchone()[0] or 0
        cursor.execute("SELECT seq FROM sqlite_sequence WHERE name = %s", [table])
        row = cursor.fetchone()
        start = max(highest, row[0] if row else 0) + 1
        return list(range(start, start + count))


def insert_objects(objs: Sequence[models.Model]) -> None:
    """Insert unsaved model instances of one model in a single executemany, giving each
    its primary key first. Much faster than bulk_create for wide rows; field values go
    through each field's own get_db_prep_save only where conversion is needed (JSON)."""
    if not objs:
        return
    model = type(objs[0])
    meta = model._meta
    for obj, pk in zip(objs, allocate_ids(model, len(objs)), strict=True):
        obj.pk = pk
        obj._state.adding = False
    now = timezone.now()
    fields = list(meta.concrete_fields)
    stamped = [
        f.attname
        for f in fields
        if isinstance(f, models.DateTimeField) and (f.auto_now or f.auto_now_add)  # type: ignore[attr-defined]
    ]
    for obj in objs:
        for attname in stamped:
            setattr(obj, attname, now)
    # Values of other fields go as they are; these go through their field's conversion.
    # (Fields compared by identity: Field.__eq__ is Python code, called per field per row.)
    converters = [
        f.get_db_prep_save if isinstance(f, models.JSONField | models.DateTimeField) else None
        for f in fields
    ]
    attnames = [f.attname for f in fields]
    rows = (
        [
            getattr(obj, attname) if convert is None else convert(getattr(obj, attname), connection)
            for attname, convert in zip(attnames, converters, strict=True)
        ]
        for obj in objs
    )
    quote = connection.ops.quote_name
    columns = ", ".join(quote(str(f.column)) for f in fields)
    placeholders = ", ".join(["%s"] * len(fields))
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # COPY: one statement for the whole batch (the rows are new: nothing to skip).
            # Through the driver's cursor, so its errors are made Django's here (a unique
            # violation must be an IntegrityError: papers_upsert_retrying retries on it).
            # The audit log's execute wrapper does not see a COPY: its rows are counted here.
            sql = f"COPY {quote(meta.db_table)} ({columns}) FROM STDIN"
            copied = 0
            with connection.wrap_database_errors, cursor.cursor.copy(sql) as copy:
                for row in rows:
                    copy.write_row(row)
                    copied += 1
            audit.record_rows(connection, meta.db_table, "create", copied)
            return
        cursor.executemany(
            f"INSERT INTO {quote(meta.db_table)} ({columns}) VALUES ({placeholders})",  # noqa: S608
            list(rows),
        )

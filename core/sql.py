"""SQL that both databases run, for what Django's ORM does slowly."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any


def among(vendor: str, values: Sequence[Any]) -> tuple[str, Any]:
    """(`column` + this SQL tests membership, its one parameter) for these values:
    `= ANY(%s)` with the list on PostgreSQL, `IN (SELECT value FROM json_each(%s))` with
    the list as JSON on SQLite. One parameter for any number of values: Django's
    IN (...) prepares each in Python (2,000 ids: ~7 ms), PostgreSQL parses and plans a
    list of 500 literals in ~4 ms, and SQLite caps a statement's parameters."""
    if vendor == "postgresql":
        return "= ANY(%s)", list(values)
    return "IN (SELECT value FROM json_each(%s))", json.dumps(list(values))


def among_subquery(vendor: str, values: Sequence[int]) -> tuple[str, list[Any]]:
    """These integers as a one-column subquery with one parameter (`among`'s reason):
    (its SQL, its parameters). The ORM takes it as `among_ids`."""
    if vendor == "postgresql":
        return "SELECT unnest(%s::bigint[])", [[int(value) for value in values]]
    return "SELECT value FROM json_each(%s)", [json.dumps([int(value) for value in values])]


def among_ids(values: Sequence[int]) -> Any:
    """`among_subquery` on the default database, as the ORM's right-hand side of `__in`:
    `Paper.objects.filter(pk__in=among_ids(ids))`."""
    from django.db import connection
    from django.db.models.expressions import RawSQL

    # The SQL is among_subquery's constant; the values go as a parameter.
    return RawSQL(*among_subquery(connection.vendor, values))  # noqa: S611


def prefix_end(prefix: str) -> str:
    """The first string after every string that begins with `prefix` (not empty), in code
    point order, which is UTF-8's byte order (SQLite's BINARY collation, PostgreSQL's "C"):
    `x >= prefix AND x < prefix_end(prefix)` selects the values beginning with it as a
    range of an index."""
    return prefix[:-1] + chr(ord(prefix[-1]) + 1)


def database_identity(connection: Any) -> str:
    """Which database a connection reaches, as one string (HOST:PORT:NAME): the key of
    what a process keeps per database (posting caches, saved vector graphs)."""
    settings_dict = connection.settings_dict
    return ":".join(str(settings_dict.get(key) or "") for key in ("HOST", "PORT", "NAME"))


def wrote_in_this_transaction(connection: Any) -> bool:
    """Whether this connection is inside a PostgreSQL transaction that has written (it has
    a transaction id then). Such a transaction sees its own writes before the generations
    that triggers renew at the commit (papers migrations 0016, 0017) show them: what is
    kept against those generations must not answer it."""
    if connection.vendor != "postgresql" or not connection.in_atomic_block:
        return False
    with connection.cursor() as cursor:
        cursor.execute("SELECT txid_current_if_assigned() IS NOT NULL")
        return bool(cursor.fetchone()[0])

"""Generations of every table a search filter reads, on both databases, so that the papers
a filter allows can be kept between searches (papers/search/kept_filters.py): a year
filter's 430k ids at 1M papers took ~46 ms to read again at every search.

`papers_table_generation (name, n)` (0017 made it for PostgreSQL; here for SQLite too):
one number per table, set to a new random one by every change a filter could see. 0017
renewed them on insert and delete only (what facets count); a filter also sees an edit
in place (a paper's year, a venue's name), so updates renew them here too: of the paper
columns filters read, and of any column of the other tables.

PostgreSQL: the constraint triggers of 0017, deferred to the commit (writers do not take
turns on the row), now also on update, and on the tables 0017 left out. SQLite: a trigger
per row renews the number in the writing statement (~2 us a row inserted: ~2 s per 1M
rows); a change rolled back restores the old number with the rows.

The projects' tables get theirs from projects migration 0019 (this app sits below it).
A remade table (SQLite's ALTER TABLE path) loses its triggers: tests/papers/search/
test_kept_filters.py checks every table and column here renews its generation.
"""

import importlib

from django.db import migrations

papers_0017 = importlib.import_module("papers.migrations.0017_table_generations_postgresql")

# Table -> the columns whose update renews it (None: any column).
WATCHED = {
    "papers_paper": ("paper_id", "year", "venue_id", "source", "doi", "pdf_url", "source_url"),
    "papers_paperauthor": None,
    "papers_paperkeyword": None,
    "papers_papercategory": None,
    "papers_paperpdf": None,
    "papers_venue": None,
    "papers_author": None,
    "papers_institution": None,
    "papers_keyword": None,
    "papers_category": None,
}
# 0017 gave these their insert, delete and truncate triggers on PostgreSQL already.
PG_HAVE_INSERT_DELETE = {
    "papers_paper",
    "papers_paperauthor",
    "papers_paperkeyword",
    "papers_papercategory",
}


def _of(columns: tuple[str, ...] | None) -> str:
    return "" if columns is None else " OF " + ", ".join(columns)


def sqlite_up(table: str, columns: tuple[str, ...] | None) -> list[str]:
    # Table names are this module's constants, never input.
    renew = f"UPDATE papers_table_generation SET n = random() WHERE name = '{table}'"  # noqa: S608
    statements = [
        f"INSERT OR IGNORE INTO papers_table_generation (name, n) VALUES ('{table}', 0)"  # noqa: S608
    ]
    for event, suffix in (("INSERT", "insert"), ("DELETE", "delete"), ("UPDATE", "update")):
        name = f"{table}_generation_{suffix}"
        of = _of(columns) if event == "UPDATE" else ""
        statements += [
            f"DROP TRIGGER IF EXISTS {name}",
            f"CREATE TRIGGER {name} AFTER {event}{of} ON {table} BEGIN {renew}; END",
        ]
    return statements


def sqlite_down(table: str) -> list[str]:
    return [
        *(f"DROP TRIGGER IF EXISTS {table}_generation_{s}" for s in ("insert", "delete", "update")),
        f"DELETE FROM papers_table_generation WHERE name = '{table}'",  # noqa: S608
    ]


def postgresql_up(
    table: str, columns: tuple[str, ...] | None, *, has_insert_delete: bool
) -> list[str]:
    statements = [] if has_insert_delete else papers_0017.table_triggers(table)
    return [
        *statements,
        f"DROP TRIGGER IF EXISTS {table}_generation_update ON {table}",
        f"""CREATE CONSTRAINT TRIGGER {table}_generation_update AFTER UPDATE{_of(columns)}
        ON {table} DEFERRABLE INITIALLY DEFERRED
        FOR EACH ROW EXECUTE FUNCTION papers_table_generation_renew()""",
    ]


def postgresql_down(table: str, *, has_insert_delete: bool) -> list[str]:
    statements = [f"DROP TRIGGER IF EXISTS {table}_generation_update ON {table}"]
    return statements if has_insert_delete else statements + papers_0017.drop_table_triggers(table)


SQLITE_TABLE = """CREATE TABLE IF NOT EXISTS papers_table_generation (
    name text PRIMARY KEY,
    n integer NOT NULL
)"""


def up_statements(vendor: str, watched: dict, has_insert_delete: set) -> list[str]:
    """The statements giving `watched` tables their generations on `vendor`."""
    if vendor == "sqlite":
        return [SQLITE_TABLE] + [s for t, c in watched.items() for s in sqlite_up(t, c)]
    if vendor == "postgresql":
        return [
            s
            for t, c in watched.items()
            for s in postgresql_up(t, c, has_insert_delete=t in has_insert_delete)
        ]
    return []


def down_statements(vendor: str, watched: dict, has_insert_delete: set) -> list[str]:
    if vendor == "sqlite":
        return [s for t in watched for s in sqlite_down(t)]
    if vendor == "postgresql":
        return [
            s for t in watched for s in postgresql_down(t, has_insert_delete=t in has_insert_delete)
        ]
    return []


def create(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        for statement in up_statements(vendor, WATCHED, PG_HAVE_INSERT_DELETE):
            cursor.execute(statement)


def drop(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    with schema_editor.connection.cursor() as cursor:
        for statement in down_statements(vendor, WATCHED, PG_HAVE_INSERT_DELETE):
            cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("papers", "0017_table_generations_postgresql"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]

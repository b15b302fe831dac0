"""A generation number for the SQLite postings: search keeps the postings of the
terms it reads in memory (papers/search/lexical.py, `PostingCache`) and must know when
they change, whichever process or connection changed them.

`papers_lex_generation` holds one number; postings.py sets it to a new random one in the
transaction that writes or clears postings, and the trigger here does when a paper is
deleted (another trigger, 0006's, drops its postings). Random rather than counted: a
change rolled back and another committed would otherwise leave the same number for other
postings. A search reads it in the statement that reads the postings it lacks, so a number
and the postings read with it belong to one snapshot.
SQLite only: PostgreSQL's is migration 0016 (renewed at the commit).

0006 creates the table too (a new library's postings are built there); the trigger is
created here.

A later migration that rebuilds papers_paper on SQLite drops this trigger with the others:
restore it as 0009 does (its TRIGGER_MIGRATIONS).
"""

from django.db import migrations

SQLITE_UP = [
    """CREATE TABLE IF NOT EXISTS papers_lex_generation (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        n INTEGER NOT NULL
    )""",
    "INSERT OR IGNORE INTO papers_lex_generation (id, n) VALUES (1, 0)",
    """CREATE TRIGGER IF NOT EXISTS papers_lex_generation_delete AFTER DELETE ON papers_paper
    BEGIN
        UPDATE papers_lex_generation SET n = random();
    END""",
]
SQLITE_DOWN = ["DROP TRIGGER IF EXISTS papers_lex_generation_delete"]  # the table is 0006's


def create_schema(connection):
    """The generation table (if 0006 predates it here) and the trigger."""
    if connection.vendor == "sqlite":
        with connection.cursor() as cursor:
            for statement in SQLITE_UP:
                cursor.execute(statement)


def create(apps, schema_editor):
    create_schema(schema_editor.connection)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "sqlite":
        with schema_editor.connection.cursor() as cursor:
            for statement in SQLITE_DOWN:
                cursor.execute(statement)


class Migration(migrations.Migration):

    dependencies = [
        ("papers", "0009_retraction_watch"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]

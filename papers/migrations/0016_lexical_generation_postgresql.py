"""The postings generation on PostgreSQL, so that search keeps postings in memory there
too (papers/search/lexical.py, `PostingCache`; 0010 made it for SQLite).

`papers_lex_generation` holds one number, set to a new random one by every transaction
that changes the postings, whichever process or path wrote. Random rather than counted, as
on SQLite: a change rolled back and another committed must not leave the same number.

How, without making paper writers take turns: every change of a paper's postings also
changes its row in `papers_lex_doc` in the same transaction (postings.py deletes and
writes both for the papers it indexes; 0006's triggers drop both when a paper goes, and
truncate both with papers_paper). A constraint trigger on that table, deferred to the
commit, renews the number once per transaction (a transaction-local setting says it did):
the generation row is locked only between the commit's start and its end, where a plain
trigger would hold it from the first write until the commit (a bulk import's whole batch).
TRUNCATE cannot fire a constraint trigger: a statement trigger renews it then (the lock is
held to the commit, only for a rebuild).

A search reads the number in the statement that reads the postings it lacks: one
snapshot, so a number and the postings read with it belong together. A transaction sees
its own uncommitted writes but not yet their number: lexical.py keeps no postings in
memory for a transaction that has written (`txid_current_if_assigned()`).

SQLite: nothing here (0006 and 0010 made the table and its trigger; postings.py renews the
number in the writing statement's transaction).
"""

from django.db import migrations

POSTGRESQL_UP = [
    """CREATE TABLE IF NOT EXISTS papers_lex_generation (
        id integer PRIMARY KEY CHECK (id = 1),
        n bigint NOT NULL
    )""",
    "INSERT INTO papers_lex_generation (id, n) VALUES (1, 0) ON CONFLICT (id) DO NOTHING",
    """CREATE OR REPLACE FUNCTION papers_lex_generation_renew() RETURNS trigger AS $$
    BEGIN
        IF current_setting('research_mcp.lex_generation_renewed', true) IS DISTINCT FROM 'on'
        THEN
            UPDATE papers_lex_generation SET n = floor(random() * 9007199254740991)::bigint;
            PERFORM set_config('research_mcp.lex_generation_renewed', 'on', true);
        END IF;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS papers_lex_generation ON papers_lex_doc",
    """CREATE CONSTRAINT TRIGGER papers_lex_generation
    AFTER INSERT OR UPDATE OR DELETE ON papers_lex_doc
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION papers_lex_generation_renew()""",
    "DROP TRIGGER IF EXISTS papers_lex_generation_truncate ON papers_lex_doc",
    """CREATE TRIGGER papers_lex_generation_truncate AFTER TRUNCATE ON papers_lex_doc
    FOR EACH STATEMENT EXECUTE FUNCTION papers_lex_generation_renew()""",
]
POSTGRESQL_DOWN = [
    "DROP TRIGGER IF EXISTS papers_lex_generation_truncate ON papers_lex_doc",
    "DROP TRIGGER IF EXISTS papers_lex_generation ON papers_lex_doc",
    "DROP FUNCTION IF EXISTS papers_lex_generation_renew()",
    "DROP TABLE IF EXISTS papers_lex_generation",
]


def create_schema(connection):
    """The table, its row and the triggers (PostgreSQL; nothing on another database).
    Also run by `reindex_fulltext` when it creates the postings tables."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            for statement in POSTGRESQL_UP:
                cursor.execute(statement)


def create(apps, schema_editor):
    create_schema(schema_editor.connection)


def drop(apps, schema_editor):
    if schema_editor.connection.vendor == "postgresql":
        with schema_editor.connection.cursor() as cursor:
            for statement in POSTGRESQL_DOWN:
                cursor.execute(statement)


class Migration(migrations.Migration):
    dependencies = [
        ("papers", "0015_year_index_with_ids"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]

"""Each author's number of paper links, kept by the database, so that the whole library's
author facet reads its candidates instead of grouping every link (papers/search/
kept_counts.py; at 1M papers the GROUP BY over 3.4M links took ~0.3 s on SQLite).

Two tables: `papers_author_link_count (author_id, n)`, the counts folded so far, and
`papers_author_link_delta (id, author_id, d)`, changes not folded yet, which triggers on
`papers_paperauthor` append to: +1 for an inserted link, -1 for a deleted one, both for
a link moved to another author. Appending takes no lock another writer waits on (a
counter row updated by every writer would make concurrent imports take turns, and
deadlock when two touch the same authors in another order). `kept_counts.fold` moves
the changes into the counts (imports call it when they end); an author's count is
always its folded count plus its pending changes.

PostgreSQL: statement triggers with transition tables, so a bulk insert of thousands of
links appends one row per author, not per link; TRUNCATE empties both tables.
SQLite: a trigger per row (~1-2 us a link).

A remade table (SQLite's ALTER TABLE path) loses its triggers: tests/papers/search/
test_kept_counts.py checks the counts against the links after every kind of change.
"""

from django.db import migrations

COUNT_TABLE = """CREATE TABLE IF NOT EXISTS papers_author_link_count (
    author_id bigint PRIMARY KEY,
    n bigint NOT NULL
)"""
COUNT_INDEX = (
    "CREATE INDEX IF NOT EXISTS author_link_count_n_idx ON papers_author_link_count (n)"
)
BACKFILL = """INSERT INTO papers_author_link_count (author_id, n)
    SELECT author_id, COUNT(*) FROM papers_paperauthor GROUP BY author_id"""

SQLITE_UP = [
    COUNT_TABLE,
    COUNT_INDEX,
    """CREATE TABLE IF NOT EXISTS papers_author_link_delta (
        id integer PRIMARY KEY AUTOINCREMENT,
        author_id bigint NOT NULL,
        d integer NOT NULL
    )""",
    BACKFILL,
    """CREATE TRIGGER author_link_count_insert AFTER INSERT ON papers_paperauthor BEGIN
        INSERT INTO papers_author_link_delta (author_id, d) VALUES (NEW.author_id, 1);
    END""",
    """CREATE TRIGGER author_link_count_delete AFTER DELETE ON papers_paperauthor BEGIN
        INSERT INTO papers_author_link_delta (author_id, d) VALUES (OLD.author_id, -1);
    END""",
    """CREATE TRIGGER author_link_count_update AFTER UPDATE OF author_id ON papers_paperauthor
    WHEN NEW.author_id IS NOT OLD.author_id BEGIN
        INSERT INTO papers_author_link_delta (author_id, d)
        VALUES (OLD.author_id, -1), (NEW.author_id, 1);
    END""",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS author_link_count_insert",
    "DROP TRIGGER IF EXISTS author_link_count_delete",
    "DROP TRIGGER IF EXISTS author_link_count_update",
    "DROP TABLE IF EXISTS papers_author_link_delta",
    "DROP TABLE IF EXISTS papers_author_link_count",
]

POSTGRESQL_UP = [
    COUNT_TABLE,
    COUNT_INDEX,
    """CREATE TABLE IF NOT EXISTS papers_author_link_delta (
        id bigserial PRIMARY KEY,
        author_id bigint NOT NULL,
        d bigint NOT NULL
    )""",
    BACKFILL,
    """CREATE OR REPLACE FUNCTION papers_author_link_added() RETURNS trigger AS $$
    BEGIN
        INSERT INTO papers_author_link_delta (author_id, d)
        SELECT author_id, COUNT(*) FROM new_links GROUP BY author_id;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION papers_author_link_removed() RETURNS trigger AS $$
    BEGIN
        INSERT INTO papers_author_link_delta (author_id, d)
        SELECT author_id, -COUNT(*) FROM old_links GROUP BY author_id;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION papers_author_link_moved() RETURNS trigger AS $$
    BEGIN
        INSERT INTO papers_author_link_delta (author_id, d)
        SELECT author_id, SUM(d) FROM (
            SELECT author_id, -1 AS d FROM old_links
            UNION ALL SELECT author_id, 1 FROM new_links
        ) moved GROUP BY author_id HAVING SUM(d) <> 0;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION papers_author_link_truncated() RETURNS trigger AS $$
    BEGIN
        DELETE FROM papers_author_link_delta;
        DELETE FROM papers_author_link_count;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER author_link_count_insert AFTER INSERT ON papers_paperauthor
    REFERENCING NEW TABLE AS new_links
    FOR EACH STATEMENT EXECUTE FUNCTION papers_author_link_added()""",
    """CREATE TRIGGER author_link_count_delete AFTER DELETE ON papers_paperauthor
    REFERENCING OLD TABLE AS old_links
    FOR EACH STATEMENT EXECUTE FUNCTION papers_author_link_removed()""",
    """CREATE TRIGGER author_link_count_update AFTER UPDATE ON papers_paperauthor
    REFERENCING OLD TABLE AS old_links NEW TABLE AS new_links
    FOR EACH STATEMENT EXECUTE FUNCTION papers_author_link_moved()""",
    """CREATE TRIGGER author_link_count_truncate AFTER TRUNCATE ON papers_paperauthor
    FOR EACH STATEMENT EXECUTE FUNCTION papers_author_link_truncated()""",
]
POSTGRESQL_DOWN = [
    *(
        f"DROP TRIGGER IF EXISTS author_link_count_{event} ON papers_paperauthor"
        for event in ("insert", "delete", "update", "truncate")
    ),
    *(
        f"DROP FUNCTION IF EXISTS papers_author_link_{what}()"
        for what in ("added", "removed", "moved", "truncated")
    ),
    "DROP TABLE IF EXISTS papers_author_link_delta",
    "DROP TABLE IF EXISTS papers_author_link_count",
]

STATEMENTS = {"sqlite": (SQLITE_UP, SQLITE_DOWN), "postgresql": (POSTGRESQL_UP, POSTGRESQL_DOWN)}


def _run(schema_editor, direction: int) -> None:
    statements = STATEMENTS.get(schema_editor.connection.vendor)
    if statements is None:
        return
    with schema_editor.connection.cursor() as cursor:
        for statement in statements[direction]:
            cursor.execute(statement)


def create(apps, schema_editor):
    _run(schema_editor, 0)


def drop(apps, schema_editor):
    _run(schema_editor, 1)


class Migration(migrations.Migration):
    dependencies = [
        ("papers", "0018_filter_generations"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]

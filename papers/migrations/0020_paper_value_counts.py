"""The papers per venue and per year, kept by the database, so that the whole library's
venue, venue series and year facets read them instead of grouping every paper
(papers/search/kept_counts.py; ~0.4 s each on PostgreSQL at 500k papers).

As 0019 keeps the authors' links: `papers_paper_value_count (facet, value, n)`, the counts
folded so far (facet 1: venue_id, 2: year), and `papers_paper_value_delta (id, facet,
value, d)`, changes not folded yet, which triggers on `papers_paper` append to: +1 for a
paper added, -1 for one deleted, both when a paper's venue or year changes. Papers
without a venue or a year are not counted (the facets leave them out).

PostgreSQL: statement triggers with transition tables for inserts and deletes (one row
per value a bulk insert touches); a trigger per row for updates, only when the venue or
year changes (an update trigger with transition tables would copy every row of every
update of the papers table); TRUNCATE empties both tables. SQLite: a trigger per row.

A remade table (SQLite's ALTER TABLE path) loses its triggers: tests/papers/search/
test_kept_counts.py checks the counts against the papers after every kind of change.
"""

from django.db import migrations

COUNT_TABLE = """CREATE TABLE IF NOT EXISTS papers_paper_value_count (
    facet smallint NOT NULL,
    value bigint NOT NULL,
    n bigint NOT NULL,
    PRIMARY KEY (facet, value)
)"""
BACKFILL = """INSERT INTO papers_paper_value_count (facet, value, n)
    SELECT 1, venue_id, COUNT(*) FROM papers_paper WHERE venue_id IS NOT NULL GROUP BY venue_id
    UNION ALL
    SELECT 2, year, COUNT(*) FROM papers_paper WHERE year IS NOT NULL GROUP BY year"""


def _sqlite_rows(row: str, d: str) -> str:
    return f"""INSERT INTO papers_paper_value_delta (facet, value, d)
        SELECT 1, {row}.venue_id, {d} WHERE {row}.venue_id IS NOT NULL
        UNION ALL SELECT 2, {row}.year, {d} WHERE {row}.year IS NOT NULL;"""


SQLITE_UP = [
    COUNT_TABLE,
    """CREATE TABLE IF NOT EXISTS papers_paper_value_delta (
        id integer PRIMARY KEY AUTOINCREMENT,
        facet smallint NOT NULL,
        value bigint NOT NULL,
        d integer NOT NULL
    )""",
    BACKFILL,
    f"""CREATE TRIGGER paper_value_count_insert AFTER INSERT ON papers_paper BEGIN
        {_sqlite_rows("NEW", "1")}
    END""",
    f"""CREATE TRIGGER paper_value_count_delete AFTER DELETE ON papers_paper BEGIN
        {_sqlite_rows("OLD", "-1")}
    END""",
    """CREATE TRIGGER paper_value_count_update AFTER UPDATE OF venue_id, year ON papers_paper
    WHEN NEW.venue_id IS NOT OLD.venue_id OR NEW.year IS NOT OLD.year BEGIN
        INSERT INTO papers_paper_value_delta (facet, value, d)
        SELECT 1, OLD.venue_id, -1
            WHERE OLD.venue_id IS NOT NULL AND OLD.venue_id IS NOT NEW.venue_id
        UNION ALL SELECT 1, NEW.venue_id, 1
            WHERE NEW.venue_id IS NOT NULL AND OLD.venue_id IS NOT NEW.venue_id
        UNION ALL SELECT 2, OLD.year, -1 WHERE OLD.year IS NOT NULL AND OLD.year IS NOT NEW.year
        UNION ALL SELECT 2, NEW.year, 1 WHERE NEW.year IS NOT NULL AND OLD.year IS NOT NEW.year;
    END""",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS paper_value_count_insert",
    "DROP TRIGGER IF EXISTS paper_value_count_delete",
    "DROP TRIGGER IF EXISTS paper_value_count_update",
    "DROP TABLE IF EXISTS papers_paper_value_delta",
    "DROP TABLE IF EXISTS papers_paper_value_count",
]


def _grouped(rows: str, d: str) -> str:
    return f"""INSERT INTO papers_paper_value_delta (facet, value, d)
        SELECT 1, venue_id, {d} FROM {rows} WHERE venue_id IS NOT NULL GROUP BY venue_id
        UNION ALL SELECT 2, year, {d} FROM {rows} WHERE year IS NOT NULL GROUP BY year;"""


POSTGRESQL_UP = [
    COUNT_TABLE,
    """CREATE TABLE IF NOT EXISTS papers_paper_value_delta (
        id bigserial PRIMARY KEY,
        facet smallint NOT NULL,
        value bigint NOT NULL,
        d bigint NOT NULL
    )""",
    BACKFILL,
    f"""CREATE OR REPLACE FUNCTION papers_paper_values_added() RETURNS trigger AS $$
    BEGIN
        {_grouped("new_papers", "COUNT(*)")}
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
    f"""CREATE OR REPLACE FUNCTION papers_paper_values_removed() RETURNS trigger AS $$
    BEGIN
        {_grouped("old_papers", "-COUNT(*)")}
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION papers_paper_values_changed() RETURNS trigger AS $$
    BEGIN
        INSERT INTO papers_paper_value_delta (facet, value, d)
        SELECT facet, value, d FROM (VALUES
            (1, OLD.venue_id, -1), (1, NEW.venue_id, 1), (2, OLD.year, -1), (2, NEW.year, 1)
        ) AS change (facet, value, d)
        WHERE value IS NOT NULL AND CASE facet
            WHEN 1 THEN OLD.venue_id IS DISTINCT FROM NEW.venue_id
            ELSE OLD.year IS DISTINCT FROM NEW.year END;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION papers_paper_values_truncated() RETURNS trigger AS $$
    BEGIN
        DELETE FROM papers_paper_value_delta;
        DELETE FROM papers_paper_value_count;
        RETURN NULL;
    END
    $$ LANGUAGE plpgsql""",
    """CREATE TRIGGER paper_value_count_insert AFTER INSERT ON papers_paper
    REFERENCING NEW TABLE AS new_papers
    FOR EACH STATEMENT EXECUTE FUNCTION papers_paper_values_added()""",
    """CREATE TRIGGER paper_value_count_delete AFTER DELETE ON papers_paper
    REFERENCING OLD TABLE AS old_papers
    FOR EACH STATEMENT EXECUTE FUNCTION papers_paper_values_removed()""",
    """CREATE TRIGGER paper_value_count_update AFTER UPDATE OF venue_id, year ON papers_paper
    FOR EACH ROW
    WHEN (OLD.venue_id IS DISTINCT FROM NEW.venue_id OR OLD.year IS DISTINCT FROM NEW.year)
    EXECUTE FUNCTION papers_paper_values_changed()""",
    """CREATE TRIGGER paper_value_count_truncate AFTER TRUNCATE ON papers_paper
    FOR EACH STATEMENT EXECUTE FUNCTION papers_paper_values_truncated()""",
]
POSTGRESQL_DOWN = [
    *(
        f"DROP TRIGGER IF EXISTS paper_value_count_{event} ON papers_paper"
        for event in ("insert", "delete", "update", "truncate")
    ),
    *(
        f"DROP FUNCTION IF EXISTS papers_paper_values_{what}()"
        for what in ("added", "removed", "changed", "truncated")
    ),
    "DROP TABLE IF EXISTS papers_paper_value_delta",
    "DROP TABLE IF EXISTS papers_paper_value_count",
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
        ("papers", "0019_author_link_counts"),
    ]

    operations = [
        migrations.RunPython(create, drop, elidable=False),
    ]

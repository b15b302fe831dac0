"""BM25 postings of our own: see papers/search/postings.py for how they are used.

Both databases: `papers_lex_posting (term_id, impact, paper_id)` keyed in that order (a
term's postings best first), an index on (paper_id, term_id, impact) (a paper's postings:
deletes and random access), `papers_lex_doc (paper_id, length)`, and triggers that drop a
deleted paper's rows (PostgreSQL: a TRUNCATE of papers_paper empties them too).

Papers already in the library are indexed here, so an existing knowledge base is
upgraded in place.
"""

from django.db import migrations

SQLITE_UP = [
    """CREATE TABLE IF NOT EXISTS papers_lex_posting (
        term_id INTEGER NOT NULL,
        impact INTEGER NOT NULL,
        paper_id INTEGER NOT NULL,
        PRIMARY KEY (term_id, impact, paper_id)
    ) WITHOUT ROWID""",
    "CREATE INDEX IF NOT EXISTS papers_lex_posting_paper "
    "ON papers_lex_posting (paper_id, term_id, impact)",
    """CREATE TABLE IF NOT EXISTS papers_lex_doc (
        paper_id INTEGER PRIMARY KEY,
        length INTEGER NOT NULL
    )""",
    # The postings' generation (postings.py writes it): created here for a new library,
    # whose postings are built below; 0010_lexical_generation adds it to an existing one.
    """CREATE TABLE IF NOT EXISTS papers_lex_generation (
        id INTEGER PRIMARY KEY CHECK (id = 1),
        n INTEGER NOT NULL
    )""",
    "INSERT OR IGNORE INTO papers_lex_generation (id, n) VALUES (1, 0)",
    """CREATE TRIGGER IF NOT EXISTS papers_lex_delete AFTER DELETE ON papers_paper
    BEGIN
        DELETE FROM papers_lex_posting WHERE paper_id = old.paper_id;
        DELETE FROM papers_lex_doc WHERE paper_id = old.paper_id;
    END""",
]
SQLITE_DOWN = [
    "DROP TABLE IF EXISTS papers_lex_generation",
    "DROP TRIGGER IF EXISTS papers_lex_delete",
    "DROP TABLE IF EXISTS papers_lex_posting",
    "DROP TABLE IF EXISTS papers_lex_doc",
]

PG_UP = [
    """CREATE TABLE IF NOT EXISTS papers_lex_posting (
        term_id bigint NOT NULL,
        impact smallint NOT NULL,
        paper_id bigint NOT NULL,
        PRIMARY KEY (term_id, impact, paper_id)
    )""",
    "CREATE INDEX IF NOT EXISTS papers_lex_posting_paper "
    "ON papers_lex_posting (paper_id, term_id, impact)",
    """CREATE TABLE IF NOT EXISTS papers_lex_doc (
        paper_id bigint PRIMARY KEY,
        length integer NOT NULL
    )""",
    """CREATE OR REPLACE FUNCTION papers_lex_delete() RETURNS trigger AS $$
    BEGIN
        DELETE FROM papers_lex_posting WHERE paper_id = OLD.paper_id;
        DELETE FROM papers_lex_doc WHERE paper_id = OLD.paper_id;
        RETURN NULL;
    END $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION papers_lex_truncate() RETURNS trigger AS $$
    BEGIN
        TRUNCATE papers_lex_posting, papers_lex_doc;
        RETURN NULL;
    END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS papers_lex_delete ON papers_paper",
    "CREATE TRIGGER papers_lex_delete AFTER DELETE ON papers_paper "
    "FOR EACH ROW EXECUTE FUNCTION papers_lex_delete()",
    "DROP TRIGGER IF EXISTS papers_lex_truncate ON papers_paper",
    "CREATE TRIGGER papers_lex_truncate AFTER TRUNCATE ON papers_paper "
    "FOR EACH STATEMENT EXECUTE FUNCTION papers_lex_truncate()",
]
PG_DOWN = [
    "DROP TRIGGER IF EXISTS papers_lex_truncate ON papers_paper",
    "DROP TRIGGER IF EXISTS papers_lex_delete ON papers_paper",
    "DROP FUNCTION IF EXISTS papers_lex_truncate()",
    "DROP FUNCTION IF EXISTS papers_lex_delete()",
    "DROP TABLE IF EXISTS papers_lex_posting",
    "DROP TABLE IF EXISTS papers_lex_doc",
]


def _execute(connection, statements):
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def create_schema(connection):
    """The postings tables and triggers (also used by `reindex_fulltext` when missing)."""
    if connection.vendor == "sqlite":
        _execute(connection, SQLITE_UP)
    elif connection.vendor == "postgresql":
        _execute(connection, PG_UP)


def create_postings(apps, schema_editor):
    from papers.search.postings import rebuild_postings

    if schema_editor.connection.vendor not in ("sqlite", "postgresql"):
        return
    create_schema(schema_editor.connection)
    rebuild_postings(using=schema_editor.connection.alias)


def drop_postings(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _execute(schema_editor.connection, SQLITE_DOWN)
    elif vendor == "postgresql":
        _execute(schema_editor.connection, PG_DOWN)


class Migration(migrations.Migration):
    dependencies = [("papers", "0005_curation_groups")]
    operations = [migrations.RunPython(create_postings, drop_postings, elidable=False)]

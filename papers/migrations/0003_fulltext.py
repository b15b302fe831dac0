"""Full-text search index: see papers/search/fulltext.py for how it is used.

SQLite: an FTS5 table (rowid = paper_id) and an fts5vocab view of it, plus a trigger that
drops a deleted paper's row. PostgreSQL: a table with a weighted tsvector (GIN) and the
title+authors text (the words fuzzy matching corrects towards), with DELETE and TRUNCATE
triggers on papers_paper, and the text search configuration `papers_english` (English
stemming, accents folded with `unaccent` when the server has it).

Fuzzy matching does not use pg_trgm: word_similarity over title+authors took 0.3-2.5 s
for one misspelled word at 95k papers and ranked poorly; both engines instead correct
each word against the title/author vocabulary (papers/search/fulltext.py).

Papers already in the library are indexed here, in batches, so an existing knowledge
base is upgraded in place.
"""

from django.db import migrations

SQLITE_UP = [
    # porter stems words, so 'proteins' finds 'protein' (without it SciFact's BM25
    # nDCG@10 was 0.613 instead of the published 0.665).
    # No prefix indexes: they only serve 2-3 letter prefixes (queries need 3+) and they
    # doubled the indexing cost of a bulk import (5.0 s instead of 2.5 s per 40k papers).
    """CREATE VIRTUAL TABLE IF NOT EXISTS papers_paper_fts USING fts5(
        title, abstract, authors, keywords, venue,
        tokenize = 'porter unicode61 remove_diacritics 2'
    )""",
    """CREATE TRIGGER IF NOT EXISTS papers_paper_fts_delete AFTER DELETE ON papers_paper
    BEGIN
        DELETE FROM papers_paper_fts WHERE rowid = old.paper_id;
    END""",
]
SQLITE_DOWN = [
    "DROP TRIGGER IF EXISTS papers_paper_fts_delete",
    "DROP TABLE IF EXISTS papers_paper_fts",
]

PG_UP = [
    """CREATE TABLE IF NOT EXISTS papers_paper_fts (
        paper_id bigint PRIMARY KEY,
        document tsvector NOT NULL,
        fuzzy_text text NOT NULL
    )""",
    # paper_search: document @@ tsquery, ranked with ts_rank.
    "CREATE INDEX IF NOT EXISTS papers_paper_fts_document_idx "
    "ON papers_paper_fts USING gin (document)",
    """CREATE OR REPLACE FUNCTION papers_paper_fts_delete() RETURNS trigger AS $$
    BEGIN
        DELETE FROM papers_paper_fts WHERE paper_id = OLD.paper_id;
        RETURN NULL;
    END $$ LANGUAGE plpgsql""",
    """CREATE OR REPLACE FUNCTION papers_paper_fts_truncate() RETURNS trigger AS $$
    BEGIN
        TRUNCATE papers_paper_fts;
        RETURN NULL;
    END $$ LANGUAGE plpgsql""",
    "DROP TRIGGER IF EXISTS papers_paper_fts_delete ON papers_paper",
    "CREATE TRIGGER papers_paper_fts_delete AFTER DELETE ON papers_paper "
    "FOR EACH ROW EXECUTE FUNCTION papers_paper_fts_delete()",
    # A TRUNCATE of papers_paper (test flushes) must not leave rows naming reused ids.
    "DROP TRIGGER IF EXISTS papers_paper_fts_truncate ON papers_paper",
    "CREATE TRIGGER papers_paper_fts_truncate AFTER TRUNCATE ON papers_paper "
    "FOR EACH STATEMENT EXECUTE FUNCTION papers_paper_fts_truncate()",
]
PG_DOWN = [
    "DROP TRIGGER IF EXISTS papers_paper_fts_truncate ON papers_paper",
    "DROP TRIGGER IF EXISTS papers_paper_fts_delete ON papers_paper",
    "DROP FUNCTION IF EXISTS papers_paper_fts_truncate()",
    "DROP FUNCTION IF EXISTS papers_paper_fts_delete()",
    "DROP TABLE IF EXISTS papers_paper_fts",
    "DROP TEXT SEARCH CONFIGURATION IF EXISTS papers_english",
]


def _execute(connection, statements):
    with connection.cursor() as cursor:
        for statement in statements:
            cursor.execute(statement)


def _try_extension(cursor, name):
    """CREATE EXTENSION if the server has it and we may; True if it is there."""
    cursor.execute("SELECT 1 FROM pg_available_extensions WHERE name = %s", [name])
    if cursor.fetchone() is None:
        return False
    cursor.execute("SAVEPOINT papers_fts_extension")
    try:
        cursor.execute(f"CREATE EXTENSION IF NOT EXISTS {name}")
    except Exception:
        cursor.execute("ROLLBACK TO SAVEPOINT papers_fts_extension")
        return False
    cursor.execute("RELEASE SAVEPOINT papers_fts_extension")
    return True


def _pg_text_search_configuration(connection):
    """`papers_english`: English stemming and stop words, accents folded ('Café' matches
    'cafe', as unicode61 remove_diacritics does on SQLite) when `unaccent` is available."""
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_ts_config WHERE cfgname = 'papers_english'")
        if cursor.fetchone() is not None:
            return
        cursor.execute("CREATE TEXT SEARCH CONFIGURATION papers_english (COPY = english)")
        if _try_extension(cursor, "unaccent"):
            cursor.execute(
                "ALTER TEXT SEARCH CONFIGURATION papers_english ALTER MAPPING FOR "
                "word, hword, hword_part, asciiword, asciihword, hword_asciipart "
                "WITH unaccent, english_stem"
            )


def create_schema(connection):
    """The index tables and triggers (also used by `reindex_fulltext` when missing)."""
    if connection.vendor == "sqlite":
        _execute(connection, SQLITE_UP)
    elif connection.vendor == "postgresql":
        _pg_text_search_configuration(connection)
        _execute(connection, PG_UP)


def create_index(apps, schema_editor):
    from papers.search.fulltext import rebuild_index

    if schema_editor.connection.vendor not in ("sqlite", "postgresql"):
        return
    create_schema(schema_editor.connection)
    rebuild_index(batch_size=2000, using=schema_editor.connection.alias)


def drop_index(apps, schema_editor):
    vendor = schema_editor.connection.vendor
    if vendor == "sqlite":
        _execute(schema_editor.connection, SQLITE_DOWN)
    elif vendor == "postgresql":
        _execute(schema_editor.connection, PG_DOWN)


class Migration(migrations.Migration):
    dependencies = [("papers", "0002_assets_and_embeddings")]
    operations = [migrations.RunPython(create_index, drop_index, elidable=False)]

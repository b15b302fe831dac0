"""The lexicon of the BM25 postings: `papers_lex_word (word, term_id)`, every word indexed
in papers_lex_posting (folded, stop words left out) with its stem's term id (term ids are
hashes of stems, which cannot be read back), so that a `prefix*` finds the terms of the
words it begins by a range of the words' key and is ranked from the postings
(papers/search/lexical.py, `prefix_terms`).

Filled here from the library's text for a library indexed before it (every paper's words:
minutes at a million papers), then by `postings.index_papers` with every paper written.
The words are compared byte by byte (SQLite's BINARY collation, "C" on PostgreSQL), so a
prefix is a range of the primary key.
"""

from django.db import migrations

SQLITE_TABLE = """CREATE TABLE IF NOT EXISTS papers_lex_word (
    word text PRIMARY KEY,
    term_id integer NOT NULL
) WITHOUT ROWID"""
POSTGRES_TABLE = """CREATE TABLE IF NOT EXISTS papers_lex_word (
    word text COLLATE "C" PRIMARY KEY,
    term_id bigint NOT NULL
)"""


def create(apps, schema_editor) -> None:
    from papers.search import postings

    connection = schema_editor.connection
    with connection.cursor() as cursor:
        cursor.execute(POSTGRES_TABLE if connection.vendor == "postgresql" else SQLITE_TABLE)
    postings.fill_lexicon(using=connection.alias)


def drop(apps, schema_editor) -> None:
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("DROP TABLE IF EXISTS papers_lex_word")


class Migration(migrations.Migration):
    dependencies = [("papers", "0020_paper_value_counts")]

    operations = [migrations.RunPython(create, drop)]

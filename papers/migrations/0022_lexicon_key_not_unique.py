"""PostgreSQL: the lexicon's words (`papers_lex_word`, migration 0021) no longer unique.

Two writers adding the same new word at once (an import's batch and an edit) waited for
each other: an insert that meets another transaction's uncommitted key waits for its
commit, so an edit could stall behind an import's whole batch. Now each adds the words it
does not see committed (`postings._write_lexicon`), and a word two writers added at once
is held twice, which `postings.lexicon_terms` reads once. The words keep their index (a
prefix is a range of it). SQLite runs one writer at a time: nothing changes there.
"""

from django.db import migrations


def forwards(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute("ALTER TABLE papers_lex_word DROP CONSTRAINT IF EXISTS papers_lex_word_pkey")
        cursor.execute("CREATE INDEX IF NOT EXISTS papers_lex_word_word ON papers_lex_word (word)")


def backwards(apps, schema_editor) -> None:
    if schema_editor.connection.vendor != "postgresql":
        return
    with schema_editor.connection.cursor() as cursor:
        cursor.execute(
            "DELETE FROM papers_lex_word a USING papers_lex_word b "
            "WHERE a.word = b.word AND a.ctid > b.ctid"
        )
        cursor.execute("DROP INDEX IF EXISTS papers_lex_word_word")
        cursor.execute("ALTER TABLE papers_lex_word ADD PRIMARY KEY (word)")


class Migration(migrations.Migration):
    dependencies = [("papers", "0021_lexicon")]

    operations = [migrations.RunPython(forwards, backwards)]

"""The text a paper is searched by: one row per paper with its five fields (title,
abstract, authors, keywords, venue), read straight from the library tables by SQL so that
indexing a batch costs one statement. The full-text index (fulltext.py) and the BM25
postings (lexical.py) are both built from it.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from papers.models import Keyword, Paper, PaperAuthor, PaperKeyword, Venue

FTS_TABLE = "papers_paper_fts"


def tables() -> dict[str, str]:
    return {
        "paper": Paper._meta.db_table,
        "venue": Venue._meta.db_table,
        "keyword": Keyword._meta.db_table,
        "paperkeyword": PaperKeyword._meta.db_table,
        "paperauthor": PaperAuthor._meta.db_table,
        "author": Paper.authors.field.related_model._meta.db_table,  # type: ignore[attr-defined]
        "fts": FTS_TABLE,
    }


# Source rows for a batch of paper ids: one row per paper with its five text fields.
# Authors come from the ordered links; authors_string covers papers without links.
SQLITE_SOURCE = """
SELECT p.paper_id, p.title,
       CASE WHEN p.abstract <> '' THEN p.abstract ELSE p.snippet END,
       COALESCE((SELECT group_concat(name, ', ') FROM (
                    SELECT a.name FROM {paperauthor} pa JOIN {author} a ON a.id = pa.author_id
                    WHERE pa.paper_id = p.paper_id ORDER BY pa.position)),
                p.authors_string),
       COALESCE((SELECT group_concat(k.name, ', ') FROM {paperkeyword} pk
                 JOIN {keyword} k ON k.id = pk.keyword_id WHERE pk.paper_id = p.paper_id), ''),
       COALESCE(v.name || CASE WHEN v.short_name <> '' THEN ' (' || v.short_name || ')'
                                ELSE '' END, '')
FROM {paper} p LEFT JOIN {venue} v ON v.id = p.venue_id
"""

PG_SOURCE = """
SELECT p.paper_id, p.title,
       CASE WHEN p.abstract <> '' THEN p.abstract ELSE p.snippet END AS abstract,
       COALESCE((SELECT string_agg(a.name, ', ' ORDER BY pa.position)
                 FROM {paperauthor} pa JOIN {author} a ON a.id = pa.author_id
                 WHERE pa.paper_id = p.paper_id), p.authors_string) AS authors,
       COALESCE((SELECT string_agg(k.name, ', ') FROM {paperkeyword} pk
                 JOIN {keyword} k ON k.id = pk.keyword_id WHERE pk.paper_id = p.paper_id), '')
           AS keywords,
       COALESCE(v.name || CASE WHEN v.short_name <> '' THEN ' (' || v.short_name || ')'
                                ELSE '' END, '') AS venue
FROM {paper} p LEFT JOIN {venue} v ON v.id = p.venue_id
"""


@contextlib.contextmanager
def without_jit(cursor: Any) -> Iterator[None]:
    """PostgreSQL: no JIT compilation for the statements run inside, in the caller's
    transaction, the setting before restored after. The source rows' correlated
    subqueries are estimated per paper against the whole author table, so a batch of a
    few hundred papers passes `jit_above_cost` while its tables have no statistics (an
    import, before its ANALYZE): compiling took about half a second a statement, longer
    than running it. Elsewhere (SQLite, or outside a transaction, where a local setting
    would not hold): nothing. On an error the setting is left to the rollback, which
    undoes it (a statement in a failed transaction would raise again)."""
    if cursor.db.vendor != "postgresql" or cursor.db.get_autocommit():
        yield
        return
    cursor.execute("SELECT current_setting('jit'), set_config('jit', 'off', true)")
    before = cursor.fetchone()[0]
    yield
    cursor.execute("SELECT set_config('jit', %s, true)", [before])

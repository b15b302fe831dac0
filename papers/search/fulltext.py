"""Ranked full-text search over title, abstract, authors, keywords and venue (issue 4).

Storage (migration 0003):
- SQLite: the FTS5 table `papers_paper_fts` (rowid = paper_id; columns title, abstract,
  authors, keywords, venue; `porter unicode61 remove_diacritics 2`, so words are stemmed
  as PostgreSQL's English configuration does).
- PostgreSQL: the table `papers_paper_fts` (paper_id, a weighted tsvector `document`
  with a GIN index, `fuzzy_text` = title + authors, whose words fuzzy matching knows).
- On both, a trigger on papers_paper removes a deleted paper's row (and on PostgreSQL a
  TRUNCATE trigger empties the table with it).

Sync: every write path calls `papers.search.index.papers_changed`, which calls
`index_papers` inside the write's transaction. It rewrites the papers' rows with one
INSERT ... SELECT per batch, reading the text straight from the library tables, so a bulk
import pays one statement per batch and no Python per paper.

Ranking: SQLite `bm25()` with column weights (title 10, authors and keywords 5, venue 2,
abstract 1); PostgreSQL `ts_rank` over the weights A title, B authors/keywords/venue,
D abstract, normalised by document length. `score` is higher-is-better on both.
Scores are comparable within one engine only.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet

from papers.models import Keyword, Paper, PaperAuthor, PaperKeyword, Venue
from papers.search import query as q
from papers.search.filters import check_page
from papers.search.types import SearchFilters, SearchHit, SearchPage
from papers.search.vocabulary import FUZZY_MIN_CHARS, get_vocabulary
from papers.selectors import papers_in_scope
from research_site.errors import InvalidInput

FTS_TABLE = "papers_paper_fts"
# English stemming and stop words, accents folded (migration 0003).
PG_CONFIG = "papers_english"
# Column order of the FTS5 table, and the bm25 weight of each.
FTS_COLUMNS = ("title", "abstract", "authors", "keywords", "venue")
BM25_WEIGHTS = (10.0, 1.0, 5.0, 5.0, 2.0)
# ts_rank weights for D, C, B, A (abstract, -, authors/keywords/venue, title).
PG_WEIGHTS = "{0.1, 0.2, 0.4, 1.0}"
# ts_rank normalisation 1: divide by 1 + log(document length), as BM25 discounts length.
PG_NORMALIZATION = 1

INDEX_BATCH = 500
# Fewer exact hits than this and search also tries fuzzy matching on titles and authors.
FUZZY_BELOW = 3
FUZZY_MAX_HITS = 100
# Fuzzy matches are ranked among the newest this many title/author hits.
FUZZY_CANDIDATES = 2_000
# Above this many hits, bm25 scores at most RANK_CANDIDATES hits that have a query word in
# the title (PERF-NOTES: ranking cost grows with hits, ~3 µs a hit on this hardware).
RANK_PREFILTER_ABOVE = 8_000
RANK_CANDIDATES = 4_000
SNIPPET_TOKENS = 24
ELLIPSIS = "…"


# --- the text that is indexed ------------------------------------------------------------


def _tables() -> dict[str, str]:
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
_SQLITE_SOURCE = """
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

_PG_SOURCE = """
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

_PG_UPSERT = """
INSERT INTO {fts} (paper_id, document, fuzzy_text)
SELECT s.paper_id,
       setweight(to_tsvector('{config}', s.title), 'A')
       || setweight(to_tsvector('{config}', s.authors || ' ' || s.keywords || ' ' || s.venue), 'B')
       || setweight(to_tsvector('{config}', s.abstract), 'D'),
       s.title || ' ' || s.authors
FROM ({source} WHERE p.paper_id = ANY(%s)) s
ON CONFLICT (paper_id) DO UPDATE
SET document = EXCLUDED.document, fuzzy_text = EXCLUDED.fuzzy_text
"""


def _connection(using: str) -> BaseDatabaseWrapper:
    return connections[using]


def index_papers(paper_ids: Sequence[int], *, using: str = DEFAULT_DB_ALIAS) -> None:
    """Bring the full-text rows of these papers up to date with the library.

    Called inside the writer's transaction (papers.search.index.papers_changed), so the
    index commits or rolls back with the write. Ids of papers that no longer exist just
    lose their row. One DELETE + one INSERT ... SELECT (SQLite) or one upsert (PostgreSQL)
    per batch of INDEX_BATCH papers.
    """
    ids = sorted({int(i) for i in paper_ids})
    if not ids:
        return
    connection = _connection(using)
    tables = _tables()
    with connection.cursor() as cursor:
        for start in range(0, len(ids), INDEX_BATCH):
            batch = ids[start : start + INDEX_BATCH]
            if connection.vendor == "postgresql":
                source = _PG_SOURCE.format(**tables)
                cursor.execute(
                    _PG_UPSERT.format(fts=FTS_TABLE, config=PG_CONFIG, source=source), [batch]
                )
                continue
            marks = ", ".join(["%s"] * len(batch))
            cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE rowid IN ({marks})", batch)  # noqa: S608
            cursor.execute(
                f"INSERT INTO {FTS_TABLE} (rowid, {', '.join(FTS_COLUMNS)}) "
                + _SQLITE_SOURCE.format(**tables)
                + f" WHERE p.paper_id IN ({marks})",
                batch,
            )


def rebuild_index(
    *,
    batch_size: int = 2000,
    using: str = DEFAULT_DB_ALIAS,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Empty the full-text index and index every paper again, in batches; returns the
    number of papers indexed. `progress(n)` is called after each batch with its size.

    Used by migration 0003 (upgrading a library in place) and `reindex_fulltext`.
    """
    connection = _connection(using)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(f"TRUNCATE {FTS_TABLE}")
        else:
            cursor.execute(f"DELETE FROM {FTS_TABLE}")  # noqa: S608
        cursor.execute(f"SELECT paper_id FROM {Paper._meta.db_table} ORDER BY paper_id")  # noqa: S608
        ids = [row[0] for row in cursor.fetchall()]
    for start in range(0, len(ids), batch_size):
        batch = ids[start : start + batch_size]
        index_papers(batch, using=using)
        if progress is not None:
            progress(len(batch))
    if connection.vendor == "sqlite" and ids:
        with connection.cursor() as cursor:
            # Merge the segments the batches left behind: fewer b-trees per query.
            cursor.execute(f"INSERT INTO {FTS_TABLE} ({FTS_TABLE}) VALUES ('optimize')")  # noqa: S608
    return len(ids)


# --- searching ---------------------------------------------------------------------------


def _check_request(query: str, limit: int, offset: int) -> q.Node:
    if not isinstance(query, str):
        raise InvalidInput("query must be text.", field="query")
    if len(query) > settings.MAX_QUERY_CHARS:
        raise InvalidInput(
            f"query is {len(query)} characters; the limit is {settings.MAX_QUERY_CHARS}.",
            field="query",
            hint="shorten the query",
        )
    if not query.strip():
        raise InvalidInput("query cannot be empty.", field="query", hint="type at least one word")
    check_page(limit, offset)
    return q.parse_query(query)


def _restriction(
    filters: SearchFilters | None, scope: Sequence[str] | None
) -> tuple[str, list[Any]] | None:
    """SQL selecting the paper ids a search may return (scope and filters), or None for
    every paper."""
    has_filters = filters is not None and any(value is not None for value in vars(filters).values())
    if scope is None and not has_filters:
        return None
    queryset: QuerySet[Paper] = papers_in_scope(scope)
    if has_filters:
        queryset = _apply_filters(queryset, filters, scope)
    sql, params = queryset.order_by().values("pk").query.sql_with_params()
    return sql, list(params)


def _apply_filters(
    queryset: QuerySet[Paper], filters: SearchFilters | None, scope: Sequence[str] | None
) -> QuerySet[Paper]:
    from papers.search.filters import apply_filters

    return apply_filters(queryset, filters, scope=scope)


@dataclass
class _Ranked:
    ids: list[int]
    scores: list[float]
    total: int


def _bm25() -> str:
    return f"bm25({FTS_TABLE}, {', '.join(str(w) for w in BM25_WEIGHTS)})"


def _sqlite_rank(
    cursor: Any,
    match: str,
    restriction: tuple[str, list[Any]] | None,
    limit: int,
    offset: int,
    prefilter: str | None = None,
) -> _Ranked:
    """Top `limit` hits after `offset` by weighted bm25, and the number of hits.

    bm25 scores every hit, so its cost grows with the hit count (PERF-NOTES: ~50 ms at
    60k hits here). Above RANK_PREFILTER_ABOVE hits, and when the page lies within the
    first RANK_CANDIDATES, only the RANK_CANDIDATES newest hits that carry a query word in
    the title are scored (`prefilter`): with title weight 10 those hold the top of the
    ranking. If they run out before the page is full, every hit is ranked.
    """
    where = f"{FTS_TABLE} MATCH %s"
    params: list[Any] = [match]
    if restriction is not None:
        where += f" AND rowid IN ({restriction[0]})"
        params += restriction[1]
    cursor.execute(f"SELECT count(*) FROM {FTS_TABLE} WHERE {where}", params)  # noqa: S608
    total = cursor.fetchone()[0]
    if total == 0 or offset >= total:
        return _Ranked([], [], total)
    if prefilter is not None and total > RANK_PREFILTER_ABOVE and offset + limit <= RANK_CANDIDATES:
        cursor.execute(
            f"SELECT rowid, r FROM (SELECT rowid, {_bm25()} AS r FROM {FTS_TABLE} "  # noqa: S608
            f"WHERE {where} ORDER BY rowid DESC LIMIT {RANK_CANDIDATES}) "
            "ORDER BY r LIMIT %s OFFSET %s",
            [f"({match}) AND ({prefilter})", *params[1:], limit, offset],
        )
        rows = cursor.fetchall()
        if len(rows) == limit:
            return _Ranked([r[0] for r in rows], [-r[1] for r in rows], total)
    cursor.execute(
        f"SELECT rowid, {_bm25()} AS r FROM {FTS_TABLE} WHERE {where} "  # noqa: S608
        "ORDER BY r LIMIT %s OFFSET %s",
        [*params, limit, offset],
    )
    rows = cursor.fetchall()
    return _Ranked([r[0] for r in rows], [-r[1] for r in rows], total)


def _title_prefilter(node: q.Node) -> str | None:
    """`{title} : ("w1" OR "w2" * ...)` over the query's positive terms, for big hit sets."""
    terms = list(dict.fromkeys(q.positive_terms(node)))
    if not terms:
        return None
    return "{title} : (" + " OR ".join(q.to_fts5(term) for term in terms) + ")"


def _sqlite_snippets(cursor: Any, match: str, ids: list[int]) -> dict[int, str]:
    """The best passage of each paper: from the abstract if it matches there, else from
    the best-matching column; matched words in **bold**."""
    if not ids:
        return {}
    marks = ", ".join(["%s"] * len(ids))
    # FTS5 answers `rowid IN (...)` with one lookup per id, and re-expands every prefix
    # term for each (50 ms for 'transl*'); for prefix queries, one pass over the hits in
    # the ids' rowid range, filtered by `+rowid IN`, is 20x cheaper.
    if '" *' in match:
        condition = f"rowid BETWEEN %s AND %s AND +rowid IN ({marks})"
        params = [match, min(ids), max(ids), *ids]
    else:
        condition = f"rowid IN ({marks})"
        params = [match, *ids]
    cursor.execute(
        f"SELECT rowid, snippet({FTS_TABLE}, 1, '**', '**', '{ELLIPSIS}', {SNIPPET_TOKENS}), "  # noqa: S608
        f"snippet({FTS_TABLE}, -1, '**', '**', '{ELLIPSIS}', {SNIPPET_TOKENS}) "
        f"FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s AND {condition}",
        params,
    )
    snippets = {}
    for rowid, in_abstract, best in cursor.fetchall():
        snippets[rowid] = in_abstract if "**" in (in_abstract or "") else (best or in_abstract)
    return snippets


def _pg_rank(
    cursor: Any,
    tsquery: tuple[str, list[Any]],
    restriction: tuple[str, list[Any]] | None,
    limit: int,
    offset: int,
) -> _Ranked:
    where = "f.document @@ query.q"
    params: list[Any] = []
    if restriction is not None:
        where += f" AND f.paper_id IN ({restriction[0]})"
        params += restriction[1]
    head = f"WITH query AS (SELECT {tsquery[0]} AS q) "
    cursor.execute(
        head + f"SELECT f.paper_id, ts_rank('{PG_WEIGHTS}', f.document, query.q, "  # noqa: S608
        f"{PG_NORMALIZATION}) AS r FROM {FTS_TABLE} f, query WHERE {where} "
        "ORDER BY r DESC, f.paper_id LIMIT %s OFFSET %s",
        [*tsquery[1], *params, limit, offset],
    )
    rows = cursor.fetchall()
    if len(rows) < limit and (rows or offset == 0):
        total = offset + len(rows)
    else:
        cursor.execute(
            head + f"SELECT count(*) FROM {FTS_TABLE} f, query WHERE {where}",  # noqa: S608
            [*tsquery[1], *params],
        )
        total = cursor.fetchone()[0]
    return _Ranked([r[0] for r in rows], [float(r[1]) for r in rows], total)


_HEADLINE = (
    'StartSel=**, StopSel=**, MaxWords=35, MinWords=15, MaxFragments=2, FragmentDelimiter=" … "'
)


def _pg_snippets(cursor: Any, tsquery: tuple[str, list[Any]], ids: list[int]) -> dict[int, str]:
    if not ids:
        return {}
    cursor.execute(
        f"WITH query AS (SELECT {tsquery[0]} AS q) "  # noqa: S608
        f"SELECT p.paper_id, ts_headline('{PG_CONFIG}', "
        "CASE WHEN p.abstract <> '' THEN p.abstract ELSE p.snippet END, query.q, %s), "
        f"ts_headline('{PG_CONFIG}', p.title || ' — ' || p.authors_string, query.q, %s) "
        f"FROM {Paper._meta.db_table} p, query WHERE p.paper_id = ANY(%s)",
        [*tsquery[1], _HEADLINE, _HEADLINE + ", HighlightAll=true", ids],
    )
    snippets = {}
    for paper_id, in_abstract, in_title in cursor.fetchall():
        snippets[paper_id] = in_abstract if "**" in (in_abstract or "") else in_title
    return snippets


_SQLITE_RECORDS = """
SELECT p.paper_id, p.id, p.citekey, p.title, p.year, v.name, p.source, p.doi,
       (SELECT json_group_array(name) FROM (
            SELECT a.name FROM {paperauthor} pa JOIN {author} a ON a.id = pa.author_id
            WHERE pa.paper_id = p.paper_id ORDER BY pa.position)),
       (SELECT json_group_array(k.name) FROM {paperkeyword} pk
            JOIN {keyword} k ON k.id = pk.keyword_id WHERE pk.paper_id = p.paper_id)
FROM {paper} p LEFT JOIN {venue} v ON v.id = p.venue_id
WHERE p.paper_id IN ({marks})
"""

# Names are looked up by primary key one link at a time: with a join, stale statistics
# after a bulk import made the planner hash-join the whole author table (40 ms a page).
_PG_RECORDS = """
SELECT p.paper_id, p.id, p.citekey, p.title, p.year, v.name, p.source, p.doi,
       ARRAY(SELECT (SELECT a.name FROM {author} a WHERE a.id = pa.author_id)
             FROM {paperauthor} pa WHERE pa.paper_id = p.paper_id ORDER BY pa.position),
       ARRAY(SELECT (SELECT k.name FROM {keyword} k WHERE k.id = pk.keyword_id)
             FROM {paperkeyword} pk WHERE pk.paper_id = p.paper_id)
FROM {paper} p LEFT JOIN {venue} v ON v.id = p.venue_id
WHERE p.paper_id = ANY(%s)
"""


def paper_briefs(ids: list[int]) -> dict[int, dict[str, Any]]:
    """paper_brief records for a page, in one statement.

    Same keys and values as papers.selectors.paper_brief (a test holds them equal), but
    without model instances and prefetch queries: for 20 papers those took 4-10 ms, more
    than the ranking itself.
    """
    if not ids:
        return {}
    connection = _connection(DEFAULT_DB_ALIAS)
    tables = _tables()
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_PG_RECORDS.format(**tables), [ids])
            rows = [(*row[:8], list(row[8]), list(row[9])) for row in cursor.fetchall()]
        else:
            marks = ", ".join(["%s"] * len(ids))
            cursor.execute(_SQLITE_RECORDS.format(marks=marks, **tables), ids)
            rows = [(*row[:8], json.loads(row[8]), json.loads(row[9])) for row in cursor.fetchall()]
    return {
        row[0]: {
            "paper_id": row[0],
            "id": row[1],
            "citekey": row[2],
            "title": row[3],
            "year": row[4],
            "venue": row[5],
            "authors": row[8],
            "keywords": sorted(row[9]),
            "source": row[6],
            "doi": row[7],
        }
        for row in rows
    }


def _hits(ids: list[int], scores: list[float], snippets: dict[int, str]) -> list[SearchHit]:
    records = paper_briefs(ids)
    return [
        SearchHit(record=records[i], score=round(score, 6), snippet_markdown=snippets.get(i, ""))
        for i, score in zip(ids, scores, strict=True)
        if i in records
    ]


def paper_search(
    *,
    query: str,
    filters: SearchFilters | None = None,
    limit: int = 10,
    offset: int = 0,
    scope: Sequence[str] | None = None,
) -> SearchPage:
    """Ranked full-text search of the library (the client's scope), most relevant first.

    Each hit is the paper's brief record with `score` (higher is better) and
    `snippet_markdown` (the matching passage, matched words in **bold**). When the exact
    query finds fewer than FUZZY_BELOW papers, titles and authors are searched again with
    typo tolerance: the page then has `mode="fuzzy"` and a note, the exact hits first.

    Raises InvalidInput for an empty, malformed or oversized query, and for limit or
    offset outside 1..MAX_PAGE_SIZE / 0..MAX_OFFSET.
    """
    node = _check_request(query, limit, offset)
    restriction = _restriction(filters, scope)
    connection = _connection(DEFAULT_DB_ALIAS)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            tsquery = q.to_tsquery_sql(node, PG_CONFIG)
            ranked = _pg_rank(cursor, tsquery, restriction, limit, offset)
            snippets = _pg_snippets(cursor, tsquery, ranked.ids)
        else:
            match = q.to_fts5(node)
            ranked = _sqlite_rank(
                cursor, match, restriction, limit, offset, prefilter=_title_prefilter(node)
            )
            snippets = _sqlite_snippets(cursor, match, ranked.ids)
    page = SearchPage(
        hits=_hits(ranked.ids, ranked.scores, snippets),
        total=ranked.total,
        limit=limit,
        offset=offset,
        mode="fulltext",
    )
    if ranked.total < FUZZY_BELOW:
        _add_fuzzy(page, node, restriction)
    return page


def paper_search_ids(
    *,
    query: str,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
    limit: int | None = None,
    ranked: bool = True,
) -> list[int]:
    """The ids of the papers matching a full-text query (scope and filters applied):
    best first when `ranked`, in id order otherwise, at most `limit` (None: all). No
    snippets, records or fuzzy fallback; for facets over a query's results and for hybrid
    fusion. Raises InvalidInput like paper_search.

    Ranking costs ~3 µs a hit (bm25 scores every one): callers that only count, such as
    facets, should pass `ranked=False`, which reads the hits in id order and stops at
    `limit`. A ranked `limit` up to RANK_CANDIDATES gets paper_search's capped ranking.
    """
    node = _check_request(query, 1, 0)
    restriction = _restriction(filters, scope)
    connection = _connection(DEFAULT_DB_ALIAS)
    tail, tail_params = "", []
    if limit is not None:
        tail, tail_params = " LIMIT %s", [int(limit)]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            sql, params = q.to_tsquery_sql(node, PG_CONFIG)
            where = "f.document @@ query.q"
            if restriction is not None:
                where += f" AND f.paper_id IN ({restriction[0]})"
                params = [*params, *restriction[1]]
            order = (
                f"ts_rank('{PG_WEIGHTS}', f.document, query.q, {PG_NORMALIZATION}) DESC, f.paper_id"
                if ranked
                else "f.paper_id"
            )
            cursor.execute(
                f"WITH query AS (SELECT {sql} AS q) SELECT f.paper_id FROM {FTS_TABLE} f, "  # noqa: S608
                f"query WHERE {where} ORDER BY {order}{tail}",
                [*params, *tail_params],
            )
        else:
            match = q.to_fts5(node)
            if ranked and limit is not None and limit <= RANK_CANDIDATES:
                # The same capped ranking as paper_search (hybrid fusion reads the top 100).
                prefilter = _title_prefilter(node)
                return _sqlite_rank(cursor, match, restriction, limit, 0, prefilter).ids
            where = f"{FTS_TABLE} MATCH %s"
            params = [match]
            if restriction is not None:
                where += f" AND rowid IN ({restriction[0]})"
                params += restriction[1]
            order = _bm25() if ranked else "rowid"
            cursor.execute(
                f"SELECT rowid FROM {FTS_TABLE} WHERE {where} ORDER BY {order}{tail}",  # noqa: S608
                [*params, *tail_params],
            )
        return [row[0] for row in cursor.fetchall()]


# --- fuzzy matching ------------------------------------------------------------------------


def _add_fuzzy(page: SearchPage, node: q.Node, restriction: tuple[str, list[Any]] | None) -> None:
    """Append typo-tolerant title/author matches to a page with few exact hits."""
    words = [w for w in dict.fromkeys(q.positive_words(node)) if len(w) >= 3]
    if not words:
        return
    excluded = q.excluded_parts(node)
    connection = _connection(DEFAULT_DB_ALIAS)
    match: str | None = None
    tsquery: tuple[str, list[Any]] | None = None
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            found = _pg_fuzzy(cursor, words, excluded, restriction)
            tsquery = _pg_fuzzy_tsquery(words, excluded)
        else:
            match = _sqlite_fuzzy_match(words, excluded)
            found = _sqlite_fuzzy(cursor, match, restriction) if match else []
        seen = {hit.record["paper_id"] for hit in page.hits}
        extra = [(pid, score) for pid, score in found if pid not in seen]
        if not extra:
            return
        # Fuzzy hits follow the exact ones; with an offset, the page continues that list.
        exact_total = page.total
        start = max(page.offset - exact_total, 0)
        room = page.limit - len(page.hits)
        chosen = extra[start : start + room] if room > 0 else []
        ids = [pid for pid, _ in chosen]
        if match:
            snippets = _sqlite_snippets(cursor, match, ids)
        else:
            snippets = _pg_snippets(cursor, tsquery, ids) if tsquery else {}
    page.hits += _hits(ids, [score for _, score in chosen], snippets)
    page.total = exact_total + len(extra)
    page.mode = "fuzzy"
    page.notes.append(
        "few exact matches; added typo-tolerant matches on titles and authors"
        if exact_total
        else "no exact match; results are typo-tolerant matches on titles and authors"
    )


def _sqlite_fuzzy_match(words: list[str], excluded: list[q.Node]) -> str | None:
    """An FTS5 expression matching titles/authors that have each word or a close spelling
    of it: `{title authors} : (("transformer" OR "transformers") AND ("vaswani"))`, minus
    what the query's NOT parts match."""
    groups = _close_groups(words)
    if groups is None:
        return None
    alternatives = [" OR ".join(q.to_fts5(q.Term(t)) for t in group) for group in groups]
    match = "{title authors} : (" + " AND ".join(f"({a})" for a in alternatives) + ")"
    if excluded:
        match = f"({match}) NOT ({' OR '.join(q.to_fts5(part) for part in excluded)})"
    return match


def _sqlite_fuzzy(
    cursor: Any, match: str, restriction: tuple[str, list[Any]] | None
) -> list[tuple[int, float]]:
    where = f"{FTS_TABLE} MATCH %s"
    params: list[Any] = [match]
    if restriction is not None:
        where += f" AND rowid IN ({restriction[0]})"
        params += restriction[1]
    cursor.execute(
        f"SELECT rowid, r FROM (SELECT rowid, {_bm25()} AS r FROM {FTS_TABLE} "  # noqa: S608
        f"WHERE {where} ORDER BY rowid DESC LIMIT {FUZZY_CANDIDATES}) ORDER BY r LIMIT %s",
        [*params, FUZZY_MAX_HITS],
    )
    return [(row[0], -row[1]) for row in cursor.fetchall()]


def _close_groups(words: list[str]) -> list[list[str]] | None:
    """For each query word, the indexed title/author words it may be a misspelling of;
    None when a (long enough) word has none, so nothing can match all of them."""
    vocabulary = get_vocabulary()
    groups = []
    for word in words:
        alternatives = vocabulary.close_terms(word.lower())
        if not alternatives:
            if len(word) < FUZZY_MIN_CHARS:
                continue  # a short unknown word ('ned' for 'need') is left out
            return None
        groups.append(alternatives)
    return groups or None


def _pg_fuzzy_tsquery(words: list[str], excluded: list[q.Node]) -> tuple[str, list[Any]] | None:
    groups = _close_groups(words)
    if groups is None:
        return None
    node: q.Node = q.And(tuple(q.Or(tuple(q.Term(t) for t in group)) for group in groups))
    for part in excluded:
        node = q.Not(node, part)
    return q.to_tsquery_sql(node, PG_CONFIG)


def _pg_fuzzy(
    cursor: Any,
    words: list[str],
    excluded: list[q.Node],
    restriction: tuple[str, list[Any]] | None,
) -> list[tuple[int, float]]:
    """The query again with each word replaced by its close spellings, ranked."""
    tsquery = _pg_fuzzy_tsquery(words, excluded)
    if tsquery is None:
        return []
    ranked = _pg_rank(cursor, tsquery, restriction, FUZZY_MAX_HITS, 0)
    return list(zip(ranked.ids, ranked.scores, strict=True))


# --- the raw engine, for the benchmark -------------------------------------------------------


def raw_search_ms(query: str, limit: int = 20) -> float:
    """Milliseconds the engine alone takes for the ranked top `limit` ids of a query (no
    snippets, records, scope or Python shaping): the benchmark's baseline."""
    node = q.parse_query(query)
    connection = _connection(DEFAULT_DB_ALIAS)
    with connection.cursor() as cursor:
        params: list[Any]
        if connection.vendor == "postgresql":
            sql, query_params = q.to_tsquery_sql(node, PG_CONFIG)
            statement = (
                f"WITH query AS (SELECT {sql} AS q) SELECT f.paper_id FROM {FTS_TABLE} f, query "  # noqa: S608
                f"WHERE f.document @@ query.q ORDER BY ts_rank('{PG_WEIGHTS}', f.document, "
                f"query.q, {PG_NORMALIZATION}) DESC LIMIT %s"
            )
            params = [*query_params, limit]
        else:
            statement = (
                f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s "  # noqa: S608
                f"ORDER BY {_bm25()} LIMIT %s"
            )
            params = [q.to_fts5(node), limit]
        started = time.perf_counter()
        cursor.execute(statement, params)
        cursor.fetchall()
        return (time.perf_counter() - started) * 1000

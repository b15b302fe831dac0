"""What the database's own full-text engine does for search: boolean matching of the query
language (phrases, AND/OR/NOT, `prefix*`), ranking when no query word is a BM25 term (a
query of stop words, or a bare `prefix*`), and typo-tolerant matching.

SQLite: the FTS5 table (`bm25()` with column weights); PostgreSQL: the weighted tsvector
table (`ts_rank`). Both are kept by fulltext.index_papers. Every query with a BM25 term is
ranked by the postings (lexical.py); why this index stays for the rest: docs/DECISIONS.md,
"Two full-text indexes".
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

from papers.search import analysis, lexical
from papers.search import query as q
from papers.search.lexical import Ranked, Restriction, intersection
from papers.search.postings import in_list
from papers.search.source import FTS_TABLE
from papers.search.vocabulary import FUZZY_MIN_CHARS, Vocabulary

# English stemming and stop words, accents folded (migration 0003).
PG_CONFIG = "papers_english"
# bm25 weight of each FTS5 column (title, abstract, authors, keywords, venue).
BM25_WEIGHTS = (10.0, 1.0, 5.0, 5.0, 2.0)
# ts_rank weights for D, C, B, A (abstract, -, authors/keywords/venue, title).
PG_WEIGHTS = "{0.1, 0.2, 0.4, 1.0}"
# ts_rank normalisation 1: divide by 1 + log(document length).
PG_NORMALIZATION = 1

FUZZY_MAX_HITS = 100
# Fuzzy matches are ranked among the newest this many title/author hits.
FUZZY_CANDIDATES = 2_000


def _postgres(using: str = DEFAULT_DB_ALIAS) -> bool:
    return connections[using].vendor == "postgresql"


def bm25_sql() -> str:
    return f"bm25({FTS_TABLE}, {', '.join(str(w) for w in BM25_WEIGHTS)})"


def match_restriction(node: q.Node) -> Restriction:
    """SQL selecting the ids of the papers that match a query-language node."""
    if _postgres():
        sql, params = q.to_tsquery_sql(node, PG_CONFIG)
        return f"SELECT paper_id FROM {FTS_TABLE} WHERE document @@ {sql}", list(params)  # noqa: S608
    return (
        f"SELECT rowid AS paper_id FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s",  # noqa: S608
        [q.to_fts5(node)],
    )


def matched_among(node: q.Node, papers: Sequence[int]) -> set[int]:
    """Which of these papers match `node`: on PostgreSQL each listed paper's document
    checked (its key looked up, not every match read); on SQLite FTS5 matches once and
    checks each match against the list (FTS_ROWID)."""
    if not papers:
        return set()
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        if _postgres():
            sql, params = q.to_tsquery_sql(node, PG_CONFIG)
            cursor.execute(
                f"SELECT paper_id FROM {FTS_TABLE} WHERE paper_id = ANY(%s) "  # noqa: S608
                f"AND document @@ {sql}",
                [list(papers), *params],
            )
        else:
            cursor.execute(
                f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s "  # noqa: S608
                f"AND {FTS_ROWID} IN {in_list(papers)}",
                [q.to_fts5(node), *papers],
            )
        return {row[0] for row in cursor.fetchall()}


# How the FTS5 table's rowid is compared with a restriction's ids: `+rowid`, an expression,
# is not offered to FTS5 as a constraint, so SQLite scans the query's matches once and
# checks each against the restriction's list. Given `rowid IN (...)`, FTS5 looks every
# listed id up in the match's doclists instead: 22k papers of a year filter against a
# common word took 41 s at 95k papers, against 54 ms this way (the same rows).
FTS_ROWID = "+rowid"


def rank(
    node: q.Node,
    restrictions: Sequence[Restriction],
    limit: int,
    offset: int,
    *,
    count: bool = True,
) -> Ranked:
    """Papers matching `node`, ranked by the engine (bm25 / ts_rank), with the count
    (`count` false: total 0, for typo tolerance, which needs only the best). The count
    comes with the page, as `count(*) OVER ()` over the same matches: a second statement
    matched them all again (a prefix over 500k papers on PostgreSQL: ~40 % of the search).
    Only a page past the last match, which has no row to carry it, counts apart."""
    where, params = "", list[Any]()
    if restrictions:
        sql, params = intersection(restrictions)
        where = f" AND {{id}} IN ({sql})"
    counted = ", count(*) OVER ()" if count else ", 0"
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        if _postgres():
            tsquery, query_params = q.to_tsquery_sql(node, PG_CONFIG)
            condition = f"f.document @@ query.q{where.format(id='f.paper_id')}"
            head = f"WITH query AS (SELECT {tsquery} AS q) "
            cursor.execute(
                head + f"SELECT f.paper_id, ts_rank('{PG_WEIGHTS}', f.document, query.q, "  # noqa: S608
                f"{PG_NORMALIZATION}) AS r{counted} FROM {FTS_TABLE} f, query "
                f"WHERE {condition} ORDER BY r DESC, f.paper_id LIMIT %s OFFSET %s",
                [*query_params, *params, limit, offset],
            )
            rows = [(pid, float(r), n) for pid, r, n in cursor.fetchall()]
            count_sql = f"{head}SELECT count(*) FROM {FTS_TABLE} f, query WHERE {condition}"  # noqa: S608
            count_params = [*query_params, *params]
        else:
            condition = f"{FTS_TABLE} MATCH %s{where.format(id=FTS_ROWID)}"
            match = q.to_fts5(node)
            # FTS5's bm25() cannot sit beside a window function: ranked in a sub-select.
            cursor.execute(
                f"SELECT rowid, r{counted} FROM (SELECT rowid, {bm25_sql()} AS r "  # noqa: S608
                f"FROM {FTS_TABLE} WHERE {condition}) ORDER BY r LIMIT %s OFFSET %s",
                [match, *params, limit, offset],
            )
            rows = [(pid, -r, n) for pid, r, n in cursor.fetchall()]
            count_sql = f"SELECT count(*) FROM {FTS_TABLE} WHERE {condition}"  # noqa: S608
            count_params = [match, *params]
        if rows or not count or not offset:
            total = int(rows[0][2]) if rows else 0
        else:
            cursor.execute(count_sql, count_params)
            total = int(cursor.fetchone()[0])
    return Ranked([pid for pid, _, _ in rows], [score for _, score, _ in rows], total)


# --- typo-tolerant matching ----------------------------------------------------------


def fuzzy_matches(
    words: list[str],
    excluded: list[q.Node],
    restrictions: Sequence[Restriction],
    vocabulary: Vocabulary,
) -> list[tuple[int, float]]:
    """Papers whose title/authors hold each word or a close spelling of it in
    `vocabulary` (short unknown words are left out), best first, at most FUZZY_MAX_HITS."""
    groups = _close_groups(words, vocabulary)
    if groups is None:
        return []
    where, params = "", list[Any]()
    if restrictions:
        sql, params = intersection(restrictions)
        where = f" AND {{id}} IN ({sql})"
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        if _postgres():
            if not excluded:
                found = _fuzzy_by_postings(groups, restrictions)
                if found is not None:
                    return found
            node: q.Node = q.And(tuple(q.Or(tuple(q.Term(t) for t in g)) for g in groups))
            for part in excluded:
                node = q.Not(node, part)
            ranked = rank(node, restrictions, FUZZY_MAX_HITS, 0, count=False)
            return list(zip(ranked.ids, ranked.scores, strict=True))
        alternatives = [" OR ".join(q.to_fts5(q.Term(t)) for t in g) for g in groups]
        match = "{title authors} : (" + " AND ".join(f"({a})" for a in alternatives) + ")"
        if excluded:
            match = f"({match}) NOT ({' OR '.join(q.to_fts5(part) for part in excluded)})"
        cursor.execute(
            f"SELECT rowid, r FROM (SELECT rowid, {bm25_sql()} AS r FROM {FTS_TABLE} "  # noqa: S608
            f"WHERE {FTS_TABLE} MATCH %s{where.format(id=FTS_ROWID)} ORDER BY rowid DESC "
            f"LIMIT {FUZZY_CANDIDATES}) ORDER BY r LIMIT %s",
            [match, *params, FUZZY_MAX_HITS],
        )
        return [(row[0], -row[1]) for row in cursor.fetchall()]


def _fuzzy_by_postings(
    groups: list[list[str]], restrictions: Sequence[Restriction]
) -> list[tuple[int, float]] | None:
    """PostgreSQL's typo-tolerant matches (each word or a close spelling of it, in any
    field, as its tsvector matched them) from the BM25 postings held in memory, ranked by
    BM25: ts_rank over every match of a common correction ('Macihne': every paper with
    'machine') was most of such a query at scale. A close spelling that is several terms
    or a stop word ('trans-lation', a hyphenation the vocabulary holds as one word) is left
    out when its word has others; None when a word has no other: then the engine matches."""
    alternatives: list[list[int]] = []
    kept: list[str] = []
    for group in groups:
        ids = {word: term for word in group if (term := analysis.word_term(word)) is not None}
        if not ids:
            return None
        alternatives.append(sorted(set(ids.values())))
        kept += ids
    terms = lexical.query_terms(kept)
    if not terms.ids:
        return []
    matching: lexical.Matching = ("and", tuple(("or", tuple(ids)) for ids in alternatives))
    ranked = lexical.rank(terms, restrictions=restrictions, matching=matching, limit=FUZZY_MAX_HITS)
    return list(zip(ranked.ids, ranked.scores, strict=True))


def _close_groups(words: list[str], vocabulary: Vocabulary) -> list[list[str]] | None:
    """For each query word, the indexed title/author words it may be a misspelling of;
    None when a (long enough) word has none, so nothing can match all of them."""
    groups = []
    for word in words:
        alternatives = vocabulary.close_terms(word.lower())
        if not alternatives:
            if len(word) < FUZZY_MIN_CHARS:
                continue  # a short unknown word ('ned' for 'need') is left out
            return None
        groups.append(alternatives)
    return groups or None


def raw_ranked_ids(node: q.Node, limit: int) -> list[int]:
    """The engine alone: top `limit` ids by bm25 / ts_rank, no restriction, no count."""
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        if _postgres():
            sql, params = q.to_tsquery_sql(node, PG_CONFIG)
            cursor.execute(
                f"WITH query AS (SELECT {sql} AS q) SELECT f.paper_id FROM {FTS_TABLE} f, "  # noqa: S608
                f"query WHERE f.document @@ query.q ORDER BY ts_rank('{PG_WEIGHTS}', "
                f"f.document, query.q, {PG_NORMALIZATION}) DESC LIMIT %s",
                [*params, limit],
            )
        else:
            cursor.execute(
                f"SELECT rowid FROM {FTS_TABLE} WHERE {FTS_TABLE} MATCH %s "  # noqa: S608
                f"ORDER BY {bm25_sql()} LIMIT %s",
                [q.to_fts5(node), limit],
            )
        return [row[0] for row in cursor.fetchall()]

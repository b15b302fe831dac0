"""Full-text search of the library. The interfaces call papers/search/local.py, which
uses it alone for the query language and fuses it with semantic ranking for questions.

How a query is read (query.understand): without operators it is natural language, any
content word may match; `"phrases"`, `prefix*`, `-word` and AND / OR / NOT keep their
strict meaning. Ranking is BM25 over postings of our own (lexical.py), the same on SQLite
and PostgreSQL, with restrictions (filters, scope, the query's boolean constraint)
applied inside the ranking; the database's own engine (native.py) does the boolean
matching, the ranking of queries with no BM25 term, and typo-tolerant matching.
Snippets are computed in Python (snippets.py).

Storage of the engine's index (migration 0003), kept here:
- SQLite: the FTS5 table `papers_paper_fts` (rowid = paper_id; columns title, abstract,
  authors, keywords, venue; `porter unicode61 remove_diacritics 2`).
- PostgreSQL: the table `papers_paper_fts` (paper_id, a weighted tsvector `document`
  with a GIN index, `fuzzy_text` = title + authors, whose words fuzzy matching knows).
- On both, a trigger on papers_paper removes a deleted paper's row (and on PostgreSQL a
  TRUNCATE trigger empties the table with it).

Sync: every write path calls `papers.search.index.papers_changed`, which calls
`index_papers` here and postings.index_papers inside the write's transaction.

One module because the index's tables, the writes that keep them current and the SQL that
reads them change together (one migration, one layout per database).
"""

from __future__ import annotations

import json
import re
import time
import zlib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, cast

import numpy as np
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper
from django.db.models import QuerySet

from core.errors import InvalidInput
from papers.models import Annotation, Paper, PaperAsset, PaperPdf
from papers.scoping import membership_model
from papers.search import analysis, lexical, native, snippets
from papers.search import query as q
from papers.search.analysis import is_stop_word
from papers.search.filters import apply_filters, check_page
from papers.search.lexical import Ranked, Restriction
from papers.search.native import PG_CONFIG
from papers.search.source import FTS_TABLE, PG_SOURCE, SQLITE_SOURCE, without_jit
from papers.search.source import tables as source_tables
from papers.search.types import SearchFilters, SearchHit, SearchPage
from papers.search.vocabulary import Vocabulary, current_vocabulary, vocabulary_add_papers
from papers.selectors import BRIEF_COLUMNS, brief_from_values, papers_in_scope

# Column order of the FTS5 table.
FTS_COLUMNS = ("title", "abstract", "authors", "keywords", "venue")
INDEX_BATCH = 500
# Fewer exact hits than this and search also tries fuzzy matching on titles and authors.
FUZZY_BELOW = 3
# The note of a page that would have had typo-tolerant matches, had this process's
# vocabulary been built (the first seconds after a start: papers/search/vocabulary.py).
TYPO_TOLERANCE_LOADING = "typo tolerance is still loading; try again in a few seconds"
_WORD_RE = re.compile(r"[^\W_]+")
# paper_search_ids returns at most this many ids.
MAX_IDS = 10_000
# A hit with no query word in its text (found by meaning) shows this much of its abstract.
SNIPPET_LEAD_CHARS = 240


# --- the text that is indexed ------------------------------------------------------------


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
    per batch of INDEX_BATCH papers; the papers' title/author words are added to this
    process's typo-tolerance vocabulary when it holds one.
    """
    ids = sorted({int(i) for i in paper_ids})
    if not ids:
        return
    connection = _connection(using)
    tables = source_tables()
    with connection.cursor() as cursor, without_jit(cursor):
        for start in range(0, len(ids), INDEX_BATCH):
            batch = ids[start : start + INDEX_BATCH]
            if connection.vendor == "postgresql":
                source = PG_SOURCE.format(**tables)
                cursor.execute(
                    _PG_UPSERT.format(fts=FTS_TABLE, config=PG_CONFIG, source=source), [batch]
                )
                continue
            marks = ", ".join(["%s"] * len(batch))
            cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE rowid IN ({marks})", batch)  # noqa: S608
            cursor.execute(
                f"INSERT INTO {FTS_TABLE} (rowid, {', '.join(FTS_COLUMNS)}) "
                + SQLITE_SOURCE.format(**tables)
                + f" WHERE p.paper_id IN ({marks})",
                batch,
            )
    # The words of these titles and authors become typo corrections in this process now
    # (other processes: at their vocabulary's next rebuild).
    for start in range(0, len(ids), INDEX_BATCH):
        vocabulary_add_papers(ids[start : start + INDEX_BATCH], using=using)


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


# The paper columns of a brief record (papers.selectors.BRIEF_COLUMNS) by their SQL names.
_BRIEF_SQL_COLUMNS = ", ".join(
    "p.id" if column == "human_id" else f"p.{column}" for column in BRIEF_COLUMNS
)

_SQLITE_RECORDS = """
SELECT {columns}, v.name,
       (SELECT json_group_array(name) FROM (
            SELECT a.name FROM {paperauthor} pa JOIN {author} a ON a.id = pa.author_id
            WHERE pa.paper_id = p.paper_id ORDER BY pa.position)),
       (SELECT json_group_array(k.name) FROM {paperkeyword} pk
            JOIN {keyword} k ON k.id = pk.keyword_id WHERE pk.paper_id = p.paper_id),
       (SELECT json_group_array(pp.project_id) FROM {projectpaper} pp
            WHERE pp.paper_id = p.paper_id),
       (SELECT json_group_array(s.name) FROM {paperasset} s
            WHERE s.paper_id = p.paper_id AND s.kind = 'summary'),
       EXISTS(SELECT 1 FROM {paperpdf} f WHERE f.paper_id = p.paper_id),
       (SELECT COUNT(*) FROM {annotation} n WHERE n.paper_id = p.paper_id){texts}
FROM {paper} p LEFT JOIN {venue} v ON v.id = p.venue_id
WHERE p.paper_id IN ({marks})
"""

# Names are looked up by primary key one link at a time: with a join, stale statistics
# after a bulk import made the planner hash-join the whole author table (40 ms a page).
_PG_RECORDS = """
SELECT {columns}, v.name,
       ARRAY(SELECT (SELECT a.name FROM {author} a WHERE a.id = pa.author_id)
             FROM {paperauthor} pa WHERE pa.paper_id = p.paper_id ORDER BY pa.position),
       ARRAY(SELECT (SELECT k.name FROM {keyword} k WHERE k.id = pk.keyword_id)
             FROM {paperkeyword} pk WHERE pk.paper_id = p.paper_id),
       ARRAY(SELECT pp.project_id FROM {projectpaper} pp WHERE pp.paper_id = p.paper_id),
       ARRAY(SELECT s.name FROM {paperasset} s
             WHERE s.paper_id = p.paper_id AND s.kind = 'summary'),
       EXISTS(SELECT 1 FROM {paperpdf} f WHERE f.paper_id = p.paper_id),
       (SELECT COUNT(*) FROM {annotation} n WHERE n.paper_id = p.paper_id){texts}
FROM {paper} p LEFT JOIN {venue} v ON v.id = p.venue_id
WHERE p.paper_id = ANY(%s)
"""


def _record_tables() -> dict[str, str]:
    return {
        **source_tables(),
        "projectpaper": membership_model()._meta.db_table,
        "paperasset": PaperAsset._meta.db_table,
        "paperpdf": PaperPdf._meta.db_table,
        "annotation": Annotation._meta.db_table,
        "columns": _BRIEF_SQL_COLUMNS,
    }


def paper_briefs(ids: list[int]) -> dict[int, dict[str, Any]]:
    """paper_brief records for a page, in one statement.

    Same keys and values as papers.selectors.paper_brief (both are built by
    `brief_from_values`; a test holds them equal), but without model instances and
    prefetch queries: for 20 papers those took 4-10 ms, more than the ranking itself.
    """
    return {pk: record for pk, (record, _) in _briefs(ids, texts=False).items()}


def paper_briefs_with_texts(ids: list[int]) -> dict[int, tuple[dict[str, Any], tuple[str, str]]]:
    """paper_briefs, each with the paper's (abstract, snippet) for its passage, from the
    same statement (a search page needs both: one round trip instead of two)."""
    return _briefs(ids, texts=True)


def _briefs(ids: list[int], *, texts: bool) -> dict[int, tuple[dict[str, Any], tuple[str, str]]]:
    if not ids:
        return {}
    connection = _connection(DEFAULT_DB_ALIAS)
    tables = _record_tables()
    tables["texts"] = ", p.abstract, p.snippet" if texts else ""
    width = len(BRIEF_COLUMNS)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(_PG_RECORDS.format(**tables), [ids])
            rows = cursor.fetchall()
            decode: Callable[[Any], list[Any]] = list
        else:
            marks = ", ".join(["%s"] * len(ids))
            cursor.execute(_SQLITE_RECORDS.format(marks=marks, **tables), ids)
            rows = cursor.fetchall()
            decode = _json_list
    records = {}
    for row in rows:
        values = dict(zip(BRIEF_COLUMNS, row[:width], strict=True))
        venue, authors, keywords, projects, summaries, has_pdf_file, annotations = row[
            width : width + 7
        ]
        values.update(
            venue=venue,
            authors=decode(authors),
            keywords=decode(keywords),
            projects=decode(projects),
            summaries=decode(summaries),
            has_pdf_file=bool(has_pdf_file),
            annotation_count=annotations,
        )
        text = (row[width + 7] or "", row[width + 8] or "") if texts else ("", "")
        records[row[0]] = (brief_from_values(values), text)
    return records


def _json_list(text: str) -> list[Any]:
    """A json_group_array; most are empty (a paper's projects, summaries): no parser."""
    return [] if text == "[]" else json.loads(text)


# --- searching ---------------------------------------------------------------------------


def check_query(query: str, limit: int, offset: int) -> q.Understood:
    """The query understood (see query.understand); the limits apply to what was sent."""
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
    if "\x00" in query:
        raise InvalidInput("query cannot contain NUL characters.", field="query")
    check_page(limit, offset)
    return q.understand(query)


def search_restrictions(
    filters: SearchFilters | None, scope: Sequence[str] | None
) -> list[Restriction]:
    """SQL selecting the papers a search may return (scope and filters); [] for all."""
    has_filters = filters is not None and any(value is not None for value in vars(filters).values())
    if scope is None and not has_filters:
        return []

    def build() -> Restriction:
        queryset: QuerySet[Paper] = papers_in_scope(scope)
        if has_filters:
            queryset = apply_filters(queryset, filters, scope=scope)
        sql, params = queryset.order_by().values("paper_id").query.sql_with_params()
        return sql, list(params)

    # Built once per search: its full-text and semantic rankings both ask (~2 ms each).
    key = ("restrictions", repr(filters), None if scope is None else tuple(scope))
    sql, params = lexical.once_per_search(key, build)
    return [(sql, list(params))]


def _without_stop_words(node: q.Node) -> q.Node:
    """A strict query without the stop words it ANDs ('the', 'of' never have to match)."""
    if isinstance(node, q.And):
        kept = [_without_stop_words(child) for child in node.children if not _is_stop(child)]
        if not kept:
            return node
        return kept[0] if len(kept) == 1 else q.And(tuple(kept))
    if isinstance(node, q.Or):
        return q.Or(tuple(_without_stop_words(child) for child in node.children))
    if isinstance(node, q.Not):
        return q.Not(_without_stop_words(node.include), node.exclude)
    return node


def _is_stop(node: q.Node) -> bool:
    return isinstance(node, q.Term) and not node.prefix and is_stop_word(node.text.lower())


def _all_words(understood: q.Understood) -> q.Node:
    """Every word of a natural query ANDed: the engine's own matching, for queries with
    no ranking term (stop words only, or words no paper has)."""
    terms = tuple(q.Term(word) for word in dict.fromkeys(understood.words))
    node: q.Node = terms[0] if len(terms) == 1 else q.And(terms)
    if understood.constraint is not None:
        node = q.And((node, understood.constraint))
    return node


def _rank(
    understood: q.Understood, restrictions: list[Restriction], limit: int, offset: int
) -> Ranked:
    terms = lexical.query_terms(understood.words)
    constraint = understood.constraint
    if constraint is not None:
        constraint = _without_stop_words(constraint)
    prefixes = {} if constraint is None else _prefix_terms(constraint)
    if prefixes is None:  # a prefix beginning too many words: the engine matches prefixes
        if terms.ids and constraint is not None and understood.prefixes:
            # Papers may match through a prefix alone, with no ranking term: rank them all
            # if they are few, else leave the ranking to the engine.
            narrowed = [*restrictions, native.match_restriction(constraint)]
            papers = lexical.small_set(narrowed)
            if papers is not None:
                return lexical.rank_papers(terms, papers, limit=limit, offset=offset)
            return native.rank(constraint, restrictions, limit, offset)
        prefixes = {}
    elif prefixes:
        # A paper matching through a prefix ranks by the prefix's words, weighed as one.
        positive = [t.text for t in q.positive_terms(cast(q.Node, constraint)) if t.prefix]
        if positive:
            terms = lexical.combined(terms, *(prefixes[text] for text in dict.fromkeys(positive)))
            if not terms.ids:  # no indexed word begins with the prefixes
                return Ranked([], [], 0)
    if terms.ids:
        narrowed = list(restrictions)
        matching = None
        if constraint is not None:
            matching = term_matching(constraint, prefixes=prefixes)
        if constraint is not None and matching is None:
            checked = _rank_checked(terms, constraint, restrictions, limit, offset)
            if checked is not None:
                return checked
            narrowed.append(native.match_restriction(constraint))
        return lexical.rank(
            terms, restrictions=narrowed, matching=matching, limit=limit, offset=offset
        )
    if constraint is None:
        if not understood.words:
            return Ranked([], [], 0)
        constraint = _all_words(understood)
    return native.rank(constraint, restrictions, limit, offset)


def _prefix_terms(node: q.Node) -> dict[str, lexical.QueryTerms] | None:
    """The terms of the words each `prefix*` of the query begins (lexical.prefix_terms),
    by the prefix's text; None when one begins more than lexical.PREFIX_MOST_WORDS words
    (then the engine matches the query's prefixes, stemming them)."""
    found: dict[str, lexical.QueryTerms] = {}
    for text in _prefix_texts(node):
        if text not in found:
            expanded = lexical.prefix_terms(text)
            if expanded is None:
                return None
            found[text] = expanded
    return found


def _prefix_texts(node: q.Node) -> list[str]:
    if isinstance(node, q.Term):
        return [node.text] if node.prefix else []
    if isinstance(node, q.Phrase):
        return []
    if isinstance(node, q.Not):
        return [*_prefix_texts(node.include), *_prefix_texts(node.exclude)]
    return [text for child in node.children for text in _prefix_texts(child)]


def term_matching(
    node: q.Node,
    *,
    widened: bool = False,
    prefixes: Mapping[str, lexical.QueryTerms] | None = None,
) -> lexical.Matching | None:
    """A strict query's AND / OR / NOT of words as a boolean over the BM25 terms, which
    lexical.rank evaluates on the postings (one analyzer, so both databases match alike);
    None when it holds what the postings cannot tell: a phrase (word order), a prefix not
    in `prefixes` (the terms of the words each begins, _prefix_terms), a stop word, or a
    word that is several terms ('GPT-3'). Those the engine matches.

    `widened`: a phrase or a word of several terms outside a NOT as all of its terms, a
    boolean matching every paper the query matches and some more (for _rank_checked)."""
    if isinstance(node, q.Term | q.Phrase):
        if isinstance(node, q.Term) and node.prefix:
            if prefixes is None or node.text not in prefixes:
                return None
            expanded = prefixes[node.text].ids or (lexical.NO_TERM,)
            return expanded[0] if len(expanded) == 1 else ("or", expanded)
        if isinstance(node, q.Term) and (term := analysis.word_term(node.text)) is not None:
            return term
        text = node.text if isinstance(node, q.Term) else " ".join(node.words)
        ids = list(dict.fromkeys(analysis.term_id(stem) for stem in analysis.stems(text)))
        if not widened or not ids:
            return None
        return ids[0] if len(ids) == 1 else ("and", tuple(ids))
    if isinstance(node, q.Not):
        parts = [
            term_matching(node.include, widened=widened, prefixes=prefixes),
            term_matching(node.exclude, prefixes=prefixes),
        ]
        operation = "not"
    else:
        parts = [
            term_matching(child, widened=widened, prefixes=prefixes) for child in node.children
        ]
        operation = "and" if isinstance(node, q.And) else "or"
    if any(part is None for part in parts):
        return None
    return operation, tuple(cast(lexical.Matching, part) for part in parts)


# A query holding a phrase is ranked over the papers holding all of its words (from the
# postings), and the best CHECKED_FIRST, then up to CHECKED_MOST, are checked against the
# engine's index: reading every match of the phrase from the index (PostgreSQL reads each
# candidate's document to check the word positions) was most of such a query at scale.
CHECKED_FIRST = 512
CHECKED_MOST = 2_048
# Past CHECKED_MOST candidates, the total is estimated from this many of them at random,
# when at least ESTIMATE_FROM_HITS of them match (its relative error then about 15 % or
# less); a rarer phrase is counted by reading every match, as it cost before.
TOTAL_SAMPLE = 400
ESTIMATE_FROM_HITS = 40


def _rank_checked(
    terms: lexical.QueryTerms,
    constraint: q.Node,
    restrictions: list[Restriction],
    limit: int,
    offset: int,
) -> Ranked | None:
    """_rank for a constraint the postings can only widen (a phrase): the candidates they
    allow ranked, then checked by the engine, best first, until the page is full. The
    total is exact when every candidate was checked; else estimated (`total_exact`
    false) from TOTAL_SAMPLE candidates drawn at random (seeded by the query, so a query
    gives the same figure twice) when ESTIMATE_FROM_HITS of them match. None when the
    widened lists do not fit in memory, the page ends past CHECKED_FIRST, or the
    candidates checked or the sample hold too few matches: then every match is read from
    the engine."""
    widened = term_matching(constraint, widened=True)
    depth = offset + limit
    if widened is None or depth > CHECKED_FIRST:
        return None
    allowed = lexical.matching_papers(terms, widened, restrictions)
    if allowed is None:
        return None
    ranked = lexical.rank(terms, restrictions=restrictions, matching=widened, limit=CHECKED_MOST)
    candidates = ranked.ids
    if ranked.total <= len(candidates):  # every candidate checked: the total is exact
        kept = native.matched_among(constraint, candidates)
        found = [(p, s) for p, s in zip(candidates, ranked.scores, strict=True) if p in kept]
        chosen = found[offset:depth]
        return Ranked([p for p, _ in chosen], [s for _, s in chosen], len(found))
    seed = zlib.crc32(repr(constraint).encode())
    picked = np.random.default_rng(seed).choice(len(allowed), TOTAL_SAMPLE, replace=False)
    sample = allowed[np.sort(picked)].tolist()
    kept = native.matched_among(constraint, candidates[:CHECKED_FIRST] + sample)
    if sum(p in kept for p in candidates[:CHECKED_FIRST]) < depth:
        kept |= native.matched_among(constraint, candidates[CHECKED_FIRST:])
    found = [(p, s) for p, s in zip(candidates, ranked.scores, strict=True) if p in kept]
    hits = sum(p in kept for p in sample)
    if len(found) < depth or hits < ESTIMATE_FROM_HITS:
        return None
    total = max(len(found), round(hits / TOTAL_SAMPLE * ranked.total))
    chosen = found[offset:depth]
    return Ranked([p for p, _ in chosen], [s for _, s in chosen], total, total_exact=False)


def _hits(ids: list[int], scores: list[float], understood: q.Understood) -> list[SearchHit]:
    return [hit for hit, _ in _hits_with_abstracts(ids, scores, understood)]


def _hits_with_abstracts(
    ids: list[int], scores: list[float], understood: q.Understood
) -> list[tuple[SearchHit, str]]:
    """Each hit with its paper's abstract (for a lead when no query word is there)."""
    found = paper_briefs_with_texts(ids)
    highlighter = snippets.Highlighter(understood.words, understood.prefixes)
    hits = []
    for paper_id, score in zip(ids, scores, strict=True):
        if paper_id not in found:
            continue
        record, (abstract, snippet) = found[paper_id]
        passage = highlighter.passage(abstract or snippet) or highlighter.passage(
            _fields_line(record)
        )
        hit = SearchHit(record=record, score=round(score, 6), snippet_markdown=passage)
        hits.append((hit, abstract))
    return hits


def _fields_line(record: dict[str, Any]) -> str:
    """Title, authors, keywords and venue in one line: the passage when the abstract holds
    no query word."""
    parts = [record["title"], ", ".join(record["authors"]), ", ".join(record["keywords"])]
    parts.append(record["venue"] or "")
    return " — ".join(part for part in parts if part)


def paper_search(
    *,
    query: str,
    filters: SearchFilters | None = None,
    limit: int = 10,
    offset: int = 0,
    scope: Sequence[str] | None = None,
) -> SearchPage:
    """Ranked full-text search of the library (the client's scope), most relevant first.

    A query without operators is natural language: any of its words may match, and
    papers with more of them, rarer ones, or in the title rank first (BM25,
    papers/search/lexical.py); stop words never have to match. `"phrases"`, `prefix*`
    and `-word` must (not) match as written; AND / OR / NOT give the query its boolean
    meaning. Unbalanced quotes or parentheses are dropped with a note, never an error.

    Each hit is the paper's brief record with `score` (higher is better) and
    `snippet_markdown` (the passage where most query words meet, in **bold**). When
    fewer than FUZZY_BELOW papers match, titles and authors are searched again with
    typo tolerance: the page then has `mode="fuzzy"` and a note, the exact hits first.
    `total` may be an estimate for very broad queries (a note says so).

    Raises InvalidInput for an empty or oversized query, one that only excludes, and for
    limit or offset outside 1..MAX_PAGE_SIZE / 0..MAX_OFFSET.
    """
    understood = check_query(query, limit, offset)
    restrictions = search_restrictions(filters, scope)
    ranked = _rank(understood, restrictions, limit, offset)
    if ranked.total == 0 and (loose := q.relaxed(understood)) is not None:
        # A question with "scare quotes" is still a question.
        understood = loose
        ranked = _rank(understood, restrictions, limit, offset)
    page = SearchPage(
        hits=_hits(ranked.ids, ranked.scores, understood),
        total=ranked.total,
        limit=limit,
        offset=offset,
        mode="fulltext",
        notes=[f"query: {note}" for note in understood.notes],
    )
    if not ranked.total_exact:
        page.notes.append(estimate_note(ranked.total))
    if ranked.total < FUZZY_BELOW:
        _add_fuzzy(page, query, understood, restrictions)
    return page


def paper_search_ids(
    *,
    query: str,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
    limit: int | None = None,
    ranked: bool = True,
) -> list[int]:
    """The ids of the best papers for a full-text query (scope and filters applied), at
    most `limit` (None: up to MAX_IDS), best first; with `ranked=False` the same papers
    in id order. No snippets, records or fuzzy fallback: for what matches a title
    (citation checking) or a query's words (trends); the search interfaces list
    local.local_search_ids. Raises InvalidInput like paper_search."""
    understood = check_query(query, 1, 0)
    depth = min(limit or MAX_IDS, MAX_IDS)
    ids = _rank(understood, search_restrictions(filters, scope), depth, 0).ids
    return ids if ranked else sorted(ids)


def estimate_note(total: int) -> str:
    """The note of a page whose total was estimated (a broad query: finding the top did
    not need every match counted), on every path that shows that total."""
    return f"total is an estimate (about {total:,} papers match)"


def paper_search_scored(
    *,
    query: str,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
    limit: int = 100,
) -> Ranked:
    """paper_search's ranking with its scores and total, `limit` deep (for hybrid fusion):
    the same reading of the query, the same plans, no snippets or typo tolerance."""
    understood = check_query(query, 1, 0)
    restrictions = search_restrictions(filters, scope)
    depth = min(limit, MAX_IDS)
    ranked = _rank(understood, restrictions, depth, 0)
    if ranked.total == 0 and (loose := q.relaxed(understood)) is not None:
        ranked = _rank(loose, restrictions, depth, 0)
    return ranked


def paper_search_ranked(
    *,
    query: str,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
    limit: int = MAX_IDS,
) -> Ranked:
    """paper_search's order as ids and scores, `limit` deep (at most MAX_IDS): the exact
    matches (the relaxed reading when there are none), then, when they are fewer than
    FUZZY_BELOW, the typo-tolerant ones, as paper_search's pages list them; `total`
    counts both. For the interfaces that show ids in a list (local.local_search_ids)."""
    understood = check_query(query, 1, 0)
    restrictions = search_restrictions(filters, scope)
    depth = min(limit, MAX_IDS)
    ranked = _rank(understood, restrictions, depth, 0)
    if ranked.total == 0 and (loose := q.relaxed(understood)) is not None:
        understood = loose
        ranked = _rank(understood, restrictions, depth, 0)
    vocabulary = current_vocabulary() if ranked.total < FUZZY_BELOW else None
    if vocabulary is not None:
        extra = _fuzzy_extra(understood, restrictions, set(ranked.ids), vocabulary)
        ids = [*ranked.ids, *(pid for pid, _ in extra)][:depth]
        scores = [*ranked.scores, *(score for _, score in extra)][:depth]
        corrected = (
            query_correction(query, understood, vocabulary) if extra and not ranked.total else None
        )
        ranked = Ranked(ids, scores, ranked.total + len(extra), ranked.total_exact, corrected)
    return ranked


def search_hits(ids: list[int], scores: list[float], query: str) -> list[SearchHit]:
    """Hits for papers ranked elsewhere (hybrid search): records, and the passage where
    most of the query's words meet (the abstract's lead when none is there)."""
    hits = []
    for hit, abstract in _hits_with_abstracts(ids, scores, q.understand(query)):
        if not hit.snippet_markdown:
            hit.snippet_markdown = snippets.escape_markdown(abstract[:SNIPPET_LEAD_CHARS])
        hits.append(hit)
    return hits


# --- typo tolerance --------------------------------------------------------------------


def _add_fuzzy(
    page: SearchPage, page_query: str, understood: q.Understood, restrictions: list[Restriction]
) -> None:
    """Append typo-tolerant title/author matches to a page with few exact hits (a note
    instead while this process's vocabulary is still being built)."""
    vocabulary = current_vocabulary()
    if vocabulary is None:
        if _fuzzy_words(understood):
            page.notes.append(TYPO_TOLERANCE_LOADING)
        return
    seen = {hit.record["paper_id"] for hit in page.hits}
    extra = _fuzzy_extra(understood, restrictions, seen, vocabulary)
    if not extra:
        return
    words = _fuzzy_words(understood)
    # Fuzzy hits follow the exact ones; with an offset, the page continues that list.
    exact_total = page.total
    start = max(page.offset - exact_total, 0)
    room = page.limit - len(page.hits)
    chosen = extra[start : start + room] if room > 0 else []
    ids = [pid for pid, _ in chosen]
    corrected = q.Understood("natural", None, tuple(_corrections(words, vocabulary)))
    page.hits += _hits(ids, [score for _, score in chosen], corrected)
    page.total = exact_total + len(extra)
    page.mode = "fuzzy"
    if exact_total:
        page.notes.append("few exact matches; added typo-tolerant matches on titles and authors")
        return
    note = "no exact match; results are typo-tolerant matches on titles and authors"
    respelled = query_correction(page_query, understood, vocabulary)
    page.notes.append(f"{note}, for: {respelled}" if respelled else note)


def _fuzzy_words(understood: q.Understood) -> list[str]:
    words = [w for w in dict.fromkeys(understood.words) if len(w) >= 3]
    return [w for w in words if not is_stop_word(w.lower())]


def _fuzzy_extra(
    understood: q.Understood,
    restrictions: list[Restriction],
    seen: set[int],
    vocabulary: Vocabulary,
) -> list[tuple[int, float]]:
    """Typo-tolerant title/author matches (paper id, score), best first, less `seen`."""
    words = _fuzzy_words(understood)
    if not words:
        return []
    constraint = understood.constraint
    excluded = q.excluded_parts(constraint) if constraint is not None else []
    found = native.fuzzy_matches(words, excluded, restrictions, vocabulary)
    return [(pid, score) for pid, score in found if pid not in seen]


def query_correction(query: str, understood: q.Understood, vocabulary: Vocabulary) -> str | None:
    """The query with each word that typo tolerance replaced by its closest indexed
    spelling ("transfomer" -> "transformer"), for "showing results for ..." where nothing
    matched the words as typed; None when no word was respelled."""
    fixes = {}
    for word in _fuzzy_words(understood):
        typed = word.lower()
        closest = vocabulary.close_terms(typed, most=1)
        if closest and closest[0] != typed:
            fixes[typed] = closest[0]
    if not fixes:
        return None
    return _WORD_RE.sub(lambda found: fixes.get(found[0].lower(), found[0]), query)


def _corrections(words: list[str], vocabulary: Vocabulary) -> list[str]:
    """The query words and their close spellings, for highlighting fuzzy hits."""
    return [*words, *(t for w in words for t in vocabulary.close_terms(w.lower()))]


# --- the raw engine, for the benchmark -------------------------------------------------


def raw_search_ms(query: str, limit: int = 20) -> float:
    """Milliseconds the database's own engine takes for the ranked top `limit` ids of a
    query, matched as the search matches it (any word of a natural query; the boolean
    query as written), without our ranking, snippets, records or filters: the
    benchmark's baseline (FTS5 bm25 / PostgreSQL ts_rank)."""
    understood = q.understand(query)
    node: q.Node
    if understood.mode == "strict" and understood.constraint is not None:
        node = understood.constraint
    else:
        words = [w for w in dict.fromkeys(understood.words) if not is_stop_word(w.lower())]
        terms = tuple(q.Term(w) for w in words or understood.words)
        node = terms[0] if len(terms) == 1 else q.Or(terms)
    started = time.perf_counter()
    native.raw_ranked_ids(node, limit)
    return (time.perf_counter() - started) * 1000

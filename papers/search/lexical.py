"""BM25 ranking over the postings of postings.py: the top k for a query's terms, among the
papers that restrictions (filters, scope, a strict query's matches) allow.

A paper's score is sum over the query's terms t of idf(t) x impact(t, paper) / IMPACT_SCALE,
idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)): papers with more of the words, rarer ones,
or the words in the title rank first. (A multiplicative bonus for matching more of the
query's words was measured and left out: it lowered nDCG@10 on both dev sets.)

How the top k is found (`rank`):
- restrictions that leave at most SMALL_SET papers (a project, a strict query's matches)
  are scored paper by paper (random access);
- no restriction and few postings in all, or a deep page: one aggregate over every
  posting; the same with larger restrictions (a year filter) when the lists fit in memory
  (on SQLite also when they are short): every posting summed here, the allowed papers'
  ids read once and kept (an exact total; checking the papers met block by block cost
  ~10x more);
- queries of MAXSCORE_FROM_TERMS terms or more: MaxScore (a lower bound theta from the
  best postings, then only the papers of the "essential" terms that can still reach it),
  or one aggregate when theta prunes too little (the essential terms hold most postings,
  or more than MAXSCORE_MAX_CANDIDATES papers are left to complete);
- otherwise Fagin's threshold algorithm: each term's postings are read best first, a
  block at a time, keeping for every paper seen a lower bound (what it scored in the lists
  read) and an upper bound (plus, for each list it was not seen in, that list's last
  impact); papers that may still reach the top k are completed by random access; it stops
  when the k-th exact score is at least what any unseen or incomplete paper could reach,
  or hands over to one aggregate when its next block would pass MAX_SORTED_BLOCK (the
  lists are read deep: the database sums postings faster than this loop steps through
  them). The result is the exact top k, the same as the aggregate's (a test holds them
  equal).
  Restrictions are checked on the papers met, in one statement per block.

The postings of recently searched terms stay in memory as numpy arrays (the posting
cache, SEARCH_POSTINGS_CACHE_MB, kept against the postings' generation so any change is
seen at the next search, on either database): a query whose lists fit there is summed in
memory, restricted or not, and small restricted sets are scored from the same lists.
Without the cache (SEARCH_POSTINGS_CACHE_MB 0, or a PostgreSQL transaction that has
written), PostgreSQL sums in the database and SQLite reads the lists each time. A query
keeps at most postings.MAX_QUERY_TERMS distinct terms, its rarest.

The same ranker serves the passages of search_passages: QueryTerms carry the index they
were weighed in (postings.PostingIndex: PAPERS by default, the passages' PASSAGES in
papers/passages/ranking.py), whose tables every statement reads; "paper" below stands for
the index's documents. The posting cache holds only indexes with a generation (papers);
an index without sorted access (PostingIndex.sorted_access) is ranked by one aggregate.

One module because every strategy must return the exact top k of the same formula: they
share the term statistics, the posting reads and the posting cache, and a test holds them
equal; split, the strategies could drift apart unseen.
"""

from __future__ import annotations

import atexit
import contextlib
import contextvars
import hashlib
import heapq
import os
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TypeVar, cast

import numpy as np
from django.conf import settings
from django.db import DEFAULT_DB_ALIAS, connections

from core.sql import among, database_identity, wrote_in_this_transaction
from papers.search import kept_filters
from papers.search.postings import (
    IMPACT_SCALE,
    PAPERS,
    PostingIndex,
    document_frequencies,
    idf,
    lexicon_terms,
    query_term_ids,
    read_stats,
    score_sql,
    weigh_terms,
)
from papers.search.postings import in_list as _in

T = TypeVar("T")

# Sorted access: first block per term, grown x4 per round up to MAX_SORTED_BLOCK; a
# query that needs more rounds is summed by one aggregate instead.
FIRST_BLOCK = 256
MAX_SORTED_BLOCK = 4_096
# Up to this many postings in all the query's lists, one aggregate is cheaper.
EXHAUSTIVE_BELOW = 20_000
# Deeper pages are scored by one aggregate (sorted access pays off for the first pages).
MAX_THRESHOLD_DEPTH = 1_000
# Queries of this many terms or more take MaxScore instead of the threshold algorithm,
# whose bounds fall slowly when many lists of similar impacts are read side by side.
MAXSCORE_FROM_TERMS = 4
# ... unless its essential terms hold more than this share of the query's postings.
MAXSCORE_MAX_SHARE = 0.6
# ... or when more candidates than this are left to complete by random access (500 a
# statement, ~9 ms each at 95k papers on PostgreSQL; the aggregate over a question's
# 145k postings, ~75 ms).
MAXSCORE_MAX_CANDIDATES = 4_000
# Restrictions leaving at most this many papers: score those papers one by one.
SMALL_SET = 5_000
# The in-process aggregate reads a posting as one integer, paper_id << IMPACT_BITS | impact
# (an impact is below IMPACT_SCALE x (K1 + 1) = 2,400: postings.py).
IMPACT_BITS = 16
IMPACT_MASK = (1 << IMPACT_BITS) - 1
# ... and sums a query of at most this many terms on arrays indexed by paper id, when the
# largest id is below DENSE_MIN_SIZE or DENSE_PER_POSTING x the query's postings.
DENSE_MAX_TERMS = 8
DENSE_MIN_SIZE = 1 << 18
DENSE_PER_POSTING = 16


# --- ranking -------------------------------------------------------------------------


@dataclass
class Ranked:
    ids: list[int]
    scores: list[float]
    total: int
    total_exact: bool = True
    # The query as respelled when nothing matched it as typed and its typo-tolerant
    # matches are listed instead (fulltext.query_correction).
    corrected: str | None = None


@dataclass(frozen=True)
class QueryTerms:
    """The query's distinct terms with their weights (idf) and document frequencies."""

    ids: tuple[int, ...]
    weights: tuple[float, ...]
    df: tuple[int, ...]
    documents: int
    # The index they were weighed in, which `rank` ranks (papers, or passages).
    index: PostingIndex = PAPERS

    @property
    def postings(self) -> int:
        return sum(self.df)


def query_terms(
    words: Sequence[str], *, using: str = DEFAULT_DB_ALIAS, index: PostingIndex = PAPERS
) -> QueryTerms:
    """Analyze query words into weighted terms (stop words dropped, stems deduplicated;
    terms no document of `index` has are left out; of more than postings.MAX_QUERY_TERMS,
    the rarest: highest idf, the earlier term on a tie)."""
    ids = query_term_ids(words)
    with connections[using].cursor() as cursor:
        stats = read_stats(cursor, index)
        _frequencies_from_lists(cursor, stats, ids, index)
        df = document_frequencies(cursor, stats, ids, index)
    weighted = weigh_terms(ids, df, stats.documents)
    return QueryTerms(weighted.ids, weighted.weights, weighted.df, weighted.documents, index)


# A `prefix*` is matched and ranked on the postings of the terms of the words it begins
# when they are at most this many words (at 500k papers the broadest three-letter prefix,
# `con*`, begins about 3,000: ~0.7 s the first time, against ~1.5 s for the engine's
# ranking of every match, and ~0.1 s once its lists are held); past it, the engine.
PREFIX_MOST_WORDS = 10_000


def prefix_terms(prefix: str, *, using: str = DEFAULT_DB_ALIAS) -> QueryTerms | None:
    """The terms of the library's words that begin with the prefix ('embedd*': embedding,
    embedded..., their stem 'embed'; 'subs*' does not reach 'subject', as the engines'
    stemmed prefix 'sub' does), weighed as one word: each by the idf of all their papers
    together, so that a paper ranks by how much of the prefix's words it holds, not by
    which rare spelling it uses. None when more than PREFIX_MOST_WORDS words begin with it."""
    with connections[using].cursor() as cursor:
        ids = lexicon_terms(cursor, prefix, most=PREFIX_MOST_WORDS)
        if ids is None:
            return None
        stats = read_stats(cursor, PAPERS)
        # Its lists are read whole by the ranking anyway (a prefix's many small lists).
        _frequencies_from_lists(cursor, stats, ids, PAPERS, most=len(ids))
        df = document_frequencies(cursor, stats, ids, PAPERS)
    kept = [term for term in ids if df[term] > 0]
    documents = max(stats.documents, max((df[term] for term in kept), default=0))
    weight = idf(documents, min(documents, sum(df[term] for term in kept))) / IMPACT_SCALE
    return QueryTerms(
        tuple(kept), (weight,) * len(kept), tuple(df[term] for term in kept), documents
    )


# A term id no posting has (ids are 48-bit hashes): a prefix beginning no word matches it.
NO_TERM = -1


def combined(*parts: QueryTerms) -> QueryTerms:
    """One query of these terms, each with its weight where it first appears."""
    ids: dict[int, tuple[float, int]] = {}
    for part in parts:
        for term, weight, df in zip(part.ids, part.weights, part.df, strict=True):
            ids.setdefault(term, (weight, df))
    documents = max((part.documents for part in parts), default=0)
    return QueryTerms(
        tuple(ids),
        tuple(weight for weight, _ in ids.values()),
        tuple(df for _, df in ids.values()),
        documents,
    )


# A query's terms whose document frequencies are not known yet are read whole, when at most
# this many, and counted: their lists are read for the ranking anyway when they fit in
# memory, and counting them apart in the postings' index took as long again (a term of
# 260k papers at 500k on PostgreSQL: ~50-170 ms).
FREQUENCIES_FROM_LISTS = 8


def _frequencies_from_lists(
    cursor: Any,
    stats: Any,
    ids: Sequence[int],
    index: PostingIndex,
    most: int = FREQUENCIES_FROM_LISTS,
) -> None:
    """Each unknown term's document frequency, its postings' length, where the posting cache
    holds its list or reads it now (then `document_frequencies` asks nothing), when they
    are at most `most`."""
    missing = sorted({term for term in ids if term not in stats.df})
    if not missing or len(missing) > most:
        return
    if posting_cache(cursor, index) is None:
        return
    for term, (papers, _) in _postings(cursor, missing, index).items():
        stats.df[term] = len(papers)


# SQL selecting the ids of the documents ranked (a column named `paper_id`, whatever the
# index: for passages, their own ids), and its params.
Restriction = tuple[str, list[Any]]


def rank(
    terms: QueryTerms,
    *,
    restrictions: Sequence[Restriction] = (),
    matching: Matching | None = None,
    limit: int,
    offset: int = 0,
    using: str = DEFAULT_DB_ALIAS,
) -> Ranked:
    """The papers with the best scores for `terms`, best first, `limit` after `offset`,
    among the papers every restriction selects and `matching` (a boolean over terms: the
    query language's AND / OR / NOT of words) selects. `total` is the number of those
    papers that match any term; it is an estimate (`total_exact` false) when finding the
    top k did not need to look at them all.

    The plan: restrictions that leave at most SMALL_SET papers (a project, a strict
    query's matches) are scored paper by paper; otherwise few postings in all, or a deep
    page, are scored by one aggregate; otherwise the threshold algorithm reads the best
    postings first, checking restrictions on the papers it meets.
    """
    if not terms.ids:
        return Ranked([], [], 0)
    if matching is not None and _any_term(matching, terms):
        matching = None  # what the ranking matches anyway (a bare `prefix*`)
    depth = offset + limit
    with connections[using].cursor() as cursor:
        if matching is not None:
            allowed = _matching_allowed(cursor, terms, matching, restrictions)
            if allowed is None:
                restrictions = [*restrictions, matching_restriction(matching, terms.index)]
            else:
                if len(allowed) <= SMALL_SET:
                    every = _score_papers(cursor, terms, allowed.tolist())
                    return _page(every, offset, limit, exact=True)
                return _exhaustive_in_process(cursor, terms, limit, offset, allowed=allowed)
        if restrictions and (
            _cacheable(cursor, terms.postings, terms.index)
            or (cursor.db.vendor == "sqlite" and terms.postings <= EXHAUSTIVE_BELOW)
        ):
            # Every posting summed here, as without a filter, then the allowed papers kept:
            # reading their ids is cheaper than checking the papers the threshold algorithm
            # meets block by block (a year filter: ~10x less). Read once, they also tell
            # whether the set is small enough to score paper by paper.
            allowed = _allowed_ids(cursor, restrictions)
            if len(allowed) <= SMALL_SET:
                every = _score_papers(cursor, terms, allowed.tolist())
                return _page(every, offset, limit, exact=True)
            return _exhaustive_in_process(cursor, terms, limit, offset, allowed=allowed)
        if restrictions:
            small = _small_set(cursor, restrictions)
            if small is not None:
                return _page(_score_papers(cursor, terms, small), offset, limit, exact=True)
        # With restrictions, the aggregate would first read every allowed paper's id;
        # sorted access checks only the papers it meets.
        few = not restrictions and (
            terms.postings <= EXHAUSTIVE_BELOW or _cacheable(cursor, terms.postings, terms.index)
        )
        if few or depth > MAX_THRESHOLD_DEPTH or not terms.index.sorted_access:
            return _exhaustive(cursor, terms, restrictions, limit, offset)
        if len(terms.ids) >= MAXSCORE_FROM_TERMS:
            scored, total = _maxscore(cursor, terms, depth, restrictions)
        else:
            scored, total = _threshold(cursor, terms, depth, restrictions)
        if restrictions:
            # The estimate scales the terms' matches by the share of the papers met that
            # the restrictions keep, a sample skewed by rank (a year filter keeps more of
            # a topic's best papers than of the rest): never more than the papers allowed.
            total = max(len(scored), min(total, _allowed_count(cursor, restrictions)))
    return _page((scored, total), offset, limit, exact=False)


# --- matching: the query language's booleans over terms ------------------------------

# A term id, ("and" | "or", children) or ("not", (included, excluded)).
Matching = int | tuple[str, tuple["Matching", ...]]
_SET_SQL = {"and": " INTERSECT ", "or": " UNION ", "not": " EXCEPT "}


def _any_term(matching: Matching, terms: QueryTerms) -> bool:
    """Whether `matching` selects the papers holding any of the terms."""
    if isinstance(matching, int):
        return terms.ids == (matching,)
    operation, children = matching
    return (
        operation == "or"
        and all(isinstance(child, int) for child in children)
        and set(children) == set(terms.ids)
    )


def matching_terms(matching: Matching) -> list[int]:
    """The term ids a matching names, ascending, each once."""
    if isinstance(matching, int):
        return [matching]
    return sorted({term for child in matching[1] for term in matching_terms(child)})


def matching_restriction(matching: Matching, index: PostingIndex = PAPERS) -> Restriction:
    """SQL selecting the documents `matching` selects, from the postings: for lists too
    large to hold in memory (the same papers as _matching_in_process)."""
    if isinstance(matching, int):
        sql = f"SELECT {index.key} AS paper_id FROM {index.postings} WHERE term_id = %s"  # noqa: S608
        return sql, [matching]
    operation, children = matching
    parts = [matching_restriction(child, index) for child in children]
    sql = _SET_SQL[operation].join(
        f"SELECT paper_id FROM ({part}) m{i}"  # noqa: S608
        for i, (part, _) in enumerate(parts)
    )
    return sql, [value for _, values in parts for value in values]


def matching_papers(
    terms: QueryTerms,
    matching: Matching,
    restrictions: Sequence[Restriction] = (),
    *,
    using: str = DEFAULT_DB_ALIAS,
) -> np.ndarray | None:
    """The ids (sorted, read-only) `matching` and the restrictions select, when the
    postings of `matching` fit in memory; else None."""
    with connections[using].cursor() as cursor:
        return _matching_allowed(cursor, terms, matching, restrictions)


def _matching_allowed(
    cursor: Any, terms: QueryTerms, matching: Matching, restrictions: Sequence[Restriction]
) -> np.ndarray | None:
    within = _matching_in_process(cursor, matching, terms)
    if within is None or not restrictions:
        return within
    allowed = np.intersect1d(within, _allowed_ids(cursor, restrictions), assume_unique=True)
    allowed.flags.writeable = False
    return allowed


def _matching_in_process(cursor: Any, matching: Matching, terms: QueryTerms) -> np.ndarray | None:
    """The ids `matching` selects (sorted, read-only), from the terms' postings in memory:
    a mask per term, combined (reading the engine's matches whole instead was most of a
    boolean query over 500k papers on PostgreSQL); None when the lists do not fit in
    memory."""
    named = matching_terms(matching)
    extra = [term for term in named if term not in terms.ids]
    postings = terms.postings
    if extra:
        postings += sum(
            document_frequencies(
                cursor, read_stats(cursor, terms.index), extra, terms.index
            ).values()
        )
    if not _cacheable(cursor, postings, terms.index):
        return None
    lists = _postings(cursor, named, terms.index)
    size = 1 + max((int(papers.max()) for papers, _ in lists.values() if len(papers)), default=0)

    def mask(node: Matching) -> np.ndarray:
        if isinstance(node, int):
            found = np.zeros(size, dtype=bool)
            found[lists[node][0]] = True
            return found
        operation, children = node
        masks = [mask(child) for child in children]
        if operation == "not":
            return masks[0] & ~masks[1]
        combine = np.logical_and if operation == "and" else np.logical_or
        return cast(np.ndarray, combine.reduce(masks))

    ids = np.flatnonzero(mask(matching)).astype(np.int64)
    ids.flags.writeable = False
    return ids


def _page(
    result: tuple[list[tuple[int, float]], int], offset: int, limit: int, *, exact: bool
) -> Ranked:
    scored, total = result
    chosen = scored[offset : offset + limit]
    return Ranked([p for p, _ in chosen], [s for _, s in chosen], total, exact)


def intersection(restrictions: Sequence[Restriction]) -> tuple[str, list[Any]]:
    """SQL selecting `paper_id` of the papers all restrictions select."""
    first, params = restrictions[0]
    sql = f"SELECT r0.paper_id FROM ({first}) r0 WHERE 1 = 1"  # noqa: S608
    params = list(params)
    for condition, values in restrictions[1:]:
        sql += f" AND r0.paper_id IN ({condition})"
        params += values
    return sql, params


def small_set(
    restrictions: Sequence[Restriction], *, using: str = DEFAULT_DB_ALIAS
) -> list[int] | None:
    """The ids of the papers all restrictions select, or None if there are more than
    SMALL_SET."""
    with connections[using].cursor() as cursor:
        return _small_set(cursor, restrictions)


def rank_papers(
    terms: QueryTerms,
    papers: Sequence[int],
    *,
    limit: int,
    offset: int = 0,
    using: str = DEFAULT_DB_ALIAS,
) -> Ranked:
    """Every given paper ranked by its score, those matching no term last (by id): for a
    strict query whose matches need not contain a ranking term (`bleu OR gpt*`)."""
    with connections[using].cursor() as cursor:
        scored, _ = _score_papers(cursor, terms, papers) if terms.ids else ([], 0)
    unscored = sorted(set(papers) - {p for p, _ in scored})
    everything = (scored + [(p, 0.0) for p in unscored], len(papers))
    return _page(everything, offset, limit, exact=True)


class AllowedPapers:
    """The papers all of a search's restrictions select, read no further than a ranking
    needs: which of some papers are among them (`members`: one statement with those ids,
    unless the whole list was read in this search already), or the whole list (`ids`,
    sorted, each once; read once per search)."""

    def __init__(self, restrictions: Sequence[Restriction], *, using: str = DEFAULT_DB_ALIAS):
        self.restrictions = list(restrictions)
        self.using = using

    def ids(self) -> np.ndarray:
        with connections[self.using].cursor() as cursor:
            return _allowed_ids(cursor, self.restrictions)

    def members(self, papers: np.ndarray) -> np.ndarray:
        """Which of `papers` are allowed, as a mask."""
        with connections[self.using].cursor() as cursor:
            return _member_mask(cursor, self.restrictions, papers)


def _member_mask(
    cursor: Any, restrictions: Sequence[Restriction], papers: np.ndarray
) -> np.ndarray:
    """Which of `papers` every restriction selects: looked up in the allowed ids if this
    search has read them, else asked in one statement with the papers as one parameter
    (core.sql.among; on PostgreSQL an array of 16,000 ids in ~30 ms, where 32 lists of
    500 literals took ~4 ms each)."""
    sql, params = intersection(restrictions)
    known = _known_allowed(cursor, sql, params)
    if known is not None:
        return sorted_members(papers, known)
    if not len(papers):
        return np.zeros(0, dtype=bool)
    test, wanted = among(cursor.db.vendor, papers.tolist())
    cursor.execute(
        f"SELECT r.paper_id FROM ({sql}) r WHERE r.paper_id {test}",  # noqa: S608
        [*params, wanted],
    )
    found = np.fromiter((row[0] for row in cursor.fetchall()), dtype=np.int64)
    return np.isin(papers, found)


def sorted_members(papers: np.ndarray, allowed: np.ndarray) -> np.ndarray:
    """Which of `papers` are in `allowed` (sorted), as a mask."""
    if not len(allowed):
        return np.zeros(len(papers), dtype=bool)
    at = np.minimum(np.searchsorted(allowed, papers), len(allowed) - 1)
    return allowed[at] == papers


# Within one_search(): what its rankings have read or built already, by key.
_this_search: contextvars.ContextVar[dict[Any, Any] | None] = contextvars.ContextVar(
    "this_search", default=None
)


@contextlib.contextmanager
def one_search() -> Iterator[None]:
    """Within it, what the rankings of one search share is made once (`once_per_search`):
    a hybrid search's full-text and semantic rankings both restrict to the filters'
    papers (a year filter's 46k ids at 95k papers: ~5 ms a reading)."""
    token = _this_search.set({})
    try:
        yield
    finally:
        _this_search.reset(token)


def once_per_search(key: Any, make: Callable[[], T]) -> T:
    """`make()`, or within one_search() what it gave for `key` there already."""
    made = _this_search.get()
    if made is None:
        return make()
    if key not in made:
        made[key] = make()
    return cast(T, made[key])


def already_made(key: Any) -> Any:
    """What once_per_search made for `key` in this search so far, or None."""
    made = _this_search.get()
    return None if made is None else made.get(key)


def _allowed_ids(cursor: Any, restrictions: Sequence[Restriction]) -> np.ndarray:
    """AllowedPapers.ids: read in this search already, or kept from an earlier one while
    nothing they were read from has changed (kept_filters), or read as one comma-separated
    list, as the postings are, not a row each (a year filter's 46k ids at 95k papers:
    3 ms, a row each 13 ms)."""
    sql, params = intersection(restrictions)
    known = _known_allowed(cursor, sql, params)
    if known is not None:
        return known
    ids = _read_allowed_ids(cursor, sql, params)
    return once_per_search(kept_filters.key(cursor.db.alias, sql, params), lambda: ids)


def _known_allowed(cursor: Any, sql: str, params: list[Any]) -> np.ndarray | None:
    """The allowed ids if this search has them, or a kept list still current (then this
    search's other rankings take it from here)."""
    key = kept_filters.key(cursor.db.alias, sql, params)
    known = already_made(key)
    if known is None:
        current = kept_filters.kept(cursor, sql, params)
        if current is not None:
            known = once_per_search(key, lambda: current)
    return cast(np.ndarray | None, known)


def _read_allowed_ids(cursor: Any, sql: str, params: list[Any]) -> np.ndarray:
    packed_ids = (
        "group_concat(paper_id)"
        if cursor.db.vendor == "sqlite"
        else "string_agg(paper_id::text, ',')"
    )
    tables = kept_filters.tables_read(sql)
    if tables is None:
        cursor.execute(f"SELECT {packed_ids} FROM ({sql}) allowed", params)  # noqa: S608
        return _unpacked(cursor.fetchone()[0])
    generations, names = kept_filters.generations_sql(tables)
    cursor.execute(
        f"SELECT {generations}, {packed_ids} FROM ({sql}) allowed",  # noqa: S608
        [*names, *params],
    )
    *read_with, packed = cursor.fetchone()
    ids = _unpacked(packed)
    kept_filters.keep(cursor, sql, params, tuple(read_with), ids)
    return ids


def _unpacked(packed: str | None) -> np.ndarray:
    if not packed:
        return np.zeros(0, dtype=np.int64)
    return _sorted_once(np.fromstring(packed, dtype=np.int64, sep=","))


def _sorted_once(ids: np.ndarray) -> np.ndarray:
    """The ids sorted, each once, read-only (shared by the rankings of one search)."""
    if not len(ids):
        return np.zeros(0, dtype=np.int64)
    ids = np.sort(ids)
    # A restriction over link rows (a project's, an author's) may list a paper twice.
    # np.unique would do it too, by hashing: 6 ms for those 46k ids, sort and compare 1.5.
    ids = ids[np.concatenate(([True], ids[1:] != ids[:-1]))]
    ids.flags.writeable = False
    return ids


def _allowed_count(cursor: Any, restrictions: Sequence[Restriction]) -> int:
    sql, params = intersection(restrictions)
    known = _known_allowed(cursor, sql, params)
    if known is not None:
        return len(known)
    cursor.execute(f"SELECT count(*) FROM ({sql}) allowed", params)  # noqa: S608
    return int(cursor.fetchone()[0])


def _small_set(cursor: Any, restrictions: Sequence[Restriction]) -> list[int] | None:
    sql, params = intersection(restrictions)
    known = _known_allowed(cursor, sql, params)
    if known is not None:
        return known.tolist() if len(known) <= SMALL_SET else None
    cursor.execute(f"{sql} LIMIT %s", [*params, SMALL_SET + 1])
    ids = [row[0] for row in cursor.fetchall()]
    if len(ids) > SMALL_SET:
        return None
    # Every allowed paper, read: the search's other rankings need not ask again.
    allowed = _sorted_once(np.asarray(ids, dtype=np.int64))
    once_per_search(kept_filters.key(cursor.db.alias, sql, params), lambda: allowed)
    return ids


def _score_papers(
    cursor: Any, terms: QueryTerms, papers: Sequence[int]
) -> tuple[list[tuple[int, float]], int]:
    """Every given paper's score (random access, or the lists in memory when they fit);
    those matching no term are left out."""
    weight = dict(zip(terms.ids, terms.weights, strict=True))
    if papers and _cacheable(cursor, terms.postings, terms.index):
        return _score_papers_in_process(cursor, weight, papers, terms.index)
    partial: dict[int, float] = {}
    for paper, term, impact in _impacts(cursor, papers, terms.ids, terms.index):
        partial[paper] = partial.get(paper, 0.0) + weight[term] * impact
    scored = list(partial.items())
    scored.sort(key=lambda item: (-item[1], item[0]))
    return scored, len(scored)


def _score_papers_in_process(
    cursor: Any, weight: dict[int, float], papers: Sequence[int], index: PostingIndex
) -> tuple[list[tuple[int, float]], int]:
    """_score_papers from each term's whole list, kept in memory (`_postings`), filtered to
    the given papers: a strict query's 5,000 matches took ~2 ms a term by random access
    ("BERT OR RoBERTa" at 20k papers), a filter over lists in memory a tenth of that."""
    wanted = np.asarray(papers, dtype=np.int64)
    lists = []
    for term, (ids, impacts) in _postings(cursor, sorted(weight), index).items():
        kept = np.isin(ids, wanted)
        if kept.any():
            lists.append((ids[kept], impacts[kept].astype(np.float64) * weight[term]))
    if not lists:
        return [], 0
    found, totals = _sum_by_paper(lists)
    order = np.lexsort((found, -totals))  # score descending, then paper id
    return list(zip(found[order].tolist(), totals[order].tolist(), strict=True)), len(found)


def _exhaustive(
    cursor: Any,
    terms: QueryTerms,
    restrictions: Sequence[Restriction],
    limit: int,
    offset: int,
) -> Ranked:
    """One aggregate over every posting of the query's terms."""
    if not restrictions and (
        cursor.db.vendor == "sqlite" or _cacheable(cursor, terms.postings, terms.index)
    ):
        return _exhaustive_in_process(cursor, terms, limit, offset)
    summed, case_params = score_sql(terms.ids, terms.weights)
    table, key = terms.index.postings, terms.index.key
    where, where_params = "", list[Any]()
    if restrictions:
        sql, where_params = intersection(restrictions)
        where = f" AND {key} IN ({sql})"
    score = "s"
    cursor.execute(
        f"SELECT {key}, {score} AS score, count(*) OVER () FROM ("  # noqa: S608
        f"SELECT {key}, {summed} AS s, count(*) AS c "
        f"FROM {table} WHERE term_id IN {_in(terms.ids)}{where} GROUP BY {key}"
        f") grouped ORDER BY score DESC, {key} LIMIT %s OFFSET %s",
        [*case_params, *terms.ids, *where_params, limit, offset],
    )
    rows = cursor.fetchall()
    if rows:
        total = int(rows[0][2])
    elif offset:
        cursor.execute(
            f"SELECT count(DISTINCT {key}) FROM {table} "  # noqa: S608
            f"WHERE term_id IN {_in(terms.ids)}{where}",
            [*terms.ids, *where_params],
        )
        total = int(cursor.fetchone()[0])
    else:
        total = 0
    return Ranked([r[0] for r in rows], [float(r[1]) for r in rows], total)


def _exhaustive_in_process(
    cursor: Any, terms: QueryTerms, limit: int, offset: int, *, allowed: np.ndarray | None = None
) -> Ranked:
    """_exhaustive's aggregate summed here instead of by SQLite's GROUP BY, whose
    temporary b-tree took most of a broad query's time (~4 ms of CPU for "machine
    translation" at 10k papers, against ~1.5 ms here): each term's postings, from memory
    (`PostingCache`) or read as one comma-separated list of packed integers
    (paper_id << IMPACT_BITS | impact) by one sub-select per term in one statement (a query
    costs the same statements whatever its length), are summed with numpy
    (`_sum_by_paper`). The same order (score descending, then paper id), total and scores
    as the SQL aggregate (up to the last bits: SQL may add a paper's terms in another
    order; tests/papers/search/test_speed_path.py compares them)."""
    weights: dict[int, float] = {}
    for term, weight in zip(terms.ids, terms.weights, strict=True):
        weights[term] = weights.get(term, 0.0) + weight  # a repeated term counts twice
    ordered = sorted(weights)
    if not ordered:
        return Ranked([], [], 0)
    lists = [
        (papers, impacts.astype(np.float64) * weights[term])
        for term, (papers, impacts) in _postings(cursor, ordered, terms.index).items()
        if len(papers)
    ]
    if not lists:
        return Ranked([], [], 0)
    papers_found, totals = _sum_by_paper(lists)
    if allowed is not None:  # the papers restrictions allow (sorted ids)
        kept = np.isin(papers_found, allowed, assume_unique=True)
        papers_found, totals = papers_found[kept], totals[kept]
    depth = offset + limit
    candidates = np.arange(len(totals))
    if depth < len(totals):  # only the papers scoring at least the depth-th best are sorted
        kth = np.partition(totals, len(totals) - depth)[len(totals) - depth]
        candidates = np.flatnonzero(totals >= kth)
    best = candidates[np.argsort(-totals[candidates], kind="stable")]  # ties: by paper id
    best = best[offset : offset + limit]
    return Ranked(papers_found[best].tolist(), totals[best].tolist(), len(papers_found))


# --- postings in memory -----------------------------------------------------

Postings = tuple[np.ndarray, np.ndarray]  # paper ids, their impacts (uint16), as read
# A cached posting costs its paper id (int32) and its impact (uint16).
BYTES_PER_POSTING = 6
_NO_GENERATION = object()


class PostingCache:
    """The postings of the terms searched lately, as numpy arrays, least recently used
    dropped past `capacity` bytes: a broad term's list read again for every query was most
    of a search's time (23,602 postings for "large language models" at 20k papers: 7.9 ms
    read and parsed, against ~0.5 ms summed from memory).

    Correct whatever writes the postings, in any process: they are tagged with the
    library's postings generation (migration 0010: a new random number in every
    transaction that changes postings, so a rolled-back change can never be mistaken for a
    later one), read in the statement that reads the missing lists; when it differs, every
    list is dropped and read again.
    """

    def __init__(self, capacity: int) -> None:
        self.capacity = capacity
        self.generation: object = _NO_GENERATION
        self._lists: OrderedDict[int, Postings] = OrderedDict()
        self._bytes = 0
        self._lock = threading.Lock()

    def snapshot(self, terms: Sequence[int]) -> tuple[object, dict[int, Postings]]:
        """(the generation, the lists of `terms` held for it)."""
        with self._lock:
            found = {}
            for term in terms:
                if (entry := self._lists.get(term)) is not None:
                    self._lists.move_to_end(term)
                    found[term] = entry
            return self.generation, found

    def store(self, generation: object, lists: dict[int, Postings]) -> None:
        with self._lock:
            if generation != self.generation:
                self._lists.clear()
                self._bytes = 0
                self.generation = generation
            for term, entry in lists.items():
                size = len(entry[0]) * BYTES_PER_POSTING
                if term in self._lists or size > self.capacity // 2:
                    continue
                self._lists[term] = entry
                self._bytes += size
            while self._bytes > self.capacity and self._lists:
                _, (papers, _) = self._lists.popitem(last=False)
                self._bytes -= len(papers) * BYTES_PER_POSTING

    def clear(self) -> None:
        self.store(_NO_GENERATION, {})

    def terms(self) -> list[int]:
        """The terms held, the most recently searched first."""
        with self._lock:
            return list(reversed(self._lists))

    @property
    def size(self) -> int:
        return self._bytes


_caches: dict[str, PostingCache] = {}
_caches_lock = threading.Lock()


def posting_cache(cursor: Any, index: PostingIndex = PAPERS) -> PostingCache | None:
    """This database's PostingCache of the index, or None when SEARCH_POSTINGS_CACHE_MB is
    0, the index has no generation to check it against, or (PostgreSQL) this transaction
    has written: it would see its own postings, but their generation only once committed
    (migration 0016 renews it at the commit)."""
    capacity = settings.SEARCH_POSTINGS_CACHE_MB * 1024 * 1024
    vendor = cursor.db.vendor
    if vendor not in ("sqlite", "postgresql") or capacity <= 0 or index.generation is None:
        return None
    if wrote_in_this_transaction(cursor.db):
        return None
    name = f"{database_identity(cursor.db)}:{index.name}"
    with _caches_lock:
        cache = _caches.get(name)
        if cache is None or cache.capacity != capacity:
            cache = _caches[name] = PostingCache(capacity)
        return cache


def posting_cache_clear() -> None:
    """Forget every list held (tests; nothing else needs to: see PostingCache)."""
    with _caches_lock:
        _caches.clear()


# --- the posting cache across a restart ---------------------------------------
# At exit each process writes which terms its posting caches held (their ids, most recent
# first; not the postings, which may change meanwhile); the next process's warm-up
# (papers/search/warmup.py) reads those terms' lists before its first search, which
# otherwise read them from the database (300k papers: ~0.5 s for the first search after
# a restart, p95 2.7x the warm one over its first hundred).
PRELOAD_SHARE = 0.9  # of the cache's capacity, at most
PRELOAD_CHUNK = 32  # terms read per statement


def _held_terms_file(name: str) -> Path:
    digest = hashlib.sha256(name.encode()).hexdigest()[:16]
    return Path(settings.CACHE_DIR) / "postings" / f"held-terms-{digest}.npy"


def save_held_terms() -> None:
    """Write the terms each posting cache holds (at exit; a failure is ignored: the next
    process reads its lists as searches need them)."""
    with _caches_lock:
        held = [(name, cache.terms()) for name, cache in _caches.items()]
    for name, terms in held:
        if not terms:
            continue
        with contextlib.suppress(OSError, ValueError):
            path = _held_terms_file(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            partial = path.with_suffix(f".{os.getpid()}.partial")
            with open(partial, "wb") as out:
                np.save(out, np.asarray(terms, dtype=np.int64))
            os.replace(partial, path)


atexit.register(save_held_terms)


def preload_held_terms(should_stop: Callable[[], bool] = lambda: False) -> tuple[int, int]:
    """Read into the papers' posting cache the lists of the terms an earlier process held
    at its exit (`save_held_terms`), the most recent first, up to PRELOAD_SHARE of the
    cache. Returns (terms, postings) read."""
    loaded: list[int] = []
    postings = 0
    with connections[DEFAULT_DB_ALIAS].cursor() as cursor:
        cache = posting_cache(cursor, PAPERS)
        if cache is None:
            return 0, 0
        path = _held_terms_file(f"{database_identity(cursor.db)}:{PAPERS.name}")
        try:
            terms = [int(term) for term in np.load(path, allow_pickle=False)]
        except (OSError, ValueError):  # none saved, or unreadable: searches read them
            return 0, 0
        for start in range(0, len(terms), PRELOAD_CHUNK):
            if should_stop() or cache.size >= PRELOAD_SHARE * cache.capacity:
                break
            chunk = sorted(terms[start : start + PRELOAD_CHUNK])
            postings += sum(len(papers) for papers, _ in _postings(cursor, chunk, PAPERS).values())
            loaded += terms[start : start + PRELOAD_CHUNK]
        cache.snapshot(list(reversed(loaded)))  # the most recent last, as they were held
    return len(loaded), postings


def _cacheable(cursor: Any, postings: int, index: PostingIndex) -> bool:
    """Whether a query's lists all fit in memory: then summing them here beats the
    threshold algorithm, which pays a statement per block (from its second query on, when
    the lists are held)."""
    cache = posting_cache(cursor, index)
    return cache is not None and postings * BYTES_PER_POSTING <= cache.capacity // 4


def _postings(cursor: Any, terms: list[int], index: PostingIndex) -> dict[int, Postings]:
    """Each term's postings (ascending terms), from memory where held, the rest read in
    one statement with the generation; everything read again when that moved on."""
    cache = posting_cache(cursor, index)
    if cache is None:
        return _read_postings(cursor, terms, index, with_generation=False)[1]
    held_generation, held = cache.snapshot(terms)
    missing = [term for term in terms if term not in held]
    generation, read = _read_postings(cursor, missing, index, with_generation=True)
    if generation != held_generation and held:
        _, again = _read_postings(cursor, list(held), index, with_generation=False)
        read.update(again)
        held = {}
    cache.store(generation, read)
    found = {**held, **read}
    return {term: found[term] for term in terms}


# Up to this many terms, a statement reads each term's postings by a sub-select of its own;
# more (a `prefix*`'s terms) in one grouped scan.
SUBSELECTS_MOST = 32
_NO_POSTINGS: Postings = (np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.uint16))


def _read_postings(
    cursor: Any, terms: list[int], index: PostingIndex, *, with_generation: bool
) -> tuple[object, dict[int, Postings]]:
    """(the postings generation if asked, each term's postings) in one statement."""
    posting = f"({index.key} << {IMPACT_BITS}) | impact"
    if cursor.db.vendor == "postgresql":
        joined, number = f"string_agg(({posting})::text, ',')", "n::text"
    else:
        joined, number = f"group_concat({posting})", "n"
    if len(terms) > SUBSELECTS_MOST:
        # One grouped scan: a sub-select per term is planned apart (a prefix's 570 terms
        # at 500k papers on PostgreSQL: 2.5 s, against 45 ms grouped). A term without
        # postings has no row.
        membership, values = among(cursor.db.vendor, terms)
        grouped = (
            f"SELECT term_id, {joined} FROM {index.postings} "  # noqa: S608
            f"WHERE term_id {membership} GROUP BY term_id"
        )
        parts, params = [grouped], [values]
    else:
        one_term = f"SELECT %s, (SELECT {joined} FROM {index.postings} WHERE term_id = %s)"  # noqa: S608
        parts = [one_term] * len(terms)
        params = [value for term in terms for value in (term, term)]
    if with_generation:  # NULL sorts first
        parts.insert(0, f"SELECT NULL, (SELECT {number} FROM {index.generation})")  # noqa: S608
    if not parts:
        return _NO_GENERATION, {}
    cursor.execute(" UNION ALL ".join(parts) + " ORDER BY 1 NULLS FIRST", params)
    rows = cursor.fetchall()
    generation = rows.pop(0)[1] if with_generation else _NO_GENERATION
    found: dict[int, Postings] = dict.fromkeys(terms, _NO_POSTINGS)
    for term, packed in rows:
        if packed is None:  # no posting
            continue
        postings = np.fromstring(packed, dtype=np.int64, sep=",")
        papers = postings >> IMPACT_BITS
        if int(papers.max()) < 1 << 31:
            papers = papers.astype(np.int32)
        found[term] = (papers, (postings & IMPACT_MASK).astype(np.uint16))
    return generation, found


def _sum_by_paper(lists: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """(paper ids in ascending order, each one's summed score) for per-term lists of
    (paper ids, scores) in term order, a paper at most once per list.

    The sum is np.add.reduceat's over the postings sorted by paper (stable, so a paper's
    terms in term order): its first term's score plus the others' summed in order. Up to
    DENSE_MAX_TERMS terms that sum is built, to the same bits, on arrays indexed by paper
    id, without sorting; more terms (reduceat sums 8 or more values pairwise), or paper ids
    much larger than the postings, take the sort.
    """
    size = max(int(papers.max()) for papers, _ in lists) + 1
    postings = sum(len(papers) for papers, _ in lists)
    if len(lists) > DENSE_MAX_TERMS or size > max(DENSE_MIN_SIZE, DENSE_PER_POSTING * postings):
        paper_ids = np.concatenate([papers for papers, _ in lists])
        order = np.argsort(paper_ids, kind="stable")  # a paper's terms stay in term order
        paper_ids = paper_ids[order]
        starts = np.flatnonzero(np.concatenate(([True], paper_ids[1:] != paper_ids[:-1])))
        scores = np.concatenate([scores for _, scores in lists])[order]
        return paper_ids[starts], np.add.reduceat(scores, starts)
    first = np.zeros(size)
    rest = np.zeros(size)
    seen = np.zeros(size, dtype=bool)
    for papers, scores in lists:
        again = seen[papers]
        if again.any():
            rest[papers[again]] += scores[again]
            fresh = ~again
            first[papers[fresh]] = scores[fresh]
        else:
            first[papers] = scores
        seen[papers] = True
    found = np.flatnonzero(seen)
    return found, first[found] + rest[found]


def estimated_total(terms: QueryTerms) -> int:
    """Papers matching any term, if terms occurred independently."""
    if not terms.documents:
        return 0
    missing = 1.0
    for df in terms.df:
        missing *= 1.0 - df / terms.documents
    return max(max(terms.df, default=0), round(terms.documents * (1.0 - missing)))


@dataclass
class _List:
    """One term's postings, read best first."""

    term: int
    weight: float
    df: int
    read: int = 0
    last: int = 0  # impact of the last posting read: no unread one is higher
    done: bool = False

    @property
    def bound(self) -> float:
        return 0.0 if self.done else self.weight * self.last


def _threshold(
    cursor: Any, terms: QueryTerms, depth: int, restrictions: Sequence[Restriction]
) -> tuple[list[tuple[int, float]], int]:
    """The exact top `depth` (see the module docstring) and an estimated total."""
    lists = [_List(*entry) for entry in zip(terms.ids, terms.weights, terms.df, strict=True)]
    store = terms.index
    parts: dict[int, dict[int, float]] = {}  # paper -> {list index: weight x impact}
    exact: set[int] = set()
    rejected: set[int] = set()
    block = FIRST_BLOCK
    read_papers = kept_papers = 0
    while True:
        fresh: dict[int, dict[int, float]] = {}
        for index, posting in enumerate(lists):
            if posting.done:
                continue
            cursor.execute(
                f"SELECT impact, {store.key} FROM {store.postings} "  # noqa: S608
                f"WHERE term_id = %s ORDER BY impact DESC, {store.key} DESC LIMIT %s OFFSET %s",
                [posting.term, block, posting.read],
            )
            rows = cursor.fetchall()
            posting.read += len(rows)
            if rows:
                posting.last = rows[-1][0]
            posting.done = len(rows) < block or posting.read >= posting.df
            for impact, paper in rows:
                if paper in rejected:
                    continue
                target = parts if paper in parts else fresh
                target.setdefault(paper, {})[index] = posting.weight * impact
        if restrictions and fresh:
            members = _members(cursor, restrictions, list(fresh))
            read_papers += len(fresh)
            kept_papers += len(members)
            rejected.update(p for p in fresh if p not in members)
            fresh = {p: v for p, v in fresh.items() if p in members}
        for paper, values in fresh.items():
            parts.setdefault(paper, {}).update(values)
        while True:
            kth, contenders = _contenders(parts, exact, lists, depth)
            if not contenders or len(contenders) > 8 * depth + 256:
                break
            _complete(cursor, contenders, lists, parts, exact, store)
        unseen = sum(posting.bound for posting in lists)
        finished = all(posting.done for posting in lists)
        if not contenders and (finished or unseen <= kth):
            break
        if block * 4 > MAX_SORTED_BLOCK:
            # Reading on would not stop early after all: each posting read costs a step
            # in Python here, where the aggregate sums them in the database (PostgreSQL,
            # three common words' 60k postings at 95k papers: ~140 ms against ~35).
            everything = _exhaustive(cursor, terms, restrictions, depth, 0)
            return list(zip(everything.ids, everything.scores, strict=True)), everything.total
        block *= 4
    scored = heapq.nsmallest(
        depth, ((p, sum(v.values())) for p, v in parts.items()), key=lambda i: (-i[1], i[0])
    )
    total = estimated_total(terms)
    if restrictions and read_papers:
        total = round(total * kept_papers / read_papers)
    return scored, max(total, len(parts))


def _contenders(
    parts: dict[int, dict[int, float]], exact: set[int], lists: list[_List], depth: int
) -> tuple[float, list[int]]:
    """(the k-th best lower bound, papers not known exactly whose upper bound reaches it).

    A paper is known when completed by random access or when every list it was not seen
    in is read to its end; else its upper bound adds the bounds of those lists, which
    depend only on which lists it was seen in: computed once per such set, not per paper.
    """
    n = len(lists)
    lower = {p: sum(v.values()) for p, v in parts.items()}
    kth = heapq.nlargest(depth, lower.values())[-1] if len(lower) >= depth else 0.0
    gains: dict[tuple[int, ...], float | None] = {}  # lists seen in -> bound (None: known)
    contenders = []
    for paper, values in parts.items():
        if len(values) == n or paper in exact:
            continue
        key = tuple(values)
        if key not in gains:
            missing = [i for i in range(n) if i not in values]
            done = all(lists[i].done for i in missing)
            gains[key] = None if done else sum(lists[i].bound for i in missing)
        gain = gains[key]
        if gain is not None and lower[paper] + gain >= kth:
            contenders.append(paper)
    return kth, contenders


def _complete(
    cursor: Any,
    papers: list[int],
    lists: list[_List],
    parts: dict[int, dict[int, float]],
    exact: set[int],
    index: PostingIndex,
) -> None:
    """Read every query term's impact for these papers (random access)."""
    index_of = {posting.term: i for i, posting in enumerate(lists)}
    for paper, term, impact in _impacts(cursor, papers, list(index_of), index):
        i = index_of[term]
        parts[paper][i] = lists[i].weight * impact
    exact.update(papers)


def _members(cursor: Any, restrictions: Sequence[Restriction], papers: list[int]) -> set[int]:
    """The given papers that every restriction selects."""
    wanted = np.asarray(papers, dtype=np.int64)
    return set(wanted[_member_mask(cursor, restrictions, wanted)].tolist())


def _maxscore(
    cursor: Any, terms: QueryTerms, depth: int, restrictions: Sequence[Restriction]
) -> tuple[list[tuple[int, float]], int]:
    """The exact top `depth` by MaxScore (Turtle & Flood 1995), in SQL.

    1. A first block of each term's best postings, its most promising papers completed by
       random access: theta, the depth-th best exact score found, is a lower bound of the
       true depth-th score.
    2. Terms are taken from the lowest bound (weight x best impact) up while their bounds
       sum below theta: a paper holding only those cannot reach the top. The others are
       essential.
    3. One aggregate over the essential terms' postings keeps the papers whose partial
       score plus the non-essential bounds reaches theta; random access completes them.
    """
    lists = [_List(*entry) for entry in zip(terms.ids, terms.weights, terms.df, strict=True)]
    table, key = terms.index.postings, terms.index.key
    parts: dict[int, dict[int, float]] = {}
    best: list[float] = []
    for index, posting in enumerate(lists):
        cursor.execute(
            f"SELECT impact, {key} FROM {table} WHERE term_id = %s "  # noqa: S608
            f"ORDER BY impact DESC, {key} DESC LIMIT %s",
            [posting.term, FIRST_BLOCK],
        )
        rows = cursor.fetchall()
        best.append(posting.weight * rows[0][0] if rows else 0.0)
        for impact, paper in rows:
            parts.setdefault(paper, {})[index] = posting.weight * impact
    share = 1.0  # of the papers met, the share the restrictions keep (for the total)
    if restrictions and parts:
        members = _members(cursor, restrictions, list(parts))
        share = len(members) / len(parts)
        parts = {p: v for p, v in parts.items() if p in members}
    promising = sorted(parts, key=lambda p: -sum(parts[p].values()))[: 10 * depth]
    exact = _exact_scores(cursor, lists, promising, terms.index)
    found = sorted(exact.values(), reverse=True)
    theta = found[depth - 1] if len(found) >= depth else 0.0
    order = sorted(range(len(lists)), key=lambda i: best[i])
    optional: list[int] = []
    bound = 0.0
    for i in order:
        if bound + best[i] >= theta:
            break
        optional.append(i)
        bound += best[i]
    essential = [i for i in range(len(lists)) if i not in optional]
    if sum(lists[i].df for i in essential) > MAXSCORE_MAX_SHARE * terms.postings:
        # Theta prunes too little here: the aggregate over every posting is cheaper.
        everything = _exhaustive(cursor, terms, restrictions, depth, 0)
        return list(zip(everything.ids, everything.scores, strict=True)), everything.total
    ids = [lists[i].term for i in essential]
    summed, params = score_sql(ids, [lists[i].weight for i in essential])
    cursor.execute(
        f"SELECT {key} FROM {table} WHERE term_id IN {_in(ids)} "  # noqa: S608
        f"GROUP BY {key} HAVING {summed} + %s >= %s",
        [*ids, *params, bound, theta],
    )
    candidates = [row[0] for row in cursor.fetchall() if row[0] not in exact]
    if len(candidates) > MAXSCORE_MAX_CANDIDATES:
        # Theta pruned too little after all (a common essential word, rare optional ones):
        # completing each candidate by random access, 500 a statement, costs more than
        # the aggregate over every posting.
        everything = _exhaustive(cursor, terms, restrictions, depth, 0)
        return list(zip(everything.ids, everything.scores, strict=True)), everything.total
    if restrictions and candidates:
        # Checked on the few candidates, not by reading every allowed id.
        members = _members(cursor, restrictions, candidates)
        candidates = [paper for paper in candidates if paper in members]
    exact.update(_exact_scores(cursor, lists, candidates, terms.index))
    scored = sorted(exact.items(), key=lambda item: (-item[1], item[0]))
    return scored[:depth], max(round(estimated_total(terms) * share), len(exact))


def _exact_scores(
    cursor: Any, lists: list[_List], papers: Sequence[int], index: PostingIndex
) -> dict[int, float]:
    """Every query term's contribution summed, for these papers (random access)."""
    weight = {posting.term: posting.weight for posting in lists}
    scores = dict.fromkeys(papers, 0.0)
    for paper, term, impact in _impacts(cursor, papers, list(weight), index):
        scores[paper] += weight[term] * impact
    return scores


def _impacts(
    cursor: Any, papers: Sequence[int], terms: Sequence[int], index: PostingIndex
) -> Iterator[tuple[int, int, int]]:
    """(document, term, impact) of these terms in these documents (random access), 500
    documents a statement."""
    key = index.key
    for start in range(0, len(papers), 500):
        chunk = list(papers[start : start + 500])
        cursor.execute(
            f"SELECT {key}, term_id, impact FROM {index.postings} "  # noqa: S608
            f"WHERE {key} IN {_in(chunk)} AND term_id IN {_in(terms)}",
            [*chunk, *terms],
        )
        yield from cursor.fetchall()

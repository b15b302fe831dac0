"""BM25 postings of our own, the same on SQLite and PostgreSQL: how papers
are indexed for lexical.py's ranking.

Why our own: PostgreSQL's `ts_rank` ignores how rare a word is (it ranks SciFact far
below BM25), and both engines score every hit, so an any-word question over a large
library costs O(hits). Here one analyzer (analysis.py) and one formula serve both
databases, and postings are stored best first so the top k can be found without scoring
every hit. Why the engine's own index (native.py) stays beside them, for matching:
docs/DECISIONS.md, "Two full-text indexes", measured by benchmarks/bench_index_cost.py.

Storage (migration 0006):
- `papers_lex_posting (term_id, impact, paper_id)`, primary key in that order: a term's
  postings in impact order (sorted access), and an index on (paper_id, term_id, impact)
  for deleting a paper's postings and scoring given papers (random access);
- `papers_lex_doc (paper_id, length)`: document lengths, for N and the average length;
- triggers on papers_paper drop a deleted paper's rows (and TRUNCATE empties them);
- `papers_lex_word (word, term_id)` (migration 0021): the lexicon, every word indexed
  (folded, stop words left out) with its stem's term id, so that a `prefix*` finds the
  terms of the words it begins (a range of its primary key); written with the postings,
  only added to;
- `papers_lex_generation`, a number made new by every change of the postings, for
  lexical.py's in-memory postings: on SQLite by the writes here and a trigger on deletes
  (migration 0010), on PostgreSQL by a trigger on papers_lex_doc deferred to the commit
  (0016: every change of a paper's postings rewrites its row there).

A posting's impact is a paper's BM25 term-frequency part for the term, x IMPACT_SCALE
(`impact`):
    impact = tfw (K1 + 1) / (tfw + K1 (1 - B + B dl / avgdl))
where tfw counts the term's occurrences weighted by field (FIELD_WEIGHTS) and dl is the
paper's length in terms. It is computed when the paper is indexed (inside the writer's
transaction, papers.search.index.papers_changed) with the library's average length at that
time; `reindex_fulltext` recomputes them all. The weights and K1, B were chosen on the
dev queries of SciFact (train) and Cranfield (odd questions) together: docs/SEARCH.md.

One BM25 for papers and passages: the passages' postings (papers/passages/services.py,
one field, weight 1) are written with `impact`, and lexical.py ranks both, the index
named by a `PostingIndex` (PAPERS here, PASSAGES in papers/passages/ranking.py), each
with its own statistics.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from django.db import DEFAULT_DB_ALIAS, connections

from core.sql import prefix_end
from papers.search import analysis
from papers.search.source import PG_SOURCE, SQLITE_SOURCE, tables, without_jit

POSTING_TABLE = "papers_lex_posting"
DOC_TABLE = "papers_lex_doc"
# One number, a new random one with every change of the postings (migrations 0010, 0016),
# so that lexical.py's in-memory postings know when to be read again.
GENERATION_TABLE = "papers_lex_generation"
# Every word written to the postings (folded, stop words left out), with its stem's term id
# (migration 0021): a `prefix*` finds the terms of the words it begins here
# (`lexicon_terms`). Rows are added, never removed: a word whose papers are gone stands for
# a term without postings, or one other papers hold through another word of its stem.
LEXICON_TABLE = "papers_lex_word"

K1 = 1.4
B = 0.6
IMPACT_SCALE = 1000
# Weight of a term's occurrences by field (title, abstract, authors, keywords, venue).
FIELD_WEIGHTS = (4.0, 1.0, 2.0, 3.0, 1.0)
INDEX_BATCH = 500
# Statistics (N, average length, document frequencies) are read again this often, and
# at once after a write by this process.
STATS_SECONDS = 30.0
# A query keeps at most this many distinct terms, the rarest (a pasted abstract has ~100):
# the common ones add little to BM25 and each costs a posting list.
MAX_QUERY_TERMS = 32


def in_list(values: Sequence[Any]) -> str:
    """`(%s, %s, ...)` for a SQL IN list of these values."""
    return "(" + ", ".join(["%s"] * len(values)) + ")"


# --- statistics ----------------------------------------------------------------------


@dataclass
class _Stats:
    documents: int = 0
    total_length: int = 0
    read_at: float = -math.inf  # never read
    df: dict[int, int] = field(default_factory=dict)

    @property
    def average_length(self) -> float:
        return self.total_length / self.documents if self.documents else 0.0


@dataclass(frozen=True)
class PostingIndex:
    """Where one BM25 index is stored, for lexical.py to rank it: the papers' (PAPERS) or
    the passages' (papers/passages/ranking.py). `postings`: a table of (term_id, impact,
    `key`), `key` naming the ranked document; `documents`: a table with one row per
    document and its `length` in terms (N and the average length); `generation`: the
    SQLite table whose number changes with every change of the postings, without which
    lexical.py keeps no postings in memory. `sorted_access`: whether the postings table's
    index serves a term's postings best first with the document as tie-break (the papers'
    primary key, term_id, impact, paper_id): without it, reading blocks best first sorts
    the term's whole list per block, and lexical.rank always takes one aggregate (the
    passages: 3.7x the p95 of search_passages at 18k passages with the threshold
    algorithm). `stats`: this index's statistics, read again every STATS_SECONDS and at
    once after `forget_stats`."""

    name: str
    postings: str
    key: str
    documents: str
    generation: str | None = None
    sorted_access: bool = True
    stats: _Stats = field(default_factory=_Stats, compare=False, repr=False)


PAPERS = PostingIndex("papers", POSTING_TABLE, "paper_id", DOC_TABLE, GENERATION_TABLE)
_stats = PAPERS.stats
_stats_lock = threading.Lock()


def read_stats(cursor: Any, index: PostingIndex = PAPERS) -> _Stats:
    stats = index.stats
    with _stats_lock:
        if time.monotonic() - stats.read_at < STATS_SECONDS:
            return stats
        cursor.execute(
            f"SELECT count(*), coalesce(sum(length), 0) FROM {index.documents}"  # noqa: S608
        )
        documents, total = cursor.fetchone()
        stats.documents, stats.total_length = int(documents), int(total)
        stats.df.clear()
        stats.read_at = time.monotonic()
        return stats


def generation(index: PostingIndex = PAPERS, using: str = DEFAULT_DB_ALIAS) -> Any:
    """The index's generation: a number made new by every change of its postings (on
    PostgreSQL at the commit of the writing transaction)."""
    with connections[using].cursor() as cursor:
        cursor.execute(f"SELECT n FROM {index.generation}")  # noqa: S608
        row = cursor.fetchone()
        return row[0] if row else None


def forget_stats(index: PostingIndex = PAPERS) -> None:
    """Read the index's statistics again at the next search (after a bulk change; the
    passages' writer after every change)."""
    with _stats_lock:
        index.stats.read_at = -math.inf


def stats_add(index: PostingIndex, documents: int, total_length: int) -> None:
    """Follow this process's writes to an index in its statistics (documents and their
    summed length added, negative when removed) and forget its document frequencies;
    other processes' writes are read every STATS_SECONDS."""
    with _stats_lock:
        index.stats.documents += documents
        index.stats.total_length += total_length
        index.stats.df.clear()


def document_frequencies(
    cursor: Any, stats: _Stats, ids: Sequence[int], index: PostingIndex = PAPERS
) -> dict[int, int]:
    missing = [i for i in ids if i not in stats.df]
    if missing:
        cursor.execute(
            f"SELECT term_id, count(*) FROM {index.postings} "  # noqa: S608
            f"WHERE term_id IN {in_list(missing)} GROUP BY term_id",
            missing,
        )
        counted = dict(cursor.fetchall())
        for term in missing:
            stats.df[term] = int(counted.get(term, 0))
    return {i: stats.df[i] for i in ids}


def term_papers(
    term: int,
    *,
    first_batch: int = 500,
    growth: int = 8,
    most: int = 20_000,
    using: str = DEFAULT_DB_ALIAS,
) -> Iterator[list[int]]:
    """The papers whose postings hold this term id, highest impact first (a word of the
    title weighs most), in batches growing `growth` times from `first_batch` up to `most`:
    one range of the primary key, so a cost that grows with the term's papers, not with
    the library. A caller that stops early reads little; one that reads the whole list
    asks in few statements (a name's 27k papers at 500k on PostgreSQL: its titles in 4
    statements instead of 55, in about the same time: the titles' reads dominate)."""
    with connections[using].cursor() as cursor:
        cursor.execute(
            f"SELECT paper_id FROM {POSTING_TABLE} WHERE term_id = %s "  # noqa: S608
            "ORDER BY impact DESC",
            [term],
        )
        size = first_batch
        while rows := cursor.fetchmany(size):
            yield [row[0] for row in rows]
            size = min(size * growth, most)


def idf(documents: int, df: int) -> float:
    return math.log(1.0 + (documents - df + 0.5) / (df + 0.5))


# --- the formula, shared by papers and passages --------------------------------------


def impact(weighted: float, length: int, average_length: float) -> int:
    """A document's BM25 term-frequency part for one term, x IMPACT_SCALE: the stored
    impact of its posting. `weighted`: the term's occurrences (weighted by field for
    papers), `length`: the document's length in terms. At most IMPACT_SCALE x (K1 + 1)."""
    return _impact(weighted, _length_norm(length, average_length))


def _length_norm(length: int, average_length: float) -> float:
    """The length part of `impact`, the same for every term of a document."""
    return K1 * (1 - B + B * length / average_length)


def _impact(weighted: float, norm: float) -> int:
    return max(1, round(IMPACT_SCALE * weighted * (K1 + 1) / (weighted + norm)))


def query_term_ids(words: Sequence[str]) -> list[int]:
    """The distinct term ids of a query's words (stop words dropped, stems deduplicated),
    in the query's order."""
    stems = dict.fromkeys(analysis.stems(" ".join(words)))
    return list(dict.fromkeys(analysis.term_id(s) for s in stems))


@dataclass(frozen=True)
class Weighted:
    """A query's terms as ranked: ids, weights (idf / IMPACT_SCALE, so that a document's
    score is sum weight x impact), document frequencies, and the N the idf used."""

    ids: tuple[int, ...]
    weights: tuple[float, ...]
    df: tuple[int, ...]
    documents: int


def weigh_terms(ids: Sequence[int], df: Mapping[int, int], documents: int) -> Weighted:
    """Keep the terms some document has (of more than MAX_QUERY_TERMS, the rarest: highest
    idf, the earlier term on a tie) and weigh them. N is at least every kept term's df
    (statistics read a moment apart may disagree)."""
    kept = [i for i in ids if df.get(i, 0) > 0]
    if len(kept) > MAX_QUERY_TERMS:
        # Lowest document frequency is highest idf; sorted() is stable for ties.
        chosen = set(sorted(kept, key=lambda i: df[i])[:MAX_QUERY_TERMS])
        kept = [i for i in kept if i in chosen]
    documents = max(documents, max((df[i] for i in kept), default=0))
    return Weighted(
        ids=tuple(kept),
        weights=tuple(idf(documents, df[i]) / IMPACT_SCALE for i in kept),
        df=tuple(df[i] for i in kept),
        documents=documents,
    )


def score_sql(
    ids: Sequence[int], weights: Sequence[float], alias: str = ""
) -> tuple[str, list[Any]]:
    """SQL summing weight x impact over a GROUP BY of postings (columns `impact`, `term_id`,
    prefixed `alias.` when given), with its parameters."""
    prefix = f"{alias}." if alias else ""
    # The weights as doubles: PostgreSQL reads a bound float as a numeric literal (Django's
    # client-side binding) and summed numerics, ~1.8x the time of doubles over 145k
    # postings at 95k papers. SQLite's sums are doubles either way.
    whens = " ".join("WHEN %s THEN CAST(%s AS DOUBLE PRECISION)" for _ in ids)
    params: list[Any] = [value for pair in zip(ids, weights, strict=True) for value in pair]
    return f"sum({prefix}impact * CASE {prefix}term_id {whens} END)", params


# --- indexing ------------------------------------------------------------------------


def _weighted_counts(
    fields: Sequence[str | None], seen: set[str] | None = None
) -> tuple[int, dict[int, float]]:
    """(length in terms, {term id: occurrences weighted by field}) of one paper, its words
    added to `seen` when given."""
    weighted: dict[int, float] = {}
    length = 0
    for text, weight in zip(fields, FIELD_WEIGHTS, strict=True):
        if not text:
            continue
        field_length, counts = analysis.term_id_counts(text, seen)
        length += field_length
        for key, count in counts.items():
            weighted[key] = weighted.get(key, 0.0) + weight * count
    return length, weighted


def _impacts(
    counted: list[tuple[int, int, dict[int, float]]], average_length: float
) -> list[tuple[int, int, int]]:
    """(term id, impact, paper id) of each term of these (paper, length, weighted counts):
    `impact` per posting, its length part computed once per paper and its value once per
    distinct weighted count (the same functions, so the same numbers)."""
    postings: list[tuple[int, int, int]] = []
    add = postings.extend
    for paper, length, terms in counted:
        norm = _length_norm(length, average_length)
        # A paper's terms share a few weighted counts (most occur once or twice).
        impacts = {weighted: _impact(weighted, norm) for weighted in set(terms.values())}
        add(zip(terms, map(impacts.__getitem__, terms.values()), itertools.repeat(paper)))
    return postings


def _texts(cursor: Any, paper_ids: list[int]) -> list[tuple[Any, ...]]:
    """The five search fields of these papers (source.py), one row each."""
    if cursor.db.vendor == "postgresql":
        with without_jit(cursor):
            cursor.execute(
                PG_SOURCE.format(**tables()) + " WHERE p.paper_id = ANY(%s)", [paper_ids]
            )
            return list(cursor.fetchall())
    where = f" WHERE p.paper_id IN {in_list(paper_ids)}"
    cursor.execute(SQLITE_SOURCE.format(**tables()) + where, paper_ids)
    return list(cursor.fetchall())


def index_papers(paper_ids: Sequence[int], *, using: str = DEFAULT_DB_ALIAS) -> None:
    """Rewrite the postings of these papers from the library's text, inside the caller's
    transaction (papers.search.index.papers_changed). Ids of deleted papers just lose
    their rows."""
    ids = sorted({int(i) for i in paper_ids})
    if not ids:
        return
    connection = connections[using]
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        stats = read_stats(cursor)
        seen: set[str] = set()
        postings: list[tuple[int, int, int]] = []
        docs: list[tuple[int, int]] = []
        for start in range(0, len(ids), INDEX_BATCH):
            batch = ids[start : start + INDEX_BATCH]
            counted = [(row[0], *_weighted_counts(row[1:6], seen)) for row in _texts(cursor, batch)]
            average = stats.average_length
            if not average:  # an empty library: this batch sets the scale
                average = sum(length for _, length, _ in counted) / max(len(counted), 1)
            batch_docs = [(paper, length) for paper, length, _ in counted]
            postings.extend(_impacts(counted, average or 1.0))
            docs.extend(batch_docs)
            # The statistics follow this process's writes exactly (what the rows replaced is
            # subtracted); other processes' writes are read every STATS_SECONDS.
            cursor.execute(
                f"SELECT count(*), coalesce(sum(length), 0) FROM {DOC_TABLE} "  # noqa: S608
                f"WHERE paper_id IN {in_list(batch)}",
                batch,
            )
            replaced, replaced_length = cursor.fetchone()
            _delete(cursor, postgres, batch)
            with _stats_lock:
                stats.documents += len(batch_docs) - int(replaced)
                stats.total_length += sum(length for _, length in batch_docs) - int(replaced_length)
        # Every batch's postings in one statement, in the primary key's order: consecutive
        # rows land on the same or the next page of its B-tree, and a page takes all of
        # the call's rows for it at once (random places otherwise: term ids are hashes;
        # the sort alone took the ACL corpus's inserts on SQLite from 17 s to 12 s). An
        # import's 10,000 papers hold about 550,000 postings here (~60 MB).
        postings.sort()
        _insert(cursor, postgres, POSTING_TABLE, POSTING_COLUMNS, postings)
        _insert(cursor, postgres, DOC_TABLE, {"paper_id": "bigint", "length": "integer"}, docs)
        # The lexicon's new words once, last, in one statement.
        _write_lexicon(cursor, postgres, analysis.word_terms(seen))
    forget_df()


POSTING_COLUMNS = {"term_id": "bigint", "impact": "smallint", "paper_id": "bigint"}


def _delete(cursor: Any, postgres: bool, batch: list[int]) -> None:
    """Drop these papers' postings and lengths (rewritten next by the caller)."""
    if postgres:
        cursor.execute(f"DELETE FROM {POSTING_TABLE} WHERE paper_id = ANY(%s)", [batch])  # noqa: S608
        cursor.execute(f"DELETE FROM {DOC_TABLE} WHERE paper_id = ANY(%s)", [batch])  # noqa: S608
    else:
        marks = in_list(batch)
        cursor.execute(f"UPDATE {GENERATION_TABLE} SET n = random()")  # noqa: S608
        cursor.execute(f"DELETE FROM {POSTING_TABLE} WHERE paper_id IN {marks}", batch)  # noqa: S608
        cursor.execute(f"DELETE FROM {DOC_TABLE} WHERE paper_id IN {marks}", batch)  # noqa: S608


def _insert(
    cursor: Any,
    postgres: bool,
    table: str,
    columns: Mapping[str, str],
    rows: Sequence[tuple[Any, ...]],
    *,
    keep_existing: str | None = None,
) -> None:
    """Insert these rows (values in the order of `columns`, which map each column to its
    PostgreSQL type): on PostgreSQL as arrays unnested in one statement, on SQLite by
    executemany. `keep_existing` (a key column): a row whose key the table holds is left
    out; on PostgreSQL only one committed (or this transaction's): the key is not unique
    there, so a writer never waits for another's uncommitted row."""
    if not rows:
        return
    names = ", ".join(columns)
    if postgres:
        arrays = [list(values) for values in zip(*rows, strict=True)]
        unnested = ", ".join(f"%s::{kind}[]" for kind in columns.values())
        key = keep_existing
        absent = f" WHERE NOT EXISTS (SELECT 1 FROM {table} t WHERE t.{key} = u.{key})"  # noqa: S608
        insert = f"INSERT INTO {table} ({names}) SELECT * FROM unnest({unnested}) AS u({names})"  # noqa: S608
        cursor.execute(insert + (absent if key else ""), arrays)
        return
    verb = "INSERT OR IGNORE" if keep_existing else "INSERT"
    cursor.executemany(f"{verb} INTO {table} ({names}) VALUES {in_list(list(columns))}", rows)


def _write_lexicon(cursor: Any, postgres: bool, words: Mapping[str, int]) -> None:
    """Add these words to the lexicon, those it holds already left out. On PostgreSQL two
    writers adding the same new word at once both add it (its key is not unique there,
    migration 0022): a writer waiting for another's commit would stall an edit behind an
    import's batch; `lexicon_terms` reads each term once."""
    columns = {"word": "text", "term_id": "bigint"}
    _insert(cursor, postgres, LEXICON_TABLE, columns, sorted(words.items()), keep_existing="word")


def fill_lexicon(*, using: str = DEFAULT_DB_ALIAS, batch: int = 2_000) -> None:
    """Write the words of every indexed paper to the lexicon (migration 0021, for a library
    indexed before it; `index_papers` keeps it current after)."""
    connection = connections[using]
    postgres = connection.vendor == "postgresql"
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT paper_id FROM {DOC_TABLE} ORDER BY paper_id")  # noqa: S608
        ids = [row[0] for row in cursor.fetchall()]
        for start in range(0, len(ids), batch):
            seen: set[str] = set()
            for row in _texts(cursor, ids[start : start + batch]):
                for text in row[1:6]:
                    if text:
                        seen.update(analysis.words(text))
            _write_lexicon(cursor, postgres, analysis.word_terms(seen))


def lexicon_terms(cursor: Any, prefix: str, *, most: int) -> list[int] | None:
    """The term ids of the words beginning with `prefix` (folded), each once; None when
    more than `most` words begin with it."""
    prefix = analysis.fold(prefix)
    if not prefix:
        return []
    # A range of the key: the column compares bytes (BINARY on SQLite, "C" on PostgreSQL).
    cursor.execute(
        f"SELECT term_id FROM {LEXICON_TABLE} WHERE word >= %s AND word < %s "  # noqa: S608
        "LIMIT %s",
        [prefix, prefix_end(prefix), most + 1],
    )
    rows = cursor.fetchall()
    if len(rows) > most:  # (a word two writers added at once counts twice: near enough)
        return None
    return list(dict.fromkeys(row[0] for row in rows))


def forget_df() -> None:
    with _stats_lock:
        _stats.df.clear()


def clear_index(*, using: str = DEFAULT_DB_ALIAS) -> None:
    """Empty the postings (before a rebuild)."""
    connection = connections[using]
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql" and _generation_trigger(cursor):
            # This transaction's pending renewals of the generation (0016's trigger,
            # deferred to the commit) run now: a table with pending trigger events cannot
            # be truncated. The TRUNCATE renews it too.
            cursor.execute("SET CONSTRAINTS papers_lex_generation IMMEDIATE")
            cursor.execute("SET CONSTRAINTS papers_lex_generation DEFERRED")
        for table in (POSTING_TABLE, DOC_TABLE):
            if connection.vendor == "postgresql":
                cursor.execute(f"TRUNCATE {table}")
            else:
                cursor.execute(f"DELETE FROM {table}")  # noqa: S608
        if connection.vendor == "sqlite":
            cursor.execute(f"UPDATE {GENERATION_TABLE} SET n = random()")  # noqa: S608
    with _stats_lock:
        _stats.documents = _stats.total_length = 0
        _stats.df.clear()
        _stats.read_at = time.monotonic()


def _generation_trigger(cursor: Any) -> bool:
    """Whether migration 0016's trigger exists (not yet while 0006 builds the postings)."""
    cursor.execute("SELECT 1 FROM pg_trigger WHERE tgname = 'papers_lex_generation'")
    return cursor.fetchone() is not None


def rebuild_postings(
    *,
    batch_size: int = 2_000,
    using: str = DEFAULT_DB_ALIAS,
    progress: Callable[[int], None] | None = None,
) -> int:
    """Empty the postings and index every paper again; returns the number of papers.

    Two passes, so that every impact is computed with the whole library's average
    length: the first writes lengths only.
    """
    clear_index(using=using)
    connection = connections[using]
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT paper_id FROM {tables()['paper']} ORDER BY paper_id")  # noqa: S608
        ids = [row[0] for row in cursor.fetchall()]
    _set_average_from_sample(ids, using)
    for start in range(0, len(ids), batch_size):
        batch = ids[start : start + batch_size]
        index_papers(batch, using=using)
        if progress is not None:
            progress(len(batch))
    forget_stats()
    return len(ids)


def _set_average_from_sample(ids: list[int], using: str, sample: int = 2_000) -> None:
    """Seed the average length from a spread sample of the papers, so the first batches of
    a rebuild are normalised like the last."""
    if not ids:
        return
    step = max(1, len(ids) // sample)
    chosen = ids[::step][:sample]
    lengths: list[int] = []
    with connections[using].cursor() as cursor:
        for start in range(0, len(chosen), 500):
            chunk = chosen[start : start + 500]
            lengths += [_weighted_counts(row[1:6])[0] for row in _texts(cursor, chunk)]
    with _stats_lock:
        # Stand-in figures until the next read: `documents` x this average.
        _stats.documents = len(lengths)
        _stats.total_length = sum(lengths)
        _stats.read_at = time.monotonic()

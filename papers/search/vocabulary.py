"""The title/author vocabulary of the full-text index, for typo-tolerant matching.

Each word of five or more letters in a query that finds too little is corrected against
the words of titles and author names: candidates come from an in-memory trigram index,
then an edit distance that counts a swap as one edit. The vocabulary is built from the
index (the stored title/author text on SQLite, `ts_stat` on PostgreSQL) in a background
thread and held per process (`current_vocabulary`): a query never waits for it (seconds at
95k papers). The words of papers this process writes are added to it at once
(`vocabulary_add_papers`); other processes' writes arrive with the next rebuild, started
once the held one is VOCABULARY_TTL seconds old.
"""

from __future__ import annotations

import logging
import re
import threading
import time
from collections import Counter
from collections.abc import Iterable, Sequence

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from papers.identifiers import ascii_fold

logger = logging.getLogger(__name__)

FTS_TABLE = "papers_paper_fts"
_WORD = re.compile(r"[a-z0-9]+")
# Shorter words are not corrected, only required as they are.
FUZZY_MIN_CHARS = 5


def _connection(using: str) -> BaseDatabaseWrapper:
    return connections[using]


def edit_distance(a: str, b: str, limit: int) -> int:
    """Edit distance counting a swap of two neighbouring letters as one edit (optimal
    string alignment), or limit + 1 as soon as it must exceed `limit`."""
    if abs(len(a) - len(b)) > limit:
        return limit + 1
    before: list[int] = []
    previous = list(range(len(b) + 1))
    for i, char_a in enumerate(a, start=1):
        current = [i]
        for j, char_b in enumerate(b, start=1):
            value = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (char_a != char_b))
            if i > 1 and j > 1 and char_a == b[j - 2] and a[i - 2] == char_b:
                value = min(value, before[j - 2] + 1)
            current.append(value)
        if min(current) > limit:
            return limit + 1
        before, previous = previous, current
    return previous[-1]


_DIGITS = re.compile(r"[0-9]+")


def _trigrams(word: str) -> set[str]:
    padded = f"  {word} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def max_edits(word: str) -> int:
    return 1 if len(word) <= 7 else 2


class Vocabulary:
    """The distinct words of titles and authors, with a trigram index for close spellings.

    Built from the stored titles and author names in one scan (seconds at 95k papers, in
    a background thread), words of new papers added in place (`add_words`). A lookup
    counts shared trigrams to find a few hundred candidates and runs a bounded edit
    distance on those: milliseconds, instead of comparing against every word.
    """

    def __init__(self, terms: Iterable[tuple[str, int]]) -> None:
        self.terms: list[str] = []
        self.docs: list[int] = []
        self.postings: dict[str, list[int]] = {}
        self.known: dict[str, int] = {}  # term -> its index in terms
        for term, docs in terms:
            self._add_term(term, docs)
        self.built_at = time.monotonic()

    def _add_term(self, term: str, docs: int) -> None:
        # Appended in this order, so a lookup running in another thread only ever meets
        # indexes that already point at a term (appends are atomic under the GIL).
        index = len(self.terms)
        self.terms.append(term)
        self.docs.append(docs)
        for gram in _trigrams(term):
            self.postings.setdefault(gram, []).append(index)
        self.known[term] = index

    def add_words(self, words: Iterable[str]) -> None:
        """Count one more paper for each of these (distinct) words, adding the new ones.
        Callers serialise writes (VocabularyHolder's lock); lookups may run meanwhile."""
        for word in words:
            if word.isdigit():
                continue
            index = self.known.get(word)
            if index is None:
                self._add_term(word, 1)
            else:
                self.docs[index] += 1

    def close_terms(self, word: str, most: int = 5) -> list[str]:
        """The word itself if indexed, and indexed words within max_edits of it, closest
        then most frequent first. Words under FUZZY_MIN_CHARS are only matched exactly:
        'you' has dozens of neighbours, each in thousands of titles. A correction never
        changes a number: 'topic4' is not 'topic0', nor 'gpt4' 'gpt3'."""
        if len(word) < FUZZY_MIN_CHARS:
            return [word] if word in self.known else []
        limit = max_edits(word)
        grams = _trigrams(word)
        counts: Counter[int] = Counter()
        for gram in grams:
            counts.update(self.postings.get(gram, ()))
        # One edit changes at most three trigrams (a swap of two letters four); and a
        # close spelling shares at least half of them, which keeps the candidates few.
        needed = max(len(grams) - 4 * limit, (len(grams) + 1) // 2, 1)
        found = []
        numbers = _DIGITS.findall(word)
        for index, shared in counts.items():
            if shared < needed:
                continue
            term = self.terms[index]
            if _DIGITS.findall(term) != numbers:  # 'gpt4' is no typo of 'gpt3'
                continue
            distance = edit_distance(word, term, limit)
            if distance <= limit:
                found.append((distance, -self.docs[index], term))
        found.sort()
        return [term for _, _, term in found[:most]]


# How old the held vocabulary may get before a query starts rebuilding it in the background
# (the rebuild brings other processes' writes; this process's own are added at once).
VOCABULARY_TTL = 900.0
# After a failed build, how long before a query may start another one.
RETRY_AFTER_FAILURE = 60.0


def build_vocabulary(using: str = DEFAULT_DB_ALIAS) -> Vocabulary:
    """The vocabulary of every indexed title and author name, read in one scan: 4-17 s
    on SQLite and 1.3-14 s on PostgreSQL at 95k papers, so never on a query's path."""
    connection = _connection(using)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                "SELECT word, ndoc FROM ts_stat("  # noqa: S608
                f"'SELECT to_tsvector(''simple'', fuzzy_text) FROM {FTS_TABLE}')"
            )
            rows: Iterable[tuple[str, int]] = cursor.fetchall()
        else:
            # The index stems words (porter), so its own vocabulary holds stems such as
            # 'lavi'; corrections must be real words, counted here from the stored text.
            cursor.execute(f"SELECT title, authors FROM {FTS_TABLE}")  # noqa: S608
            counts: Counter[str] = Counter()
            for title, authors in cursor:
                counts.update(_sqlite_words(title, authors))
            rows = counts.items()
    return Vocabulary((term, docs) for term, docs in rows if not term.isdigit())


def _sqlite_words(title: str, authors: str) -> set[str]:
    return set(_WORD.findall(ascii_fold(f"{title} {authors}").lower()))


def _paper_words(paper_ids: Sequence[int], using: str) -> list[set[str]]:
    """The distinct vocabulary words of each of these papers, as build_vocabulary reads
    them (PostgreSQL: the same `simple` parse as ts_stat)."""
    connection = _connection(using)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            cursor.execute(
                f"SELECT tsvector_to_array(to_tsvector('simple', fuzzy_text)) "  # noqa: S608
                f"FROM {FTS_TABLE} WHERE paper_id = ANY(%s)",
                [list(paper_ids)],
            )
            return [set(row[0]) for row in cursor.fetchall()]
        marks = ", ".join(["%s"] * len(paper_ids))
        cursor.execute(
            f"SELECT title, authors FROM {FTS_TABLE} WHERE rowid IN ({marks})",  # noqa: S608
            list(paper_ids),
        )
        return [_sqlite_words(title, authors) for title, authors in cursor.fetchall()]


class VocabularyHolder:
    """A process's vocabulary of one database: the one it has (possibly up to
    VOCABULARY_TTL seconds old, plus this process's own writes), rebuilt by one background
    thread at a time. Nothing here blocks on a build."""

    def __init__(self, using: str) -> None:
        self.using = using
        self.vocabulary: Vocabulary | None = None
        self._lock = threading.Lock()
        self._building = False
        self._failed_at: float | None = None
        # Words written while a build scans: replayed onto its result, which may have
        # started reading before they were committed.
        self._written_during_build: list[set[str]] = []

    def current(self) -> Vocabulary | None:
        """The held vocabulary (None before the first build ends); starts a background
        rebuild when there is none yet or it is older than VOCABULARY_TTL."""
        vocabulary = self.vocabulary
        if vocabulary is None or time.monotonic() - vocabulary.built_at >= VOCABULARY_TTL:
            self.refresh_in_background()
        return vocabulary

    @property
    def building(self) -> bool:
        return self._building

    def refresh_in_background(self) -> threading.Thread | None:
        """Start a rebuild in a daemon thread; None when one is running already, or a
        build failed less than RETRY_AFTER_FAILURE seconds ago."""
        with self._lock:
            if self._building:
                return None
            failed_at = self._failed_at
            if failed_at is not None and time.monotonic() - failed_at < RETRY_AFTER_FAILURE:
                return None
            self._building = True
            self._written_during_build = []
        thread = threading.Thread(
            target=self._rebuild, name=f"search-vocabulary-{self.using}", daemon=True
        )
        try:
            thread.start()
        except RuntimeError:  # no thread to be had (interpreter shutting down)
            with self._lock:
                self._building = False
            logger.warning("Could not start the typo-tolerance vocabulary build", exc_info=True)
            return None
        return thread

    def _rebuild(self) -> None:
        started = time.perf_counter()
        logger.info("Building the typo-tolerance vocabulary in the background")
        try:
            fresh = build_vocabulary(self.using)
        except Exception:  # the held one (if any) stays; a later query tries again
            logger.warning("Building the typo-tolerance vocabulary failed", exc_info=True)
            with self._lock:
                self._failed_at = time.monotonic()
                self._building = False
        else:
            with self._lock:
                for words in self._written_during_build:
                    fresh.add_words(words)
                self.vocabulary = fresh
                self._written_during_build = []
                self._failed_at = None
                self._building = False
            logger.info(
                "Typo-tolerance vocabulary loaded: %d words in %.1f s",
                len(fresh.terms),
                time.perf_counter() - started,
            )
        finally:
            connections[self.using].close()  # this thread's own connection

    def add_papers(self, paper_ids: Sequence[int]) -> None:
        """Add the words of these (just indexed) papers to the held vocabulary, and to
        the one being built; nothing to do (no query) when neither exists."""
        if self.vocabulary is None and not self._building:
            return
        words_per_paper = _paper_words(paper_ids, self.using)
        with self._lock:
            for words in words_per_paper:
                if self.vocabulary is not None:
                    self.vocabulary.add_words(words)
                if self._building:
                    self._written_during_build.append(words)

    def install(self, vocabulary: Vocabulary | None) -> None:
        """Hold this vocabulary (None: none), as a finished build would: for tests."""
        with self._lock:
            self.vocabulary = vocabulary
            self._failed_at = None


_holders: dict[str, VocabularyHolder] = {}
_holders_lock = threading.Lock()


def holder(using: str = DEFAULT_DB_ALIAS) -> VocabularyHolder:
    found = _holders.get(using)
    if found is None:
        with _holders_lock:
            found = _holders.setdefault(using, VocabularyHolder(using))
    return found


def current_vocabulary(using: str = DEFAULT_DB_ALIAS) -> Vocabulary | None:
    """The vocabulary typo tolerance uses now, or None while the first build runs (the
    query then goes without typo tolerance and says so). Never builds on the caller's
    thread."""
    return holder(using).current()


def vocabulary_add_papers(paper_ids: Sequence[int], *, using: str = DEFAULT_DB_ALIAS) -> None:
    """Called by fulltext.index_papers after it wrote these papers' rows, in the writer's
    transaction: a paper saved here is found by a misspelt query at once. A rolled-back
    write leaves its words behind until the next rebuild (they then match nothing)."""
    holder(using).add_papers(paper_ids)

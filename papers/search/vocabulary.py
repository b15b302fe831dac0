"""The title/author vocabulary of the full-text index, for typo-tolerant matching.

Each word of five or more letters in a query that finds too little is corrected against
the words of titles and author names: candidates come from an in-memory trigram index,
then an edit distance that counts a swap as one edit. The vocabulary is built from the
index (SQLite `fts5vocab`, PostgreSQL `ts_stat`) and cached per process for a while.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from collections.abc import Iterable

from django.db import DEFAULT_DB_ALIAS, connections
from django.db.backends.base.base import BaseDatabaseWrapper

from papers.identifiers import ascii_fold

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


def _trigrams(word: str) -> set[str]:
    padded = f"  {word} "
    return {padded[i : i + 3] for i in range(len(padded) - 2)}


def max_edits(word: str) -> int:
    return 1 if len(word) <= 7 else 2


class Vocabulary:
    """The distinct words of titles and authors, with a trigram index for close spellings.

    Built from the stored titles and author names in one scan (about a second at 95k
    papers), kept per process for VOCABULARY_TTL seconds. A
    lookup counts shared trigrams to find a few hundred candidates and runs a bounded
    edit distance on those: milliseconds, instead of comparing against every word.
    """

    def __init__(self, terms: Iterable[tuple[str, int]]) -> None:
        self.terms: list[str] = []
        self.docs: list[int] = []
        self.postings: dict[str, list[int]] = {}
        for index, (term, docs) in enumerate(terms):
            self.terms.append(term)
            self.docs.append(docs)
            for gram in _trigrams(term):
                self.postings.setdefault(gram, []).append(index)
        self.known = set(self.terms)
        self.built_at = time.monotonic()

    def close_terms(self, word: str, most: int = 5) -> list[str]:
        """The word itself if indexed, and indexed words within max_edits of it, closest
        then most frequent first. Words under FUZZY_MIN_CHARS are only matched exactly:
        'you' has dozens of neighbours, each in thousands of titles."""
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
        for index, shared in counts.items():
            if shared < needed:
                continue
            term = self.terms[index]
            distance = edit_distance(word, term, limit)
            if distance <= limit:
                found.append((distance, -self.docs[index], term))
        found.sort()
        return [term for _, _, term in found[:most]]


VOCABULARY_TTL = 900.0
vocabulary_cache: dict[str, Vocabulary] = {}


def get_vocabulary(using: str = DEFAULT_DB_ALIAS) -> Vocabulary:
    cached = vocabulary_cache.get(using)
    if cached is not None and time.monotonic() - cached.built_at < VOCABULARY_TTL:
        return cached
    connection = _connection(using)
    with connection.cursor() as cursor:
        if connection.vendor == "postgresql":
            # ~2.5 s at 95k papers: once per process and TTL.
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
                counts.update(set(_WORD.findall(ascii_fold(f"{title} {authors}").lower())))
            rows = counts.items()
    vocabulary = Vocabulary((term, docs) for term, docs in rows if not term.isdigit())
    vocabulary_cache[using] = vocabulary
    return vocabulary

"""How text becomes index terms for BM25 ranking (papers/search/lexical.py).

One analyzer for documents and queries, in Python, so SQLite and PostgreSQL rank with the
same terms and the same statistics: words are runs of letters and digits, folded to
lower-case ASCII ('García' -> 'garcia'), English stop words dropped, the rest stemmed by
the Snowball English stemmer (PyStemmer, C), so 'translations' and 'translating' are one
term. A term is stored as a 48-bit hash of its stem: no vocabulary table to number terms
in step (and to lock) across concurrent writers; two stems sharing a hash (about one pair
per million terms) share their postings, which moves a rank by a hair at most. The words
themselves are kept beside the postings only for `prefix*` lookups (postings.py's
lexicon, added to, never renumbered).
"""

from __future__ import annotations

import hashlib
import re
import unicodedata
from collections import Counter
from collections.abc import Iterable
from functools import lru_cache

import Stemmer

WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)

# Common English words that carry no topic: a question's "what", "is", "the" never have to
# match, and they are not indexed. Lucene's English list plus question words and the
# filler of requests ("give", "please", "papers about").
STOP_WORDS = frozenset(
    """a about above after again against all also am an and any are aren as at be because
    been before being below between both but by can cannot could did do does doing down
    during each etc few for from further give had has have having he her here hers herself
    him himself his how however i if in into is it its itself just let me more most my
    myself no nor not now of off on once only or other our ours ourselves out over own
    please possible same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself
    yourselves""".split()
)

_stemmer = Stemmer.Stemmer("english")
_stemmer.maxCacheSize = 200_000


def fold(text: str) -> str:
    """Lower-case ASCII where a letter has an ASCII base ('Ünïcödé' -> 'unicode')."""
    lowered = text.lower()
    if lowered.isascii():
        return lowered
    decomposed = unicodedata.normalize("NFKD", lowered)
    if decomposed.isascii():
        return decomposed
    # Only non-ASCII characters can be combining marks: test those alone.
    return _NON_ASCII_RE.sub(_without_combining, decomposed)


_NON_ASCII_RE = re.compile(r"[^\x00-\x7f]+")


def _without_combining(match: re.Match[str]) -> str:
    return "".join(char for char in match.group() if not unicodedata.combining(char))


def words(text: str) -> list[str]:
    """The folded words of a text, stop words included, in order."""
    return WORD_RE.findall(fold(text))


def is_stop_word(word: str) -> bool:
    return word in STOP_WORDS or (len(word) == 1 and not word.isdigit())


def stems(text: str) -> list[str]:
    """The index terms of a text in order: words without stop words, stemmed."""
    kept = [word for word in words(text) if not is_stop_word(word)]
    return _stemmer.stemWords(kept) if kept else []


def stem(word: str) -> str:
    return _stemmer.stemWord(fold(word))


def stem_folded(words: list[str]) -> list[str]:
    """The stems of already folded words, in one call."""
    return _stemmer.stemWords(words)


@lru_cache(maxsize=500_000)
def term_id(term: str) -> int:
    """The stored id of a stem: the first 6 bytes of its BLAKE2b digest."""
    return int.from_bytes(hashlib.blake2b(term.encode(), digest_size=6).digest(), "big")


def word_term(word: str) -> int | None:
    """The term id of a word, or None when it is a stop word or several terms ('GPT-3')."""
    found = stems(word)
    return term_id(found[0]) if len(found) == 1 else None


def term_counts(text: str) -> Counter[str]:
    return Counter(stems(text))


# Folded word -> the term id of its stem, _STOP for a stop word: what indexing asks of
# each word, so that a word met before (most are) costs one dict lookup instead of a
# stop-word test, a stem and a hash. Emptied once it reaches this size (~25 MB; the
# ACL corpus, 95k papers, has 147k distinct words).
WORD_TERMS_MAX = 200_000
_STOP = -1
_word_terms: dict[str, int] = {}


def term_id_counts(text: str, seen: set[str] | None = None) -> tuple[int, Counter[int]]:
    """(length in terms, {term id: occurrences}) of a text: the same terms as
    `term_counts`, by their ids, for indexing many documents. Its words are added to
    `seen` when given (stop words too)."""
    found = words(text)
    if seen is not None:
        seen.update(found)
    cache = _word_terms
    try:
        counts = Counter(map(cache.__getitem__, found))
    except KeyError:  # words not met before
        if len(cache) >= WORD_TERMS_MAX:
            cache.clear()
        # This text's words in a mapping of its own: another thread may empty the cache.
        ids: dict[str, int] = {}
        for word in set(found):
            known = cache.get(word)
            if known is None:
                known = _STOP if is_stop_word(word) else term_id(_stemmer.stemWord(word))
                cache[word] = known
            ids[word] = known
        counts = Counter(map(ids.__getitem__, found))
    stop_words = counts.pop(_STOP, 0)
    return len(found) - stop_words, counts


def word_terms(found: Iterable[str]) -> dict[str, int]:
    """{word: the term id of its stem} of these folded words, stop words left out."""
    cache = _word_terms
    terms: dict[str, int] = {}
    for word in found:
        known = cache.get(word)
        if known is None:
            known = _STOP if is_stop_word(word) else term_id(_stemmer.stemWord(word))
        if known != _STOP:
            terms[word] = known
    return terms

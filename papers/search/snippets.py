"""The passage of a paper that shows why it matched: where most query words meet.

Computed in Python from the abstract (or the title when the abstract has no query word),
the same on both databases: the window of SNIPPET_WORDS words holding the most distinct
query terms (then the most occurrences) is cut at word boundaries, the matched words set
in **bold**, and markup in the paper's own text escaped so that a title holding
`<script>` or `*` reaches an agent as text.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from core.markdown import escape_markdown
from papers.search import analysis

__all__ = ["Highlighter", "escape_markdown", "passages"]

SNIPPET_WORDS = 30
ELLIPSIS = "…"
# A word: letters and digits. Split by it, a text is [between, word, ..., word, after].
_SPLIT_RE = re.compile(r"([^\W_]+)", re.UNICODE)
# The characters escape_markdown changes (core/markdown.py).
_MARKUP_RE = re.compile(r"[\\*_`\[\]<>]")


class Highlighter:
    """Which words of a text are query words: same stem as a query term, or starting with
    a `prefix*` of the query."""

    def __init__(self, words: Iterable[str], prefixes: Iterable[str] = ()) -> None:
        self.stems = set(analysis.stems(" ".join(words)))
        self.prefixes = tuple(analysis.fold(p) for p in prefixes if p)
        # The English stemmer only rewrites endings, so a stem keeps its word's initial
        # (tests/test_search_cpu_path.py holds it): a word with another initial cannot
        # be a query term, and is not stemmed.
        self._initials = frozenset(stem[:1] for stem in self.stems)
        self._seen: dict[str, str | None] = {}
        self._found: dict[str, str] = {}  # the words of _seen that are query words

    def term(self, word: str) -> str | None:
        if word not in self._seen:
            self._seen[word] = term = self._term(word)
            if term is not None:
                self._found[word] = term
        return self._seen[word]

    def _term(self, word: str) -> str | None:
        folded = analysis.fold(word)
        if self.prefixes and folded.startswith(self.prefixes):
            return "prefix:" + next(p for p in self.prefixes if folded.startswith(p))
        if analysis.is_stop_word(folded):
            return None
        stem = analysis.stem(folded)
        return stem if stem in self.stems else None

    def _matching(self, words: list[str]) -> dict[str, str]:
        """{word: term} for the words of `words` that are query words. Each distinct word
        is analysed once per highlighter (a page's abstracts share most of their words),
        the new ones stemmed in one call when their initial is a query term's."""
        seen = self._seen
        distinct = set(words)
        new = list(distinct.difference(seen))
        if new:
            seen.update(dict.fromkeys(new))  # not a query word, unless found below
            # Lower-cased in one call; the few words that are not ASCII then folded one by
            # one (folding is per character, and may make a space).
            lowered = "\x20".join(new).lower().split("\x20")
            folded = [
                low if low.isascii() else analysis.fold(word)
                for word, low in zip(new, lowered, strict=True)
            ]
            prefixes, initials = self.prefixes, self._initials
            if prefixes:
                for word, fold in zip(new, folded, strict=True):
                    if fold.startswith(prefixes):
                        term = "prefix:" + next(p for p in prefixes if fold.startswith(p))
                        seen[word] = self._found[word] = term
                candidates = [
                    (word, fold)
                    for word, fold in zip(new, folded, strict=True)
                    if fold[:1] in initials and seen[word] is None
                ]
            else:
                candidates = [
                    (word, fold)
                    for word, fold in zip(new, folded, strict=True)
                    if fold[:1] in initials
                ]
            if candidates:
                stems = analysis.stem_folded([fold for _, fold in candidates])
                wanted = self.stems
                for (word, fold), stem in zip(candidates, stems, strict=True):
                    if stem in wanted and not analysis.is_stop_word(fold):
                        seen[word] = self._found[word] = stem
        found = self._found
        return {word: found[word] for word in distinct.intersection(found)}

    def passage(self, text: str) -> str:
        """The best window of `text` with query words in bold, or "" if none matches."""
        if not text:
            return ""
        parts = _SPLIT_RE.split(text)  # text between words, word, ..., word, text after
        words = parts[1::2]
        matching = self._matching(words)
        if not matching:
            return ""
        matched = [(i, matching[word]) for i, word in enumerate(words) if word in matching]
        best = _best_window(matched)
        # Start a few words before the first match, for context.
        first = max(0, best - 3)
        last = min(len(words), first + SNIPPET_WORDS)
        return _render(parts, [i for i, _ in matched], first, last)


def _best_window(matched: Sequence[tuple[int, str]]) -> int:
    """The word index starting the window of SNIPPET_WORDS words that holds the most
    distinct query terms, then the most matches; the first such window. One pass: the
    window's end only moves forward as its start does."""
    best, best_key = 0, (-1, -1)
    counts: dict[str, int] = {}
    end = 0
    for n, (start, _) in enumerate(matched):
        while end < len(matched) and matched[end][0] < start + SNIPPET_WORDS:
            term = matched[end][1]
            counts[term] = counts.get(term, 0) + 1
            end += 1
        key = (len(counts), end - n)
        if key > best_key:
            best, best_key = start, key
        term = matched[n][1]
        counts[term] -= 1
        if not counts[term]:
            del counts[term]
    return best


def _render(parts: list[str], matched: Sequence[int], first: int, last: int) -> str:
    """Words `first` to `last` (excluded) of a text split by _SPLIT_RE, with the text
    before and after them when the window starts or ends the text (else an ellipsis), the
    `matched` words in bold and the rest escaped. A word (letters and digits) holds no
    markup, so only the text between words is escaped, and none when the window holds no
    character escape_markdown changes (most abstracts)."""
    start = 2 * first + 1 if first else 0
    stop = 2 * last if 2 * last + 1 < len(parts) else len(parts)
    window = parts[start:stop]
    if _MARKUP_RE.search("".join(window)):
        for j in range(start % 2 == 1, len(window), 2):  # the text between words
            window[j] = escape_markdown(window[j])
    for i in matched:
        if first <= i < last:
            window[2 * i + 1 - start] = f"**{window[2 * i + 1 - start]}**"
    text = "".join(window)
    if first:
        text = ELLIPSIS + text
    if stop < len(parts):
        text += ELLIPSIS
    return " ".join(text.split())


def passages(
    rows: Iterable[tuple[int, str, str]], words: Sequence[str], prefixes: Sequence[str] = ()
) -> dict[int, str]:
    """{paper id: passage} for (paper id, title, abstract) rows: from the abstract when a
    query word is there, else from the title."""
    highlighter = Highlighter(words, prefixes)
    found = {}
    for paper_id, title, abstract in rows:
        found[paper_id] = highlighter.passage(abstract or "") or highlighter.passage(title or "")
    return found

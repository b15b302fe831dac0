"""The passage of a paper that shows why it matched: where most query words meet.

Computed in Python from the abstract (or the title when the abstract has no query word),
the same on both databases: the window of SNIPPET_WORDS words holding the most distinct
query terms (then the most occurrences) is cut at word boundaries, the matched words set
in **bold**, and markup in the paper's own text escaped so that a title holding
`<script>` or `*` reaches an agent as text.

Two ways to the same passage. Most texts (abstracts, and the title line whose only
non-ASCII characters are dashes and quotes) have ASCII words only: there the query words are
found by searching the text for what each query term's words must start with
(`_stem_head`), each such word judged as before, and words are counted only up to the
matches, in C (bytes.count, one regex for the window's end). Texts with other words
(accented names, other scripts) are split into every word, each distinct word judged once:
their folding can change a word's length, which the first way cannot follow.
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Callable, Iterable, Sequence
from itertools import accumulate, compress, repeat

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from core.markdown import escape_markdown
from papers.search import analysis

__all__ = ["Highlighter", "escape_markdown", "passage_html", "passages"]

SNIPPET_WORDS = 30
ELLIPSIS = "…"
# A word: letters and digits. Split by it, a text is [between, word, ..., word, after].
_SPLIT_RE = re.compile(r"([^\W_]+)", re.UNICODE)
# The characters escape_markdown changes (core/markdown.py).
_MARKUP_RE = re.compile(r"[\\*_`\[\]<>]")
# An ASCII text (each non-ASCII character replaced by b"?", none of them in a word) as
# b"a" for a letter or digit and b" " for anything else: a word ends at each b"a ".
_WORD_MASK = bytes(97 if chr(byte).isalnum() and byte < 128 else 32 for byte in range(256))
# From a word's start in a mask: SNIPPET_WORDS words, ending at the last one's end
# (spelled out and possessive: the regex engine then keeps no state to backtrack to).
_WINDOW_RE = re.compile(rb"a++ ++" * (SNIPPET_WORDS - 1) + rb"a++")
# The ASCII characters that make a passage differ from its text: the markup
# escape_markdown escapes, and the whitespace " ".join(text.split()) changes, other than a
# single space.
_MARKUP_BYTES = bytes(b for b in range(128) if escape_markdown(chr(b)) != chr(b))
_ODD_SPACE_BYTES = bytes(b for b in range(128) if chr(b).isspace() and b != 32)
_ASCII_WORD_RE = re.compile(r"[a-z0-9]+")
# A passage's markdown: an escaped character, an entity escape_markdown writes, a bold
# mark, or a run of plain text.
_PASSAGE_TOKEN_RE = re.compile(r"\\(.)|&(lt|gt);|(\*\*)|([^\\&*]+|[\\&*])", re.DOTALL)
# The rest of a word, in a lower-cased ASCII text.
_WORD_REST_RE = re.compile(rb"[a-z0-9]*")


class _Terms(dict[bytes, str | None]):
    """Each lower-cased ASCII word's term (or None), judged at its first lookup."""

    def __init__(self, judge: Callable[[str], str | None]) -> None:
        super().__init__()
        self._judge = judge

    def __missing__(self, word: bytes) -> str | None:
        self[word] = term = self._judge(word.decode("ascii"))
        return term


class Highlighter:
    """Which words of a text are query words: same stem as a query term, or starting with
    a `prefix*` of the query."""

    def __init__(self, words: Iterable[str], prefixes: Iterable[str] = ()) -> None:
        self.stems = set(analysis.stems(" ".join(words)))
        self.prefixes = tuple(analysis.fold(p) for p in prefixes if p)
        # The English stemmer only rewrites endings, so a stem keeps its word's initial
        # (tests/papers/search/test_cpu_path.py holds it): a word with another initial
        # cannot be a query term, and is not stemmed.
        self._initials = frozenset(stem[:1] for stem in self.stems)
        self._seen: dict[str, str | None] = {}
        self._found: dict[str, str] = {}  # the words of _seen that are query words
        self._heads = _heads(self.stems, self.prefixes)
        self._ascii_terms = _Terms(self._term)  # lower-cased word: its term

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
        if self._heads is None:
            return self._passage_of_all_words(text)
        # One byte per character, so that positions in `data` are positions in `text`.
        data = text.encode("ascii", "replace")
        odd_spaces = False
        if not text.isascii():
            # Each b"?" may stand for a non-ASCII character: a letter or digit there is
            # (part of) a word the heads cannot find.
            at = data.find(b"?")
            while at != -1:
                char = text[at]
                if char.isalnum():
                    return self._passage_of_all_words(text)
                odd_spaces = odd_spaces or char.isspace()
                at = data.find(b"?", at + 1)
        return self._passage_of_ascii_words(text, data, odd_spaces, self._heads)

    def _passage_of_ascii_words(
        self, text: str, data: bytes, odd_spaces: bool, heads: list[bytes]
    ) -> str:
        """passage() of a text whose words are all ASCII (`data`: the text in ASCII), from
        the words starting with a head (found by bytes.find: no regex to compile for each
        query); `odd_spaces` when a non-ASCII character is whitespace."""
        lowered = data.lower()
        candidates = []  # (start, end) of each word starting with a head
        for head in heads:
            at = lowered.find(head)
            while at != -1:
                if at and _WORD_MASK[lowered[at - 1]] == 97:  # inside a word
                    at = lowered.find(head, at + 1)
                    continue
                rest_of_word = _WORD_REST_RE.match(lowered, at + len(head))  # always matches
                end = rest_of_word.end() if rest_of_word else at + len(head)
                candidates.append((at, end))
                at = lowered.find(head, end)
        if len(heads) > 1:
            candidates.sort()  # two heads never start one word
        terms_of = self._ascii_terms
        judged = [terms_of[lowered[start:end]] for start, end in candidates]
        matches = list(compress(candidates, judged))
        if not matches:
            return ""
        terms = list(filter(None, judged))
        starts = [start for start, _ in matches]
        mask = data.translate(_WORD_MASK)
        # Each match's word index: the words ending before it (the b"a " of the mask).
        indices = list(accumulate(map(mask.count, repeat(b"a "), [0, *starts], starts)))
        best = _best_match(indices, terms)
        first = max(0, indices[best] - 3)  # a few words of context before the first match
        start = starts[best]
        for _ in range(indices[best] - first):  # back to word `first`, after its b" "
            start = mask.rfind(b" a", 0, start) + 1
        window = _WINDOW_RE.match(mask, start)
        # Cut after SNIPPET_WORDS words only when a word follows them.
        cut = window is not None and mask.find(b"a", window.end()) != -1
        stop = window.end() if window is not None and cut else len(text)
        start = start if first else 0
        shown = data[start:stop]
        escaping = _holds_any(shown, _MARKUP_BYTES)
        pieces = [ELLIPSIS] if first else []
        position = start
        for n in range(bisect_left(indices, first), bisect_left(indices, first + SNIPPET_WORDS)):
            word_start, word_end = matches[n]
            between = text[position:word_start]
            pieces += (escape_markdown(between) if escaping else between, "**")
            pieces += (text[word_start:word_end], "**")
            position = word_end
        rest = text[position:stop]
        pieces.append(escape_markdown(rest) if escaping else rest)
        if cut:
            pieces.append(ELLIPSIS)
        passage = "".join(pieces)
        # Whitespace as " ".join(passage.split()) leaves it: single spaces inside.
        if (
            odd_spaces
            or shown[:1] == b" "
            or shown[-1:] == b" "
            or shown.find(b"  ") != -1
            or _holds_any(shown, _ODD_SPACE_BYTES)
        ):
            return " ".join(passage.split())
        return passage

    def _passage_of_all_words(self, text: str) -> str:
        """passage() of any text: split into every word."""
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


def _holds_any(data: bytes, characters: bytes) -> bool:
    """Whether `data` holds one of `characters`: one pass in C (`in` would raise and catch
    a TypeError for each bytes operand, and a loop of `in` is one pass per character)."""
    return len(data.translate(None, characters)) != len(data)


def _heads(stems: Iterable[str], prefixes: Sequence[str]) -> list[bytes] | None:
    """What the words that can be query terms start with, for a lower-cased ASCII text:
    a `prefix*`, or the head of a query stem. Stems and prefixes that are not ASCII
    letters and digits start no ASCII word. None when a prefix folds to nothing (it starts
    every word): the text is then split into every word."""
    if "" in prefixes:
        return None
    heads = {_stem_head(stem) for stem in stems} | set(prefixes)
    heads = {head for head in heads if _ASCII_WORD_RE.fullmatch(head)}
    # A head starting with another finds nothing more, and two heads never find one word.
    heads = {head for head in heads if not any(h != head and head.startswith(h) for h in heads)}
    return [head.encode("ascii") for head in sorted(heads)]


def _stem_head(stem: str) -> str:
    """What every ASCII word with this Snowball English stem starts with.

    The stemmer keeps a word's beginning and rewrites its end; the only letters it puts in
    place of the word's own are at the stem's end, and are one of 'e', 'i', 'l', 'y', 'ie',
    'le' (1b: hop+ing -> hope, dying -> die; 1c: happy -> happi; step 2: relational ->
    relate, possibility -> possible then step 5 -> possibl; skies -> sky). So a stem ending
    in 'le' or 'ie' may have changed in its last two letters, one ending in another of those
    letters in its last one, any other not at all. Every ASCII word of the ACL anthology
    (80k), every string of up to 4 letters and 18M built from the stemmer's suffixes hold it;
    tests/papers/search/test_snippets_equivalence.py checks it on the installed stemmer."""
    if stem.endswith(("le", "ie")):
        head = stem[:-2]
    elif stem.endswith(("e", "i", "l", "y")):
        head = stem[:-1]
    else:
        head = stem
    return head or stem[:1]  # and a stem keeps its word's initial


def _best_window(matched: Sequence[tuple[int, str]]) -> int:
    """The word index starting the window of SNIPPET_WORDS words that holds the most
    distinct query terms, then the most matches; the first such window."""
    if not matched:
        return 0
    indices = [index for index, _ in matched]
    return indices[_best_match(indices, [term for _, term in matched])]


def _best_match(indices: list[int], terms: list[str]) -> int:
    """Which of the matches (word indices, increasing, and their terms) starts
    _best_window's window. One pass: the window's end only moves forward as its start
    does; none when one window holds every match (a short text, a close-knit abstract)."""
    total = len(indices)
    if indices[-1] - indices[0] < SNIPPET_WORDS:
        return 0
    best, best_distinct, best_count = 0, 0, 0
    counts: dict[str, int] = {}
    end = 0
    for n in range(total):
        limit = indices[n] + SNIPPET_WORDS
        while end < total and indices[end] < limit:
            term = terms[end]
            counts[term] = counts.get(term, 0) + 1
            end += 1
        distinct = len(counts)
        if distinct > best_distinct or (distinct == best_distinct and end - n > best_count):
            best, best_distinct, best_count = n, distinct, end - n
        term = terms[n]
        left = counts[term] - 1
        if left:
            counts[term] = left
        else:
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


def passage_html(markdown: str) -> SafeString:
    """A passage (as search_papers' `snippet_markdown` gives it) as HTML for a page: the
    bold query words in <mark>, every other character of the paper's text escaped, so the
    only markup is the marks made here."""
    out: list[str] = []
    marked = False
    for escaped, entity, bold, text in _PASSAGE_TOKEN_RE.findall(markdown):
        if bold:
            out.append("</mark>" if marked else "<mark>")
            marked = not marked
        elif entity:
            out.append(escape("<" if entity == "lt" else ">"))
        else:
            out.append(escape(escaped or text))
    if marked:
        out.append("</mark>")
    return mark_safe("".join(out))  # noqa: S308 (each piece is escaped or a mark above)

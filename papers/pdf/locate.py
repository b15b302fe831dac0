"""Finding a quoted passage on a page, tolerant of what PDFs do to text.

Quotes come from what an agent read (or what a person copied), which differs from the
page's words in line breaks, hyphenation at line ends ('trans-' + 'former'), ligatures
('ﬁ' vs 'fi'), quotes, dashes, spacing and case. Both sides are therefore reduced to a
*key*: the letters and digits only, NFKC-normalised and case-folded. A passage matches when
its key occurs in the page's key; the words that hold the matched characters give one box
per line, trimmed in proportion when the match starts or ends inside a word.

The text stored for a highlight is `passage_text`: the page's characters from the first to
the last matched letter (punctuation at either end only as far as the quote has it), words
as printed, and a hyphen that ends a line resolved by `line_break_join` (docs/PDF.md,
"Highlight text"). Every path that stores highlight text (reading page, REST, MCP,
extraction) gets it from here.
"""

from __future__ import annotations

import bisect
import itertools
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

import pymupdf

from papers.pdf.reading import WORD_FLAGS


@dataclass(frozen=True)
class Word:
    rect: pymupdf.Rect
    text: str
    line: tuple[int, int]  # (block, line): words of one line share it
    key: str


@dataclass(frozen=True)
class Found:
    """A passage on a page: its words as printed, one MuPDF-space box per line, and how
    many times the key occurs on the page (more than one makes the quote ambiguous)."""

    text: str
    rects: list[pymupdf.Rect]
    occurrences: int


# Hyphen-like characters a typesetter ends a line with (hyphen-minus, hyphen, soft hyphen).
LINE_END_HYPHENS = ("-", "\u2010", "\u00ad")
# A hyphen before these is a suspended one ("pre- and post-training"), never a line break's.
SUSPENDED_BEFORE = frozenset({"and", "or", "nor", "to", "vs"})


@dataclass(frozen=True)
class Vocabulary:
    """The words of a page and its neighbours, which decide a line-end hyphen first:
    `joined` holds the keys of words printed without a hyphen, `compounds` the lower-cased
    words printed with one inside a line ('document-level')."""

    joined: frozenset[str]
    compounds: frozenset[str]


def page_vocabulary(words: Sequence[Word]) -> Vocabulary:
    joined, compounds = set(), set()
    for word in words:
        bare = _strip_punctuation(word.text).casefold()
        if "-" in bare.strip("-"):
            compounds.add(bare)
        elif not bare.endswith(LINE_END_HYPHENS):
            joined.add(word.key)
    return Vocabulary(frozenset(joined), frozenset(compounds))


def nearby_vocabulary(page: pymupdf.Page, words: Sequence[Word]) -> Vocabulary:
    """The vocabulary of `page` (its `words`) and of the pages just before and after it,
    where a paper's running text reuses its terms (a few milliseconds a page; the whole
    paper would cost ~80 ms for 13 pages)."""
    nearby = list(words)
    document = page.parent
    for number in (page.number - 1, page.number + 1):
        if document is not None and 0 <= number < document.page_count:
            nearby.extend(page_words(document[number]))
    return page_vocabulary(nearby)


def line_break_join(before: str, after: str, vocabulary: Vocabulary) -> str:
    """The text of `before` (ending a line with a hyphen) followed by `after` (starting the
    next line). The rule, first match wins:
    1. the page prints the joined word elsewhere ('corpus') -> joined without the hyphen;
    2. the page prints the hyphenated word inside a line ('document-level') -> hyphen kept;
    3. `after` does not start with a lower-case letter ('BERT-' 'Base', 'COVID-' '19'),
       holds a hyphen itself ('state-' 'of-the-art') or is 'and'/'or'/'to'... (a suspended
       hyphen, 'pre- and post-') -> hyphen kept ('and' keeps its space);
    4. otherwise it is the typesetter's hyphenation -> joined ('litera-' 'ture' -> 'literature').
    """
    stem = before[:-1]
    head = _strip_punctuation(stem).casefold()
    tail = _strip_punctuation(after).casefold()
    if text_key(stem + after) in vocabulary.joined and not tail.count("-"):
        return stem + after
    if f"{head}-{tail}" in vocabulary.compounds:
        return f"{stem}-{after}"
    if tail in SUSPENDED_BEFORE:
        return f"{before} {after}"
    if not after[:1].islower() or "-" in after:
        return f"{stem}-{after}"
    return stem + after


def _strip_punctuation(text: str) -> str:
    """'(Rad-' -> 'Rad-', 'ture,' -> 'ture': what surrounds a word, not what is inside it."""
    start, end = 0, len(text)
    while start < end and not text[start].isalnum():
        start += 1
    while end > start and not text[end - 1].isalnum() and text[end - 1] not in LINE_END_HYPHENS:
        end -= 1
    return text[start:end]


def text_key(text: str) -> str:
    """'Transformer-\\nbased “ﬁne” tuning' -> 'transformerbasedfinetuning'."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return "".join(char for char in folded if char.isalnum())


def page_words(page: pymupdf.Page) -> list[Word]:
    words = []
    for x0, y0, x1, y1, text, block, line, _ in page.get_text("words", flags=WORD_FLAGS):
        key = text_key(text)
        if key:
            words.append(Word(pymupdf.Rect(x0, y0, x1, y1), text, (block, line), key))
    return words


def find_passage(
    page: pymupdf.Page, quote: str, *, near: Sequence[pymupdf.Rect] = ()
) -> Found | None:
    """The first occurrence of `quote` on the page (or, given `near`, the first whose words
    touch one of those MuPDF-space boxes), or None. `quote` must have a key."""
    key = text_key(quote)
    words = page_words(page)
    haystack = "".join(word.key for word in words)
    if not key:
        return None
    starts_of_matches = []
    position = haystack.find(key)
    while position >= 0:
        starts_of_matches.append(position)
        position = haystack.find(key, position + 1)
    if not starts_of_matches:
        return None
    # Map key offsets back to words: word i holds haystack[starts[i] : starts[i + 1]].
    starts = list(itertools.accumulate((len(word.key) for word in words), initial=0))
    chosen = None
    for start in starts_of_matches:
        span = _span(words, starts, start, len(key))
        if not near or any(
            words[index].rect.intersects(box)
            for index in range(span[0], span[1] + 1)
            for box in near
        ):
            chosen = span
            break
    if chosen is None:
        return None
    first, last, head, tail = chosen
    rects: list[pymupdf.Rect] = []
    current_line: tuple[int, int] | None = None
    for index in range(first, last + 1):
        word = words[index]
        rect = pymupdf.Rect(word.rect)
        length = len(word.key)
        # Trim a word the match only partly covers, in proportion to its characters.
        if index == first and head:
            rect.x0 = word.rect.x0 + word.rect.width * head / length
        if index == last and tail < length - 1:
            rect.x1 = word.rect.x0 + word.rect.width * (tail + 1) / length
        if word.line == current_line and rects:
            rects[-1] |= rect
        else:
            rects.append(rect)
            current_line = word.line
    text = passage_text(words[first : last + 1], head, tail, quote, nearby_vocabulary(page, words))
    return Found(text, rects, len(starts_of_matches))


def _span(
    words: Sequence[Word], starts: list[int], start: int, size: int
) -> tuple[int, int, int, int]:
    """(first word, last word, key offset inside the first, key offset inside the last)."""
    end = start + size - 1
    first = bisect.bisect_right(starts, start) - 1
    last = bisect.bisect_right(starts, end) - 1
    return first, last, start - starts[first], end - starts[last]


def passage_text(
    words: Sequence[Word], head: int, tail: int, quote: str, vocabulary: Vocabulary
) -> str:
    """The printed text of a match that starts at key offset `head` of the first word and ends
    at key offset `tail` of the last: cut to those characters (so a selection inside a word
    stores that part only), punctuation at either end kept as far as `quote` has it, words
    joined by spaces, and a hyphen ending a line resolved by `line_break_join`."""
    pieces = [word.text for word in words]
    pieces[-1] = _cut_after(pieces[-1], tail, _trailing(quote))
    pieces[0] = _cut_before(pieces[0], head, _leading(quote))
    text = pieces[0]
    for index in range(1, len(words)):
        previous, piece = words[index - 1], pieces[index]
        if previous.line != words[index].line and text.endswith(LINE_END_HYPHENS):
            before = text.rsplit(" ", 1)[-1]
            text = text[: len(text) - len(before)] + line_break_join(before, piece, vocabulary)
        else:
            text += " " + piece
    return text


def _owners(text: str) -> list[int]:
    """For each key character of `text`, the index of the printed character it comes from."""
    owners: list[int] = []
    for index, char in enumerate(text):
        owners.extend([index] * len(text_key(char)))
    return owners


def _leading(quote: str) -> str:
    stripped = quote.strip()
    end = 0
    while end < len(stripped) and not text_key(stripped[end]):
        end += 1
    return stripped[:end]


def _trailing(quote: str) -> str:
    stripped = quote.strip()
    start = len(stripped)
    while start > 0 and not text_key(stripped[start - 1]):
        start -= 1
    return stripped[start:]


def _same(a: str, b: str) -> bool:
    return (
        unicodedata.normalize("NFKC", a).casefold() == unicodedata.normalize("NFKC", b).casefold()
    )


def _cut_before(text: str, head: int, lead: str) -> str:
    """`text` from its key character `head`, with as much of the punctuation before it as
    `lead` (the quote's characters before its first letter) ends with."""
    owners = _owners(text)
    if len(owners) != len(text_key(text)) or not owners:
        return text  # normalisation joined characters: keep the word whole
    cut = owners[head]
    while (
        cut > 0
        and len(lead) >= owners[head] - cut + 1
        and _same(text[cut - 1], lead[len(lead) - (owners[head] - cut) - 1])
    ):
        cut -= 1
    return text[cut:]


def _cut_after(text: str, tail: int, trail: str) -> str:
    """`text` up to its key character `tail`, with as much of the punctuation after it as
    `trail` (the quote's characters after its last letter) starts with."""
    owners = _owners(text)
    if len(owners) != len(text_key(text)) or not owners:
        return text
    end = owners[tail] + 1
    start = end
    while end < len(text) and end - start < len(trail) and _same(text[end], trail[end - start]):
        end += 1
    return text[:end]

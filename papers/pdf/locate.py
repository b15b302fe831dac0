"""Finding a quoted passage on a page, tolerant of what PDFs do to text.

Quotes come from what an agent read (or what a person copied), which differs from the
page's words in line breaks, hyphenation at line ends ('trans-' + 'former'), ligatures
('ﬁ' vs 'fi'), quotes, dashes, spacing and case. Both sides are therefore reduced to a
*key*: the letters and digits only, NFKC-normalised and case-folded. A passage matches when
its key occurs in the page's key; the words that hold the matched characters give one box
per line, trimmed in proportion when the match starts or ends inside a word.
"""

from __future__ import annotations

import bisect
import itertools
import unicodedata
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


def find_passage(page: pymupdf.Page, quote: str) -> Found | None:
    """The first occurrence of `quote` on the page, or None. `quote` must have a key."""
    key = text_key(quote)
    words = page_words(page)
    haystack = "".join(word.key for word in words)
    start = haystack.find(key)
    if not key or start < 0:
        return None
    occurrences = 0
    position = start
    while position >= 0:
        occurrences += 1
        position = haystack.find(key, position + 1)
    # Map key offsets back to words: word i holds haystack[starts[i] : starts[i + 1]].
    starts = list(itertools.accumulate((len(word.key) for word in words), initial=0))
    end = start + len(key) - 1
    first = bisect.bisect_right(starts, start) - 1
    last = bisect.bisect_right(starts, end) - 1
    head, tail = start - starts[first], end - starts[last]  # offsets inside those words
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
    text = " ".join(words[index].text for index in range(first, last + 1))
    return Found(text, rects, occurrences)

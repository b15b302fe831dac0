"""Splitting a PDF into passages: paragraph-sized runs of text with their page and lines.

What a PDF does to text and how it is undone here:
- running headers, footers and page numbers: lines in the top and bottom margins
  (MARGIN_SHARE of the page) are dropped when they are short and hold a digit (page
  numbers, "Proceedings of ... 2020"), sit in the outermost band, or recur on several
  pages once digits are ignored;
- two-column layouts: MuPDF's blocks are paragraphs, emitted in the order the file drew
  them; on a page with both columns, blocks are read band by band (a full-width block,
  such as a title or a wide figure, closes a band), left column before right;
- hyphenation at line ends ('trans-' + 'former' -> 'transformer' when the next line starts
  in lower case) and ligatures ('ﬁ' -> 'fi', by MuPDF's flags) are undone in `text`;
- rotated lines (arXiv's side stamp) and control characters (from equations) are left out.

Blocks are merged until a passage has MIN_WORDS words and split at a sentence end past
SPLIT_WORDS (at the latest at MAX_WORDS), always at a line boundary, so each passage owns
whole lines and its boxes are those lines' boxes.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass, field

import pymupdf

from papers.pdf.annotate import page_to_pdf
from papers.pdf.reading import DICT_FLAGS

MIN_WORDS = 60
SPLIT_WORDS = 120
MAX_WORDS = 200
# A remainder this short at the end of a page joins the page's previous passage.
TAIL_WORDS = 20
# Top and bottom bands where running headers and footers live, as a share of the height.
MARGIN_SHARE = 0.085
# Lines in the outermost band (a share of the height) are never body text.
EDGE_SHARE = 0.05
# A margin line whose digit-free form is on this many pages is a running header/footer.
RECURRING_PAGES = 3
_CONTROL_RE = re.compile(r"[\x00-\x08\x0b-\x1f\x7f\ufffd]")
_DIGITS_RE = re.compile(r"\d+")
_SENTENCE_END_RE = re.compile(r"[.!?][\"'”’)\]]*$")


@dataclass
class Line:
    text: str
    box: pymupdf.Rect  # PyMuPDF space (top-left origin)

    @property
    def words(self) -> int:
        return len(self.text.split())


@dataclass
class Block:
    lines: list[Line]
    box: pymupdf.Rect


@dataclass
class PagePassage:
    """One passage of a page: text as read, one PDF-space box per line."""

    page: int
    order: int
    text: str
    rects: list[list[float]] = field(default_factory=list)


def document_passages(document: pymupdf.Document) -> list[PagePassage]:
    """Every page's passages in reading order (pages 1-based)."""
    pages = [_blocks(document[number]) for number in range(document.page_count)]
    recurring = _recurring_margin_lines(document, pages)
    passages: list[PagePassage] = []
    for number, blocks in enumerate(pages):
        page = document[number]
        kept = [_without_margins(page, block, recurring) for block in blocks]
        ordered = _reading_order(page, [block for block in kept if block.lines])
        passages += _split(page, number + 1, ordered)
    return passages


def _blocks(page: pymupdf.Page) -> list[Block]:
    blocks = []
    for raw in page.get_text("dict", flags=DICT_FLAGS)["blocks"]:
        lines = []
        for line in raw.get("lines", []):
            dx, dy = line["dir"]
            if abs(dy) > 0.1 or dx <= 0:  # rotated or upside-down text
                continue
            text = _CONTROL_RE.sub(" ", "".join(span["text"] for span in line["spans"]))
            text = " ".join(text.split())
            if text:
                lines.append(Line(text, pymupdf.Rect(line["bbox"])))
        if lines:
            box = pymupdf.Rect(lines[0].box)
            for line in lines[1:]:
                box |= line.box
            blocks.append(Block(lines, box))
    return blocks


def _in_margin(page: pymupdf.Page, box: pymupdf.Rect, share: float) -> bool:
    height = page.rect.height
    return box.y1 <= page.rect.y0 + share * height or box.y0 >= page.rect.y1 - share * height


def _signature(text: str) -> str:
    return _DIGITS_RE.sub("#", text.casefold())


def _recurring_margin_lines(document: pymupdf.Document, pages: list[list[Block]]) -> set[str]:
    seen: Counter[str] = Counter()
    for number, blocks in enumerate(pages):
        page = document[number]
        signatures = {
            _signature(line.text)
            for block in blocks
            for line in block.lines
            if _in_margin(page, line.box, MARGIN_SHARE)
        }
        seen.update(signatures)
    return {signature for signature, count in seen.items() if count >= RECURRING_PAGES}


def _without_margins(page: pymupdf.Page, block: Block, recurring: set[str]) -> Block:
    def running(line: Line) -> bool:
        if not _in_margin(page, line.box, MARGIN_SHARE):
            return False
        if _in_margin(page, line.box, EDGE_SHARE) or _signature(line.text) in recurring:
            return True
        return line.words <= 20 and bool(_DIGITS_RE.search(line.text))

    lines = [line for line in block.lines if not running(line)]
    if len(lines) == len(block.lines):
        return block
    box = pymupdf.Rect(lines[0].box) if lines else pymupdf.Rect()
    for line in lines[1:]:
        box |= line.box
    return Block(lines, box)


def _reading_order(page: pymupdf.Page, blocks: list[Block]) -> list[Block]:
    """Band by band, left column before right, when the page has two columns."""
    middle = (page.rect.x0 + page.rect.x1) / 2
    left = [b for b in blocks if b.box.x1 <= middle + 5]
    right = [b for b in blocks if b.box.x0 >= middle - 5]
    if len(left) < 2 or len(right) < 2:
        return sorted(blocks, key=lambda b: (round(b.box.y0), b.box.x0))
    ordered: list[Block] = []
    band: list[Block] = []

    def close_band() -> None:
        ordered.extend(sorted(band, key=lambda b: (b.box.x0 >= middle - 5, b.box.y0)))
        band.clear()

    for block in sorted(blocks, key=lambda b: (b.box.y0, b.box.x0)):
        if block.box.x0 < middle - 5 and block.box.x1 > middle + 5:  # spans both columns
            close_band()
            ordered.append(block)
        else:
            band.append(block)
    close_band()
    return ordered


def join_lines(lines: list[str]) -> str:
    """Lines into running text, undoing hyphenation at line ends."""
    text = ""
    for line in lines:
        if (
            text.endswith(("-", "\u00ad"))
            and len(text) > 1
            and text[-2].isalpha()
            and line[:1].islower()
        ):
            text = text[:-1] + line
        else:
            text = f"{text} {line}" if text else line
    return text


def _split(page: pymupdf.Page, number: int, blocks: list[Block]) -> list[PagePassage]:
    groups: list[list[Line]] = []
    current: list[Line] = []

    def flush() -> None:
        if current:
            groups.append(list(current))
            current.clear()

    for block in blocks:
        if sum(line.words for line in current) >= MIN_WORDS:
            flush()
        for line in block.lines:
            current.append(line)
            words = sum(item.words for item in current)
            if words >= MAX_WORDS or (words >= SPLIT_WORDS and _SENTENCE_END_RE.search(line.text)):
                flush()
    if current and groups and sum(line.words for line in current) < TAIL_WORDS:
        groups[-1] += current
        current.clear()
    flush()
    return [
        PagePassage(
            page=number,
            order=order,
            text=join_lines([line.text for line in lines]),
            rects=[page_to_pdf(page, line.box) for line in lines],
        )
        for order, lines in enumerate(groups, start=1)
    ]

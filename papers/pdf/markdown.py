"""A paper's PDF as markdown: the source asset that get_paper_source returns.

Rules, in order of trust:
- headings come from the outline (bookmarks) when the PDF has one: a line whose text is a
  bookmark's title on that bookmark's page becomes a heading of the bookmark's depth;
- without an outline, from typography: a block of one short line, bold or clearly larger
  than the body text, is a heading; its numbering ('2.1') sets the depth;
- the title on page 1 (the largest text, well above body size) is `#`;
- reading order: blocks are taken top to bottom, and where a page has two columns (blocks
  that stay in the left or right half), the left column comes before the right one
  between full-width blocks;
- every page starts with `<!-- page N -->`, so a quote can be traced back to its page;
- lines are joined into paragraphs, words split by a hyphen at a line end are rejoined,
  vertical text (arXiv stamps) and bare page numbers in the margins are left out.
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pymupdf

from papers.pdf.locate import text_key
from papers.pdf.reading import DICT_FLAGS, outline_entries
from papers.pdf.spec import section_key

BOLD = 16  # MuPDF span flag
TITLE_RATIO = 1.3  # page-1 text this much larger than the body is the title
HEADING_RATIO = 1.15
MAX_HEADING_CHARS = 120
_NUMBERED = re.compile(r"^(\d+(?:\.\d+)*)\.?\s+\S")
USUAL_SECTIONS = frozenset(
    {
        "abstract", "introduction", "background", "related work", "method", "methods",
        "methodology", "approach", "experiments", "experimental setup", "results",
        "evaluation", "discussion", "analysis", "conclusion", "conclusions", "future work",
        "limitations", "ethical considerations", "ethics statement", "acknowledgments",
        "acknowledgements", "author contributions", "references", "bibliography",
        "appendix", "appendices", "supplementary material",
    }
)  # fmt: skip
_PAGE_NUMBER = re.compile(r"^\d{1,4}$")


@dataclass
class Line:
    text: str
    size: float  # the size most of its characters have
    bold: bool
    rect: pymupdf.Rect


@dataclass
class Block:
    lines: list[Line]
    rect: pymupdf.Rect


@dataclass
class _Plan:
    """What the whole document tells about each page: the body text size, how large the
    title is, and which bookmark titles (as keys) are headings on which page."""

    body: float
    title_size: float
    title_wanted: bool
    has_outline: bool
    headings: dict[int, list[tuple[str, int]]]  # page -> [(title key, markdown level)]


def document_markdown(document: pymupdf.Document) -> str:
    """The whole document as markdown (see the module docstring for the rules)."""
    pages = [_page_blocks(document[index]) for index in range(document.page_count)]
    plan = _plan(document, pages)
    out: list[str] = []
    for number, (blocks, width) in enumerate(pages, start=1):
        out.append(f"<!-- page {number} -->")
        out.extend(_page_markdown(number, _reading_order(blocks, width), plan))
    return "\n\n".join(part for part in out if part.strip()) + "\n"


def _plan(document: pymupdf.Document, pages: list[tuple[list[Block], float]]) -> _Plan:
    body = _body_size(pages)
    outline = [entry for entry in outline_entries(document) if entry.page is not None]
    # A single top-level bookmark on page 1 is the paper's title: it takes '#' itself.
    roots = [entry for entry in outline if entry.level == 1]
    shift = 0 if len(roots) == 1 and roots[0].page == 1 else 1
    headings: dict[int, list[tuple[str, int]]] = {}
    for entry in outline:
        headings.setdefault(entry.page or 1, []).append(
            (text_key(entry.title), entry.level + shift)
        )
    # Otherwise the title is the largest text on page 1, well above the body size.
    sizes = [line.size for block in pages[0][0] for line in block.lines] if pages else []
    title_size = max([body * TITLE_RATIO, *(size * 0.9 for size in sizes)])
    return _Plan(body, title_size, not (outline and shift == 0), bool(outline), headings)


def _page_markdown(number: int, blocks: list[Block], plan: _Plan) -> list[str]:
    """One page's headings and paragraphs, in reading order."""
    # (line, whether it is alone in its block, block index)
    lines = [(line, len(block.lines) == 1, index)
             for index, block in enumerate(blocks) for line in block.lines]  # fmt: skip
    wanted = plan.headings.get(number, [])
    out: list[str] = []
    paragraph: list[Line] = []
    paragraph_block = -1
    title: list[Line] = []
    index = 0

    def flush() -> None:
        if paragraph:
            out.append(_join(paragraph))
            paragraph.clear()

    while index < len(lines):
        line, alone, block_index = lines[index]
        if paragraph and block_index != paragraph_block:
            if _continues(paragraph[-1].text, line.text):
                paragraph_block = block_index  # a word split across two blocks
            else:
                flush()
        if plan.title_wanted and number == 1 and not out and line.size >= plan.title_size:
            title.append(line)
            index += 1
            continue
        if title:
            out.append("# " + _join(title))
            title = []
        level, used = 0, 1
        if plan.has_outline:
            level, used = _outline_heading([entry[0] for entry in lines], index, wanted)
        elif alone:
            level = _typographic_heading(line, plan.body)
        if level:
            flush()
            text = " ".join(entry[0].text for entry in lines[index : index + used])
            out.append("#" * min(level, 6) + " " + text)
            index += used
            continue
        paragraph.append(line)
        paragraph_block = block_index
        index += 1
    if title:
        out.append("# " + _join(title))
    flush()
    return out


def _page_blocks(page: pymupdf.Page) -> tuple[list[Block], float]:
    height = page.rect.height
    blocks = []
    for raw in page.get_text("dict", flags=DICT_FLAGS)["blocks"]:
        if raw.get("type") != 0:
            continue
        lines = _visual_lines(raw["lines"])
        if len(lines) == 1 and _PAGE_NUMBER.match(lines[0].text):
            top = lines[0].rect.y1 < height * 0.08
            if top or lines[0].rect.y0 > height * 0.92:
                continue  # a running page number
        if lines:
            blocks.append(Block(lines, pymupdf.Rect(raw["bbox"])))
    return blocks, page.rect.width


def _visual_lines(raw_lines: list[dict[str, Any]]) -> list[Line]:
    """MuPDF splits a line where a gap is wide ('1' + 'Introduction'); put pieces on the
    same baseline back together. Vertical lines are dropped."""
    lines: list[Line] = []
    for raw in raw_lines:
        dx, dy = raw["dir"]
        if abs(dy) > 0.1 or dx < 0:
            continue
        spans = [span for span in raw["spans"] if span["text"].strip()]
        if not spans:
            continue
        sizes: Counter[float] = Counter()
        bold_chars = 0
        for span in spans:
            sizes[round(span["size"] * 2) / 2] += len(span["text"].strip())
            if span["flags"] & BOLD:
                bold_chars += len(span["text"].strip())
        text = _spans_text(spans)
        chars = sum(sizes.values())
        line = Line(
            text, sizes.most_common(1)[0][0], bold_chars * 2 > chars, pymupdf.Rect(raw["bbox"])
        )
        previous = lines[-1] if lines else None
        if (
            previous
            and abs((previous.rect.y0 + previous.rect.y1) - (line.rect.y0 + line.rect.y1)) < 4
        ):
            previous.text = f"{previous.text} {line.text}"
            previous.rect |= line.rect
            previous.bold = previous.bold and line.bold
            previous.size = max(previous.size, line.size)
        else:
            lines.append(line)
    return lines


def _spans_text(spans: list[dict[str, Any]]) -> str:
    """Join spans, with a space where the PDF left a gap instead of a space character."""
    text = ""
    previous_end = None
    for span in spans:
        piece = span["text"]
        gap = previous_end is not None and span["bbox"][0] - previous_end > span["size"] * 0.15
        if gap and text and not text[-1].isspace() and not piece[:1].isspace():
            text += " "
        text += piece
        previous_end = span["bbox"][2]
    return " ".join(text.split())


def _body_size(pages: list[tuple[list[Block], float]]) -> float:
    sizes: Counter[float] = Counter()
    for blocks, _ in pages:
        for block in blocks:
            for line in block.lines:
                sizes[line.size] += len(line.text)
    return sizes.most_common(1)[0][0] if sizes else 10.0


def _reading_order(blocks: list[Block], width: float) -> list[Block]:
    """Top to bottom; between full-width blocks, the left column before the right one."""
    middle = width / 2
    slack = width * 0.02
    ordered: list[Block] = []
    left: list[Block] = []
    right: list[Block] = []

    def flush() -> None:
        ordered.extend(sorted(left, key=lambda b: (b.rect.y0, b.rect.x0)))
        ordered.extend(sorted(right, key=lambda b: (b.rect.y0, b.rect.x0)))
        left.clear()
        right.clear()

    for block in sorted(blocks, key=lambda b: (b.rect.y0, b.rect.x0)):
        if block.rect.x1 <= middle + slack:
            left.append(block)
        elif block.rect.x0 >= middle - slack:
            right.append(block)
        else:
            flush()
            ordered.append(block)
    flush()
    return ordered


def _outline_heading(
    lines: list[Line], index: int, wanted: list[tuple[str, int]]
) -> tuple[int, int]:
    """(markdown level, lines used) when lines[index:] start with a bookmark's title; the
    bookmark is used up, so a title is a heading once."""
    key = ""
    for used, line in enumerate(lines[index : index + 3], start=1):
        if len(line.text) > MAX_HEADING_CHARS:
            break
        key += text_key(line.text)
        for position, (title_key, level) in enumerate(wanted):
            if title_key and key == title_key:
                del wanted[position]
                return level, used
    return 0, 0


def _typographic_heading(line: Line, body: float) -> int:
    text = line.text
    if not (2 <= len(text) <= MAX_HEADING_CHARS) or not any(c.isalpha() for c in text):
        return 0
    if not (line.bold or line.size >= body * HEADING_RATIO) or text.endswith((".", ",", ";")):
        return 0
    numbered = _NUMBERED.match(text)
    if numbered:
        return 2 + numbered.group(1).count(".")
    # Bold short lines are also author names and table headers: unnumbered ones count only
    # when larger than the body or named like a paper's usual sections.
    if line.size >= body * HEADING_RATIO or section_key(text) in USUAL_SECTIONS:
        return 2
    return 0


def _continues(text: str, following: str) -> bool:
    return len(text) > 1 and text.endswith("-") and text[-2].isalpha() and following[:1].islower()


def _join(lines: list[Line]) -> str:
    """Lines into one paragraph; 'trans-' + 'former' is 'transformer'."""
    text = ""
    for line in lines:
        piece = line.text
        if _continues(text, piece):
            text = text[:-1] + piece
        else:
            text = f"{text} {piece}" if text else piece
    return text

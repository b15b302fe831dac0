"""Reading a PDF with PyMuPDF: the outline and the text of pages.

Text comes with ligatures expanded ('ﬁ' -> 'fi'), so what an agent reads is what it can
quote back to create_highlight.
"""

from __future__ import annotations

from typing import Any

import pymupdf

from papers.pdf.spec import OutlineEntry

# MuPDF's plain-text flags without TEXT_PRESERVE_LIGATURES.
TEXT_FLAGS = pymupdf.TEXTFLAGS_TEXT & ~pymupdf.TEXT_PRESERVE_LIGATURES
WORD_FLAGS = pymupdf.TEXTFLAGS_WORDS & ~pymupdf.TEXT_PRESERVE_LIGATURES
DICT_FLAGS = (
    pymupdf.TEXTFLAGS_DICT & ~pymupdf.TEXT_PRESERVE_LIGATURES & ~pymupdf.TEXT_PRESERVE_IMAGES
)


def outline_entries(document: pymupdf.Document) -> list[OutlineEntry]:
    """The bookmarks in order, flat, with their level and 1-based page (None when a
    bookmark points nowhere in this file)."""
    entries = []
    for level, title, page, *_ in document.get_toc(simple=True):
        number = int(page) if isinstance(page, int) and 1 <= page <= document.page_count else None
        entries.append(OutlineEntry(int(level), " ".join(str(title).split()), number))
    return entries


def outline_tree(entries: list[OutlineEntry]) -> list[dict[str, Any]]:
    """Nest flat entries by level: [{title, page, level, children: [...]}, ...]."""
    root: list[dict[str, Any]] = []
    stack: list[tuple[int, list[dict[str, Any]]]] = [(0, root)]
    for entry in entries:
        item: dict[str, Any] = {
            "title": entry.title,
            "page": entry.page,
            "level": entry.level,
            "children": [],
        }
        while len(stack) > 1 and stack[-1][0] >= entry.level:
            stack.pop()
        stack[-1][1].append(item)
        stack.append((entry.level, item["children"]))
    return root


def page_text(document: pymupdf.Document, number: int) -> str:
    """The text of 1-based page `number`, lines as MuPDF finds them, trailing space cut."""
    text = document[number - 1].get_text("text", flags=TEXT_FLAGS)
    return "\n".join(line.rstrip() for line in text.splitlines()).strip("\n")

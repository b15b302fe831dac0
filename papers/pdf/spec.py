"""What the library's PDF tools and the Zotero tools share: the page-spec parser,
section resolution through an outline, and the annotation colour map.

Pages are 1-based everywhere a person or an agent sees them. Every error is InvalidInput
or NotFound with a message that says what would work instead.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from core.errors import InvalidInput, NotFound

# The tools' semantic colour names, with Zotero's hex codes (docs/PDF.md, "Annotations").
SEMANTIC_COLORS: dict[str, str] = {
    "section1": "#2ea8e5",  # blue
    "section2": "#a28ae5",  # purple
    "section3": "#e56eee",  # magenta
    "positive": "#5fb236",  # green
    "detail": "#aaaaaa",  # grey
    "negative": "#ff6666",  # red
    "code": "#f19837",  # orange
}
DEFAULT_COLOR = "#ffd400"  # Zotero's default yellow
_HEX = re.compile(r"^#?([0-9a-fA-F]{6})$")
MAX_SPEC_CHARS = 200


def color_resolve(color: str | None) -> str:
    """'positive' -> '#5fb236'; '#5FB236' or '5fb236' -> '#5fb236'; None -> the default."""
    if color is None or not color.strip():
        return DEFAULT_COLOR
    name = color.strip().lower()
    if name in SEMANTIC_COLORS:
        return SEMANTIC_COLORS[name]
    match = _HEX.match(name)
    if not match:
        raise InvalidInput(
            f"Colour {color!r} is neither a semantic name nor #rrggbb.",
            field="color",
            semantic_colors=SEMANTIC_COLORS,
        )
    return "#" + match.group(1).lower()


def color_rgb(hex_color: str) -> tuple[float, float, float]:
    """'#5fb236' -> (0.37, 0.70, 0.21), the 0-1 floats PyMuPDF takes."""
    value = color_resolve(hex_color)[1:]
    red, green, blue = (int(value[i : i + 2], 16) / 255 for i in (0, 2, 4))
    return (red, green, blue)


def page_spec_parse(spec: str, total_pages: int) -> list[int]:
    """'1', '1-5', '1,3,5-7' or 'all' -> sorted distinct 1-based page numbers.

    Raises InvalidInput for malformed specs and for pages past `total_pages` (the message
    gives the page count).
    """
    text = (spec or "").strip().lower()
    if not text:
        raise InvalidInput("pages is empty: give e.g. '1', '1-5', '1,3,5-7' or 'all'.")
    if len(text) > MAX_SPEC_CHARS:
        raise InvalidInput(f"pages is longer than {MAX_SPEC_CHARS} characters.", field="pages")
    if text == "all":
        return list(range(1, total_pages + 1))
    pages: set[int] = set()
    for part in text.split(","):
        part = part.strip()
        match = re.fullmatch(r"(\d+)\s*(?:-\s*(\d+))?", part)
        if not match:
            raise InvalidInput(
                f"pages {spec!r}: {part!r} is not a page or a range; "
                "use e.g. '1', '1-5', '1,3,5-7' or 'all'.",
                field="pages",
            )
        first = int(match.group(1))
        last = int(match.group(2) or first)
        if first < 1 or last < first:
            raise InvalidInput(
                f"pages {spec!r}: {part!r} is not a valid range (pages start at 1).",
                field="pages",
            )
        if last > total_pages:
            raise InvalidInput(
                f"Page {last} is out of range: "
                f"the PDF has {total_pages} page(s) (1-{total_pages}).",
                field="pages",
                total_pages=total_pages,
            )
        pages.update(range(first, last + 1))
    return sorted(pages)


@dataclass(frozen=True)
class OutlineEntry:
    """One bookmark: nesting level (1 = top), title, 1-based page (None when it has none)."""

    level: int
    title: str
    page: int | None


@dataclass(frozen=True)
class SectionPages:
    """A section resolved to pages: its outline title and its first and last page."""

    requested: str
    title: str
    first_page: int
    last_page: int

    @property
    def pages(self) -> list[int]:
        return list(range(self.first_page, self.last_page + 1))


# Leading numbering: '1', '1.2', 'IV', 'A' followed by '.', ')' or a space.
_NUMBERING = re.compile(r"^\s*(?:(?:\d+|[ivxlcdm]+|[a-z])(?:[.)]\s*|\s+))+(?=\S)", re.IGNORECASE)


def section_key(title: str) -> str:
    """'1 Introduction', '1. INTRODUCTION', 'I. Introduction' -> 'introduction'."""
    text = " ".join(title.split()).strip()
    stripped = _NUMBERING.sub("", text)
    # Keep titles that are only a number or a letter ("A", "1") as they are.
    text = stripped or text
    return re.sub(r"[^\w ]+", "", text.casefold()).strip()


def sections_resolve(
    names: str, outline: list[OutlineEntry], total_pages: int
) -> list[SectionPages]:
    """'Introduction,Methods' -> each section's pages, through the outline.

    A section runs from its page to the page of the next outline entry at the same or a
    higher level (or to the end). Matching ignores case and numbering ('1 Introduction');
    an exact key match wins over a prefix match ('Method' finds 'Methods').
    Raises InvalidInput when there is no outline (use pages instead) and NotFound, listing
    the available sections, when a name matches nothing.
    """
    requested = [name.strip() for name in (names or "").split(",") if name.strip()]
    if not requested:
        raise InvalidInput("section is empty: give a section title, e.g. 'Introduction'.")
    entries = [entry for entry in outline if entry.page is not None]
    if not entries:
        raise InvalidInput(
            "This PDF has no outline (bookmarks), so sections cannot be found: "
            "read it by pages instead, e.g. pages='1-3'.",
            field="section",
            has_outline=False,
            total_pages=total_pages,
        )
    resolved = []
    for name in requested:
        index = _section_index(name, entries)
        if index is None:
            raise NotFound(
                f"Section {name!r} is not in the outline.",
                field="section",
                available_sections=[entry.title for entry in entries],
            )
        entry = entries[index]
        first = entry.page or 1
        last = total_pages
        for following in entries[index + 1 :]:
            if following.level <= entry.level:
                # The next section usually starts mid-page: keep its first page too.
                last = max(first, following.page or first)
                break
        resolved.append(SectionPages(name, entry.title, first, min(last, total_pages)))
    return resolved


def _section_index(name: str, entries: list[OutlineEntry]) -> int | None:
    key = section_key(name)
    if not key:
        return None
    keys = [section_key(entry.title) for entry in entries]
    for matcher in (
        lambda candidate: candidate == key,
        lambda candidate: candidate.startswith(key),
        lambda candidate: key in candidate,
    ):
        for index, candidate in enumerate(keys):
            if matcher(candidate):
                return index
    return None

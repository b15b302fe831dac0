"""Reads from a running Zotero for the `zotero_*` tools (docs/ZOTERO-TOOLS.md): an
item by citekey, a PDF's outline, and PDF text by pages or by section.

Page specs and section names are resolved here, with the same parser and outline rules as
the library's own PDF tools (papers.pdf.spec), against the page count and outline Zotero
reports: a bad spec or a missing section is refused before any text is requested.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.errors import InvalidInput
from papers.assets.truncation import truncate
from papers.pdf.spec import OutlineEntry, SectionPages, page_spec_parse, sections_resolve
from papers.zotero.client import PdfText, ZoteroClient

NO_PDF_NOTE = (
    "This item has no PDF attachment in Zotero, so its text cannot be read or annotated "
    "with the zotero_* PDF tools."
)
NO_OUTLINE_HINT = (
    "This PDF has no outline (bookmarks): read it by page numbers with "
    "zotero_read_pdf_pages, e.g. pages='1-3' (total_pages says how many there are)."
)


def zotero_item_lookup(*, citekey: str) -> dict[str, Any]:
    """The Zotero item with this citekey: key, type, title, creators, date and its PDF
    attachments (`has_pdf` false and a note when there is none). Raises NotFound for an
    unknown citekey and the client's errors when Zotero cannot be asked."""
    item = ZoteroClient.from_settings().item_by_citekey(citekey.strip())
    attachments = [
        {"key": a.key, "title": a.title, "content_type": a.content_type} for a in item.attachments
    ]
    result: dict[str, Any] = {
        "key": item.key,
        "citekey": item.citekey,
        "item_type": item.item_type,
        "title": item.title,
        "creators": [_creator(c) for c in item.creators],
        "date": item.date,
        "has_pdf": bool(attachments),
        "pdf_attachment_keys": [a["key"] for a in attachments],
        "pdf_attachments": attachments,
    }
    if not attachments:
        result["note"] = NO_PDF_NOTE
    return result


def zotero_pdf_outline(*, key: str) -> dict[str, Any]:
    """The PDF's outline as nested items ({title, page, level, children}), its page count,
    and, when it has no outline, a hint to read it by pages. Raises NotFound when the item
    has no PDF."""
    outline = ZoteroClient.from_settings().pdf_outline(key)
    items = outline_nest(outline.entries)
    result: dict[str, Any] = {
        "key": key,
        "attachment_key": outline.attachment_key,
        "total_pages": outline.page_count,
        "has_outline": bool(items),
        "items": items,
    }
    if not items:
        result["hint"] = NO_OUTLINE_HINT
    return result


def outline_nest(entries: list[OutlineEntry]) -> list[dict[str, Any]]:
    """Zotero's flat list (depth in `level`) as a tree: each entry becomes a child of the
    closest earlier entry with a smaller level. A jump (level 1 to 3) nests one step."""
    roots: list[dict[str, Any]] = []
    stack: list[dict[str, Any]] = []
    for entry in entries:
        node: dict[str, Any] = {
            "title": entry.title,
            "page": entry.page,
            "level": entry.level,
            "children": [],
        }
        while stack and stack[-1]["level"] >= entry.level:
            stack.pop()
        (stack[-1]["children"] if stack else roots).append(node)
        stack.append(node)
    return roots


@dataclass
class PdfReading:
    """Text read from a Zotero PDF, delimited by page (and by section when asked so)."""

    key: str
    attachment_key: str
    total_pages: int
    pages: list[int]
    content: str
    total_chars: int
    truncated: bool
    sections: list[SectionPages] = field(default_factory=list)
    missing_pages: list[int] = field(default_factory=list)


def zotero_pdf_read(
    *, key: str, pages: str | None = None, section: str | None = None, max_chars: int | None
) -> PdfReading:
    """Text of some pages of the item's PDF: `pages` ('1', '1-5', '1,3,5-7', 'all') or
    `section` ('Introduction' or 'Introduction,Methods', found through the outline), not
    both. Content over `max_chars` is cut and ends with a truncation marker.

    Asks Zotero for the outline first (page count, sections), then for the text. Raises
    InvalidInput for a bad or out-of-range spec, a PDF without outline when a section is
    asked for; NotFound for an unknown section (listing the available ones) or an item
    without PDF; the client's errors when Zotero cannot be asked.
    """
    has_pages = bool(pages and pages.strip())
    has_section = bool(section and section.strip())
    if has_pages == has_section:
        raise InvalidInput(
            "Give either pages (e.g. '1-3' or 'all') or section (e.g. 'Introduction'), "
            "not both and not neither; zotero_get_pdf_outline lists the sections.",
            field="pages",
        )
    client = ZoteroClient.from_settings()
    outline = client.pdf_outline(key)
    total = outline.page_count
    sections: list[SectionPages] = []
    if has_section:
        sections = sections_resolve(section or "", outline.entries, total)
        wanted = sorted({page for s in sections for page in s.pages})
    else:
        wanted = page_spec_parse(pages or "", total)
    if not wanted:
        raise InvalidInput("This PDF has no pages to read.", total_pages=total)
    text = client.pdf_pages(outline.attachment_key, page_spec_compact(wanted))
    by_page = {p.page: p for p in text.pages}
    missing = [page for page in wanted if page not in by_page]
    if sections:
        blocks = [
            f"=== Section: {s.title} ({_pages_label(s.first_page, s.last_page)}) ===\n\n"
            + _pages_text(text, s.pages, total)
            for s in sections
        ]
        body = "\n\n".join(blocks)
    else:
        body = _pages_text(text, wanted, total)
    if missing:
        body += (
            f"\n\n[Zotero returned no text for page(s) {page_spec_compact(missing)}: it stops "
            "near 300,000 characters per call. Ask for those pages in another call.]"
        )
    more = (
        "Ask for fewer pages or sections per call, or pass a larger max_chars "
        f"(up to {len(body)} for all of it)."
    )
    shown = truncate(body, max_chars, more=more)
    return PdfReading(
        key=key,
        attachment_key=text.attachment_key,
        total_pages=total,
        pages=[page for page in wanted if page in by_page],
        content=shown,
        total_chars=len(body),
        truncated=shown != body,
        sections=sections,
        missing_pages=missing,
    )


def page_spec_compact(pages: list[int]) -> str:
    """[1, 2, 3, 5, 7, 8] -> '1-3,5,7-8' (sorted, distinct pages), the spec Zotero takes."""
    runs: list[list[int]] = []
    for page in sorted(set(pages)):
        if runs and page == runs[-1][1] + 1:
            runs[-1][1] = page
        else:
            runs.append([page, page])
    return ",".join(_span(first, last) for first, last in runs)


def _span(first: int, last: int) -> str:
    return str(first) if first == last else f"{first}-{last}"


def _pages_label(first: int, last: int) -> str:
    return f"page {first}" if first == last else f"pages {first}-{last}"


def _pages_text(text: PdfText, pages: list[int], total: int) -> str:
    by_page = {p.page: p for p in text.pages}
    parts = []
    for page in pages:
        read = by_page.get(page)
        if read is None:
            continue
        # Same delimiters as the library's own read_pdf_pages (papers.pdf.selectors).
        part = f"--- Page {page} of {total} ---\n{read.text.strip() or '[no text on this page]'}"
        if read.truncated:
            part += "\n[Zotero cut the text of this page short.]"
        parts.append(part)
    return "\n\n".join(parts)


def _creator(creator: dict[str, Any]) -> dict[str, str]:
    """Zotero's {firstName, lastName} or single-field {name} creator as {name, role}."""
    name = str(creator.get("name") or "").strip()
    if not name:
        first = str(creator.get("firstName") or "").strip()
        last = str(creator.get("lastName") or "").strip()
        name = f"{first} {last}".strip()
    return {"name": name, "role": str(creator.get("creatorType") or "author")}

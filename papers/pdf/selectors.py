"""Reads: a paper's PDF record, its outline, the text of pages or sections, annotations."""

from __future__ import annotations

import contextlib
import json
import logging
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pymupdf
from django.db.models import QuerySet

from core.errors import InvalidInput
from core.markdown import escape_markdown
from papers.models import Annotation, Paper, PaperPdf
from papers.pdf.errors import NotAPdf, PdfFileMissing, PdfNotAvailable, how_to_attach
from papers.pdf.files import stored_path
from papers.pdf.reading import outline_entries, outline_tree, page_text
from papers.pdf.spec import SectionPages, page_spec_parse, sections_resolve

logger = logging.getLogger(__name__)

NO_OUTLINE_HINT = (
    "This PDF has no outline (bookmarks): read it by page numbers with read_pdf_pages, "
    "e.g. pages='1-3', using total_pages to see how long it is."
)


def paper_pdf_get(*, paper: Paper) -> PaperPdf:
    """The paper's PDF record. Raises PdfNotAvailable saying how to attach one."""
    record = PaperPdf.objects.filter(paper=paper).first()
    if record is None:
        raise PdfNotAvailable(
            f"Paper {paper.pk} has no PDF in the library. {how_to_attach(paper.pk)}",
            paper_id=paper.pk,
            has_pdf_url=bool(paper.pdf_url),
        )
    return record


@contextlib.contextmanager
def pdf_open(record: PaperPdf) -> Iterator[pymupdf.Document]:
    """The recorded file, opened. Raises PdfFileMissing, and NotAPdf (reason `unreadable`)
    when the file was damaged on disk since it was attached: it cannot be opened, or its
    size or page count is not the recorded one (a truncated file often still opens, with
    text missing). MuPDF failing on a damaged page while it is read is NotAPdf too. No
    path in the messages."""
    path = stored_path(record.file_name)
    if not path.is_file():
        raise PdfFileMissing(
            f"The PDF of paper {record.paper_id} is recorded but its file is missing from "
            f"the knowledge base. {how_to_attach(record.paper_id)}",
            paper_id=record.paper_id,
        )
    try:
        document = pymupdf.open(path, filetype="pdf")
    except Exception:
        raise _damaged(record) from None
    try:
        size = path.stat().st_size
        if (record.size and size != record.size) or (
            record.page_count and document.page_count != record.page_count
        ):
            raise _damaged(record)
        try:
            yield document
        except (RuntimeError, pymupdf.mupdf.FzErrorBase) as error:  # MuPDF on a broken page
            logger.warning("paper %s: reading its PDF failed: %r", record.paper_id, error)
            raise _damaged(record) from None
    finally:
        document.close()


def _damaged(record: PaperPdf) -> NotAPdf:
    return NotAPdf(
        f"The PDF file of paper {record.paper_id} is damaged (it cannot be opened, or it "
        "changed on disk since it was attached); attach it again. "
        f"{how_to_attach(record.paper_id)}",
        paper_id=record.paper_id,
        reason="unreadable",
    )


@dataclass(frozen=True)
class PdfOutline:
    paper_id: int
    total_pages: int
    has_outline: bool
    items: list[dict[str, Any]]
    hint: str | None = None


def pdf_outline_get(*, paper: Paper) -> PdfOutline:
    """The PDF's bookmarks as a tree of {title, page, level, children}, and its page count.
    A PDF without bookmarks has has_outline False, no items and a hint to use pages.
    Raises PdfNotAvailable, PdfFileMissing."""
    record = paper_pdf_get(paper=paper)
    with pdf_open(record) as document:
        entries = outline_entries(document)
        total = document.page_count
    if not entries:
        return PdfOutline(paper.pk, total, False, [], NO_OUTLINE_HINT)
    return PdfOutline(paper.pk, total, True, outline_tree(entries))


@dataclass(frozen=True)
class PageText:
    number: int
    text: str


@dataclass(frozen=True)
class PartText:
    """Pages read for one request: a page spec, or one resolved section."""

    section: SectionPages | None
    pages: list[PageText]


@dataclass(frozen=True)
class PdfText:
    paper_id: int
    total_pages: int
    parts: list[PartText] = field(default_factory=list)

    @property
    def page_numbers(self) -> list[int]:
        return sorted({page.number for part in self.parts for page in part.pages})

    def render(self) -> str:
        """Every page under a `--- Page N of T ---` line; sections under `=== Section ===`."""
        out: list[str] = []
        for part in self.parts:
            if part.section is not None:
                section = part.section
                span = (
                    f"page {section.first_page}"
                    if section.first_page == section.last_page
                    else f"pages {section.first_page}-{section.last_page}"
                )
                out.append(f"=== Section: {section.title} ({span}) ===")
            for page in part.pages:
                out.append(f"--- Page {page.number} of {self.total_pages} ---")
                out.append(page.text if page.text.strip() else "[no text on this page]")
            out.append("")
        return "\n".join(out).rstrip("\n") + "\n"


def pdf_pages_read(
    *, paper: Paper, pages: str | None = None, section: str | None = None
) -> PdfText:
    """The text of pages ('1', '1-5', '1,3,5-7', 'all') or of sections resolved through the
    outline ('Introduction,Methods'); exactly one of the two.

    Raises InvalidInput (both or neither given, a bad spec, a page past the end with the
    page count, a section asked of a PDF without outline), NotFound (a section not in the
    outline, listing those that are), PdfNotAvailable, PdfFileMissing.
    """
    has_pages = bool(pages and pages.strip())
    has_section = bool(section and section.strip())
    if has_pages == has_section:
        raise InvalidInput(
            "Give either pages (e.g. '1-3' or 'all') or section (e.g. 'Introduction'), "
            "not both and not neither; get_pdf_outline lists the sections.",
            field="pages",
        )
    record = paper_pdf_get(paper=paper)
    with pdf_open(record) as document:
        total = document.page_count
        if has_pages:
            numbers = page_spec_parse(pages or "", total)
            parts = [PartText(None, [PageText(n, page_text(document, n)) for n in numbers])]
        else:
            resolved = sections_resolve(section or "", outline_entries(document), total)
            cache: dict[int, str] = {}
            parts = []
            for item in resolved:
                texts = []
                for number in item.pages:
                    if number not in cache:
                        cache[number] = page_text(document, number)
                    texts.append(PageText(number, cache[number]))
                parts.append(PartText(item, texts))
    return PdfText(paper.pk, total, parts)


def annotation_list(*, paper: Paper, page: int | None = None) -> QuerySet[Annotation]:
    """The paper's annotations in page order (of one page when `page` is given)."""
    queryset = Annotation.objects.filter(paper=paper).order_by("page", "pk")
    return queryset.filter(page=page) if page is not None else queryset


def annotation_record(annotation: Annotation) -> dict[str, Any]:
    """One annotation as JSON, with Zotero's `position` beside the plain fields."""
    return {
        "annotation_id": annotation.pk,
        "paper_id": annotation.paper_id,
        "page": annotation.page,
        "kind": annotation.kind,
        "text": annotation.text,
        "color": annotation.color,
        "comment": annotation.comment,
        "rects": annotation.rects,
        "position": {"pageIndex": annotation.page - 1, "rects": annotation.rects},
        "created_at": annotation.created_at.isoformat(),
        "updated_at": annotation.updated_at.isoformat(),
    }


def annotations_export_text(*, paper: Paper, format: str) -> str:
    """All of the paper's annotations as 'json' or 'markdown' text. Raises InvalidInput."""
    annotations = list(annotation_list(paper=paper))
    if format == "json":
        body = {
            "paper_id": paper.pk,
            "citekey": paper.citekey,
            "title": paper.title,
            "annotations": [annotation_record(a) for a in annotations],
        }
        return json.dumps(body, ensure_ascii=False, indent=2) + "\n"
    if format == "markdown":
        return _annotations_markdown(paper, annotations)
    raise InvalidInput("format must be 'json' or 'markdown' (or 'pdf' for a file).", field="format")


def _annotations_markdown(paper: Paper, annotations: list[Annotation]) -> str:
    """Every text here is someone's (the PDF's, the annotator's): escaped, so a comment
    holding `<script>` or a `[link](javascript:...)` reaches the reader as text."""
    out = [
        f"# Annotations: {escape_markdown(paper.title)}",
        "",
        f"`{paper.citekey}` · {len(annotations)} annotations",
    ]
    current_page = None
    for annotation in annotations:
        if annotation.page != current_page:
            current_page = annotation.page
            out += ["", f"## Page {current_page}"]
        out.append("")
        text = escape_markdown(" ".join((annotation.text or "").split()))
        if annotation.kind == Annotation.Kind.HIGHLIGHT:
            out.append(f"> {text}")
        else:
            box = ", ".join(f"{value:g}" for value in annotation.rects[0])
            out.append(f"*Area [{box}]*" + (f": {text}" if text else ""))
        out.append("")
        comment = escape_markdown(" ".join((annotation.comment or "").split()))
        note = f"Comment: {comment} " if comment else ""
        out.append(
            f"{note}(colour {escape_markdown(str(annotation.color))}, annotation {annotation.pk})"
        )
    return "\n".join(out).rstrip() + "\n"

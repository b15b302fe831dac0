"""Writes: attaching and downloading PDFs, annotations and the annotated copy, the source
markdown made from a PDF.

Files are checked in a staging copy and renamed into place in one step (papers.pdf.files);
the network is used outside any transaction; the markdown conversion runs after commit, as
a task (in-process without a broker).
"""

from __future__ import annotations

import logging
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

from django.conf import settings
from django.db import transaction

from core.atomic import write_atomic
from core.errors import InvalidInput, NotFound
from papers import assets
from papers.dispatch import (
    passages_index_enqueue,
    pdf_download_enqueue,
    pdf_source_markdown_enqueue,
)
from papers.models import Annotation, Paper, PaperAsset, PaperPdf, Passage
from papers.pdf import download
from papers.pdf.annotate import page_box, page_to_pdf, pdf_to_page, write_annotated_copy
from papers.pdf.errors import TextNotFound
from papers.pdf.files import (
    annotated_file_name,
    inspect,
    place,
    read_chunks,
    safe_file_name,
    staging_file,
    stored_intact,
    stored_path,
    write_chunks,
)
from papers.pdf.locate import find_passage, text_key
from papers.pdf.markdown import document_markdown
from papers.pdf.page_image import page_image_make
from papers.pdf.selectors import annotations_export_text, paper_pdf_get, pdf_open
from papers.pdf.spec import color_resolve

logger = logging.getLogger(__name__)

Origin = PaperPdf.Origin
MAX_QUOTE_CHARS = 4000
MAX_COMMENT_CHARS = 10_000
# A quote not on its page is looked for on this many pages around it, for the hint (each
# page costs a few milliseconds).
ELSEWHERE_PAGES = 40
# The first line of a source made from the PDF: the only kind of source that attaching a
# new PDF may replace (a source imported by hand is better than a conversion).
CONVERTED_MARKER = "<!-- converted from the paper's PDF"


# --- attaching --------------------------------------------------------------------------


def pdf_attach_file(
    *, paper_id: int, path: Path, origin: str = Origin.ATTACHED, source_url: str = ""
) -> PaperPdf:
    """Copy a local PDF into DOWNLOADS_DIR as the paper's PDF and record its sha256, size
    and page count; the source markdown is made from it after commit.

    Attaching the file the paper already has changes nothing; another file replaces the
    old one (annotations are kept and redrawn on it). Raises NotFound (paper),
    InvalidInput (no such file), NotAPdf (too large, not a PDF, damaged, encrypted).
    """
    source = Path(path)
    if not source.is_file():
        raise InvalidInput(f"There is no file {str(path)!r} to attach.", field="path")
    with staging_file() as staged:
        write_chunks(staged, read_chunks(source))
        return _attach_staged(
            paper_id=paper_id,
            staged=staged,
            origin=origin,
            original_name=source.name,
            source_url=source_url,
        )


def pdf_attach_upload(*, paper_id: int, chunks: Iterable[bytes], name: str) -> PaperPdf:
    """pdf_attach_file for an upload (the admin): the same checks, from chunks."""
    with staging_file() as staged:
        write_chunks(staged, chunks)
        return _attach_staged(
            paper_id=paper_id, staged=staged, origin=Origin.UPLOADED, original_name=name
        )


def pdf_download(*, paper_id: int, url: str | None = None) -> PaperPdf:
    """Download `url` (default: the paper's pdf_url) and attach it as the paper's PDF.

    Only http(s); no loopback, private or link-local address at any hop unless
    PDF_ALLOW_PRIVATE_URLS; at most PDF_MAX_REDIRECTS redirects, PDF_MAX_BYTES bytes and
    PDF_DOWNLOAD_TIMEOUT seconds. Raises NotFound, InvalidInput (no URL), DownloadFailed
    (with `reason` and `retryable`), NotAPdf.
    """
    paper = Paper.objects.filter(pk=paper_id).only("pk", "pdf_url").first()
    if paper is None:
        raise NotFound(f"No paper {paper_id!r} in the library.", paper_id=str(paper_id))
    target = (url or paper.pdf_url or "").strip()
    if not target:
        raise InvalidInput(f"Paper {paper_id} has no pdf_url to download.", field="url")
    with staging_file("download") as staged:
        download.fetch_pdf(target, staged)  # the network, outside any transaction
        name = Path(unquote(urlsplit(target).path)).name[:255]
        return _attach_staged(
            paper_id=paper_id,
            staged=staged,
            origin=Origin.DOWNLOADED,
            original_name=name,
            source_url=target,
        )


def _attach_staged(
    *, paper_id: int, staged: Path, origin: str, original_name: str, source_url: str = ""
) -> PaperPdf:
    facts = inspect(staged)
    with transaction.atomic():
        paper = Paper.objects.select_for_update().filter(pk=paper_id).first()
        if paper is None:
            raise NotFound(f"No paper {paper_id!r} in the library.", paper_id=str(paper_id))
        current = PaperPdf.objects.filter(paper=paper).first()
        # The same file again changes nothing, unless the stored copy is gone or was
        # damaged on disk: then this one takes its place.
        if (
            current
            and current.sha256 == facts.sha256
            and stored_intact(current.file_name, facts.sha256)
        ):
            return current
        file_name = (
            current.file_name
            if current
            else safe_file_name(paper_id=paper.pk, citekey=paper.citekey)
        )
        record, _ = PaperPdf.objects.update_or_create(
            paper=paper,
            defaults={
                "file_name": file_name,
                "sha256": facts.sha256,
                "size": facts.size,
                "page_count": facts.page_count,
                "origin": origin,
                "original_name": original_name[:255],
                "source_url": source_url,
            },
        )
        place(staged, file_name)
        _annotated_rebuild(record)
        paper_pk = paper.pk
        # First: the reading page's picture of page 1, before the slower conversions (which
        # run in this request too without a broker), so that the first visit finds it.
        transaction.on_commit(lambda: page_image_make(record), robust=True)
        transaction.on_commit(lambda: schedule_source_markdown(paper_pk), robust=True)
        transaction.on_commit(lambda: passages_index_enqueue(paper_pk), robust=True)
    logger.info("paper %s: PDF attached (%s, %s pages)", paper_pk, origin, facts.page_count)
    return record


def pdf_detach(*, paper_id: int) -> bool:
    """Remove the paper's PDF: its record, its file and its annotated copy (annotations stay,
    for a PDF attached later). Returns whether there was one."""
    with transaction.atomic():
        record = PaperPdf.objects.select_for_update().filter(paper_id=paper_id).first()
        if record is None:
            return False
        names = [record.file_name, record.annotated_file_name]
        record.delete()
        # Its passages (papers/passages) go with it: find_quote must not find a removed PDF.
        Passage.objects.filter(paper_id=paper_id).delete()
        # After commit: a rolled-back delete must not lose the files.
        transaction.on_commit(lambda: _remove_files(names))
    return True


def _remove_files(names: list[str]) -> None:
    for name in names:
        if name:
            stored_path(name).unlink(missing_ok=True)


# --- annotations ------------------------------------------------------------------------


def annotation_highlight_create(
    *,
    paper: Paper,
    page: int,
    text: str,
    color: str | None = None,
    comment: str = "",
    near: Sequence[Sequence[float]] = (),
) -> Annotation:
    """Highlight `text` on `page` (1-based): find it tolerant of line breaks, hyphenation,
    ligatures, quotes and case; store the Annotation (one rect per line, PDF points, origin
    bottom-left; its text the page's words from the first to the last character quoted,
    line-end hyphens resolved: papers.pdf.locate.passage_text) and draw it, colour and
    comment included, into the annotated copy. `near` (boxes in PDF points, as the reading
    page sends its selection's lines) picks the occurrence there, so words that occur twice
    on the page are highlighted where they were selected; without it, or when the text is
    not there, the text must be unique on the page.

    Raises PdfNotAvailable, PdfFileMissing, InvalidInput (page out of range with the page
    count, empty or ambiguous text, bad colour), TextNotFound (with a hint, and the pages
    it is on when it is elsewhere).
    """
    hex_color = color_resolve(color)
    quote = " ".join((text or "").split())
    if not text_key(quote):
        raise InvalidInput("text must contain letters or digits to find.", field="text")
    if len(quote) > MAX_QUOTE_CHARS:
        raise InvalidInput(
            f"text is longer than {MAX_QUOTE_CHARS} characters; highlight a shorter passage.",
            field="text",
        )
    _check_comment(comment)
    record = paper_pdf_get(paper=paper)
    with pdf_open(record) as document:
        _check_page(page, document.page_count)
        pdf_page = document[page - 1]
        visible = page_box(pdf_page)
        if not all(_on_page(box, visible) for box in near):
            raise InvalidInput(
                f"near must be boxes [x1, y1, x2, y2] on page {page} (PDF points).", field="near"
            )
        boxes = [pdf_to_page(pdf_page, box) for box in near]
        found = find_passage(pdf_page, quote, near=boxes) if boxes else None
        unique_needed = found is None
        found = found or find_passage(pdf_page, quote)
        if found is None:
            nearest = sorted(range(1, document.page_count + 1), key=lambda n: abs(n - page))
            elsewhere = sorted(
                number
                for number in nearest[1 : ELSEWHERE_PAGES + 1]
                if find_passage(document[number - 1], quote) is not None
            )
            hint = (
                f" It is on page {', '.join(map(str, elsewhere))}."
                if elsewhere
                else " Quote it as read_pdf_pages shows it (one sentence or phrase, "
                "copied exactly); line breaks, hyphens and case do not matter."
            )
            raise TextNotFound(
                f"Text not found on page {page}.{hint}",
                paper_id=paper.pk,
                page=page,
                found_on_pages=elsewhere,
            )
        if unique_needed and found.occurrences > 1:
            raise InvalidInput(
                f"The text occurs {found.occurrences} times on page {page}; quote more of "
                "the sentence so that it is unique.",
                field="text",
                occurrences=found.occurrences,
            )
        rects = [page_to_pdf(pdf_page, rect) for rect in found.rects]
    return _annotation_add(
        record,
        page=page,
        kind=Annotation.Kind.HIGHLIGHT,
        rects=rects,
        text=found.text,
        color=hex_color,
        comment=comment,
    )


@dataclass(frozen=True)
class HighlightAt:
    """A highlight whose line boxes are already known: [x1, y1, x2, y2] in PDF points,
    origin bottom-left, as the passage index's quote matcher returns them."""

    page: int
    rects: list[list[float]]
    text: str
    color: str | None = None
    comment: str = ""


def annotation_highlights_place(*, paper: Paper, marks: Sequence[HighlightAt]) -> list[Annotation]:
    """Store highlights at line boxes already located on their pages (quotes found by
    papers/passages' matcher, e.g. extraction's verified quotes) and draw them all into the
    annotated copy in one write. Nothing is searched for, so a quote found on its page is
    marked where it was found even when its words occur there twice. The text stored is
    the words found at those boxes as papers.pdf.locate.passage_text gives them (the same
    text annotation_highlight_create stores).

    Raises PdfNotAvailable, PdfFileMissing, InvalidInput (a page out of range, a box that
    is not four numbers on its page, empty text, bad colour, comment too long)."""
    rows = []
    record = paper_pdf_get(paper=paper)
    with pdf_open(record) as document:
        for mark in marks:
            _check_page(mark.page, document.page_count)
            _check_comment(mark.comment)
            visible = page_box(document[mark.page - 1])
            if not mark.rects or not all(_on_page(rect, visible) for rect in mark.rects):
                raise InvalidInput(
                    f"Highlight boxes {mark.rects[:3]} are not on page {mark.page}, whose box "
                    f"is {visible} (PDF points, origin bottom-left).",
                    field="rects",
                )
            text = " ".join(mark.text.split())
            if not text_key(text):
                raise InvalidInput("text must contain letters or digits.", field="text")
            # The words at those boxes, as create_highlight stores them (line-end hyphens
            # resolved, cut to the quote); a quote not found there is stored as given.
            pdf_page = document[mark.page - 1]
            near = [pdf_to_page(pdf_page, rect) for rect in mark.rects]
            found = find_passage(pdf_page, text, near=near)
            text = found.text if found is not None else text
            rows.append(
                {
                    "page": mark.page,
                    "kind": Annotation.Kind.HIGHLIGHT,
                    "rects": [[round(float(v), 2) for v in rect] for rect in mark.rects],
                    "text": text[:MAX_QUOTE_CHARS],
                    "color": color_resolve(mark.color),
                    "comment": mark.comment,
                }
            )
    return _annotations_add(record, rows) if rows else []


def _on_page(rect: Sequence[float], visible: Sequence[float]) -> bool:
    """Four finite numbers, a box with an area, overlapping the visible page."""
    if not isinstance(rect, list | tuple) or len(rect) != 4:
        return False
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in rect):
        return False
    x1, y1, x2, y2 = rect
    return (
        x1 < x2
        and y1 < y2
        and x1 < visible[2]
        and visible[0] < x2
        and y1 < visible[3]
        and visible[1] < y2
    )


def annotation_area_create(
    *,
    paper: Paper,
    page: int,
    rect: Sequence[float],
    color: str | None = None,
    comment: str = "",
) -> Annotation:
    """Mark an area (a figure, a table, an equation) on `page`: `rect` is [x1, y1, x2, y2]
    (any two opposite corners) in PDF points with the origin at the bottom-left of the page
    (Zotero's convention). The text inside the area is stored with it. Drawn as a square
    annotation in the annotated copy.

    Raises PdfNotAvailable, PdfFileMissing, InvalidInput (page out of range, a rect that is
    malformed or not inside the page, with the page's box; bad colour).
    """
    hex_color = color_resolve(color)
    _check_comment(comment)
    try:
        values = [float(value) for value in rect] if isinstance(rect, list | tuple) else []
    except (TypeError, ValueError):
        values = []
    if len(values) != 4 or not all(math.isfinite(value) for value in values):
        raise InvalidInput("rect must be four numbers [x1, y1, x2, y2].", field="rect")
    # Any two opposite corners will do, as for zotero_create_area_annotation.
    x1, x2 = sorted(values[0::2])
    y1, y2 = sorted(values[1::2])
    values = [x1, y1, x2, y2]
    if not (x1 < x2 and y1 < y2):
        raise InvalidInput("rect has no area: x1 = x2 or y1 = y2.", field="rect")
    record = paper_pdf_get(paper=paper)
    with pdf_open(record) as document:
        _check_page(page, document.page_count)
        pdf_page = document[page - 1]
        visible = page_box(pdf_page)
        tolerance = 0.01  # the box is rounded to 0.01 pt
        if not (
            visible[0] - tolerance <= x1
            and x2 <= visible[2] + tolerance
            and visible[1] - tolerance <= y1
            and y2 <= visible[3] + tolerance
        ):
            raise InvalidInput(
                f"rect {values} is not inside page {page}, whose box is {visible} "
                "(PDF points, origin bottom-left).",
                field="rect",
                page_box=visible,
            )
        inside = pdf_page.get_textbox(pdf_to_page(pdf_page, values))
    return _annotation_add(
        record,
        page=page,
        kind=Annotation.Kind.AREA,
        rects=[[round(v, 2) for v in values]],
        text=" ".join(inside.split())[:MAX_QUOTE_CHARS],
        color=hex_color,
        comment=comment,
    )


def annotation_delete(*, annotation_id: int) -> None:
    """Delete an annotation and redraw the annotated copy without it. Raises NotFound."""
    with transaction.atomic():
        annotation = Annotation.objects.filter(pk=annotation_id).first()
        if annotation is None:
            raise NotFound(f"No annotation {annotation_id}.", annotation_id=annotation_id)
        record = PaperPdf.objects.select_for_update().filter(paper_id=annotation.paper_id).first()
        annotation.delete()
        if record is not None:
            _annotated_rebuild(record)


def annotations_delete(*, paper: Paper, annotation_ids: Sequence[int]) -> int:
    """Delete these annotations of `paper` (ids of another paper's, or gone, are skipped)
    and redraw the annotated copy once. Returns how many were deleted."""
    if not annotation_ids:
        return 0
    with transaction.atomic():
        record = PaperPdf.objects.select_for_update().filter(paper=paper).first()
        deleted, _ = Annotation.objects.filter(paper=paper, pk__in=list(annotation_ids)).delete()
        if deleted and record is not None:
            _annotated_rebuild(record)
    return deleted


def annotation_update(
    *, annotation_id: int, color: str | None = None, comment: str | None = None
) -> Annotation:
    """Change an annotation's colour or comment and redraw the annotated copy. Its place
    and text stay (delete it and create another to move it). Raises NotFound,
    InvalidInput."""
    if comment is not None:
        _check_comment(comment)
    hex_color = color_resolve(color) if color is not None else None
    with transaction.atomic():
        annotation = Annotation.objects.filter(pk=annotation_id).first()
        if annotation is None:
            raise NotFound(f"No annotation {annotation_id}.", annotation_id=annotation_id)
        record = PaperPdf.objects.select_for_update().filter(paper_id=annotation.paper_id).first()
        annotation.color = hex_color or annotation.color
        annotation.comment = annotation.comment if comment is None else comment
        annotation.save(update_fields=["color", "comment", "updated_at"])
        if record is not None:
            _annotated_rebuild(record)
    return annotation


def annotated_pdf_path(*, paper: Paper) -> Path:
    """The annotated copy of the paper's PDF, (re)drawn first when it is missing; the
    original when the paper has no annotations. Raises PdfNotAvailable, PdfFileMissing."""
    record = paper_pdf_get(paper=paper)
    with pdf_open(record):
        pass  # PdfFileMissing before anything else
    with transaction.atomic():
        locked = PaperPdf.objects.select_for_update().get(pk=record.pk)
        if not locked.annotated_file_name or not stored_path(locked.annotated_file_name).is_file():
            _annotated_rebuild(locked)
    return stored_path(locked.annotated_file_name or locked.file_name)


def _check_page(page: int, total: int) -> None:
    if not isinstance(page, int) or isinstance(page, bool) or not 1 <= page <= total:
        raise InvalidInput(
            f"Page {page} is out of range: the PDF has {total} page(s) (1-{total}).",
            field="page",
            total_pages=total,
        )


def _check_comment(comment: str) -> None:
    if len(comment or "") > MAX_COMMENT_CHARS:
        raise InvalidInput(
            f"comment is longer than {MAX_COMMENT_CHARS} characters.", field="comment"
        )


def _annotation_add(record: PaperPdf, **values: Any) -> Annotation:
    return _annotations_add(record, [values])[0]


def _annotations_add(record: PaperPdf, rows: Sequence[dict[str, Any]]) -> list[Annotation]:
    """Store annotations of one paper and draw them into its annotated copy in one write."""
    with transaction.atomic():
        # One writer per paper at a time, so no two writers redraw the copy from the same
        # base (PostgreSQL: this row lock; SQLite: the insert takes the database lock).
        locked = PaperPdf.objects.select_for_update().get(pk=record.pk)
        annotations = [
            Annotation.objects.create(paper_id=locked.paper_id, pdf_sha256=locked.sha256, **row)
            for row in rows
        ]
        annotated = locked.annotated_file_name
        if annotated and stored_path(annotated).is_file():
            write_annotated_copy(
                base=stored_path(annotated), target=stored_path(annotated), annotations=annotations
            )
        else:
            _annotated_rebuild(locked)
    return annotations


def _annotated_rebuild(record: PaperPdf) -> None:
    """Redraw the annotated copy from the original and every annotation of the paper (or
    remove it when there are none). Call with the record locked."""
    annotations = list(Annotation.objects.filter(paper_id=record.paper_id).order_by("page", "pk"))
    name = annotated_file_name(record.file_name)
    if not annotations:
        stored_path(name).unlink(missing_ok=True)
        if record.annotated_file_name:
            PaperPdf.objects.filter(pk=record.pk).update(annotated_file_name="")
            record.annotated_file_name = ""
        return
    write_annotated_copy(
        base=stored_path(record.file_name), target=stored_path(name), annotations=annotations
    )
    if record.annotated_file_name != name:
        PaperPdf.objects.filter(pk=record.pk).update(annotated_file_name=name)
        record.annotated_file_name = name


# --- the source markdown ----------------------------------------------------------------


def pdf_source_markdown_save(*, paper_id: int, replace: bool = True) -> PaperAsset | None:
    """Convert the paper's PDF to markdown (papers.pdf.markdown) and store it as the paper's
    source asset, which get_paper_source returns.

    With replace False (after an attach), a source that did not come from a conversion (one
    imported by hand) is kept and None is returned. Raises PdfNotAvailable,
    PdfFileMissing, InvalidInput (markdown larger than ASSET_MAX_BYTES).
    """
    paper = Paper.objects.filter(pk=paper_id).first()
    if paper is None:
        raise NotFound(f"No paper {paper_id!r} in the library.", paper_id=str(paper_id))
    record = paper_pdf_get(paper=paper)
    if not replace and _has_curated_source(paper):
        logger.info("paper %s: keeping its imported source markdown", paper_id)
        return None
    with pdf_open(record) as document:
        body = document_markdown(document)
    header = f"{CONVERTED_MARKER} (sha256 {record.sha256[:12]}, {record.page_count} pages) -->\n\n"
    return assets.asset_save(paper=paper, kind=assets.Kind.SOURCE, content=header + body)


def _has_curated_source(paper: Paper) -> bool:
    if not paper.assets.filter(kind=assets.Kind.SOURCE).exists():
        return False
    try:
        text = assets.source_get(paper=paper).text
    except Exception:  # an unreadable source is replaced by a readable one
        return False
    return not text.startswith(CONVERTED_MARKER)


def schedule_source_markdown(paper_id: int) -> None:
    """Run the conversion task: in-process on the embedded default, else on a worker."""
    pdf_source_markdown_enqueue(paper_id)


def pdf_download_schedule(*, paper_ids: Iterable[int]) -> int:
    """Download these papers' pdf_url after the current transaction commits: in-process on
    the embedded default (results are logged), on a worker otherwise. Returns how many
    papers have a pdf_url and were scheduled."""
    ids = list(
        Paper.objects.filter(pk__in=list(paper_ids))
        .exclude(pdf_url="")
        .values_list("pk", flat=True)
    )

    def run() -> None:
        for paper_id in ids:
            pdf_download_enqueue(paper_id)

    transaction.on_commit(run, robust=True)
    return len(ids)


def annotations_export(*, paper: Paper, format: str, output: Path | None = None) -> Path:
    """Write the paper's annotations as 'json', 'markdown' or 'pdf' (the annotated copy) to
    `output` (default: EXPORTS_DIR/<pdf file name>.annotations.<ext>), in one step.
    Raises InvalidInput (format), PdfNotAvailable and PdfFileMissing (pdf)."""
    extensions = {"json": "json", "markdown": "md", "pdf": "pdf"}
    if format not in extensions:
        raise InvalidInput("format must be 'json', 'markdown' or 'pdf'.", field="format")
    if format == "pdf":
        data = annotated_pdf_path(paper=paper).read_bytes()
    else:
        data = annotations_export_text(paper=paper, format=format).encode("utf-8")
    if output is None:
        stem = safe_file_name(paper_id=paper.pk, citekey=paper.citekey).removesuffix(".pdf")
        output = Path(settings.EXPORTS_DIR) / f"{stem}.annotations.{extensions[format]}"
    write_atomic(output, data)
    return output

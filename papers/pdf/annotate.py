"""Drawing the library's annotations into a copy of a PDF as real PDF annotations.

Stored rects are in PDF user space, origin at the bottom-left of the MediaBox (Zotero's
convention, docs/PDF.md); PyMuPDF works top-left, relative to the MediaBox, so every
rect goes through the page's transformation matrix on the way in and out.

The annotated copy is written next to the original: the original is copied to a staging
file, the annotations are added and saved incrementally (only the new objects are
appended, a few milliseconds even for large files), and the copy is renamed over the
annotated file in one step.
"""

from __future__ import annotations

import logging
import os
import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

import pymupdf

from papers.models import Annotation
from papers.pdf.files import staging_file
from papers.pdf.spec import color_rgb

logger = logging.getLogger(__name__)

AUTHOR = "Research MCP"


def annotation_pdf_name(annotation_id: int) -> str:
    """The annotation's /NM in the PDF, so a copy's annotations can be traced to rows."""
    return f"research-mcp-{annotation_id}"


def page_frame(page: pymupdf.Page) -> pymupdf.Matrix:
    """PDF space -> the space PyMuPDF extracts text and places annotations in: unrotated,
    origin at the top-left of the CropBox, y downwards, whatever the page's /Rotate.
    (`page.transformation_matrix` drops the box offsets on rotated pages in PyMuPDF 2.0.)
    `page.cropbox` has its y flipped against the MediaBox, hence `mediabox.y1 - crop.y0`."""
    crop, media = page.cropbox, page.mediabox
    return pymupdf.Matrix(1, 0, 0, -1, -crop.x0, media.y1 - crop.y0)


def page_box(page: pymupdf.Page) -> list[float]:
    """The visible page (its CropBox) as [x1, y1, x2, y2] in PDF space."""
    return page_to_pdf(page, pymupdf.Rect(0, 0, page.cropbox.width, page.cropbox.height))


def pdf_to_page(page: pymupdf.Page, rect: Sequence[float]) -> pymupdf.Rect:
    """A PDF-space [x1, y1, x2, y2] as a PyMuPDF rect on `page`."""
    return pymupdf.Rect(rect) * page_frame(page)


def page_to_pdf(page: pymupdf.Page, rect: pymupdf.Rect) -> list[float]:
    """A PyMuPDF rect on `page` as a PDF-space [x1, y1, x2, y2], rounded to 0.01 pt."""
    box = rect * ~page_frame(page)
    return [round(value, 2) for value in (box.x0, box.y0, box.x1, box.y1)]


def draw(document: pymupdf.Document, annotation: Annotation) -> pymupdf.Annot:
    page = document[annotation.page - 1]
    rects = [pdf_to_page(page, rect) for rect in annotation.rects]
    if annotation.kind == Annotation.Kind.HIGHLIGHT:
        drawn = page.add_highlight_annot(quads=[rect.quad for rect in rects])
    else:
        drawn = page.add_rect_annot(rects[0])
        drawn.set_border(width=1.5)
    drawn.set_colors(stroke=color_rgb(annotation.color))
    drawn.set_info(content=annotation.comment, title=AUTHOR, subject=annotation.kind)
    drawn.update()
    document.xref_set_key(drawn.xref, "NM", pymupdf.get_pdf_str(annotation_pdf_name(annotation.pk)))
    return drawn


def write_annotated_copy(*, base: Path, target: Path, annotations: Iterable[Annotation]) -> None:
    """`base` plus `annotations`, written to `target` in one step (never to `base`)."""
    with staging_file("annotated") as staged:
        shutil.copyfile(base, staged)
        data: bytes | None = None
        with pymupdf.open(staged) as document:
            for annotation in annotations:
                if annotation.page > document.page_count:
                    # Made on an earlier, longer file; it stays in the database.
                    logger.warning(
                        "annotation %s is on page %s of a PDF that now has %s pages; not drawn",
                        annotation.pk,
                        annotation.page,
                        document.page_count,
                    )
                    continue
                draw(document, annotation)
            if document.can_save_incrementally():
                document.saveIncr()
            else:  # a file MuPDF had to repair cannot be appended to: write it whole
                data = document.tobytes(garbage=1, deflate=True)
        if data is not None:
            staged.write_bytes(data)
        with staged.open("rb") as file:
            os.fsync(file.fileno())
        os.replace(staged, target)

"""Page 1 of a PDF as a picture, drawn by the server: what the reading page shows at its
first paint while pdf.js starts (projects/templates/projects/paper_read.html, reader.mjs).

pdf.js needs its 1.3 MB worker compiled, the PDF parsed and page 1's fonts loaded before
it draws anything; a JPEG of page 1 is in the page's HTML (preloaded) and painted at once,
then replaced in place by pdf.js's canvas and text layer. Both are made here, cached under
CACHE_DIR/page-images and keyed by the PDF's sha256, so a replaced PDF never shows an old
picture:

- `<sha256>-<width>.jpg`: page 1 at READER_PAGE_IMAGE_WIDTH pixels wide (the only width:
  the request cannot choose one, so the cache holds one file per PDF), at most
  MAX_HEIGHT_RATIO times as high (an odd, very long page is drawn smaller);
- `<sha256>.json`: page 1's size in PDF points (the reading page sizes the picture's frame
  as pdf.js will size page 1, so nothing moves when it is replaced), whether the PDF
  has an outline (its panel is then shown from the start, so the pages' column does not
  narrow when pdf.js fills it), and the sizes of the pages not of page 1's size (their
  placeholders have their own size before pdf.js loads them, so they do not grow then).

Both are written when a PDF is attached (papers.pdf.services, after commit), else on the
first request that needs them. Names are made from a checked hex digest and a number only.
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path

import pymupdf
from django.conf import settings

from core.atomic import write_atomic
from papers.models import PaperPdf
from papers.pdf.errors import NotAPdf
from papers.pdf.selectors import pdf_open

logger = logging.getLogger(__name__)

MIN_WIDTH, MAX_WIDTH = 256, 2048
# JPEG: a third smaller than PNG for a page of text at this size and quicker to decode,
# which on a busy machine is what the first paint waits for; the picture is replaced in
# well under seconds, so its slight blur on text is not read.
FORMAT, EXTENSION, CONTENT_TYPE, QUALITY = "jpeg", "jpg", "image/jpeg", 80
MAX_HEIGHT_RATIO = 4
SHA256 = re.compile(r"^[0-9a-f]{64}$")


# Pages whose size is looked at (the reading page's placeholders); past these, pages are
# taken to be page 1's size until pdf.js loads them, as before.
MAX_SIZED_PAGES = 1000


@dataclass(frozen=True)
class FirstPage:
    """Page 1's size in PDF points (rotation applied, as pdf.js's viewport has it), whether
    the PDF has an outline, and the pages of another size than page 1 (1-based number ->
    size), which the reading page's placeholders take until pdf.js has loaded them."""

    width: float
    height: float
    outline: bool
    others: dict[int, tuple[float, float]]


def image_width() -> int:
    """READER_PAGE_IMAGE_WIDTH within MIN_WIDTH..MAX_WIDTH; 0: no picture (the reading page
    waits for pdf.js, as before)."""
    width = int(settings.READER_PAGE_IMAGE_WIDTH)
    return 0 if width <= 0 else max(MIN_WIDTH, min(MAX_WIDTH, width))


def cache_dir() -> Path:
    return Path(settings.CACHE_DIR) / "page-images"


def _checked(sha256: str) -> str:
    if not SHA256.match(sha256):
        raise NotAPdf("The PDF's recorded sha256 is not a sha256.", reason="bad_name")
    return sha256


def image_path(sha256: str, width: int) -> Path:
    return cache_dir() / f"{_checked(sha256)}-{int(width)}.{EXTENSION}"


def facts_path(sha256: str) -> Path:
    return cache_dir() / f"{_checked(sha256)}.json"


def _no_pages(record: PaperPdf) -> NotAPdf:
    return NotAPdf(f"The PDF of paper {record.paper_id} has no pages to show.", reason="no_pages")


def first_page(record: PaperPdf) -> FirstPage:
    """Page 1's size and the outline flag, from the cache or the PDF (then cached). Raises
    PdfFileMissing and NotAPdf (damaged, no pages)."""
    path = facts_path(record.sha256)
    try:
        data = json.loads(path.read_text())
        others = {int(k): (float(w), float(h)) for k, (w, h) in data["others"].items()}
        return FirstPage(float(data["width"]), float(data["height"]), bool(data["outline"]), others)
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        pass  # not made yet (or unreadable, or from before): made again
    with pdf_open(record) as document:
        if document.page_count < 1:
            raise _no_pages(record)
        rect = document[0].rect
        others = {}
        for number in range(2, min(document.page_count, MAX_SIZED_PAGES) + 1):
            size = document[number - 1].rect
            if abs(size.width - rect.width) > 0.5 or abs(size.height - rect.height) > 0.5:
                others[number] = (round(float(size.width), 3), round(float(size.height), 3))
        outline = bool(document.get_toc())
        facts = FirstPage(float(rect.width), float(rect.height), outline, others)
    if facts.width <= 0 or facts.height <= 0:
        raise _no_pages(record)
    payload = {
        "width": facts.width,
        "height": facts.height,
        "outline": facts.outline,
        "others": {str(k): list(v) for k, v in others.items()},
    }
    write_atomic(path, json.dumps(payload).encode())
    return facts


def page_image(record: PaperPdf) -> Path:
    """The JPEG of page 1 at image_width(), made now if it is not cached. Raises
    PdfFileMissing and NotAPdf (damaged, no pages; also when the picture is turned off)."""
    width = image_width()
    if not width:
        raise NotAPdf("Page pictures are turned off (READER_PAGE_IMAGE_WIDTH=0).", reason="off")
    path = image_path(record.sha256, width)
    if path.is_file():
        return path
    with pdf_open(record) as document:
        if document.page_count < 1:
            raise _no_pages(record)
        page = document[0]
        rect = page.rect
        if rect.width <= 0 or rect.height <= 0:
            raise _no_pages(record)
        zoom = min(width / rect.width, MAX_HEIGHT_RATIO * width / rect.height)
        pixmap = page.get_pixmap(matrix=pymupdf.Matrix(zoom, zoom), alpha=False)
        data = pixmap.tobytes(FORMAT, jpg_quality=QUALITY)
    write_atomic(path, data)
    return path


def page_image_make(record: PaperPdf) -> None:
    """Cache page 1's picture and facts for a PDF just attached, so that the first visit of
    its reading page finds them. A failure is logged: the reading page makes them later, or
    shows the PDF without a picture."""
    try:
        first_page(record)
        if image_width():
            page_image(record)
    except Exception as error:  # never fails the attach it follows
        logger.warning("paper %s: page 1's picture not made: %r", record.paper_id, error)


def image_version(record: PaperPdf) -> str:
    """What names the picture's content: the PDF's sha256 (a prefix) and the width."""
    return f"{_checked(record.sha256)[:16]}-{image_width()}"

"""PDF files under DOWNLOADS_DIR: safe names, staging copies, checks, atomic placement.

Every file comes in the same way: copied or streamed into a temporary file beside its final
place (`.<name>.part`), checked there (size, `%PDF` header, opens with PyMuPDF, not
password-protected, at least one page), then renamed over the target in one step. A crash
or a refused file leaves no half file under a real name.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
import re
import tempfile
import time
import unicodedata
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pymupdf
from django.conf import settings

from core.atomic import write_atomic
from papers.pdf.errors import NotAPdf

logger = logging.getLogger(__name__)

CHUNK = 1 << 20
# The PDF header may follow some junk, but within the first 1024 bytes (PDF 1.7, 7.5.2);
# readers look for the %%EOF marker within the last 1024 bytes.
HEADER_WINDOW = 1024
# A staging file not written to for this long belongs to a process that died (a killed
# worker, a crash): every transfer ends within PDF_DOWNLOAD_TIMEOUT or a task time limit.
STALE_STAGING_SECONDS = 3600


@dataclass(frozen=True)
class PdfFacts:
    sha256: str
    size: int
    page_count: int


def downloads_dir() -> Path:
    return Path(settings.DOWNLOADS_DIR)


def safe_file_name(*, paper_id: int, citekey: str) -> str:
    """'12-vaswani2017attention.pdf': the paper_id keeps it unique, the citekey readable.
    Only ASCII letters, digits, '-' and '_' survive, so no name can leave the folder."""
    folded = unicodedata.normalize("NFKD", citekey).encode("ascii", "ignore").decode()
    slug = re.sub(r"[^A-Za-z0-9_-]+", "-", folded).strip("-_")[:80]
    return f"{int(paper_id)}-{slug}.pdf" if slug else f"{int(paper_id)}.pdf"


def annotated_file_name(file_name: str) -> str:
    return file_name.removesuffix(".pdf") + ".annotated.pdf"


def stored_path(file_name: str) -> Path:
    """The path of a stored file. Names are made by safe_file_name; this guards the
    invariant against a hand-edited row."""
    root = downloads_dir().resolve()
    path = (root / file_name).resolve()
    if not path.is_relative_to(root) or path == root:
        raise NotAPdf("Invalid PDF file name.", reason="bad_name")
    return path


@contextlib.contextmanager
def staging_file(prefix: str = "pdf") -> Iterator[Path]:
    """A temporary file in DOWNLOADS_DIR (same file system, so placing it is a rename),
    removed afterwards unless it was placed. Staging files that a dead process left
    (untouched for STALE_STAGING_SECONDS) are removed first."""
    folder = downloads_dir()
    folder.mkdir(parents=True, exist_ok=True)
    remove_stale_staging(folder)
    handle, name = tempfile.mkstemp(dir=folder, prefix=f".{prefix}-", suffix=".part")
    os.close(handle)
    path = Path(name)
    try:
        yield path
    finally:
        path.unlink(missing_ok=True)


def remove_stale_staging(folder: Path) -> None:
    """Remove `.*.part` files of `folder` untouched for STALE_STAGING_SECONDS."""
    limit = time.time() - STALE_STAGING_SECONDS
    for path in folder.glob(".*.part"):
        with contextlib.suppress(OSError):  # another process may remove it first
            if path.stat().st_mtime < limit:
                path.unlink()
                logger.info("removed a staging file left by an interrupted transfer: %s", path.name)


def too_large(limit: int) -> NotAPdf:
    return NotAPdf(
        f"The file is larger than the {limit} bytes a PDF may have (PDF_MAX_BYTES).",
        reason="too_large",
        max_bytes=limit,
    )


def write_chunks(target: Path, chunks: Iterable[bytes]) -> int:
    """Write `chunks` to `target` (a staging file), stopping past PDF_MAX_BYTES; fsynced."""
    limit = settings.PDF_MAX_BYTES
    size = 0
    with target.open("wb") as file:
        for chunk in chunks:
            size += len(chunk)
            if size > limit:
                raise too_large(limit)
            file.write(chunk)
        file.flush()
        os.fsync(file.fileno())
    return size


def read_chunks(source: Path) -> Iterator[bytes]:
    with source.open("rb") as file:
        while chunk := file.read(CHUNK):
            yield chunk


def inspect(path: Path) -> PdfFacts:
    """Check that `path` is a PDF this library can read; its sha256, size and page count.

    Raises NotAPdf with a reason: too_large, not_pdf (no %PDF header), unreadable (MuPDF
    cannot open it), truncated (cut short: MuPDF had to repair it and the %%EOF marker is
    missing from its end, as an interrupted copy or download leaves it), encrypted (needs
    a password), no_pages.
    """
    size = path.stat().st_size
    if size > settings.PDF_MAX_BYTES:
        raise too_large(settings.PDF_MAX_BYTES)
    digest = hashlib.sha256()
    with path.open("rb") as file:
        head = file.read(HEADER_WINDOW)
        digest.update(head)
        tail = head
        while chunk := file.read(CHUNK):
            digest.update(chunk)
            tail = (tail + chunk)[-HEADER_WINDOW:]
    if b"%PDF-" not in head:
        raise NotAPdf("The file is not a PDF (it has no %PDF header).", reason="not_pdf")
    try:
        with pymupdf.open(path, filetype="pdf") as document:
            if document.needs_pass:
                raise NotAPdf(
                    "The PDF is password-protected; attach an unprotected copy.",
                    reason="encrypted",
                )
            repaired = document.is_repaired
            pages = document.page_count
    except NotAPdf:
        raise
    except Exception:  # MuPDF raises plain RuntimeErrors/FzErrors for broken files
        raise NotAPdf(
            "The file is a damaged PDF that cannot be opened.", reason="unreadable"
        ) from None
    if repaired and b"%%EOF" not in tail:
        # MuPDF makes what it can of a cut file (often every page, with text missing).
        raise NotAPdf(
            "The PDF is incomplete (truncated: it ends before its end-of-file marker), as an "
            "interrupted download or copy leaves it; get the whole file again.",
            reason="truncated",
        )
    if pages < 1:
        raise NotAPdf("The PDF has no pages.", reason="no_pages")
    return PdfFacts(digest.hexdigest(), size, pages)


def stored_intact(file_name: str, sha256: str) -> bool:
    """Whether the stored file still has this sha256 (it may have been damaged on disk)."""
    path = stored_path(file_name)
    if not path.is_file():
        return False
    digest = hashlib.sha256()
    for chunk in read_chunks(path):
        digest.update(chunk)
    return digest.hexdigest() == sha256


def place(staged: Path, file_name: str) -> Path:
    """Rename a staged file over its final name in one step."""
    target = stored_path(file_name)
    os.replace(staged, target)
    return target


def write_bytes_atomic(file_name: str, data: bytes) -> Path:
    """Write a derived file (the annotated copy) under DOWNLOADS_DIR in one step."""
    target = stored_path(file_name)
    write_atomic(target, data)
    return target

"""Attaching a PDF from the server's own disk, for clients on this machine.

Only the import folder (settings.PDF_IMPORT_DIR, default `<knowledge-base>/imports`) is
read, and only for a local client (core.clients): stdio always, a loopback HTTP client only
when the operator set PDF_IMPORT_DIR. A path is resolved (symbolic links followed) before
the check, so `../`, absolute paths and links cannot leave the folder.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from django.conf import settings

from core.clients import client_place
from core.errors import InvalidInput
from papers.pdf import services
from papers.pdf.errors import LocalFileRefused
from papers.pdf.fetch import attached_record
from papers.selectors import paper_get

MAX_PATH_CHARS = 1000


def import_folder() -> Path:
    return Path(settings.PDF_IMPORT_DIR).resolve()


def local_pdf_path(raw: str) -> Path:
    """The file `raw` names inside the import folder (relative to it, or absolute).

    Raises LocalFileRefused when the client may not read local files or the path leaves
    the folder, InvalidInput when it names no file there.
    """
    place = client_place()
    if place == "remote" or (place == "loopback" and not settings.PDF_IMPORT_DIR_SET):
        raise LocalFileRefused(
            "attach_pdf reads local files only for clients on the server's machine (stdio, "
            "or loopback HTTP when the operator sets PDF_IMPORT_DIR); pass an http(s) url.",
        )
    text = (raw or "").strip()
    if not text or len(text) > MAX_PATH_CHARS or "\x00" in text:
        raise InvalidInput(f"path must be 1-{MAX_PATH_CHARS} characters.", field="path")
    folder = import_folder()
    candidate = Path(text).expanduser()
    if not candidate.is_absolute():
        candidate = folder / candidate
    resolved = candidate.resolve()
    if not resolved.is_relative_to(folder):
        raise LocalFileRefused(
            f"path must name a file inside the import folder {folder}; copy the PDF there.",
            import_folder=str(folder),
        )
    if not resolved.is_file():
        raise InvalidInput(
            f"There is no file {text!r} in the import folder {folder}.", field="path"
        )
    return resolved


def paper_pdf_attach_local(
    *, ref: str | int, path: str, scope: Sequence[str] | None = None
) -> dict[str, Any]:
    """attach_pdf with `path`: the PDF at `path` (inside the import folder) becomes the
    paper's PDF, with the same size and PDF checks as every attach; the file in the import
    folder is copied, never moved. Returns attach_pdf's answer (the record with `pdf`).
    Raises NotFound (paper outside the scope too), LocalFileRefused, InvalidInput, NotAPdf.
    """
    paper = paper_get(ref=ref, scope=scope)
    record = services.pdf_attach_file(paper_id=paper.pk, path=local_pdf_path(path))
    return attached_record(paper, scope, record, tried=[])

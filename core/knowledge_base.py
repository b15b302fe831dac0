"""The knowledge-base directory: everything the product keeps lives below one folder.

Layout: research.db, engines/, cache/, downloads/, exports/, assets/, temp/,
backups/ (archives written by `manage.py backup`, docs/BACKUP.md) and imports/ (where
local clients put PDFs for attach_pdf's `path`, docs/PDF.md).
"""

from __future__ import annotations

import os
import secrets
from pathlib import Path

SUBDIRECTORIES = (
    "engines", "cache", "downloads", "exports", "assets", "temp", "backups", "imports",
)  # fmt: skip
DEFAULT_DIRECTORY = "./knowledge-base"


def resolve_directory() -> Path:
    """The knowledge-base path from RESEARCH_DIRECTORY (default ./knowledge-base), absolute."""
    raw = os.environ.get("RESEARCH_DIRECTORY", "").strip() or DEFAULT_DIRECTORY
    return Path(raw).expanduser().resolve()


def ensure_layout(directory: Path) -> None:
    """Create the directory and its sub-folders if missing; existing content is untouched."""
    directory.mkdir(parents=True, exist_ok=True)
    for name in SUBDIRECTORIES:
        (directory / name).mkdir(exist_ok=True)


def read_or_create_secret(directory: Path, name: str) -> str:
    """A per-install secret kept in a 0600 file, so clone-and-run needs no committed key."""
    path = directory / name
    if path.exists():
        return path.read_text(encoding="utf-8").strip()
    directory.mkdir(parents=True, exist_ok=True)
    value = secrets.token_urlsafe(48)
    # Several processes may start at once on a new folder (a server's workers, Celery's):
    # the secret is written whole to a file of this process's own, then linked into place,
    # so the first link wins and every other process reads that complete file.
    staged = directory / f".{name}.{os.getpid()}.{secrets.token_hex(4)}"
    fd = os.open(staged, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(value + "\n")
        try:
            os.link(staged, path)
        except FileExistsError:
            return path.read_text(encoding="utf-8").strip()
    finally:
        staged.unlink(missing_ok=True)
    return value

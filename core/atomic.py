"""Replacing a file in one step, so no reader and no crash ever sees half of it."""

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from core.errors import StorageFull

# "No space left on device" and "Disk quota exceeded".
FULL_DISK_ERRORS = (errno.ENOSPC, errno.EDQUOT)


def write_atomic(path: Path, data: bytes) -> None:
    """Write `data` to `path` through a temporary file in the same folder, fsync it and
    rename it over the target: readers see the old content or the new, and a failure
    (disk full, a crash) leaves the old file and no temporary one.

    A full disk is StorageFull (naming the folder, not its path), which callers' clients
    get as a clear error; other OSErrors propagate."""
    try:
        _write(path, data)
    except OSError as exc:
        if exc.errno in FULL_DISK_ERRORS:
            raise StorageFull(
                f"No space left on the disk holding the knowledge base's '{path.parent.name}' "
                "folder; nothing was written. Free some space and try again.",
                folder=path.parent.name,
            ) from exc
        raise


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(handle, "wb") as file:
            file.write(data)
            file.flush()
            os.fsync(file.fileno())
        os.replace(temporary, path)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise

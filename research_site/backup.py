"""Backing up and restoring a whole knowledge base as one tar.gz archive (docs/BACKUP.md).

An archive holds the database (`database/research.db`, an online SQLite copy, or
`database/research.pgdump`, a `pg_dump --format=custom`), the folders `downloads/`,
`assets/` and `engines/` under `files/`, and `manifest.json` (written last) listing every
member with its sha256 and the paper and project counts of the copied database. Caches,
exports, temporary files and earlier backups are left out: they can be rebuilt or are
copies already.

A restore extracts into a staging folder while hashing, and changes nothing until every
member has been checked against the manifest; only then does it replace the database and
the folders. What it extracts has a budget (`restore_budget`), checked against each
member's declared size before a byte of it is written and against the bytes actually
written while copying: an archive that would unpack to more than MAX_EXPANSION times its
own size, or to more than the disk has free, is refused and leaves nothing behind.

One module because backup and restore are the writer and the reader of one archive format:
the manifest, member paths and budget checks must change together.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import shutil
import sqlite3
import subprocess
import tarfile
import tempfile
import zlib
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path, PurePosixPath
from typing import IO, Any

from django.conf import settings
from django.core.management import call_command
from django.db import connections

from core.errors import Conflict, DomainError, InvalidInput

FORMAT_VERSION = 1
MANIFEST_NAME = "manifest.json"
# The folders an archive carries, each under files/<name>/.
FOLDERS = ("downloads", "assets", "engines")
# Left out on purpose (and said so in the manifest): rebuilt, regenerated or copies.
EXCLUDED = ("cache/", "temp/", "exports/", "backups/")
SQLITE_MEMBER = "database/research.db"
POSTGRES_MEMBER = "database/research.pgdump"
_SKIPPED_DIRS = {"__pycache__"}
_CHUNK = 1024 * 1024
_PG_TIMEOUT = 3600
# How many times its own size an archive may unpack to. gzip shrinks a library's database
# and PDFs 1.1-5x; a member that expands 100x is a compression bomb, not a backup.
MAX_EXPANSION = 100
# Left free on the disk the staging folder is on: the restore itself needs room after.
DISK_RESERVE_BYTES = 64 * 1024 * 1024


class BackupError(DomainError):
    """A backup or restore that could not be done: a missing tool, a failing dump."""

    code = "backup_failed"


class ToolMissing(BackupError):
    """pg_dump or pg_restore is not installed: nothing can be done on this machine."""

    code = "tool_missing"


class ArchiveInvalid(InvalidInput):
    """An archive that is corrupt, truncated, tampered with or unsafe to extract."""

    code = "archive_invalid"


@dataclass
class BackupResult:
    path: Path
    backend: str
    files: int
    bytes: int
    counts: dict[str, int]


@dataclass
class RestoreResult:
    backend: str
    files: int
    counts: dict[str, int]
    created_at: str
    warnings: list[str] = field(default_factory=list)


# --- backup ---------------------------------------------------------------------------


def backup_create(
    *,
    output: Path | None = None,
    directory: Path | None = None,
    on_progress: Callable[[str], None] | None = None,
) -> BackupResult:
    """Write an archive of the knowledge base while the server may keep running.

    `output` is a file path or an existing folder (default `<directory>/backups/`). The
    archive is written to a temporary file in the same folder with mode 0600 and renamed
    into place, so a failed backup leaves no partial archive. Raises BackupError when the
    database cannot be copied (pg_dump missing or failing).
    """
    directory = directory or settings.RESEARCH_DIRECTORY
    database = connections["default"].settings_dict
    backend = _backend(database)
    target = _output_path(output, directory)
    target.parent.mkdir(parents=True, exist_ok=True)
    say = on_progress or (lambda _message: None)
    entries: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="backup-", dir=_scratch(directory)) as scratch:
        say(f"copying the {backend} database")
        if backend == "sqlite":
            member, copy = SQLITE_MEMBER, Path(scratch) / "research.db"
            counts = _sqlite_copy(Path(database["NAME"]), copy)
        else:
            member, copy = POSTGRES_MEMBER, Path(scratch) / "research.pgdump"
            counts = _pg_dump(database, copy)
        handle, temporary = tempfile.mkstemp(  # mkstemp creates the file 0600
            dir=target.parent, prefix=f".{target.name}.", suffix=".tmp"
        )
        try:
            with os.fdopen(handle, "wb") as raw, tarfile.open(fileobj=raw, mode="w:gz") as tar:
                entries.append(_add_file(tar, copy, member))
                for name in FOLDERS:
                    folder = directory / name
                    say(f"adding {name}/")
                    for path in _walk(folder):
                        relative = path.relative_to(folder).as_posix()
                        try:
                            entries.append(_add_file(tar, path, f"files/{name}/{relative}"))
                        except FileNotFoundError:  # deleted by the server meanwhile
                            continue
                manifest = {
                    "format": FORMAT_VERSION,
                    "version": settings.MCP_SERVER_VERSION,
                    "backend": backend,
                    "created_at": datetime.now(UTC).isoformat(timespec="seconds"),
                    "database": member,
                    "counts": counts,
                    "excluded": list(EXCLUDED),
                    "files": entries,
                }
                data = json.dumps(manifest, indent=2).encode("utf-8")
                info = tarfile.TarInfo(MANIFEST_NAME)
                info.size, info.mode, info.mtime = len(data), 0o600, int(datetime.now().timestamp())
                tar.addfile(info, io.BytesIO(data))
                raw.flush()
                os.fsync(raw.fileno())
            os.replace(temporary, target)
        except BaseException:
            Path(temporary).unlink(missing_ok=True)
            raise
    total = sum(entry["size"] for entry in entries)
    return BackupResult(target, backend, len(entries), total, counts)


def _output_path(output: Path | None, directory: Path) -> Path:
    """The archive's path: `output` if it names a file, else a new name in the folder
    (never an earlier backup's: two backups within one second get -2, -3...)."""
    folder = directory / "backups"
    if output is not None:
        output = output.expanduser().resolve()
        if not output.is_dir():
            return output
        folder = output
    stem = f"research-backup-{datetime.now(UTC).strftime('%Y%m%d-%H%M%S')}"
    path, number = folder / f"{stem}.tar.gz", 1
    while path.exists():
        number += 1
        path = folder / f"{stem}-{number}.tar.gz"
    return path


def _scratch(directory: Path) -> Path:
    scratch = directory / "temp"
    scratch.mkdir(parents=True, exist_ok=True)
    return scratch


def _backend(database: Mapping[str, Any]) -> str:
    engine = database["ENGINE"]
    if engine.endswith("sqlite3"):
        return "sqlite"
    if engine.endswith("postgresql"):
        return "postgresql"
    raise BackupError(f"Backups support SQLite and PostgreSQL, not {engine}.")


def _sqlite_file(name: str) -> Path:
    # The read-only mode names the file as a URI (file:<path>?mode=ro).
    if name.startswith("file:"):
        name = name[len("file:") :].split("?", 1)[0]
    return Path(name)


def _sqlite_copy(source: Path, copy: Path) -> dict[str, int]:
    """Copy a live SQLite database with the online backup API: one consistent snapshot,
    taken beside running writers (copying the file could miss the WAL or tear a page).
    The counts are read from the copy, so they describe exactly what was saved."""
    source = _sqlite_file(str(source))
    if not source.is_file():
        raise BackupError(f"No database at {source}.")
    live = sqlite3.connect(source, timeout=30)
    target = sqlite3.connect(copy)
    try:
        live.backup(target)  # pages=-1: the whole database in one step, one snapshot
        target.execute("PRAGMA journal_mode=DELETE")
        return _sqlite_counts(target)
    finally:
        target.close()
        live.close()


def _sqlite_counts(connection: sqlite3.Connection) -> dict[str, int]:
    counts = {}
    for key, table in _counted_tables().items():
        try:
            counts[key] = connection.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]  # noqa: S608 - model table names
        except sqlite3.OperationalError:  # an empty database, before migrations
            counts[key] = 0
    return counts


def _counted_tables() -> dict[str, str]:
    from papers.models import Paper
    from projects.models import Project

    return {"papers": Paper._meta.db_table, "projects": Project._meta.db_table}


def _pg_environment(database: Mapping[str, Any]) -> dict[str, str]:
    """libpq variables for pg_dump / pg_restore: the password never shows in `ps`."""
    env = dict(os.environ)
    for variable, key in (
        ("PGHOST", "HOST"),
        ("PGPORT", "PORT"),
        ("PGUSER", "USER"),
        ("PGPASSWORD", "PASSWORD"),
        ("PGDATABASE", "NAME"),
    ):
        if database.get(key):
            env[variable] = str(database[key])
    return env


def _pg_tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        raise ToolMissing(
            f"{name} was not found on PATH; install the PostgreSQL client tools "
            "(e.g. apt-get install postgresql-client) matching the server's version."
        )
    return path


def _pg_connect(database: Mapping[str, Any]) -> Any:
    import psycopg

    return psycopg.connect(
        host=database.get("HOST") or None,
        port=database.get("PORT") or None,
        user=database.get("USER") or None,
        password=database.get("PASSWORD") or None,
        dbname=database["NAME"],
        connect_timeout=10,
    )


def _pg_dump(database: Mapping[str, Any], copy: Path) -> dict[str, int]:
    """pg_dump of the database inside an exported snapshot, so the counts written to the
    manifest are read from exactly the data that is dumped, even with writers running."""
    from psycopg import IsolationLevel

    pg_dump = _pg_tool("pg_dump")
    with _pg_connect(database) as connection:
        connection.isolation_level = IsolationLevel.REPEATABLE_READ
        snapshot = connection.execute("SELECT pg_export_snapshot()").fetchone()[0]
        counts = {}
        for key, table in _counted_tables().items():
            counts[key] = connection.execute(f'SELECT count(*) FROM "{table}"').fetchone()[0]  # noqa: S608 - model table names
        _run(
            [pg_dump, "--format=custom", f"--snapshot={snapshot}", f"--file={copy}"],
            env=_pg_environment(database),
            what="pg_dump",
        )
        connection.rollback()
    return counts


def _run(command: list[str], *, env: dict[str, str], what: str) -> None:
    try:
        subprocess.run(
            command, env=env, check=True, capture_output=True, text=True, timeout=_PG_TIMEOUT
        )
    except subprocess.CalledProcessError as error:
        detail = (error.stderr or "").strip().splitlines()
        raise BackupError(f"{what} failed: {detail[-1] if detail else error}") from None
    except subprocess.TimeoutExpired:
        raise BackupError(f"{what} did not finish in {_PG_TIMEOUT} s.") from None


def _walk(folder: Path) -> Iterator[Path]:
    """Regular files below `folder`, sorted; symlinks are not followed (a link could point
    anywhere on the machine) and Python caches are skipped."""
    if not folder.is_dir():
        return
    for root, dirs, files in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if d not in _SKIPPED_DIRS)
        for name in sorted(files):
            path = Path(root) / name
            if path.is_file() and not path.is_symlink():
                yield path


def _add_file(tar: tarfile.TarFile, path: Path, member: str) -> dict[str, Any]:
    """Add one file, hashing the very bytes written: the file is opened once, so a writer
    replacing it meanwhile (files are replaced atomically) cannot make hash and content
    disagree."""
    with path.open("rb") as handle:
        stat = os.fstat(handle.fileno())
        digest = hashlib.sha256()
        for chunk in iter(lambda: handle.read(_CHUNK), b""):
            digest.update(chunk)
        size = handle.tell()
        handle.seek(0)
        info = tarfile.TarInfo(member)
        info.size, info.mode, info.mtime = size, 0o600, int(stat.st_mtime)
        tar.addfile(info, handle)
    return {"path": member, "size": size, "sha256": digest.hexdigest()}


# --- restore --------------------------------------------------------------------------


def backup_restore(
    *,
    archive: Path,
    force: bool = False,
    directory: Path | None = None,
    database: Mapping[str, Any] | None = None,
    migrate: bool = True,
    max_bytes: int | None = None,
) -> RestoreResult:
    """Replace the knowledge base's database and folders with an archive's content.

    The server must be stopped. Every member is checked (safe name, regular file, within
    the size budget, listed in the manifest with the same sha256) while it is extracted
    into a staging folder; any problem raises ArchiveInvalid and changes nothing. The
    budget is `max_bytes` when given, else `restore_budget`. A library holding papers,
    projects or files is only replaced with `force` (else Conflict). Then the database is
    replaced (SQLite: a fsynced copy renamed over the file; PostgreSQL: pg_restore
    --clean --if-exists in one transaction), the folders are swapped in, and migrations
    upgrade an archive made by an older version. Raises BackupError if pg_restore fails.
    """
    directory = directory or settings.RESEARCH_DIRECTORY
    database = database or connections["default"].settings_dict
    backend = _backend(database)
    if not archive.is_file():
        raise ArchiveInvalid(f"No archive at {archive}.")
    with tempfile.TemporaryDirectory(prefix="restore-", dir=_scratch(directory)) as scratch:
        staging = Path(scratch)
        budget = restore_budget(archive, staging) if max_bytes is None else max_bytes
        manifest = _extract_verified(archive, staging, budget)
        if manifest["backend"] != backend:
            raise ArchiveInvalid(
                f"The archive holds a {manifest['backend']} database; this knowledge base "
                f"uses {backend} (see docs/BACKUP.md to move between them)."
            )
        if not force:
            reason = _library_content(directory, database, backend)
            if reason:
                raise Conflict(
                    f"The knowledge base is not empty ({reason}); restoring replaces it. "
                    "Use --force to replace it."
                )
        connections.close_all()  # no connection of ours may keep the old database open
        staged_db = staging / manifest["database"]
        if backend == "sqlite":
            _sqlite_replace(staged_db, _sqlite_file(str(database["NAME"])))
        else:
            _pg_restore(database, staged_db)
        for name in FOLDERS:
            _swap_folder(staging / "files" / name, directory / name, staging)
    if migrate:
        call_command("migrate", interactive=False, verbosity=0)
    files = sum(1 for entry in manifest["files"] if entry["path"].startswith("files/"))
    return RestoreResult(backend, files, dict(manifest["counts"]), str(manifest["created_at"]))


def _member_path(name: str) -> PurePosixPath:
    """The archive-relative path of a member, or ArchiveInvalid if it could land anywhere
    but inside the staging folder's expected places."""
    path = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or "\x00" in name
        or path.is_absolute()
        or any(part in ("..", "") for part in name.split("/"))
    ):
        raise ArchiveInvalid(f"Unsafe member name {name!r} in the archive.")
    allowed = name in (MANIFEST_NAME, SQLITE_MEMBER, POSTGRES_MEMBER) or (
        len(path.parts) >= 3 and path.parts[0] == "files" and path.parts[1] in FOLDERS
    )
    if not allowed:
        raise ArchiveInvalid(f"Unexpected member {name!r} in the archive.")
    return path


def restore_budget(archive: Path, staging: Path) -> int:
    """The most bytes a restore of `archive` may unpack into `staging`: MAX_EXPANSION
    times the archive's size, and no more than the staging disk has free (less a reserve)."""
    free = shutil.disk_usage(staging).free - DISK_RESERVE_BYTES
    return max(0, min(archive.stat().st_size * MAX_EXPANSION, free))


def _over_budget(name: str, size: int, left: int, budget: int) -> ArchiveInvalid:
    return ArchiveInvalid(
        f"Member {name!r} holds {size:,} bytes, more than the {left:,} left of the "
        f"{budget:,} bytes this archive may unpack to (at most {MAX_EXPANSION}x its size "
        "and what the disk has free): a damaged or hostile archive. Nothing was restored."
    )


def _extract_verified(archive: Path, staging: Path, budget: int) -> dict[str, Any]:
    hashes: dict[str, str] = {}
    manifest_bytes: bytes | None = None
    left = budget
    try:
        with tarfile.open(archive, mode="r:gz") as tar:
            for member in tar:
                path = _member_path(member.name)
                if not member.isreg():
                    raise ArchiveInvalid(
                        f"Member {member.name!r} is not a regular file (links and devices "
                        "are refused)."
                    )
                if member.name in hashes or (member.name == MANIFEST_NAME and manifest_bytes):
                    raise ArchiveInvalid(f"Member {member.name!r} appears twice.")
                if member.size > left:  # before a byte of it is written
                    raise _over_budget(member.name, member.size, left, budget)
                source = tar.extractfile(member)
                assert source is not None  # a regular file always has content
                if member.name == MANIFEST_NAME:
                    manifest_bytes = source.read(16 * _CHUNK)
                    continue
                digest, written = _copy_hashed(source, staging / path, left)
                if written > left:
                    raise _over_budget(member.name, written, left, budget)
                hashes[member.name] = digest
                left -= written
    except (tarfile.TarError, EOFError, zlib.error, gzip.BadGzipFile) as error:
        raise ArchiveInvalid(f"The archive is corrupt or truncated: {error}.") from None
    if manifest_bytes is None:
        raise ArchiveInvalid("The archive has no manifest.json (truncated, or not a backup).")
    try:
        manifest = json.loads(manifest_bytes)
        listed = {entry["path"]: entry["sha256"] for entry in manifest["files"]}
        backend, database = manifest["backend"], manifest["database"]
        int(manifest["counts"]["papers"])
    except (ValueError, KeyError, TypeError) as error:
        raise ArchiveInvalid(f"The manifest is unreadable: {error!r}.") from None
    if manifest.get("format") != FORMAT_VERSION:
        raise ArchiveInvalid(f"Unknown archive format {manifest.get('format')!r}.")
    expected = {"sqlite": SQLITE_MEMBER, "postgresql": POSTGRES_MEMBER}.get(backend)
    if expected is None or database != expected or database not in listed:
        raise ArchiveInvalid("The manifest names no database of a known kind.")
    missing = sorted(set(listed) - set(hashes))
    extra = sorted(set(hashes) - set(listed))
    changed = sorted(name for name in listed if name in hashes and hashes[name] != listed[name])
    for problem, names in (("missing", missing), ("not in the manifest", extra),
                           ("damaged (sha256 differs)", changed)):  # fmt: skip
        if names:
            shown = ", ".join(names[:5]) + (" ..." if len(names) > 5 else "")
            raise ArchiveInvalid(f"{len(names)} member(s) {problem}: {shown}.")
    return dict(manifest)


def _copy_hashed(source: IO[bytes], target: Path, limit: int) -> tuple[str, int]:
    """Copy `source` to `target`, hashing it; (sha256, bytes). Stops as soon as more than
    `limit` bytes have come (the count returned is then over `limit`), whatever the
    member declared."""
    target.parent.mkdir(parents=True, exist_ok=True)
    digest = hashlib.sha256()
    written = 0
    with target.open("xb") as out:
        for chunk in iter(lambda: source.read(_CHUNK), b""):
            written += len(chunk)
            if written > limit:
                break
            digest.update(chunk)
            out.write(chunk)
    return digest.hexdigest(), written


def _library_content(directory: Path, database: Mapping[str, Any], backend: str) -> str:
    """Why the knowledge base counts as holding a library ('' if it does not)."""
    if backend == "sqlite":
        path = _sqlite_file(str(database["NAME"]))
        counts = {"papers": 0, "projects": 0}
        if path.is_file():
            with _closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as connection:
                counts = _sqlite_counts(connection)
    else:
        counts = _pg_counts(database)
    held = [f"{count} {key}" for key, count in counts.items() if count]
    for name in FOLDERS:
        if any(_walk(directory / name)):
            held.append(f"files in {name}/")
    return ", ".join(held)


@contextmanager
def _closing(connection: sqlite3.Connection) -> Iterator[sqlite3.Connection]:
    try:
        yield connection
    finally:
        connection.close()


def _pg_counts(database: Mapping[str, Any]) -> dict[str, int]:
    import psycopg

    counts = {}
    with _pg_connect(database) as connection:
        for key, table in _counted_tables().items():
            try:
                row = connection.execute(f'SELECT count(*) FROM "{table}"').fetchone()  # noqa: S608 - model table names
                counts[key] = row[0]
            except psycopg.errors.UndefinedTable:
                connection.rollback()
                counts[key] = 0
    return counts


def _sqlite_replace(staged: Path, live: Path) -> None:
    """Put the staged database in place of the live one in a crash-safe order: the old
    database is made self-contained (its WAL folded in), its WAL files are removed, then
    a fsynced copy is renamed over it. A stale WAL left beside the new file would be
    replayed into it, so it must go first."""
    live.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=live.parent, prefix=f".{live.name}.", suffix=".tmp")
    os.close(handle)
    try:
        with (
            _closing(sqlite3.connect(staged)) as source,
            _closing(sqlite3.connect(temporary)) as target,
        ):
            source.backup(target)
            target.execute("PRAGMA journal_mode=DELETE")
        with open(temporary, "rb") as written:
            os.fsync(written.fileno())
        if live.is_file():
            with _closing(sqlite3.connect(live, timeout=30)) as old:
                old.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        for suffix in ("-wal", "-shm", "-journal"):
            Path(f"{live}{suffix}").unlink(missing_ok=True)
        os.replace(temporary, live)
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise


def _pg_restore(database: Mapping[str, Any], dump: Path) -> None:
    """pg_restore in one transaction: it either replaces every object or changes nothing."""
    pg_restore = _pg_tool("pg_restore")
    _run(
        [pg_restore, "--clean", "--if-exists", "--single-transaction", "--exit-on-error",
         "--no-owner", "--no-privileges", f"--dbname={database['NAME']}", str(dump)],
        env=_pg_environment(database),
        what="pg_restore",
    )  # fmt: skip


def _swap_folder(staged: Path, live: Path, scratch: Path) -> None:
    """Replace `live` with `staged` by two renames (same file system: both sit in the
    knowledge base); the old content goes to the scratch folder, deleted afterwards."""
    staged.mkdir(parents=True, exist_ok=True)
    if live.exists():
        os.replace(live, scratch / f"old-{live.name}")
    os.replace(staged, live)

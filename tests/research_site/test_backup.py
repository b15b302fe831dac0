"""backup / restore (docs/BACKUP.md) and imports that stop half-way.

Backups are taken of the real test database (committed data: transactional tests);
restores go into a fresh knowledge base in tmp_path, through the real `manage.py restore`
in a subprocess, or into a private PostgreSQL database that the test creates and drops.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tarfile
import threading
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.db import connection, connections

from core.errors import Conflict
from core.knowledge_base import ensure_layout
from papers.imports import RawItem, import_records
from papers.models import Paper
from papers.schemas import PaperRecord
from papers.services import paper_upsert
from projects.services import project_add_papers, project_create
from research_site.backup import ArchiveInvalid, backup_create, backup_restore

ROOT = Path(__file__).resolve().parents[2]
PDF_BYTES = b"%PDF-1.4\n" + bytes(range(256)) * 40 + b"\n%%EOF\n"
ASSET_TEXT = "# Summary\n\nÜber attention — résumé.\n".encode()

sqlite_only = pytest.mark.skipif(
    connection.vendor != "sqlite", reason="SQLite backups; PostgreSQL has its own test"
)


@pytest.fixture(autouse=True)
def _no_embeddings(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False  # not what is tested here, and slow to load


@pytest.fixture
def knowledge_base(tmp_path: Path) -> Path:
    """A knowledge base folder with a PDF, an asset and an engine plugin in it."""
    directory = tmp_path / "kb"
    ensure_layout(directory)
    (directory / "downloads" / "vaswani2017attention.pdf").write_bytes(PDF_BYTES)
    (directory / "assets" / "1").mkdir()
    (directory / "assets" / "1" / "summary-brief.md").write_bytes(ASSET_TEXT)
    (directory / "engines" / "my_engine.json").write_text('{"id": "my_engine"}')
    (directory / "cache" / "stale.bin").write_bytes(b"cache")
    (directory / "exports" / "old.bib").write_text("@misc{x}")
    return directory


def library(make_paper: Callable[..., Paper]) -> None:
    first = make_paper(keywords=["attention", "transformers"], doi="10.1/a")
    second = make_paper("BERT", authors=["Jacob Devlin"], year=2019, keywords=["pretraining"])
    project = project_create(name="Survey", description="kept")
    project_add_papers(project=project, paper_ids=[first.pk, second.pk])


def restore_subprocess(archive: Path, directory: Path, *extra: str, database_url: str = "") -> Any:
    env = {**os.environ, "RESEARCH_DIRECTORY": str(directory), "DATABASE_URL": database_url}
    env.pop("REDIS_URL", None)
    return subprocess.run(
        [sys.executable, "manage.py", "restore", str(archive), *extra],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip


def sqlite_rows(path: Path, query: str) -> list[tuple[Any, ...]]:
    with sqlite3.connect(path) as db:
        # Django's check constraints call REGEXP, which integrity_check evaluates
        db.create_function("REGEXP", 2, lambda p, s: s is not None and bool(re.search(p, s)))
        return db.execute(query).fetchall()


def tree(directory: Path) -> dict[str, str]:
    """Every file below `directory` (temp/ aside) with its sha256."""
    return {
        str(path.relative_to(directory)): hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(directory.rglob("*"))
        if path.is_file() and path.relative_to(directory).parts[0] != "temp"
    }


def manifest_of(archive: Path) -> dict[str, Any]:
    with tarfile.open(archive) as tar:
        member = tar.extractfile("manifest.json")
        assert member is not None
        return dict(json.load(member))


# --- SQLite round trip and consistency -------------------------------------------------


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_round_trip_keeps_the_library_and_files_byte_for_byte(
    make_paper: Callable[..., Paper], knowledge_base: Path, tmp_path: Path
) -> None:
    library(make_paper)
    result = backup_create(directory=knowledge_base)
    assert result.path.parent == knowledge_base / "backups"
    assert result.path.stat().st_mode & 0o777 == 0o600
    manifest = manifest_of(result.path)
    assert manifest["backend"] == "sqlite"
    assert manifest["counts"] == {"papers": 2, "projects": 1}
    listed = {entry["path"] for entry in manifest["files"]}
    assert "files/engines/my_engine.json" in listed
    assert not any("cache" in name or "exports" in name for name in listed)

    restored = tmp_path / "restored"
    done = restore_subprocess(result.path, restored)
    assert done.returncode == 0, done.stderr
    assert "2 papers, 1 projects" in done.stdout
    db = restored / "research.db"
    assert sqlite_rows(db, "SELECT count(*) FROM papers_paper") == [(2,)]
    assert sqlite_rows(db, "SELECT name, description FROM projects_project") == [("Survey", "kept")]
    assert sqlite_rows(db, "SELECT count(*) FROM projects_projectpaper") == [(2,)]
    keywords = sqlite_rows(db, "SELECT name FROM papers_keyword ORDER BY name")
    assert [k for (k,) in keywords] == ["attention", "pretraining", "transformers"]
    assert (restored / "downloads" / "vaswani2017attention.pdf").read_bytes() == PDF_BYTES
    assert (restored / "assets" / "1" / "summary-brief.md").read_bytes() == ASSET_TEXT
    assert not (restored / "cache" / "stale.bin").exists()
    assert not (restored / "exports" / "old.bib").exists()
    # the library is not empty any more: a second restore needs --force
    again = restore_subprocess(result.path, restored)
    assert again.returncode == 2 and "--force" in again.stderr
    assert restore_subprocess(result.path, restored, "--force").returncode == 0


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_backup_while_papers_are_written_is_a_consistent_snapshot(
    make_paper: Callable[..., Paper], tmp_path: Path
) -> None:
    make_paper()
    stop = threading.Event()
    written: list[int] = []
    errors: list[str] = []

    def writer() -> None:
        try:
            while not stop.is_set():
                index = len(written)
                record = PaperRecord.build(
                    title=f"Concurrent paper {index}", authors=[f"Writer {index}"], year=2020
                )
                paper_upsert(record=record)
                written.append(index)
        except Exception as exc:  # collected: asserted empty below
            errors.append(f"{type(exc).__name__}: {exc}")
        finally:
            connection.close()

    thread = threading.Thread(target=writer)
    thread.start()
    archives: list[Path] = []
    bounds: list[tuple[int, int]] = []
    try:
        while len(written) < 5 and thread.is_alive():
            stop.wait(0.01)
        for _ in range(3):
            committed_before = len(written) + 1  # + the first paper
            archives.append(backup_create(directory=tmp_path).path)
            bounds.append((committed_before, len(written) + 2))  # + one not yet counted
    finally:
        stop.set()
        thread.join(30)
    assert errors == []
    seen = []
    for archive, (low, high) in zip(archives, bounds, strict=True):
        with tarfile.open(archive) as tar:
            tar.extract("database/research.db", tmp_path / archive.stem, filter="data")
        copy = tmp_path / archive.stem / "database" / "research.db"
        assert sqlite_rows(copy, "PRAGMA integrity_check") == [("ok",)]
        (papers,) = sqlite_rows(copy, "SELECT count(*) FROM papers_paper")[0]
        assert manifest_of(archive)["counts"]["papers"] == papers
        # every commit made before the backup began is in it (a copy of the file alone
        # would miss those still in the WAL); none made after it ended
        assert low <= papers <= high
        # every paper came with its author in one transaction: none is half-written
        orphans = sqlite_rows(
            copy,
            "SELECT count(*) FROM papers_paper p WHERE NOT EXISTS "
            "(SELECT 1 FROM papers_paperauthor a WHERE a.paper_id = p.paper_id)",
        )
        assert orphans == [(0,)]
        seen.append(papers)
    assert 1 < seen[0] <= seen[-1] <= Paper.objects.count()
    assert Paper.objects.count() > seen[0]  # the writer really ran beside the backups


@sqlite_only
def test_an_archive_from_an_older_version_is_upgraded_on_restore(tmp_path: Path) -> None:
    """A knowledge base still at the first migrations (an older release) is backed up by
    the real command; restoring it applies every later migration."""
    old = tmp_path / "old"
    env = {**os.environ, "RESEARCH_DIRECTORY": str(old), "DATABASE_URL": ""}
    env.pop("REDIS_URL", None)
    script = (
        "import django; django.setup(); from django.core.management import call_command;"
        "call_command('migrate', 'papers', '0001', verbosity=0);"
        "call_command('migrate', 'projects', '0001', verbosity=0);"
        "call_command('backup', '--quiet')"
    )
    env["DJANGO_SETTINGS_MODULE"] = "research_site.settings"
    made = subprocess.run(
        [sys.executable, "-c", script],
        env=env, cwd=ROOT, capture_output=True, text=True, timeout=120,
    )  # fmt: skip
    assert made.returncode == 0, made.stderr
    (archive,) = (old / "backups").iterdir()
    old_papers = sqlite_rows(
        old / "research.db", "SELECT name FROM django_migrations WHERE app = 'papers'"
    )
    assert old_papers == [("0001_initial",)]
    restored = tmp_path / "restored"
    done = restore_subprocess(archive, restored)
    assert done.returncode == 0, done.stderr
    applied = sqlite_rows(
        restored / "research.db", "SELECT app, name FROM django_migrations WHERE app = 'papers'"
    )
    assert ("papers", "0004_pdfs_and_annotations") in applied
    assert sqlite_rows(restored / "research.db", "SELECT count(*) FROM papers_paperpdf") == [(0,)]


# --- archives that must change nothing -------------------------------------------------


def sqlite_target(directory: Path) -> dict[str, str]:
    return {"ENGINE": "django.db.backends.sqlite3", "NAME": str(directory / "research.db")}


@pytest.fixture
def archive(make_paper: Callable[..., Paper], knowledge_base: Path) -> Path:
    """A good archive of the test database (either backend: the checks come first)."""
    make_paper()
    return backup_create(directory=knowledge_base).path


@pytest.fixture
def occupied(tmp_path: Path) -> Path:
    """A knowledge base holding a library of its own (a database file and a PDF)."""
    directory = tmp_path / "occupied"
    ensure_layout(directory)
    with sqlite3.connect(directory / "research.db") as db:
        db.execute("CREATE TABLE papers_paper (id integer primary key)")
        db.execute("INSERT INTO papers_paper VALUES (1)")
    (directory / "downloads" / "mine.pdf").write_bytes(b"%PDF mine")
    return directory


def damage_flip(path: Path) -> None:
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def damage_truncate(path: Path) -> None:
    path.write_bytes(path.read_bytes()[: path.stat().st_size * 2 // 3])


def damage_tamper(path: Path) -> None:
    """A well-formed archive whose PDF was replaced after the manifest was written."""
    members = []
    with tarfile.open(path) as tar:
        for member in tar:
            handle = tar.extractfile(member)
            data = handle.read() if handle else b""
            if member.name.endswith(".pdf"):
                data, member.size = b"%PDF evil", len(b"%PDF evil")
            members.append((member, data))
    with tarfile.open(path, "w:gz") as tar:
        for member, data in members:
            tar.addfile(member, io.BytesIO(data))


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("damage", [damage_flip, damage_truncate, damage_tamper])
def test_a_damaged_archive_is_refused_and_changes_nothing(
    archive: Path, occupied: Path, damage: Callable[[Path], None]
) -> None:
    damage(archive)
    before = tree(occupied)
    with pytest.raises(ArchiveInvalid):
        backup_restore(
            archive=archive, force=True, directory=occupied, database=sqlite_target(occupied)
        )
    assert tree(occupied) == before
    assert list((occupied / "temp").iterdir()) == []  # the staging folder is gone too


@pytest.mark.django_db(transaction=True)
def test_restore_command_exits_2_with_the_reason(archive: Path) -> None:
    damage_truncate(archive)
    with pytest.raises(CommandError, match="corrupt or truncated") as error:
        call_command("restore", str(archive), "--force")
    assert error.value.returncode == 2


@sqlite_only
@pytest.mark.django_db(transaction=True)
def test_a_non_empty_library_is_not_replaced_without_force(archive: Path, occupied: Path) -> None:
    before = tree(occupied)
    with pytest.raises(Conflict, match="1 papers, files in downloads/"):
        backup_restore(archive=archive, directory=occupied, database=sqlite_target(occupied))
    assert tree(occupied) == before


def evil_archive(path: Path, name: str, kind: bytes = tarfile.REGTYPE) -> Path:
    with tarfile.open(path, "w:gz") as tar:
        member = tarfile.TarInfo(name)
        member.type = kind
        if kind == tarfile.SYMTYPE:
            member.linkname = "/etc/passwd"
            tar.addfile(member)
        else:
            member.size = 4
            tar.addfile(member, io.BytesIO(b"evil"))
    return path


@pytest.mark.parametrize(
    ("name", "kind"),
    [
        ("../escaped.txt", tarfile.REGTYPE),
        ("/tmp/absolute.txt", tarfile.REGTYPE),
        ("files/assets/../../../escaped.txt", tarfile.REGTYPE),
        ("files/downloads/link.pdf", tarfile.SYMTYPE),
        ("files/downloads/device", tarfile.CHRTYPE),
        ("research.db", tarfile.REGTYPE),
    ],
)
def test_member_names_that_could_leave_the_knowledge_base_are_refused(
    tmp_path: Path, name: str, kind: bytes
) -> None:
    directory = tmp_path / "deep" / "kb"
    ensure_layout(directory)
    path = evil_archive(tmp_path / "evil.tar.gz", name, kind)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    with pytest.raises(ArchiveInvalid):
        backup_restore(
            archive=path, force=True, directory=directory, database=sqlite_target(directory)
        )
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


# --- PostgreSQL ------------------------------------------------------------------------


@pytest.fixture
def private_database() -> Iterator[dict[str, Any]]:
    """A fresh PostgreSQL database beside the test one, dropped afterwards."""
    if connection.vendor != "postgresql":
        pytest.skip("DATABASE_URL is not PostgreSQL")
    if not (shutil.which("pg_dump") and shutil.which("pg_restore")):
        pytest.skip("pg_dump / pg_restore are not on PATH")
    import psycopg

    settings_dict = dict(connections["default"].settings_dict)
    name = f"backup_restore_{uuid.uuid4().hex[:12]}"
    admin = {
        "host": settings_dict.get("HOST") or None,
        "port": settings_dict.get("PORT") or None,
        "user": settings_dict.get("USER") or None,
        "password": settings_dict.get("PASSWORD") or None,
        "dbname": "postgres",
        "autocommit": True,
    }
    with psycopg.connect(**admin) as db:
        db.execute(f'CREATE DATABASE "{name}"')
    try:
        yield {**settings_dict, "NAME": name}
    finally:
        with psycopg.connect(**admin) as db:
            db.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


@pytest.mark.django_db(transaction=True)
def test_postgresql_round_trip_into_a_fresh_database(
    make_paper: Callable[..., Paper],
    knowledge_base: Path,
    tmp_path: Path,
    private_database: dict[str, Any],
) -> None:
    import psycopg

    library(make_paper)
    result = backup_create(directory=knowledge_base)
    assert manifest_of(result.path)["counts"] == {"papers": 2, "projects": 1}
    target = private_database
    url = (
        f"postgres://{target['USER']}:{target.get('PASSWORD') or ''}@{target['HOST']}:"
        f"{target.get('PORT') or 5432}/{target['NAME']}"
    )
    restored = tmp_path / "restored"
    done = restore_subprocess(result.path, restored, database_url=url)
    assert done.returncode == 0, done.stderr
    conninfo = {k.lower(): v for k, v in target.items() if k in ("HOST", "PORT", "USER")}
    with psycopg.connect(**conninfo, password=target.get("PASSWORD"), dbname=target["NAME"]) as db:
        assert db.execute("SELECT count(*) FROM papers_paper").fetchone() == (2,)
        assert db.execute("SELECT name FROM projects_project").fetchall() == [("Survey",)]
        keywords = db.execute("SELECT name FROM papers_keyword ORDER BY name").fetchall()
        assert keywords == [("attention",), ("pretraining",), ("transformers",)]
    assert (restored / "downloads" / "vaswani2017attention.pdf").read_bytes() == PDF_BYTES
    refused = restore_subprocess(result.path, restored, database_url=url)
    assert refused.returncode == 2 and "not empty" in refused.stderr


# --- imports stopped half-way -----------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_an_import_stopped_inside_a_batch_leaves_no_half_batch_and_reruns_cleanly(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The process dies (here: an unexpected error) after the second batch's papers were
    inserted but before their links: that whole batch is rolled back, the first stays,
    and running the import again completes it without duplicates."""
    import papers.services

    items = [
        RawItem(f"line {i}", {"title": f"Batch paper {i}", "authors": [f"A {i}"], "year": 2020})
        for i in range(25)
    ]
    real_write_links = papers.services._write_links

    def crash_in_second_batch(records: list[PaperRecord], paper_ids: list[int]) -> None:
        if any(r.title == "Batch paper 15" for r in records):
            assert Paper.objects.filter(title="Batch paper 15").exists()  # inserted...
            raise RuntimeError("killed")
        real_write_links(records, paper_ids)

    def build(data: dict[str, Any]) -> PaperRecord:
        return PaperRecord.build(**data)

    monkeypatch.setattr(papers.services, "_write_links", crash_in_second_batch)
    with pytest.raises(RuntimeError, match="killed"):
        import_records(items, build=build, batch_size=10)
    assert Paper.objects.count() == 10  # ...and rolled back with the rest of its batch
    monkeypatch.setattr(papers.services, "_write_links", real_write_links)
    report = import_records(items, build=build, batch_size=10)
    assert (report.created, report.unchanged, report.failed) == (15, 10, 0)
    again = import_records(items, build=build, batch_size=10)
    assert (again.created, again.updated, again.unchanged) == (0, 0, 25)
    assert Paper.objects.count() == 25
    assert Paper.objects.filter(author_links__isnull=True).count() == 0


@pytest.mark.django_db(transaction=True)
def test_backup_without_pg_dump_exits_2_and_says_so(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if connection.vendor != "postgresql":
        pytest.skip("SQLite needs no external tool")
    monkeypatch.setenv("PATH", str(tmp_path))  # no pg_dump in it
    with pytest.raises(CommandError, match="pg_dump was not found on PATH") as error:
        call_command("backup", "--output", str(tmp_path), "--quiet")
    assert error.value.returncode == 2
    assert list(tmp_path.iterdir()) == []  # no partial archive


# --- archives that unpack to more than they should ---------------------------------------


def bomb_archive(path: Path, declared: int, sent: int) -> Path:
    """A gzip holding one database member whose header declares `declared` bytes, followed
    by `sent` zero bytes (a truncated member when sent < declared): a few KB on disk."""
    member = tarfile.TarInfo("database/research.db")
    member.size = declared
    with gzip.open(path, "wb") as out:
        out.write(member.tobuf(format=tarfile.GNU_FORMAT))
        zeros = bytes(1024 * 1024)
        for start in range(0, sent, len(zeros)):
            out.write(zeros[: min(len(zeros), sent - start)])
    return path


def test_a_member_declaring_2_gib_is_refused_before_a_byte_is_written(tmp_path: Path) -> None:
    directory = tmp_path / "kb"
    ensure_layout(directory)
    path = bomb_archive(tmp_path / "bomb.tar.gz", declared=2 * 1024**3, sent=4 * 1024 * 1024)
    written: list[int] = []
    real_open = Path.open

    def watching_open(self: Path, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if "x" in mode or "w" in mode:
            written.append(1)
        return real_open(self, mode, *args, **kwargs)

    with (
        pytest.MonkeyPatch.context() as patch,
        pytest.raises(ArchiveInvalid, match=r"'database/research\.db' holds 2,147,483,648 bytes"),
    ):
        patch.setattr(Path, "open", watching_open)
        backup_restore(
            archive=path, force=True, directory=directory, database=sqlite_target(directory)
        )
    assert written == []  # refused on its header: no staging file was even opened
    assert list((directory / "temp").iterdir()) == []


def test_members_adding_up_past_the_budget_are_refused_and_leave_nothing(
    tmp_path: Path,
) -> None:
    directory = tmp_path / "kb"
    ensure_layout(directory)
    path = tmp_path / "many.tar.gz"
    with tarfile.open(path, "w:gz") as tar:
        for index in range(3):
            member = tarfile.TarInfo(f"files/downloads/{index}.pdf")
            member.size = 400_000
            tar.addfile(member, io.BytesIO(bytes(member.size)))
    with pytest.raises(ArchiveInvalid, match=r"'files/downloads/2\.pdf' holds 400,000 bytes"):
        backup_restore(
            archive=path,
            force=True,
            directory=directory,
            database=sqlite_target(directory),
            max_bytes=1_000_000,
        )
    assert list((directory / "temp").iterdir()) == []


def test_the_default_budget_is_a_hundred_times_the_archive(tmp_path: Path) -> None:
    directory = tmp_path / "kb"
    ensure_layout(directory)
    # 64 MiB of zeros gzip to about 64 KB: a thousand times the archive's size.
    path = bomb_archive(tmp_path / "zeros.tar.gz", declared=64 * 1024**2, sent=64 * 1024**2)
    with pytest.raises(ArchiveInvalid, match="at most 100x its size"):
        backup_restore(
            archive=path, force=True, directory=directory, database=sqlite_target(directory)
        )
    assert list((directory / "temp").iterdir()) == []


def test_restore_command_refuses_a_bomb_with_exit_2(tmp_path: Path) -> None:
    path = bomb_archive(tmp_path / "bomb.tar.gz", declared=2 * 1024**3, sent=1024)
    with pytest.raises(CommandError, match="hostile archive") as error:
        call_command("restore", str(path), "--force")
    assert error.value.returncode == 2

"""Running an import: records in batches, bad ones reported and skipped, a summary at the end.

Every importer (JSONL, BibTeX, Zotero) turns its source into `RawItem`s: a location a
person can find in the file ("line 12", "entry smith2020 (line 40)") and either the raw
mapping or the error met while reading it. This module does the rest the same way for all
of them. The import commands, which can also file what they import into a project, are in
projects/imports.py.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import threading
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import DatabaseError, connection, transaction

from core.errors import DomainError
from papers.models import Paper, PaperAuthor
from papers.schemas import PaperRecord
from papers.search import kept_counts, semantic
from papers.search.postings import DOC_TABLE, POSTING_TABLE
from papers.services import OnSaved, UpsertOutcome, papers_upsert

logger = logging.getLogger(__name__)

# Records a transaction. On SQLite a transaction holds the database's one write lock, and
# a server's writes beside an import wait for it (busy_timeout, 10 s): 2,000 keeps a batch
# to seconds. 10,000 made a 300k slice's records 1.24x faster on SQLite (fewer passes over
# the posting table's pages: a batch's postings go to every part of its key) but held the
# lock ~16 s a batch; on PostgreSQL the ACL corpus took the same time either way
# (docs/SCALE.md). `--batch-size 10000` is for a first import nothing else writes beside.
DEFAULT_BATCH_SIZE = 2_000
MAX_REPORTED_FAILURES = 50

# Exit codes of every import command.
EXIT_OK = 0
EXIT_SOME_FAILED = 1
EXIT_BAD_INPUT = 2


@dataclass
class RawItem:
    location: str
    data: dict[str, Any] | None = None
    error: str | None = None


@dataclass
class ImportReport:
    created: int = 0
    updated: int = 0
    unchanged: int = 0
    failures: list[tuple[str, str]] = field(default_factory=list)
    paper_ids: list[int] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return len(self.failures)

    @property
    def total(self) -> int:
        return self.created + self.updated + self.unchanged + self.failed

    def add(self, outcome: UpsertOutcome) -> None:
        self.created += outcome.created
        self.updated += outcome.updated
        self.unchanged += outcome.unchanged
        self.paper_ids.extend(outcome.paper_ids)

    def summary(self) -> str:
        return (
            f"{self.total} records: {self.created} created, {self.updated} updated, "
            f"{self.unchanged} skipped (already in the library, unchanged), {self.failed} failed"
        )


def import_records(
    items: Iterable[RawItem],
    *,
    build: Callable[[dict[str, Any]], PaperRecord],
    on_saved: OnSaved | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_progress: Callable[[int], None] | None = None,
    after_batch: Callable[[list[int]], None] | None = None,
) -> ImportReport:
    """Build records from raw items and upsert them in batches; `on_saved` gets each
    batch's paper_ids inside the batch's transaction (projects.imports files them into a
    project), `after_batch` once it has committed (the import commands make their
    vectors meanwhile).

    A record that cannot be built is reported with its location and skipped. If a batch
    fails in the database, its records are retried one by one so that only the bad one is
    skipped and the rest still import.
    """
    report = ImportReport()
    batch: list[tuple[str, PaperRecord]] = []
    seen, bulk, unfolded = 0, False, 0
    with contextlib.ExitStack() as stack:

        def flush() -> None:
            nonlocal bulk, unfolded
            # From the first batch flushed after more than EAGER_INLINE_MAX records, the
            # import is a bulk change throughout (semantic.bulk_writes): a small batch late
            # in a large import must not embed inline nor start the second tier's backfill,
            # which would then embed the whole import beside it. A small import (a few
            # BibTeX entries) is embedded at once, like any edit.
            if seen > semantic.EAGER_INLINE_MAX and not bulk:
                stack.enter_context(semantic.bulk_writes())
                stack.enter_context(_bulk_page_cache())
                stack.enter_context(_bulk_garbage_collection())
                bulk = True
            written = len(report.paper_ids)
            _flush(batch, report, on_saved)
            if after_batch is not None:
                after_batch(report.paper_ids[written:])
            unfolded += len(batch)
            if unfolded >= FOLD_EVERY:
                kept_counts.fold()
                unfolded = 0

        for item in items:
            seen += 1
            if on_progress:
                on_progress(1)
            if item.error is not None or item.data is None:
                report.failures.append((item.location, item.error or "empty record"))
                continue
            try:
                batch.append((item.location, build(item.data)))
            except DomainError as error:
                report.failures.append((item.location, error.message))
                continue
            if len(batch) >= batch_size:
                flush()
                batch = []
        if batch:
            flush()
    kept_counts.fold()
    return report


# SQLite's page cache during a bulk import, in KiB (its default: 2,000 KiB a connection).
BULK_SQLITE_CACHE_KIB = 256 * 1024


@contextlib.contextmanager
def _bulk_page_cache() -> Iterator[None]:
    """SQLite: a page cache of BULK_SQLITE_CACHE_KIB for this connection while a bulk
    import runs, the connection's own size restored after. A batch's postings go to
    random places of the posting table's primary key (term ids are hashes): past a few
    tens of thousands of papers, the default 2 MB cache spills pages it has just changed
    to the WAL and reads them back many times within one transaction, and the postings
    took most of the import's time (py-spy: 77 % of it at 40k papers of the ACL corpus). The
    cache grows only as pages are used, up to the size set. PostgreSQL: nothing to do."""
    if connection.vendor != "sqlite":
        yield
        return
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA cache_size")
        (before,) = cursor.fetchone()
        cursor.execute(f"PRAGMA cache_size = -{int(BULK_SQLITE_CACHE_KIB)}")
    try:
        yield
    finally:
        with connection.cursor() as cursor:
            cursor.execute(f"PRAGMA cache_size = {int(before)}")


# Python's cyclic garbage collector during a bulk import: a first generation this large.
BULK_GC_THRESHOLD = 50_000


@contextlib.contextmanager
def _bulk_garbage_collection() -> Iterator[None]:
    """Python's garbage collector during a bulk import: what was allocated before (Django,
    the app, the caches) frozen out of its scans, and collections of the young objects
    less often. A batch allocates a few hundred thousand objects that live until it is
    written (records, rows, postings); with the defaults their allocation kept starting
    full collections, each scanning every object of the process (the 10k ACL sample:
    1.3 s of collections in a 10 s import, 0.2 s with these settings; gc.callbacks).
    The thresholds and the frozen objects are restored after; memory held by cycles is
    freed, later, as before."""
    global _bulk_gc_users, _bulk_gc_threshold, _bulk_gc_froze
    with _bulk_gc_lock:  # imports in threads of one process: the first sets, the last restores
        _bulk_gc_users += 1
        if _bulk_gc_users == 1:
            _bulk_gc_threshold = gc.get_threshold()
            # A server froze its start-up's objects itself (search/warmup.py): left as is.
            _bulk_gc_froze = gc.get_freeze_count() == 0
            if _bulk_gc_froze:
                gc.freeze()
            gc.set_threshold(BULK_GC_THRESHOLD, *_bulk_gc_threshold[1:])
    try:
        yield
    finally:
        with _bulk_gc_lock:
            _bulk_gc_users -= 1
            if _bulk_gc_users == 0:
                gc.set_threshold(*_bulk_gc_threshold)
                if _bulk_gc_froze:
                    gc.unfreeze()


_bulk_gc_lock = threading.Lock()
_bulk_gc_users = 0
_bulk_gc_threshold: tuple[int, ...] = gc.get_threshold()
_bulk_gc_froze = False


def _flush(
    batch: list[tuple[str, PaperRecord]], report: ImportReport, on_saved: OnSaved | None
) -> None:
    try:
        report.add(papers_upsert(records=[r for _, r in batch], on_saved=on_saved))
        return
    except (DatabaseError, DomainError, ValueError) as error:
        logger.warning(
            "The batch %s to %s failed (%s); retrying its records one at a time",
            batch[0][0],
            batch[-1][0],
            error,
        )
    for location, record in batch:
        try:
            with transaction.atomic():
                report.add(papers_upsert(records=[record], on_saved=on_saved))
        except (DatabaseError, DomainError, ValueError) as error:
            report.failures.append((location, str(error)))


# The changes of the counts the database keeps (papers/search/kept_counts.py: authors'
# links, papers per venue and year) are folded after every batch that brings an import's
# unfolded records to this many, and at its end: what the whole library's facets read as
# pending stays small during a long import.
FOLD_EVERY = 20_000

# After this many new papers an import refreshes PostgreSQL's table statistics.
ANALYZE_AFTER = 1000


def analyze_tables() -> None:
    """Refresh PostgreSQL's planner statistics after a bulk import: until autovacuum gets
    to it, the planner sees the tables as tiny and scans every author for one paper's
    details (27 ms instead of 6 ms per get_paper_details on the ACL corpus). SQLite: no-op."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        if connection.get_autocommit() and not connection.in_atomic_block:
            # The search postings (tens of millions of rows after a big import) are read
            # by index-only scans, which need the visibility map that VACUUM sets: on the
            # ACL corpus local_search p50 268 -> 72 ms, p95 853 -> 253 ms. So are the
            # papers' year and venue indexes by a search's filters (a year filter's count
            # at 95k papers: 44 ms by a sequential scan, 2 ms after VACUUM), and the author
            # links by an author filter. Autovacuum would get there, if it is on, later.
            tables = [POSTING_TABLE, DOC_TABLE, Paper._meta.db_table, PaperAuthor._meta.db_table]
            cursor.execute(f"VACUUM (ANALYZE) {', '.join(tables)}")
        cursor.execute("ANALYZE")

"""Running an import: records in batches, bad ones reported and skipped, a summary at the end.

Every importer (JSONL, BibTeX) turns its file into `RawItem`s: a location a person can
find in the file ("line 12", "entry smith2020 (line 40)") and either the raw mapping or
the error met while reading it. This module does the rest the same way for all of them.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.db import DatabaseError, connection, transaction
from tqdm import tqdm

from core.bootstrap import prepare_knowledge_base
from core.errors import DomainError
from papers.schemas import PaperRecord
from papers.services import UpsertOutcome, papers_upsert

logger = logging.getLogger(__name__)

DEFAULT_BATCH_SIZE = 2000
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
    project_ids: tuple[str, ...] = (),
    batch_size: int = DEFAULT_BATCH_SIZE,
    on_progress: Callable[[int], None] | None = None,
) -> ImportReport:
    """Build records from raw items and upsert them in batches.

    A record that cannot be built is reported with its location and skipped. If a batch
    fails in the database, its records are retried one by one so that only the bad one is
    skipped and the rest still import.
    """
    report = ImportReport()
    batch: list[tuple[str, PaperRecord]] = []
    for item in items:
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
            _flush(batch, report, project_ids)
            batch = []
    if batch:
        _flush(batch, report, project_ids)
    return report


def _flush(
    batch: list[tuple[str, PaperRecord]], report: ImportReport, project_ids: tuple[str, ...]
) -> None:
    try:
        report.add(papers_upsert(records=[r for _, r in batch], project_ids=project_ids))
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
                report.add(papers_upsert(records=[record], project_ids=project_ids))
        except (DatabaseError, DomainError, ValueError) as error:
            report.failures.append((location, str(error)))


# After this many new papers an import refreshes PostgreSQL's table statistics.
ANALYZE_AFTER = 1000


def analyze_tables() -> None:
    """Refresh PostgreSQL's planner statistics after a bulk import: until autovacuum gets
    to it, the planner sees the tables as tiny and scans every author for one paper's
    details (27 ms instead of 6 ms per get_paper_details on the ACL corpus). SQLite: no-op."""
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE")


class ImportCommand(BaseCommand):
    """Shared shape of import commands: a file, --project, --batch-size, a progress bar,
    a summary line, failures listed with their location, and the exit codes above."""

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", help="File to import ('-' for standard input).")
        parser.add_argument("--project", help="Also add every imported paper to this project.")
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
        parser.add_argument(
            "--no-progress", action="store_true", help="Do not draw a progress bar."
        )

    def read_items(self, path: str, options: dict[str, Any]) -> Iterator[RawItem]:
        raise NotImplementedError

    def build_record(self, data: dict[str, Any]) -> PaperRecord:
        raise NotImplementedError

    def handle(self, *args: Any, **options: Any) -> None:
        path = options["path"]
        batch_size = options["batch_size"]
        if batch_size < 1 or batch_size > 50_000:
            raise CommandError(
                "--batch-size must be between 1 and 50000", returncode=EXIT_BAD_INPUT
            )
        # A fresh or older knowledge base is created / upgraded first, as `serve` does.
        prepare_knowledge_base(create_admin=False)
        project_ids: tuple[str, ...] = ()
        if options.get("project"):
            project_ids = (self.resolve_project(options["project"]),)
        try:
            items = self.read_items(path, options)
            with tqdm(
                desc="Importing",
                unit=" records",
                file=sys.stderr,
                disable=options["no_progress"] or None,
                mininterval=0.5,
            ) as bar:
                report = import_records(
                    items,
                    build=self.build_record,
                    project_ids=project_ids,
                    batch_size=batch_size,
                    on_progress=bar.update,
                )
        except (OSError, UnicodeDecodeError) as error:
            raise CommandError(f"Cannot read {path}: {error}", returncode=EXIT_BAD_INPUT) from None
        if report.created >= ANALYZE_AFTER:
            analyze_tables()
        for location, reason in report.failures[:MAX_REPORTED_FAILURES]:
            self.stderr.write(f"skipped {location}: {reason}")
        if report.failed > MAX_REPORTED_FAILURES:
            self.stderr.write(f"... and {report.failed - MAX_REPORTED_FAILURES} more failures")
        self.stdout.write(report.summary())
        if report.total == 0:
            raise CommandError(f"{path} holds no records.", returncode=EXIT_BAD_INPUT)
        if report.failed:
            raise CommandError(
                f"{report.failed} of {report.total} records failed", returncode=EXIT_SOME_FAILED
            )

    def resolve_project(self, ref: str) -> str:
        """The project id for --project; a new project is created when none has that name."""
        from core.errors import NotFound
        from projects.selectors import project_get
        from projects.services import project_create

        try:
            return project_get(ref=ref).id
        except NotFound:
            try:
                return project_create(name=ref).id
            except DomainError as error:
                raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None

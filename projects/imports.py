"""The import commands' shared shape: they fill the library (papers/imports.py) and, with
--project, file every imported paper into a project, which is why they live here, a layer
above papers (docs/LAYERS.md). `manage.py import_bibtex`, `import_jsonl`, `import_zotero`.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from core.bootstrap import prepare_knowledge_base
from core.errors import DomainError, NotFound
from core.progress import progress_bar
from papers.imports import (
    ANALYZE_AFTER,
    DEFAULT_BATCH_SIZE,
    EXIT_BAD_INPUT,
    EXIT_SOME_FAILED,
    MAX_REPORTED_FAILURES,
    RawItem,
    analyze_tables,
    import_records,
)
from papers.schemas import PaperRecord
from projects.selectors import project_get
from projects.services import project_create, projects_adder


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
        on_saved = None
        if options.get("project"):
            on_saved = projects_adder([self.resolve_project(options["project"])])
        try:
            items = self.read_items(path, options)
            with progress_bar(
                desc="Importing",
                unit=" records",
                hidden=options["no_progress"],
            ) as bar:
                report = import_records(
                    items,
                    build=self.build_record,
                    on_saved=on_saved,
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
        try:
            return project_get(ref=ref).id
        except NotFound:
            try:
                return project_create(name=ref).id
            except DomainError as error:
                raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None

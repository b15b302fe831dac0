"""Import papers, citekeys and PDFs from a running Zotero through Better BibTeX.

    manage.py import_zotero                         # every item in every library
    manage.py import_zotero --search "attention" --project transformers
    manage.py import_zotero --library "My Library" --no-pdfs

Each item's Better BibTeX citekey becomes the paper's citekey when it is free (and a lookup
alias either way); its Zotero key is recorded, so importing again updates the same papers.
Each item's first PDF that exists on this machine is attached to its paper.

Exit codes as for every import: 0 all imported, 1 some items or PDFs failed (listed),
2 Zotero/Better BibTeX not reachable or nothing to import.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.progress import progress_bar
from papers.imports import (
    DEFAULT_BATCH_SIZE,
    EXIT_BAD_INPUT,
    EXIT_SOME_FAILED,
    MAX_REPORTED_FAILURES,
)
from papers.zotero.errors import ZoteroError
from papers.zotero.imports import zotero_import
from projects.imports import ImportCommand, add_embeddings_argument, add_open_access_argument
from projects.services import projects_adder


class Command(ImportCommand):
    help = (
        "Import items, citekeys and local PDFs from a running Zotero with Better BibTeX "
        "(ZOTERO_BBT_URL)."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--search",
            help="Only items matching this quick search (title, creators, year, citekey).",
        )
        parser.add_argument("--library", help="Only this Zotero library (name or id).")
        parser.add_argument("--project", help="Also add every imported paper to this project.")
        parser.add_argument("--batch-size", type=int, default=DEFAULT_BATCH_SIZE)
        parser.add_argument("--no-pdfs", action="store_true", help="Do not attach PDFs.")
        add_open_access_argument(parser)
        add_embeddings_argument(parser)
        parser.add_argument(
            "--no-progress", action="store_true", help="Do not draw a progress bar."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        batch_size = options["batch_size"]
        if batch_size < 1 or batch_size > 50_000:
            raise CommandError(
                "--batch-size must be between 1 and 50000", returncode=EXIT_BAD_INPUT
            )
        on_saved = None
        if options.get("project"):
            on_saved = projects_adder([self.resolve_project(options["project"])])
        alongside = self.vectors_alongside(options)
        try:
            with progress_bar(
                desc="Importing",
                unit=" items",
                hidden=options["no_progress"],
            ) as bar:
                result = zotero_import(
                    search=options.get("search"),
                    library=options.get("library"),
                    on_saved=on_saved,
                    batch_size=batch_size,
                    attach_pdfs=not options["no_pdfs"],
                    on_progress=bar.update,
                    after_batch=alongside.add if alongside else None,
                )
        except ZoteroError as error:
            raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None
        failures = result.records.failures + result.pdf_failures
        for location, reason in failures[:MAX_REPORTED_FAILURES]:
            self.stderr.write(f"skipped {location}: {reason}")
        if len(failures) > MAX_REPORTED_FAILURES:
            self.stderr.write(f"... and {len(failures) - MAX_REPORTED_FAILURES} more failures")
        for location, path in result.pdfs_missing[:MAX_REPORTED_FAILURES]:
            self.stderr.write(f"warning: the PDF of {location} is not on this machine: {path}")
        self.stdout.write(result.summary())
        self.embed_imported(result.records.paper_ids, options, alongside)
        self.find_open_access(result.records.paper_ids, options)
        if result.records.total == 0:
            where = [f"matching {options['search']!r}"] if options.get("search") else []
            where += [f"in library {options['library']!r}"] if options.get("library") else []
            what = " ".join(where) or "at all"
            raise CommandError(f"Zotero has no items {what}.", returncode=EXIT_BAD_INPUT)
        if result.failed:
            raise CommandError(
                f"{result.failed} of {result.records.total} items or their PDFs failed",
                returncode=EXIT_SOME_FAILED,
            )

"""Make papers' source markdown from their PDFs (what get_paper_source returns).

    manage.py pdf_to_markdown 12 vaswani2017attention
    manage.py pdf_to_markdown --all --keep-imported

Attaching or downloading a PDF does this already, in the background; run it after
improving the converter, or to replace a source. Named papers are converted even when
their source was imported by hand, unless --keep-imported.

Exit codes: 0 done, 1 some papers failed, 2 bad arguments.
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ResearchCommand
from core.errors import DomainError
from papers.imports import EXIT_BAD_INPUT, EXIT_SOME_FAILED
from papers.models import PaperPdf
from papers.pdf.services import pdf_source_markdown_save
from papers.selectors import paper_get


class Command(ResearchCommand):
    help = "Convert papers' PDFs to markdown and store it as their source (get_paper_source)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("papers", nargs="*", help="Papers: paper_id, citekey or id.")
        parser.add_argument("--all", action="store_true", help="Every paper that has a PDF.")
        parser.add_argument(
            "--keep-imported",
            action="store_true",
            help="Keep sources that were imported rather than converted.",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if bool(options["papers"]) == bool(options["all"]):
            raise CommandError("Name papers or give --all (not both).", returncode=EXIT_BAD_INPUT)
        if options["all"]:
            ids = list(PaperPdf.objects.order_by("paper_id").values_list("paper_id", flat=True))
        else:
            try:
                ids = [paper_get(ref=ref).pk for ref in options["papers"]]
            except DomainError as error:
                raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None
        converted = kept = failed = 0
        for paper_id in ids:
            try:
                asset = pdf_source_markdown_save(
                    paper_id=paper_id, replace=not options["keep_imported"]
                )
            except DomainError as error:
                failed += 1
                self.stderr.write(f"paper {paper_id}: {error.message}")
                continue
            if asset is None:
                kept += 1
            else:
                converted += 1
        self.stdout.write(f"Converted {converted}, kept {kept} imported, {failed} failed.")
        if failed:
            raise CommandError(f"{failed} of {len(ids)} papers failed", returncode=EXIT_SOME_FAILED)

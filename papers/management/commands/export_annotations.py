"""Export a paper's annotations as JSON, markdown or the annotated PDF.

    manage.py export_annotations 12                          # JSON on stdout
    manage.py export_annotations vaswani2017attention --format markdown -o notes.md
    manage.py export_annotations 12 --format pdf             # into <directory>/exports/

The PDF is the paper's PDF with every annotation drawn in as a real PDF annotation
(highlights and squares, with colours and comments), which any PDF reader shows.

Exit codes: 0 exported, 1 the paper has no PDF (pdf format), 2 bad arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ResearchCommand
from core.errors import DomainError, InvalidInput, NotFound
from papers.imports import EXIT_BAD_INPUT, EXIT_SOME_FAILED
from papers.pdf.selectors import annotations_export_text
from papers.pdf.services import annotations_export
from papers.selectors import paper_get


class Command(ResearchCommand):
    help = "Export a paper's annotations as JSON (default), markdown or the annotated PDF."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paper", help="The paper: paper_id, citekey or id.")
        parser.add_argument("--format", choices=["json", "markdown", "pdf"], default="json")
        parser.add_argument(
            "-o",
            "--output",
            help="Write here (default: stdout; for pdf, <directory>/exports/<file>).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        output = Path(options["output"]) if options["output"] else None
        try:
            paper = paper_get(ref=options["paper"])
            if output is None and options["format"] != "pdf":
                self.stdout.write(
                    annotations_export_text(paper=paper, format=options["format"]), ending=""
                )
                return
            written = annotations_export(paper=paper, format=options["format"], output=output)
        except (NotFound, InvalidInput) as error:
            if error.code == "pdf_not_available":
                raise CommandError(error.message, returncode=EXIT_SOME_FAILED) from None
            raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None
        except DomainError as error:
            raise CommandError(error.message, returncode=EXIT_SOME_FAILED) from None
        self.stdout.write(f"Wrote {written}")

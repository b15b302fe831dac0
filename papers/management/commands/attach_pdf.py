"""Attach a PDF to a paper: a local file, or a download of the paper's pdf_url.

    manage.py attach_pdf 12 paper.pdf
    manage.py attach_pdf vaswani2017attention --download
    manage.py attach_pdf 12 --download --url https://arxiv.org/pdf/1706.03762

The file is copied into the knowledge base's downloads/ folder (the original stays where
it is); attaching the same file again changes nothing. The paper's source markdown is made
from the PDF afterwards (a hand-imported source is kept). Downloads run here, in the
foreground, so their errors are shown.

Exit codes: 0 attached (or unchanged), 1 the file or download was refused, 2 bad arguments.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ResearchCommand
from core.errors import DomainError, InvalidInput, NotFound
from papers.imports import EXIT_BAD_INPUT, EXIT_SOME_FAILED
from papers.models import PaperPdf
from papers.pdf.files import stored_intact
from papers.pdf.services import pdf_attach_file, pdf_download
from papers.selectors import paper_get


class Command(ResearchCommand):
    help = "Attach a local PDF file to a paper, or download the paper's pdf_url (--download)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("paper", help="The paper: paper_id, citekey or id.")
        parser.add_argument("path", nargs="?", help="The PDF file to attach.")
        parser.add_argument(
            "--download", action="store_true", help="Download the paper's pdf_url instead."
        )
        parser.add_argument("--url", help="With --download: this URL instead of pdf_url.")

    def handle(self, *args: Any, **options: Any) -> None:
        if bool(options["path"]) == bool(options["download"]):
            raise CommandError(
                "Give a PDF file or --download (not both).", returncode=EXIT_BAD_INPUT
            )
        if options["url"] and not options["download"]:
            raise CommandError("--url goes with --download.", returncode=EXIT_BAD_INPUT)
        try:
            paper = paper_get(ref=options["paper"])
            current = PaperPdf.objects.filter(paper=paper).first()
            # A damaged or lost stored copy is put back by attaching the file again.
            before = (
                current.sha256
                if current and stored_intact(current.file_name, current.sha256)
                else None
            )
            if options["download"]:
                record = pdf_download(paper_id=paper.pk, url=options["url"])
            else:
                record = pdf_attach_file(paper_id=paper.pk, path=Path(options["path"]))
        except (NotFound, InvalidInput) as error:
            raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None
        except DomainError as error:
            raise CommandError(error.message, returncode=EXIT_SOME_FAILED) from None
        if before == record.sha256:
            self.stdout.write(f"Paper {paper.pk} already has this PDF; nothing changed.")
            return
        self.stdout.write(
            f"Attached to paper {paper.pk}: {record.file_name} ({record.page_count} pages, "
            f"{record.size} bytes, sha256 {record.sha256[:12]})."
        )

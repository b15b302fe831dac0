"""How much of the library has its PDF: overall, per project, per paper source, per PDF
origin (projects.coverage.library_pdf_coverage).

    manage.py pdf_coverage            # tables
    manage.py pdf_coverage --json     # the same numbers as JSON (as GET /api/papers/pdf-coverage)
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandParser

from core.commands import ResearchCommand
from projects.coverage import library_pdf_coverage


class Command(ResearchCommand):
    help = "How many papers have a PDF, per project, per source and per PDF origin."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--json", action="store_true", help="Print JSON instead of tables.")

    def handle(self, *args: Any, **options: Any) -> None:
        coverage = library_pdf_coverage()
        if options["json"]:
            self.stdout.write(json.dumps(coverage, indent=2, ensure_ascii=False))
            return
        self.stdout.write(
            f"{coverage['with_pdf']} of {coverage['papers']} papers have a PDF "
            f"({coverage['share']:.0%})."
        )
        self._table(
            "project", [(r["name"], r["papers"], r["with_pdf"]) for r in coverage["by_project"]]
        )
        self._table(
            "source", [(r["source"], r["papers"], r["with_pdf"]) for r in coverage["by_source"]]
        )
        if coverage["by_origin"]:
            self.stdout.write("")
            width = max(len("origin"), *(len(r["origin"]) for r in coverage["by_origin"]))
            self.stdout.write(f"{'origin':<{width}}  {'PDFs':>7}")
            for row in coverage["by_origin"]:
                self.stdout.write(f"{row['origin']:<{width}}  {row['pdfs']:>7}")

    def _table(self, label: str, rows: list[tuple[str, int, int]]) -> None:
        if not rows:
            return
        width = max(len(label), *(len(name) for name, _, _ in rows))
        self.stdout.write("")
        self.stdout.write(f"{label:<{width}}  {'papers':>7}  {'with PDF':>8}  {'share':>6}")
        for name, papers, with_pdf in rows:
            share = f"{with_pdf / papers:.0%}" if papers else "-"
            self.stdout.write(f"{name:<{width}}  {papers:>7}  {with_pdf:>8}  {share:>6}")

"""Find the text of stored highlights again at their boxes: `manage.py
rederive_highlight_text [--apply] [--project P ...] [--paper ID ...]`
(papers/pdf/highlight_text.py). A dry run unless --apply."""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ResearchCommand
from core.errors import NotFound
from core.progress import progress_bar
from papers.imports import EXIT_BAD_INPUT
from papers.models import Annotation, Paper
from papers.pdf.highlight_text import highlight_texts_rederive
from papers.scoping import papers_in_project, project_find


class Command(ResearchCommand):
    help = (
        "Find each highlight's text again at its stored boxes, as a highlight made today "
        "stores it (a hyphen that only broke a word at a line end joined: 'cor- pus' -> "
        "'corpus'), and list the highlights whose text would change. Only the text changes, "
        "and only with --apply."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--apply", action="store_true", help="Write the new texts.")
        parser.add_argument(
            "--project", nargs="+", metavar="PROJECT", help="Only these projects' papers."
        )
        parser.add_argument("--paper", type=int, nargs="+", metavar="ID", help="Only these.")
        parser.add_argument(
            "--no-progress", action="store_true", help="Do not draw a progress bar."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        paper_ids = self._scope(options["project"], options["paper"])
        highlights = Annotation.objects.filter(kind=Annotation.Kind.HIGHLIGHT)
        if paper_ids is not None:
            highlights = highlights.filter(paper_id__in=paper_ids)
        papers = highlights.values("paper_id").distinct().count()
        with progress_bar(
            total=papers, desc="Highlights", unit=" papers", hidden=options["no_progress"]
        ) as bar:
            outcome = highlight_texts_rederive(
                paper_ids=paper_ids, apply=options["apply"], progress=lambda _: bar.update(1)
            )
        for change in outcome.changes:
            self.stdout.write(
                f"highlight {change.annotation_id} (paper {change.paper_id}, page "
                f"{change.page}): {change.old!r} -> {change.new!r}"
            )
        for reason in outcome.no_pdf:
            self.stderr.write(reason)
        verb = "changed" if options["apply"] else "would change (a dry run: --apply writes them)"
        left = []
        if outcome.not_found:
            left.append(f"{outcome.not_found} not found at their boxes, left as they are")
        if outcome.pdf_replaced:
            left.append(f"{outcome.pdf_replaced} made on a PDF since replaced, left as they are")
        self.stdout.write(
            f"{outcome.checked} highlights checked: {len(outcome.changes)} {verb}, "
            f"{outcome.unchanged} already right" + "".join(f", {part}" for part in left)
        )

    def _scope(self, projects: list[str] | None, papers: list[int] | None) -> list[int] | None:
        """The papers asked for (those of the projects and the ids given), or None for all."""
        if projects is None and papers is None:
            return None
        ids: set[int] = set()
        for ref in projects or []:
            try:
                project = project_find(ref=ref)
            except NotFound as error:
                raise CommandError(str(error), returncode=EXIT_BAD_INPUT) from error
            ids.update(papers_in_project(project).values_list("pk", flat=True))
        if papers:
            known = set(Paper.objects.filter(pk__in=papers).values_list("pk", flat=True))
            if missing := sorted(set(papers) - known):
                raise CommandError(
                    f"No paper {', '.join(map(str, missing))} in the library.",
                    returncode=EXIT_BAD_INPUT,
                )
            ids.update(known)
        return sorted(ids)

"""Build the passage index of the library's PDFs: `manage.py reindex_passages
[--paper ID ...] [--all] [--force]` (papers/passages/services.py)."""

from __future__ import annotations

import sys
from collections import Counter
from typing import Any

from django.core.management.base import CommandError, CommandParser
from tqdm import tqdm

from core.commands import ResearchCommand
from core.progress import progress_bar
from papers.imports import EXIT_BAD_INPUT, EXIT_SOME_FAILED
from papers.models import Paper
from papers.passages.services import IndexOutcome, passages_reindex, passages_reindex_ids


class Command(ResearchCommand):
    help = (
        "Split papers' PDFs into passages for search_passages and find_quote. --all: every "
        "paper with a PDF (and papers whose PDF is gone lose their passages); --paper: "
        "these papers. PDFs whose passages are current are skipped unless --force."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        which = parser.add_mutually_exclusive_group(required=True)
        which.add_argument("--all", action="store_true", help="Every paper with a PDF.")
        which.add_argument("--paper", type=int, nargs="+", metavar="ID", help="paper_id(s).")
        parser.add_argument("--force", action="store_true", help="Re-split unchanged PDFs.")
        parser.add_argument(
            "--no-progress", action="store_true", help="Do not draw a progress bar."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        if options["all"]:
            ids = passages_reindex_ids()
        else:
            ids = sorted(set(options["paper"]))
            missing = set(ids) - set(Paper.objects.filter(pk__in=ids).values_list("pk", flat=True))
            if missing:
                raise CommandError(
                    f"No paper {', '.join(map(str, sorted(missing)))} in the library.",
                    returncode=EXIT_BAD_INPUT,
                )
        statuses: Counter[str] = Counter()
        pages = passages = 0
        # Log lines (one per paper) go through tqdm.write, above the bar, not through it.
        with progress_bar(
            total=len(ids), desc="Passages", unit=" papers", hidden=options["no_progress"]
        ) as bar:

            def advance(outcome: IndexOutcome) -> None:
                if outcome.error:
                    tqdm.write(f"paper {outcome.paper_id}: {outcome.error}", file=sys.stderr)
                bar.update(1)

            outcomes = passages_reindex(paper_ids=ids, force=options["force"], progress=advance)
        for outcome in outcomes:
            statuses[outcome.status] += 1
            pages += outcome.pages if outcome.status == "indexed" else 0
            passages += outcome.passages
        counts = ", ".join(f"{count} {status}" for status, count in sorted(statuses.items()))
        noun = "paper" if len(ids) == 1 else "papers"
        self.stdout.write(
            f"{len(ids)} {noun}: {counts or 'nothing to do'} ({passages} passages from "
            f"{pages} pages)"
        )
        if statuses["failed"]:
            raise CommandError(
                f"{statuses['failed']} of {len(ids)} papers failed", returncode=EXIT_SOME_FAILED
            )

"""Take back out the papers an import merged into another by title alone (papers/merges.py
says how they are found and rebuilt).

    manage.py split_wrong_merges --dry-run   # what it would split
    manage.py split_wrong_merges             # split; a second run finds nothing
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandParser

from core.commands import ResearchCommand
from papers.merges import wrong_merge_split, wrong_merges_find


class Command(ResearchCommand):
    help = "Split papers that earlier imports merged by title alone back into their records."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would be split; change nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = options["dry_run"]
        papers = records = 0
        for merge in wrong_merges_find():
            if not dry_run:
                merge = wrong_merge_split(merge)
            papers += 1
            records += len(merge.records)
            named = ", ".join(r.source_id or r.abstract[:40] + "..." for r in merge.records)
            created = f" -> {', '.join(merge.new_ids)}" if merge.new_ids else ""
            self.stdout.write(
                f"{merge.human_id} {merge.title[:60]}: {len(merge.records)} "
                f"{'to split' if dry_run else 'split'} ({named}){created}"
            )
        verb = "would be split out of" if dry_run else "split out of"
        self.stdout.write(f"{records} records {verb} {papers} papers.")

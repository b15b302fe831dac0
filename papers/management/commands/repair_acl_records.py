"""Bring ACL records imported before the journal / pages / author-name mapping up to date
(papers/acl_repair.py says what changes).

    manage.py repair_acl_records --dry-run   # what it would change
    manage.py repair_acl_records             # change it; a second run changes nothing
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from django.core.management.base import CommandParser

from core.commands import ResearchCommand
from papers.acl_repair import acl_records_repair


class Command(ResearchCommand):
    help = "Split ACL journal volumes and issues, normalise pages, drop name footnote marks."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--dry-run", action="store_true", help="Report what would change; change nothing."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        dry_run = options["dry_run"]
        papers, fields = 0, Counter[str]()
        for repair in acl_records_repair(dry_run=dry_run):
            papers += 1
            fields.update(repair.changes)
            if repair.new_human_id:
                self.stdout.write(f"id changed: {repair.old_human_id} -> {repair.new_human_id}")
        counts = ", ".join(f"{name} {count}" for name, count in sorted(fields.items()))
        verb = "would be repaired" if dry_run else "repaired"
        self.stdout.write(f"{papers} ACL papers {verb}" + (f" ({counts})." if counts else "."))

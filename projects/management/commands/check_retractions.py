"""manage.py check_retractions: check papers for retractions and corrections now.

Without options: the papers due (never checked, or over RETRACTION_RECHECK_DAYS ago), as
the scheduled task does. --project: that project's papers, least recently checked first.
Alerts go to every project holding a flagged paper (projects/retractions.py).
"""

from __future__ import annotations

import json
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.bootstrap import prepare_knowledge_base
from core.commands import ResearchCommand
from core.errors import DomainError
from projects.retractions import retractions_check, retractions_check_due


class Command(ResearchCommand):
    help = (
        "Ask Crossref and OpenAlex whether papers with a DOI were retracted or corrected; "
        "flag them and alert the projects holding them. Prints the counts as JSON."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", help="Check this project's papers (id or name).")
        parser.add_argument(
            "--limit", type=int, default=None, help="At most this many papers (default: "
            "RETRACTION_CHECK_LIMIT)."
        )  # fmt: skip

    def handle(self, *args: Any, **options: Any) -> None:
        limit = options["limit"]
        if limit is not None and limit < 1:
            raise CommandError("--limit must be at least 1")
        prepare_knowledge_base(create_admin=False)
        try:
            if options["project"]:
                summary = retractions_check(project_ref=options["project"], limit=limit).summary()
            else:
                summary = retractions_check_due(limit=limit)
        except DomainError as error:
            raise CommandError(error.message) from None
        self.stdout.write(json.dumps(summary, indent=2))
        if summary["failed"]:
            raise CommandError(f"{summary['failed']} papers could not be checked (engines failed)")

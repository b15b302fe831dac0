"""Run saved searches now: the due ones (as the scheduler would), one by name, or all.

manage.py run_saved_searches --due
manage.py run_saved_searches --name "llm evaluation"
manage.py run_saved_searches            # every enabled saved search
"""

from __future__ import annotations

from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ResearchCommand
from core.errors import NotFound
from projects.models import SavedSearch, SavedSearchRun
from projects.watch import scheduler, services


class Command(ResearchCommand):
    help = "Run saved searches: --due (claimed as the scheduler does), --name X, or all."

    def add_arguments(self, parser: CommandParser) -> None:
        group = parser.add_mutually_exclusive_group()
        group.add_argument("--due", action="store_true", help="Only those due now.")
        group.add_argument("--name", help="One saved search, by name.")

    def handle(self, *args: Any, **options: Any) -> None:
        if options["name"]:
            try:
                searches = [services.saved_search_get(name=options["name"])]
            except NotFound as exc:
                raise CommandError(str(exc)) from None
            trigger = SavedSearchRun.Trigger.MANUAL
        elif options["due"]:
            ids = scheduler.saved_searches_claim_due()
            searches = list(SavedSearch.objects.filter(pk__in=ids).select_related("project"))
            trigger = SavedSearchRun.Trigger.SCHEDULE
        else:
            searches = list(SavedSearch.objects.filter(enabled=True).select_related("project"))
            trigger = SavedSearchRun.Trigger.MANUAL
        for search in searches:
            run = services.saved_search_run(search=search, trigger=trigger)
            failed = [e for e, s in run.engines.items() if s["status"] != "ok"]
            note = f" (failed: {', '.join(failed)})" if failed else ""
            self.stdout.write(
                f"{search.name}: {run.status}, {run.found} found, {run.new} new{note}"
            )
        if not searches:
            self.stdout.write("No saved search to run.")

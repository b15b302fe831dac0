"""`manage.py audit_export [--format csv|json] [--project ID] [--user NAME] [--since
ISO] [--until ISO] [--output FILE]`: the audit log (docs/AUTH.md), oldest first."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.utils import timezone

from core.audit_export import FORMATS, entries_filtered, export_lines
from core.commands import ResearchCommand


def _moment(text: str | None) -> datetime | None:
    if not text:
        return None
    try:
        moment = datetime.fromisoformat(text)
    except ValueError as error:
        raise CommandError(f"Not an ISO date or time: {text!r}") from error
    return timezone.make_aware(moment) if timezone.is_naive(moment) else moment


class Command(ResearchCommand):
    help = "Export the audit log as CSV or JSON."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--format", choices=FORMATS, default="csv")
        parser.add_argument("--project", default="", help="A project's id.")
        parser.add_argument("--user", default="", help="A user name, or 'system'.")
        parser.add_argument("--since", help="From this date or time (ISO 8601).")
        parser.add_argument("--until", help="Before this date or time (ISO 8601).")
        parser.add_argument("--output", help="A file (default: standard output).")

    def handle(self, *args: Any, **options: Any) -> None:
        rows = entries_filtered(
            project=options["project"],
            user=options["user"],
            since=_moment(options["since"]),
            until=_moment(options["until"]),
        ).iterator(chunk_size=2000)
        if not options["output"]:
            for piece in export_lines(rows, options["format"]):
                self.stdout.write(piece, ending="")
            return
        with open(options["output"], "w", encoding="utf-8", newline="") as out:
            for piece in export_lines(rows, options["format"]):
                out.write(piece)

"""Restore the knowledge base from an archive made by `backup` (docs/BACKUP.md).

    manage.py restore PATH [--force] [--max-bytes N]

Stop the server (and Celery workers) first: the database is replaced under them. The
archive is checked completely before anything changes; a library that holds papers,
projects or files is only replaced with --force. Migrations then upgrade an archive made
by an older version. An archive that would unpack to more than 100 times its size or
more than the disk has free is refused before the member is written (--max-bytes sets
another budget). Exit codes: 0 restored, 1 the restore failed (pg_restore failing),
2 refused (corrupt or unsafe archive, non-empty library without --force, pg_restore
missing).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ResearchCommand
from core.errors import DomainError
from research_site.backup import BackupError, ToolMissing, backup_restore

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class Command(ResearchCommand):
    help = "Replace the database, downloads/, assets/ and engines/ with a backup archive."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", type=Path, help="The archive written by `backup`.")
        parser.add_argument(
            "--force", action="store_true", help="Replace a knowledge base that is not empty."
        )
        parser.add_argument(
            "--max-bytes",
            type=int,
            default=None,
            help="Most bytes the archive may unpack to (default: 100x its size, at most "
            "the free disk space).",
        )

    def handle(self, *args: Any, **options: Any) -> None:
        try:
            result = backup_restore(
                archive=options["path"], force=options["force"], max_bytes=options["max_bytes"]
            )
        except ToolMissing as error:
            raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None
        except BackupError as error:
            raise CommandError(error.message, returncode=EXIT_FAILED) from None
        except DomainError as error:
            raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None
        except OSError as error:
            raise CommandError(f"Restore failed: {error}", returncode=EXIT_FAILED) from None
        counts = ", ".join(f"{count} {name}" for name, count in result.counts.items())
        self.stdout.write(
            f"Restored the {result.backend} backup of {result.created_at} ({counts}, "
            f"{result.files} files) and applied migrations."
        )

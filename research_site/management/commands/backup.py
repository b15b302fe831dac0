"""Back up the knowledge base into one tar.gz archive (docs/BACKUP.md).

    manage.py backup [--output PATH]

Safe while the server runs: the database is copied online (SQLite backup API) or dumped
with pg_dump. The archive (mode 0600) goes to <directory>/backups/ unless --output names a
file or a folder. Exit codes: 0 written, 1 the backup failed (pg_dump failing), 2 it
cannot be made here (pg_dump missing, unusable --output).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import CommandError, CommandParser

from core.commands import ResearchCommand
from research_site.backup import BackupError, ToolMissing, backup_create

EXIT_FAILED = 1
EXIT_BAD_INPUT = 2


class Command(ResearchCommand):
    help = "Write an archive of the database, downloads/, assets/ and engines/."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "--output", type=Path, help="Archive file or folder (default <directory>/backups/)."
        )
        parser.add_argument("--quiet", action="store_true", help="Only the summary line.")

    def handle(self, *args: Any, **options: Any) -> None:
        def progress(message: str) -> None:
            if not options["quiet"]:
                self.stderr.write(f"backup: {message}")

        try:
            result = backup_create(output=options["output"], on_progress=progress)
        except ToolMissing as error:
            raise CommandError(error.message, returncode=EXIT_BAD_INPUT) from None
        except BackupError as error:
            raise CommandError(error.message, returncode=EXIT_FAILED) from None
        except OSError as error:
            raise CommandError(
                f"Cannot write the archive: {error}", returncode=EXIT_BAD_INPUT
            ) from None
        counts = ", ".join(f"{count} {name}" for name, count in result.counts.items())
        self.stdout.write(
            f"Backed up {result.backend} database ({counts}) and {result.files - 1} files "
            f"({result.bytes / 1_048_576:.1f} MiB) to {result.path}"
        )

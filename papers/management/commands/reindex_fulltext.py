"""Rebuild the full-text search indexes from the library: the database engine's (FTS5 /
tsvector) and the BM25 postings (papers/search/postings.py).

    manage.py reindex_fulltext [--batch-size 2000] [--no-progress]

Needed only when the index is suspected out of step (every write path keeps it in sync),
or on a knowledge base that recorded migration 0003 while it was still a placeholder:
the index tables and triggers are created first when they are missing.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

from django.core.management.base import CommandError, CommandParser
from django.db import DEFAULT_DB_ALIAS, connections, transaction

from core.commands import ResearchCommand
from core.progress import progress_bar
from papers.models import Paper
from papers.search.fulltext import FTS_TABLE, rebuild_index
from papers.search.postings import POSTING_TABLE, rebuild_postings


class Command(ResearchCommand):
    help = "Rebuild the full-text search indexes (FTS5 / tsvector, and the BM25 postings)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--batch-size", type=int, default=2000)
        parser.add_argument("--no-progress", action="store_true", help="No progress bar.")
        parser.add_argument("--database", default=DEFAULT_DB_ALIAS)

    def handle(self, *args: Any, **options: Any) -> None:
        if options["batch_size"] < 1:
            raise CommandError("--batch-size must be at least 1.")
        using = options["database"]
        connection = connections[using]
        started = time.monotonic()
        with transaction.atomic(using=using):
            if FTS_TABLE not in connection.introspection.table_names():
                migration = importlib.import_module("papers.migrations.0003_fulltext")
                migration.create_schema(connection)
            if POSTING_TABLE not in connection.introspection.table_names():
                # The tables, then the postings generation's triggers on them (SQLite:
                # 0010, PostgreSQL: 0016): without them, postings search holds in memory
                # would not be renewed after a change.
                for name in (
                    "0006_lexical_postings",
                    "0010_lexical_generation",
                    "0016_lexical_generation_postgresql",
                ):
                    importlib.import_module(f"papers.migrations.{name}").create_schema(connection)
            with progress_bar(
                total=2 * Paper.objects.using(using).count(),
                desc="Indexing",
                unit=" papers",
                hidden=options["no_progress"],
            ) as bar:
                count = rebuild_index(
                    batch_size=options["batch_size"], using=using, progress=bar.update
                )
                rebuild_postings(batch_size=options["batch_size"], using=using, progress=bar.update)
        self.stdout.write(f"Indexed {count} papers in {time.monotonic() - started:.1f} s.")

"""Import papers from JSON Lines: the ACL Anthology corpus format, this project's own
`export_library --format jsonl` output, or another collection's records (papers/jsonl.py
maps them). Gzipped files (.gz) and '-' (stdin) are accepted.

    manage.py import_jsonl ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from django.core.management.base import CommandParser

from papers.imports import RawItem
from papers.jsonl import open_text, read_jsonl, record_from_json
from papers.schemas import PaperRecord
from projects.imports import ImportCommand


class Command(ImportCommand):
    help = "Import papers from a JSON Lines file (.jsonl or .jsonl.gz; ACL Anthology format)."

    def add_arguments(self, parser: CommandParser) -> None:
        super().add_arguments(parser)
        parser.add_argument(
            "--source", default="jsonl", help="Source name for records that do not say."
        )

    def read_items(self, path: str, options: dict[str, Any]) -> Iterator[RawItem]:
        self.default_source = options["source"]
        if path != "-":
            open_text(path).close()  # fail early, before the progress bar, on a bad path
        return read_jsonl(path)

    def handle(self, *args: Any, **options: Any) -> None:
        self.repaired = 0
        try:
            super().handle(*args, **options)
        finally:
            if self.repaired:
                self.stdout.write(
                    f"{self.repaired} malformed Anthology URLs repaired (the originals are "
                    "kept under metadata.alternates.url)"
                )

    def build_record(self, data: dict[str, Any]) -> PaperRecord:
        record = record_from_json(data, self.default_source)
        if (record.metadata.get("alternates") or {}).get("url"):
            self.repaired += 1
        return record

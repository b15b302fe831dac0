"""Import papers from a RIS file (EndNote, Zotero, Mendeley, PubMed, Scopus, Web of Science
and most databases export it).

    manage.py import_ris pubmed-export.ris --project review

PMIDs are read from `AN` when the record's database (`DB`/`DP`) is PubMed or MEDLINE, and
PMCIDs from `C2` (the rule: papers/ris.py). Tags that map to no paper field are kept under
the paper's `metadata["ris"]`. Records without a title are listed with their number and
line and skipped.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from papers.imports import RawItem
from papers.ris import read_ris, record_from_ris
from papers.schemas import PaperRecord
from projects.imports import ImportCommand


class Command(ImportCommand):
    help = "Import papers from a RIS file (UTF-8; '-' for standard input)."

    def read_items(self, path: str, options: dict[str, Any]) -> Iterator[RawItem]:
        source: Path | str = sys.stdin.read() if path == "-" else Path(path)
        return read_ris(source)

    def build_record(self, data: dict[str, Any]) -> PaperRecord:
        return record_from_ris(data)

"""Import papers from a BibTeX or biblatex file.

    manage.py import_bibtex references.bib --project thesis

Every entry type is kept; each entry's key becomes the paper's citekey when it is free and
stays a lookup alias either way. Entries that cannot be read are listed with their key and
line and skipped; repeated keys and fields are reported as warnings.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from papers.bibtex import read_bibtex, record_from_bibtex
from papers.imports import RawItem
from papers.schemas import PaperRecord
from projects.imports import ImportCommand


class Command(ImportCommand):
    help = "Import papers from a BibTeX/biblatex file (UTF-8; '-' for standard input)."

    def read_items(self, path: str, options: dict[str, Any]) -> Iterator[RawItem]:
        # The whole file is parsed here, before the progress bar: a missing or unreadable
        # file fails at once (exit 2) and warnings come out in file order.
        source: Path | str = sys.stdin.read() if path == "-" else Path(path)
        return read_bibtex(source, on_warning=self._warn)

    def build_record(self, data: dict[str, Any]) -> PaperRecord:
        return record_from_bibtex(data)

    def _warn(self, location: str, message: str) -> None:
        self.stderr.write(f"warning: {location}: {message}")

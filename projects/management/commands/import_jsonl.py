"""Import papers from JSON Lines: the ACL Anthology corpus format, or this project's own
`export_library --format jsonl` output. Gzipped files (.gz) and '-' (stdin) are accepted.

    manage.py import_jsonl ../shared/corpus/acl/acl_anthology_2024-08_all.jsonl.gz
"""

from __future__ import annotations

import gzip
import io
import json
import re
import sys
from collections.abc import Iterator
from typing import IO, Any

from django.core.management.base import CommandParser

from engines.acl import anthology_pdf_url
from papers.imports import RawItem
from papers.schemas import PaperRecord
from projects.imports import ImportCommand

ACL_HOST = "aclanthology.org"
# The corpus glues some external addresses onto the Anthology's
# ("https://aclanthology.org/http://www.lrec-conf.org/proceedings/...pdf"): 4,638 records
# of the 2024-08 dump, LREC's PDFs, doi.org and Springer pages.
_GLUED_URL = re.compile(r"^https?://(?:www\.)?aclanthology\.org/+(https?:/+.+)$", re.IGNORECASE)


def open_text(path: str) -> IO[str]:
    if path == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_jsonl(path: str) -> Iterator[RawItem]:
    with open_text(path) as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            try:
                data = json.loads(line)
            except json.JSONDecodeError as error:
                yield RawItem(f"line {number}", error=f"not valid JSON ({error.msg})")
                continue
            if not isinstance(data, dict):
                yield RawItem(f"line {number}", error="not a JSON object")
                continue
            yield RawItem(f"line {number}", data=data)


def repaired_url(url: str) -> str | None:
    """The external address glued onto the Anthology's in a malformed corpus URL, with
    its `//` restored; None when `url` is not one of those."""
    match = _GLUED_URL.match(url.strip())
    if not match:
        return None
    return re.sub(r"^(https?):/+", r"\1://", match.group(1), flags=re.IGNORECASE)


def record_from_json(data: dict[str, Any], default_source: str = "jsonl") -> PaperRecord:
    """Map one JSON object to a PaperRecord. ACL records are recognised by their URL and
    keep their Anthology id and bibkey as identifiers; our own exports round-trip. A
    malformed ACL URL (`repaired_url`) is replaced by the address it holds, the original
    kept under metadata["alternates"]["url"]; its PDF address, if it is one, is used."""
    values = dict(data)
    # ACL records name it `url`; our own records carry it as both `url` and `source_url`.
    url = str(values.pop("url", "") or "")
    url = str(values.pop("source_url", "") or "") or url
    repaired = repaired_url(url) if "paper_id" not in values else None
    if repaired:
        values.setdefault("metadata", {}).setdefault("alternates", {})["url"] = url
        url = repaired
        if repaired.lower().endswith(".pdf") and not values.get("pdf_url"):
            values["pdf_url"] = repaired
    # Our own exports carry paper_id; an ACL paper exported from the library is ours too.
    is_acl = ("bibkey" in values or ACL_HOST in url or bool(repaired)) and "paper_id" not in values
    source = str(values.pop("source", None) or ("acl" if is_acl else default_source))
    identifiers = dict(values.pop("identifiers", None) or {})
    if is_acl:
        anthology_id = values.pop("id", None)
        if anthology_id:
            identifiers["acl"] = str(anthology_id)
        bibkey = values.pop("bibkey", None)
        if bibkey:
            identifiers["citekey"] = str(bibkey)
        venue_ids = values.pop("venue_ids", None) or []
        values["venue_short"] = venue_ids[0] if venue_ids else ""
        values.setdefault("source_id", str(anthology_id or ""))
        if anthology_id and not repaired and not values.get("pdf_url"):  # the corpus leaves it out
            values["pdf_url"] = anthology_pdf_url(str(anthology_id))
        venue = str(values.get("venue") or "")
        values["entry_type"] = "inproceedings" if "proceedings" in venue.lower() else "article"
        for name in ("collection", "year_source"):
            if values.get(name) is not None:
                values.setdefault("metadata", {})[name] = values.pop(name)
            else:
                values.pop(name, None)
    else:
        # Our own export: these are derived or local to the library they came from.
        derived = (
            "paper_id", "id", "authors_detail", "projects", "created_at", "updated_at",
            "publication", "has_pdf", "summaries", "annotation_count", "project_id",
        )  # fmt: skip
        source_id = values.pop("id", None)
        if "paper_id" not in values and source_id is not None and not values.get("source_id"):
            # A collection's own id (SciFact's, Cranfield's): the record keeps it.
            values["source_id"] = str(source_id)
        for name in derived:
            values.pop(name, None)
        if values.get("citekey"):
            values["preferred_citekey"] = values.pop("citekey")
    if isinstance(values.get("pages"), str):
        values["pages"] = values["pages"].replace("–", "--")
    values.pop("authors_string", None)
    return PaperRecord.build(
        **{k: v for k, v in values.items() if v is not None},
        source_url=url,
        identifiers=identifiers,
        source=source,
    )


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

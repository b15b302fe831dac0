"""Reading papers from JSON Lines: the ACL Anthology corpus format (mapped by
`papers.acl.acl_values`), this project's own `export_library --format jsonl` output, and
any other collection's records (SciFact's, Cranfield's), which keep their `id` as their
source id. Gzipped files (.gz) and '-' (standard input) are accepted.
"""

from __future__ import annotations

import gzip
import io
import json
import sys
from collections.abc import Iterator
from typing import IO, Any

from papers.acl import ACL_HOST, acl_values, repaired_url
from papers.imports import RawItem
from papers.schemas import PaperRecord

# Fields of our own export that are derived, or local to the library they came from.
_DERIVED = (
    "paper_id", "id", "authors_detail", "projects", "created_at", "updated_at",
    "publication", "has_pdf", "summaries", "annotation_count", "project_id",
)  # fmt: skip


def open_text(path: str) -> IO[str]:
    if path == "-":
        return io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8")
    return open(path, encoding="utf-8")


def read_jsonl(path: str) -> Iterator[RawItem]:
    """One RawItem a non-empty line, located by its line number."""
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


def record_from_json(data: dict[str, Any], default_source: str = "jsonl") -> PaperRecord:
    """Map one JSON object to a PaperRecord. ACL records are recognised by their URL or
    bibkey (`papers.acl.acl_values`); our own exports (they carry `paper_id`) round-trip;
    any other record keeps its `id` as `source_id`. A malformed ACL URL (`repaired_url`)
    is replaced by the address it holds, the original kept under
    metadata["alternates"]["url"]; its PDF address, if it is one, is used."""
    values = dict(data)
    # ACL records name it `url`; our own records carry it as both `url` and `source_url`.
    url = str(values.pop("url", "") or "")
    url = str(values.pop("source_url", "") or "") or url
    ours = "paper_id" in values
    repaired = repaired_url(url) if not ours else None
    if repaired:
        values.setdefault("metadata", {}).setdefault("alternates", {})["url"] = url
        url = repaired
        if repaired.lower().endswith(".pdf") and not values.get("pdf_url"):
            values["pdf_url"] = repaired
    is_acl = ("bibkey" in values or ACL_HOST in url or bool(repaired)) and not ours
    source = str(values.pop("source", None) or ("acl" if is_acl else default_source))
    if is_acl:
        # A repaired URL names a PDF elsewhere (or none): the Anthology's is not guessed.
        values = acl_values(values, derive_pdf=not repaired)
    else:
        source_id = values.pop("id", None)
        if not ours and source_id is not None and not values.get("source_id"):
            # A collection's own id (SciFact's, Cranfield's): the record keeps it.
            values["source_id"] = str(source_id)
        for name in _DERIVED:
            values.pop(name, None)
        if values.get("citekey"):
            values["preferred_citekey"] = values.pop("citekey")
        if isinstance(values.get("pages"), str):  # as it was stored: a round trip is exact
            values["pages"] = values["pages"].replace("–", "--")
    values.pop("authors_string", None)
    return PaperRecord.build(
        **{k: v for k, v in values.items() if v is not None},
        source_url=url,
        source=source,
    )

"""Importing a Zotero library through Better BibTeX: items (CSL-JSON) become library
records with their citekeys, and each item's local PDF is attached to its paper.

Everything Zotero is asked (the items, then their attachments) is asked before anything is
written, so a Zotero that stops answering half-way leaves the library untouched. Records
go through `papers.imports.import_records` like every other import (batches,
de-duplication, bad records reported and skipped); PDFs through
`papers.pdf.services.pdf_attach_file`.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core.errors import DomainError
from papers.identifiers import clean_text, normalize_arxiv_id, normalize_identifier
from papers.imports import DEFAULT_BATCH_SIZE, ImportReport, RawItem, import_records
from papers.models import PaperIdentifier, PaperPdf
from papers.pdf.services import pdf_attach_file
from papers.schemas import KEYWORD_MAX_LENGTH, PaperRecord
from papers.services import OnSaved
from papers.zotero.bbt import BetterBibTeXClient

# CSL item types -> the BibTeX entry types the library stores (Better BibTeX's choices).
CSL_ENTRY_TYPES = {
    "article-journal": "article",
    "article-magazine": "article",
    "article-newspaper": "article",
    "paper-conference": "inproceedings",
    "book": "book",
    "chapter": "incollection",
    "thesis": "phdthesis",
    "report": "techreport",
    "manuscript": "unpublished",
    "article": "misc",  # Zotero's preprints
    "webpage": "online",
    "post-weblog": "online",
    "dataset": "misc",
    "software": "software",
    "patent": "patent",
}
# CSL fields mapped onto the record; the rest is kept under metadata["csl"].
_MAPPED = {
    "id", "type", "title", "author", "issued", "container-title", "container-title-short",
    "journalAbbreviation", "volume", "issue", "page", "publisher", "DOI", "URL", "abstract",
    "keyword", "number", "citekey", "citation-key", "library", "note", "PMID", "PMCID",
}  # fmt: skip
ZOTERO_SCHEME = "zotero"
_ITEM_KEY = re.compile(r"/items/([A-Z0-9]{8})$")
_ARXIV_DOI = re.compile(r"^10\.48550/arxiv\.(.+)$", re.IGNORECASE)
_ARXIV_NOTE = re.compile(r"^\s*arxiv:\s*(\S+)", re.IGNORECASE | re.MULTILINE)
# Zotero's "Extra" field (CSL `note`) holds 'PMID: 31452104' / 'PMCID: PMC6739224' lines.
_EXTRA_LINE = re.compile(r"^\s*(PMID|PMCID|OpenReview):\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)


def item_key(item: dict[str, Any]) -> str:
    """The 8-character Zotero item key at the end of the CSL `id` (the item's URI)."""
    match = _ITEM_KEY.search(str(item.get("id") or ""))
    return match.group(1) if match else ""


def record_from_csl(item: dict[str, Any]) -> PaperRecord:
    """One Better BibTeX search result (CSL-JSON plus `citekey` and `library`) as a
    record: the citekey becomes the preferred citekey (and a lookup alias), the Zotero
    item key an identifier, so importing again updates the same paper.

    Raises InvalidInput for an item that cannot be a paper (no title, an absurd year).
    """
    key = item_key(item)
    citekey = clean_text(item.get("citekey") or item.get("citation-key"))
    year, publication_date = _issued(item.get("issued"))
    identifiers = {}
    if citekey:
        identifiers["citekey"] = citekey
    if key:
        identifiers[ZOTERO_SCHEME] = key
    identifiers.update(_external_ids(item))
    metadata: dict[str, Any] = {
        "zotero": {
            "key": key,
            "library": clean_text(item.get("library")),
            "uri": clean_text(item.get("id")),
        }
    }
    extras = {name: value for name, value in item.items() if name not in _MAPPED and value}
    if extras:
        metadata["csl"] = extras
    return PaperRecord.build(
        title=item.get("title") or "",
        authors=[
            _person(person) for person in item.get("author") or [] if isinstance(person, dict)
        ],
        year=year,
        publication_date=publication_date,
        entry_type=CSL_ENTRY_TYPES.get(str(item.get("type") or ""), "misc"),
        venue=item.get("container-title") or "",
        venue_short=item.get("container-title-short") or item.get("journalAbbreviation") or "",
        volume=str(item.get("volume") or ""),
        number=str(item.get("issue") or ""),
        pages=str(item.get("page") or "").replace("–", "--"),
        publisher=item.get("publisher") or "",
        doi=item.get("DOI") or None,
        arxiv_id=_arxiv_id(item),
        source_url=item.get("URL") or "",
        abstract=item.get("abstract") or "",
        keywords=_keywords(item.get("keyword")),
        source="zotero",
        source_id=key,
        preferred_citekey=citekey,
        identifiers=identifiers,
        metadata=metadata,
    )


def _person(person: dict[str, Any]) -> dict[str, str]:
    literal = clean_text(person.get("literal"))
    if literal:
        return {"name": literal}
    family = clean_text(
        " ".join(str(person.get(part) or "") for part in ("non-dropping-particle", "family"))
    )
    given = clean_text(person.get("given"))
    return {"name": f"{given} {family}".strip(), "family": family, "given": given}


def _issued(issued: Any) -> tuple[str | None, str]:
    """CSL `issued` -> (year, 'YYYY[-MM[-DD]]'): date-parts first, then raw/literal text."""
    if not isinstance(issued, dict):
        return None, ""
    parts = issued.get("date-parts")
    if isinstance(parts, list) and parts and isinstance(parts[0], list) and parts[0]:
        try:
            numbers = [int(str(part)) for part in parts[0][:3]]
        except ValueError:
            numbers = []
        if numbers:
            date = f"{numbers[0]:04d}" + "".join(f"-{n:02d}" for n in numbers[1:])
            return str(numbers[0]), date
    text = clean_text(issued.get("raw") or issued.get("literal"))
    match = re.search(r"\b(\d{4})\b", text)
    return (match.group(1), "") if match else (None, "")


def _arxiv_id(item: dict[str, Any]) -> str | None:
    doi_match = _ARXIV_DOI.match(clean_text(item.get("DOI")))
    note_match = _ARXIV_NOTE.search(str(item.get("note") or ""))
    candidates = [
        doi_match.group(1) if doi_match else None,
        item.get("number") if "arxiv" in str(item.get("publisher") or "").lower() else None,
        item.get("URL"),
        note_match.group(1) if note_match else None,
    ]
    return next((found for c in candidates if c and (found := normalize_arxiv_id(c))), None)


def _external_ids(item: dict[str, Any]) -> dict[str, str]:
    """PMID, PMCID and OpenReview id: CSL's `PMID` / `PMCID` variables (Zotero turns Extra
    lines into them), else the 'PMID: ...' lines of the Extra field (CSL `note`)."""
    found = {}
    for scheme, variable in (("pmid", "PMID"), ("pmcid", "PMCID")):
        value = normalize_identifier(scheme, item.get(variable))
        if value:
            found[scheme] = value
    for name, raw in _EXTRA_LINE.findall(str(item.get("note") or "")):
        scheme = name.lower()
        value = normalize_identifier(scheme, raw)
        if value:
            found.setdefault(scheme, value)
    return found


def _keywords(raw: Any) -> list[str]:
    """CSL `keyword` ('a, b, c'); tags too long to be keywords are left out."""
    names = raw if isinstance(raw, list) else str(raw or "").split(",")
    cleaned = (" ".join(str(name).split()) for name in names)
    return [name for name in cleaned if name and len(name) <= KEYWORD_MAX_LENGTH]


# --- the import ----------------------------------------------------------------------------


@dataclass
class ZoteroImportReport:
    versions: dict[str, Any]
    records: ImportReport
    pdfs_attached: int = 0
    pdfs_unchanged: int = 0
    pdfs_missing: list[tuple[str, str]] = field(default_factory=list)
    pdf_failures: list[tuple[str, str]] = field(default_factory=list)

    @property
    def failed(self) -> int:
        return self.records.failed + len(self.pdf_failures)

    def summary(self) -> str:
        return (
            f"{self.records.summary()}; PDFs: {self.pdfs_attached} attached, "
            f"{self.pdfs_unchanged} already attached, "
            f"{len(self.pdfs_missing)} not found on this machine, "
            f"{len(self.pdf_failures)} failed"
        )


def zotero_import(
    *,
    search: str | None = None,
    library: str | None = None,
    on_saved: OnSaved | None = None,
    batch_size: int = DEFAULT_BATCH_SIZE,
    attach_pdfs: bool = True,
    on_progress: Callable[[int], None] | None = None,
    after_batch: Callable[[list[int]], None] | None = None,
) -> ZoteroImportReport:
    """Import the Zotero items matching `search` (all regular items by default) with
    their citekeys, and attach each item's first local PDF to its paper.

    Side effects: papers created or merged (`on_saved` and `after_batch` get their
    paper_ids, batch by batch, as import_records says), PDFs copied
    into the knowledge base. Raises ZoteroUnreachable / ZoteroTimeout / ZoteroError when
    Better BibTeX cannot be asked (nothing is written then). Bad items and PDFs that cannot
    be attached are reported, not raised.
    """
    client = BetterBibTeXClient.from_settings()
    versions = client.ready()
    items = client.items_search(search, library=library)
    pdf_paths: dict[str, tuple[str, str]] = {}
    missing: list[tuple[str, str]] = []
    if attach_pdfs:
        pdf_paths, missing = _pdf_paths(client, items)
    raw = [RawItem(location=_location(item), data=item) for item in items]
    report = import_records(
        raw,
        build=record_from_csl,
        on_saved=on_saved,
        batch_size=batch_size,
        on_progress=on_progress,
        after_batch=after_batch,
    )
    result = ZoteroImportReport(versions=versions, records=report, pdfs_missing=missing)
    papers = dict(
        PaperIdentifier.objects.filter(scheme=ZOTERO_SCHEME, value__in=pdf_paths).values_list(
            "value", "paper_id"
        )
    )
    had = dict(
        PaperPdf.objects.filter(paper_id__in=papers.values()).values_list("paper_id", "sha256")
    )
    for key, (location, path) in pdf_paths.items():
        paper_id = papers.get(key)
        if paper_id is None:
            continue  # the item itself failed to import and is reported already
        try:
            record = pdf_attach_file(paper_id=paper_id, path=Path(path))
        except DomainError as error:
            result.pdf_failures.append((f"PDF of {location}", error.message))
            continue
        if had.get(paper_id) == record.sha256:
            result.pdfs_unchanged += 1
        else:
            result.pdfs_attached += 1
    return result


def _pdf_paths(
    client: BetterBibTeXClient, items: list[dict[str, Any]]
) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str]]]:
    """Item key -> (location, path of its first PDF that exists here), and the PDFs Zotero
    lists that are not on this machine (synced elsewhere, moved, deleted)."""
    asked = [
        (item, str(item["citekey"])) for item in items if item.get("citekey") and item_key(item)
    ]
    answers = client.attachments(
        [(citekey, item.get("library") or None) for item, citekey in asked]
    )
    found: dict[str, tuple[str, str]] = {}
    missing: list[tuple[str, str]] = []
    for (item, _), answer in zip(asked, answers, strict=True):
        if isinstance(answer, DomainError):
            continue  # no attachments to find; the item itself still imports
        pdfs = [
            str(entry["path"])
            for entry in answer
            if isinstance(entry.get("path"), str) and entry["path"].lower().endswith(".pdf")
        ]
        present = [path for path in pdfs if Path(path).is_file()]
        if present:
            found[item_key(item)] = (_location(item), present[0])
        else:
            missing.extend((_location(item), path) for path in pdfs)
    return found, missing


def _location(item: dict[str, Any]) -> str:
    citekey = item.get("citekey") or "?"
    return f"item {item_key(item) or item.get('id') or '?'} ({citekey})"

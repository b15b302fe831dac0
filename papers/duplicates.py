"""Which incoming records are papers the library already has: a dry run of the matching
`papers_upsert` does, for previews (the admin's BibTeX upload) before anything is saved.

The matching itself is the upsert's own (`papers.services`), so a preview can never
disagree with what the import then does: DOI, arXiv id, another identifier of the same
scheme (PMID, PMCID, OpenReview id...), a preprint's published version's DOI, then the
same title with enough evidence and none against
(`papers.matching.same_paper_by_title`). Read-only: nothing is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from core.errors import DomainError
from papers.imports import RawItem
from papers.models import Paper
from papers.schemas import PaperRecord

# The upsert's private matching helpers, used read-only here on purpose (see above).
from papers.services import _find_existing, _match_keys


@dataclass(frozen=True)
class DuplicateMatch:
    """For one record: the library paper it would merge into (`paper_id`), or the earlier
    record of the same batch it repeats (`earlier`, an index), or neither (a new paper)."""

    paper_id: int | None = None
    earlier: int | None = None

    @property
    def is_new(self) -> bool:
        return self.paper_id is None and self.earlier is None


def records_duplicates(*, records: Sequence[PaperRecord]) -> list[DuplicateMatch]:
    """One DuplicateMatch per record, in order. A record matching a library paper names
    it; otherwise one that repeats an earlier record of the batch (same identifier, or
    same title, year and first author) names that record's index. A few queries in all,
    whatever the number of records."""
    records = list(records)
    if not records:
        return []
    in_library = _find_existing(records)
    seen: dict[tuple[str, str], int] = {}
    matches = []
    for index, (record, paper_id) in enumerate(zip(records, in_library, strict=True)):
        keys = _match_keys(record)
        earlier = next((seen[key] for key in keys if key in seen), None)
        for key in keys:
            seen.setdefault(key, index)
        if paper_id is not None:
            matches.append(DuplicateMatch(paper_id=paper_id))
        else:
            matches.append(DuplicateMatch(earlier=earlier))
    return matches


# --- previewing a BibTeX file ------------------------------------------------------------


@dataclass
class PreviewEntry:
    """One entry of the file: what it is and what importing it would do."""

    item: RawItem
    record: PaperRecord | None = None
    error: str = ""
    match: DuplicateMatch = field(default_factory=DuplicateMatch)
    existing: Paper | None = None  # the library paper it duplicates

    @property
    def status(self) -> str:
        if self.error:
            return "unreadable"
        if self.existing is not None:
            return "in library"
        return "repeats an earlier entry" if self.match.earlier is not None else "new"


@dataclass
class BibtexPreview:
    entries: list[PreviewEntry]
    warnings: list[str]

    def count(self, status: str) -> int:
        return sum(1 for entry in self.entries if entry.status == status)

    @property
    def summary(self) -> dict[str, int]:
        """Counts by status, keyed for templates: new, in_library, repeated, unreadable."""
        return {
            "new": self.count("new"),
            "in_library": self.count("in library"),
            "repeated": self.count("repeats an earlier entry"),
            "unreadable": self.count("unreadable"),
        }


def bibtex_preview(*, text: str) -> BibtexPreview:
    """Read BibTeX text and say, entry by entry, whether importing it would create a new
    paper, merge into a library paper (named), repeat an earlier entry of the same text, or
    fail (and why). Writes nothing; the import uses the same reader and matching."""
    from papers.bibtex import read_bibtex, record_from_bibtex

    warnings: list[str] = []
    entries = [
        PreviewEntry(item=item)
        for item in read_bibtex(text, on_warning=lambda where, what: warnings.append(
            f"{where}: {what}"))
    ]  # fmt: skip
    readable: list[PreviewEntry] = []
    for entry in entries:
        if entry.item.error is not None or entry.item.data is None:
            entry.error = entry.item.error or "empty entry"
            continue
        try:
            entry.record = record_from_bibtex(entry.item.data)
        except DomainError as error:
            entry.error = error.message
            continue
        readable.append(entry)
    matches = records_duplicates(records=[e.record for e in readable if e.record is not None])
    papers = Paper.objects.only("pk", "human_id", "title", "year", "citekey").in_bulk(
        [m.paper_id for m in matches if m.paper_id is not None]
    )
    # `earlier` counts readable entries; the preview numbers them among all entries.
    position = {id(entry): index for index, entry in enumerate(entries)}
    for entry, match in zip(readable, matches, strict=True):
        earlier = readable[match.earlier] if match.earlier is not None else None
        entry.match = DuplicateMatch(
            paper_id=match.paper_id, earlier=position[id(earlier)] if earlier else None
        )
        entry.existing = papers.get(match.paper_id) if match.paper_id is not None else None
    return BibtexPreview(entries=entries, warnings=warnings)

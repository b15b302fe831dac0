"""Finding and splitting papers that an import merged by title alone.

Before `papers.matching` asked for evidence, records sharing a normalised title were merged
when neither named an author or year (a test collection's 17 different "note on creep
buckling of columns" became one paper). The merge kept each lost record's abstract under
`metadata["alternates"]["abstract"]`; that is what rebuilds it.

A merged-in record is split back out when its abstract disagrees with the paper's
(`papers.matching.abstracts_agree`) and it came from the paper's own source: one source
does not describe one paper twice with two abstracts, whereas a preprint's abstract from
arXiv and the journal's from Crossref often differ and are left alone. Alternates that
agree with each other are one record. The rebuilt record takes the paper's title,
authors, year, venue and type (what the title match shared), the alternate abstract and
source, and, where the merge recorded the record's source id (merges since the id was
kept beside each alternate), every other alternate that carries that id. Identifiers
(DOI, arXiv, scheme ids) and project memberships stay with the paper: which record they
came from was not recorded. The split-off alternates leave the paper, so a second run
finds nothing (idempotent).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from django.db import transaction
from django.utils import timezone

from papers.matching import abstracts_agree
from papers.models import Paper
from papers.schemas import PaperRecord
from papers.services import MERGED_TEXT_FIELDS, papers_upsert

_IDENTITY_FIELDS = ("title", "year", "authors", "venue", "entry_type")


@dataclass
class WrongMerge:
    """One paper and the records to take back out of it."""

    paper_id: int
    human_id: str
    title: str
    records: list[PaperRecord]
    entries: list[dict[str, Any]]  # the alternates each record is rebuilt from
    new_ids: list[str] = field(default_factory=list)  # human ids, once split


def _groups(paper: Paper, entries: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """The abstract alternates that are other papers, grouped by the record they came from
    (same source id, or abstracts that agree)."""
    groups: list[list[dict[str, Any]]] = []
    for entry in entries:
        value = entry.get("value")
        if not isinstance(value, str) or entry.get("source") != paper.source:
            continue
        if abstracts_agree(value, paper.abstract) is not False:
            continue
        for group in groups:
            head = group[0]
            same_id = entry.get("source_id") and entry.get("source_id") == head.get("source_id")
            if same_id or abstracts_agree(value, head["value"]):
                group.append(entry)
                break
        else:
            groups.append([entry])
    return groups


def _record(paper: Paper, group: list[dict[str, Any]]) -> PaperRecord:
    head = group[0]
    source_id = str(head.get("source_id") or "")
    alternates: dict[str, list[dict[str, Any]]] = paper.metadata.get("alternates", {})
    own = {
        name: entries[-1]["value"]
        for name, entries in alternates.items()
        if source_id
        for entries in [[e for e in entries if e.get("source_id") == source_id]]
        if entries and name not in ("abstract", "source_id")
    }
    values: dict[str, Any] = {
        "title": paper.title,
        "year": paper.year,
        "authors": paper.ordered_author_names,
        "venue": paper.venue.name if paper.venue else "",
        "entry_type": paper.entry_type,
    }
    values.update({k: v for k, v in own.items() if k in _IDENTITY_FIELDS})
    values.update({k: v for k, v in own.items() if k in MERGED_TEXT_FIELDS})
    metadata = {k.removeprefix("metadata."): v for k, v in own.items() if k.startswith("metadata.")}
    metadata["split_from"] = paper.human_id
    return PaperRecord.build(
        **values,
        abstract=head["value"],
        source=head.get("source") or paper.source,
        source_id=source_id,
        metadata=metadata,
    )


def wrong_merges_find(*, paper_ids: list[int] | None = None) -> Iterator[WrongMerge]:
    """Each paper holding records merged into it by mistake, with those records rebuilt.
    Reads only."""
    papers = Paper.objects.filter(metadata__alternates__has_key="abstract")
    if paper_ids is not None:
        papers = papers.filter(pk__in=paper_ids)
    for paper in papers.select_related("venue").order_by("pk").iterator(chunk_size=500):
        groups = _groups(paper, paper.metadata["alternates"]["abstract"])
        if groups:
            yield WrongMerge(
                paper_id=paper.pk,
                human_id=paper.human_id,
                title=paper.title,
                records=[_record(paper, group) for group in groups],
                entries=[entry for group in groups for entry in group],
            )


@transaction.atomic
def wrong_merge_split(merge: WrongMerge) -> WrongMerge:
    """Create the merged-in records as papers of their own (de-duplicated as any import:
    one that is in fact another paper of the library merges into that one) and take their
    alternates out of the paper. Returns `merge` with `new_ids` filled."""
    paper = Paper.objects.select_for_update().get(pk=merge.paper_id)
    outcome = papers_upsert(records=merge.records)
    split_ids = {str(entry.get("source_id")) for entry in merge.entries if entry.get("source_id")}
    alternates = paper.metadata.get("alternates", {})
    for name in list(alternates):
        kept = [
            entry
            for entry in alternates[name]
            if not (name == "abstract" and entry in merge.entries)
            and str(entry.get("source_id") or "") not in split_ids
            and not (name == "source_id" and entry.get("value") in split_ids)
        ]
        if kept:
            alternates[name] = kept
        else:
            del alternates[name]
    if not alternates:
        paper.metadata.pop("alternates", None)
    paper.updated_at = timezone.now()
    paper.save(update_fields=["metadata", "updated_at"])
    merge.new_ids = list(
        Paper.objects.filter(pk__in=outcome.paper_ids).values_list("human_id", flat=True)
    )
    return merge

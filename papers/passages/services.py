"""Writes: the passage index of a paper's PDF, rebuilt when a PDF is attached or replaced
and dropped when it is removed (papers/pdf/services.py calls the hooks).

The PDF is read, split (extract.py), analysed and embedded outside any transaction; the
paper's passages and their postings are then replaced in one transaction. The work runs
after the attach commits, as the task `papers.index_passages` (started through
papers/dispatch.py: on a worker with a broker, in-process on the embedded default), like
the source markdown. Detaching a PDF deletes its passages in the same transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass

import numpy as np
from django.db import connection, transaction
from django.db.models import Count, Exists, OuterRef, Sum

from core.errors import DomainError, NotFound
from papers.models import Paper, PaperPdf, Passage, PassageTerm
from papers.passages.extract import PagePassage, document_passages
from papers.passages.ranking import PASSAGES
from papers.pdf.selectors import pdf_open
from papers.search import analysis, embedding, postings
from papers.search.postings import impact

logger = logging.getLogger(__name__)

# Rows per INSERT of postings.
WRITE_BATCH = 2_000


@dataclass(frozen=True)
class IndexOutcome:
    paper_id: int
    status: str  # indexed | unchanged | no_pdf | removed | failed
    pages: int = 0
    passages: int = 0
    error: str = ""

    def as_dict(self) -> dict[str, object]:
        return {
            "paper_id": self.paper_id,
            "status": self.status,
            "pages": self.pages,
            "passages": self.passages,
        }


def passages_index(*, paper_id: int, force: bool = False) -> IndexOutcome:
    """Split the paper's PDF into passages and replace its indexed passages with them.

    An unchanged file (same sha256 as the indexed passages) is skipped unless `force`; a
    paper without a PDF loses its passages. Raises NotFound (paper), PdfFileMissing and
    NotAPdf (the file is gone or damaged).
    """
    if not Paper.objects.filter(pk=paper_id).exists():
        raise NotFound(f"No paper {paper_id!r} in the library.", paper_id=str(paper_id))
    record = PaperPdf.objects.filter(paper_id=paper_id).first()
    if record is None:
        removed = passages_remove(paper_id=paper_id)
        return IndexOutcome(paper_id, "removed" if removed else "no_pdf")
    indexed = Passage.objects.filter(paper_id=paper_id).values_list("pdf_sha256", flat=True)
    if not force and record.sha256 in set(indexed[:1]):
        return IndexOutcome(paper_id, "unchanged", pages=record.page_count)
    with pdf_open(record) as document:
        pages = document.page_count
        found = document_passages(document)
    count = passages_write(paper_id=paper_id, sha256=record.sha256, passages=found)
    logger.info("paper %s: %s passages indexed from %s pages", paper_id, count, pages)
    return IndexOutcome(paper_id, "indexed", pages=pages, passages=count)


def passages_write(*, paper_id: int, sha256: str, passages: list[PagePassage]) -> int:
    """Replace the paper's passages with these (terms and vectors computed here, outside
    the transaction that writes them). Returns how many were written. Benchmarks call it
    with passages of synthesised pages; passages_index with a PDF's."""
    counted = [analysis.term_counts(passage.text) for passage in passages]
    lengths = [sum(counts.values()) for counts in counted]
    model_name, vectors = _vectors([passage.text for passage in passages])
    with transaction.atomic():
        # Lock the paper: two index runs of one paper write one after the other.
        Paper.objects.select_for_update().filter(pk=paper_id).first()
        _delete(paper_id)
        average = _average_length(lengths)
        rows = Passage.objects.bulk_create(
            [
                Passage(
                    paper_id=paper_id,
                    page=passage.page,
                    order=passage.order,
                    text=passage.text,
                    rects=passage.rects,
                    pdf_sha256=sha256,
                    length=length,
                    model=model_name if vectors is not None else "",
                    vector=vectors[index].tobytes() if vectors is not None else None,
                )
                for index, (passage, length) in enumerate(zip(passages, lengths, strict=True))
            ]
        )
        terms = [
            PassageTerm(
                passage_id=row.pk,
                term_id=analysis.term_id(term),
                impact=impact(count, length, average or 1.0),
            )
            for row, counts, length in zip(rows, counted, lengths, strict=True)
            for term, count in counts.items()
        ]
        PassageTerm.objects.bulk_create(terms, batch_size=WRITE_BATCH)
        postings.stats_add(PASSAGES, len(rows), sum(lengths))
    return len(rows)


def _average_length(lengths: list[int]) -> float:
    """BM25's average passage length for passages of these lengths: the passage index's
    (postings.read_stats over PASSAGES, which the ranking reads too), or theirs when the
    index is empty, as postings.index_papers does for papers."""
    with connection.cursor() as cursor:
        stats = postings.read_stats(cursor, PASSAGES)
    average = stats.average_length or (sum(lengths) / len(lengths) if lengths else 0.0)
    return average or 1.0


def _vectors(texts: list[str]) -> tuple[str, np.ndarray | None]:
    """The first-tier model's vectors of these texts, or no vectors when the model's
    package is missing (search_passages then ranks by full text alone)."""
    if not texts:
        return "", None
    try:
        model = embedding.load_model()
    except ImportError:
        logger.warning("no embedding model: passages are indexed for full text only")
        return "", None
    return model.name, model.encode_documents(texts)


def passages_remove(*, paper_id: int) -> int:
    """Drop the paper's passages (its PDF was removed). Returns how many there were."""
    with transaction.atomic():
        return _delete(paper_id)


def _delete(paper_id: int) -> int:
    counted = Passage.objects.filter(paper_id=paper_id).aggregate(
        n=Count("pk"), total=Sum("length")
    )
    if not counted["n"]:
        return 0
    # Postings first, in one statement, rather than through the cascade's collector.
    PassageTerm.objects.filter(passage__paper_id=paper_id).delete()
    deleted, _ = Passage.objects.filter(paper_id=paper_id).delete()
    postings.stats_add(PASSAGES, -counted["n"], -(counted["total"] or 0))
    return deleted


def passages_reindex_ids() -> list[int]:
    """The papers `reindex_passages --all` goes through: every paper with a PDF, and
    papers with passages but no PDF (they lose them)."""
    with_pdf = set(PaperPdf.objects.values_list("paper_id", flat=True))
    stale = set(Passage.objects.values_list("paper_id", flat=True).distinct())
    return sorted(with_pdf | stale)


def passages_reindex(
    *,
    paper_ids: Iterable[int],
    force: bool = False,
    progress: Callable[[IndexOutcome], None] | None = None,
) -> list[IndexOutcome]:
    """passages_index for each of these papers; a paper whose file cannot be read is a
    `failed` outcome with the error, and the others go on. `progress` is called after
    each paper."""
    outcomes = []
    for paper_id in paper_ids:
        try:
            outcome = passages_index(paper_id=paper_id, force=force)
        except DomainError as error:
            outcome = IndexOutcome(paper_id, "failed", error=error.message)
        outcomes.append(outcome)
        if progress is not None:
            progress(outcome)
    return outcomes


# Papers indexed on demand by one call (a verify_quote on a PDF attached before the index).
ENSURE_MAX = 20


def passages_ensure(*, paper_ids: Iterable[int]) -> int:
    """Index now those of these papers whose PDF has no current passages (attached before
    the index existed, or its task failed), up to ENSURE_MAX; returns how many were
    indexed. Files that cannot be read are left to quote_find's refusal."""
    current = Passage.objects.filter(paper_id=OuterRef("paper_id"), pdf_sha256=OuterRef("sha256"))
    stale = (
        PaperPdf.objects.filter(paper_id__in=list(paper_ids))
        .exclude(Exists(current))
        .values_list("paper_id", flat=True)
    )
    indexed = 0
    for paper_id in list(stale[:ENSURE_MAX]):
        try:
            passages_index(paper_id=paper_id)
        except DomainError as error:
            logger.warning("paper %s: passages not indexed: %s", paper_id, error.message)
            continue
        indexed += 1
    return indexed

"""Re-deriving the text stored with highlights from their boxes (`manage.py
rederive_highlight_text`, docs/PDF.md).

Highlights stored before the line-end hyphen rule (papers.pdf.locate.line_break_join) keep
the hyphen and the line break as they were selected: "cor- pus". A highlight's boxes are
where it is on its page, so its text is found again there exactly as a new highlight's is
(`find_passage` with the boxes as `near`, which ends in `passage_text`: the path
annotation_highlight_create and annotation_highlights_place store text through) and, when
it differs, replaces the stored text. Nothing else changes: not the boxes, colour, comment,
dates, nor the annotated copy (it draws the comment, not the text).

A highlight is left as it is when its PDF is gone or was replaced since (its `pdf_sha256`
is not the stored file's: the boxes belong to another file), or when its text is no longer
found at its boxes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

import pymupdf
from django.db import transaction
from django.db.models import QuerySet

from core.errors import DomainError
from papers.models import Annotation, PaperPdf
from papers.pdf.annotate import pdf_to_page
from papers.pdf.locate import find_passage, text_key
from papers.pdf.selectors import pdf_open


@dataclass(frozen=True)
class TextChange:
    annotation_id: int
    paper_id: int
    page: int
    old: str
    new: str


@dataclass
class RederiveOutcome:
    """What a run found: the changes (written when applied), and how many highlights were
    already right or were left as they are, and why."""

    checked: int = 0
    changes: list[TextChange] = field(default_factory=list)
    unchanged: int = 0
    not_found: int = 0  # the text is not at its boxes any more
    pdf_replaced: int = 0  # stored against another file than the paper's PDF now
    no_pdf: list[str] = field(default_factory=list)  # "paper N: why", one per paper


def highlight_texts_rederive(
    *,
    paper_ids: Iterable[int] | None = None,
    apply: bool = False,
    progress: Callable[[int], None] | None = None,
) -> RederiveOutcome:
    """Find each highlight's text again at its stored boxes (of the papers `paper_ids`, or
    of every paper) and, with `apply`, store it where it differs: one transaction per paper,
    and only a row whose text is still the one read is written. `progress(paper_id)` is
    called after each paper. Without `apply` nothing is written (a dry run)."""
    highlights = Annotation.objects.filter(kind=Annotation.Kind.HIGHLIGHT)
    if paper_ids is not None:
        highlights = highlights.filter(paper_id__in=list(paper_ids))
    papers = list(highlights.order_by("paper_id").values_list("paper_id", flat=True).distinct())
    outcome = RederiveOutcome()
    for paper_id in papers:
        changes = _paper_changes(paper_id, highlights.filter(paper_id=paper_id), outcome)
        if apply and changes:
            with transaction.atomic():
                for change in changes:
                    Annotation.objects.filter(pk=change.annotation_id, text=change.old).update(
                        text=change.new
                    )
        outcome.changes += changes
        if progress is not None:
            progress(paper_id)
    return outcome


def _paper_changes(
    paper_id: int, highlights: QuerySet[Annotation], outcome: RederiveOutcome
) -> list[TextChange]:
    rows = list(highlights.order_by("page", "pk"))
    outcome.checked += len(rows)
    record = PaperPdf.objects.filter(paper_id=paper_id).first()
    if record is None:
        outcome.no_pdf.append(f"paper {paper_id}: no PDF ({len(rows)} highlights left)")
        return []
    changes = []
    try:
        with pdf_open(record) as document:
            for annotation in rows:
                if annotation.pdf_sha256 and annotation.pdf_sha256 != record.sha256:
                    outcome.pdf_replaced += 1
                    continue
                new = _text_at_boxes(document, annotation)
                if new is None:
                    outcome.not_found += 1
                elif new == annotation.text:
                    outcome.unchanged += 1
                else:
                    changes.append(
                        TextChange(annotation.pk, paper_id, annotation.page, annotation.text, new)
                    )
    except DomainError as error:  # the file is missing or damaged
        outcome.no_pdf.append(f"paper {paper_id}: {error} ({len(rows)} highlights left)")
        return []
    return changes


def _text_at_boxes(document: pymupdf.Document, annotation: Annotation) -> str | None:
    """The highlight's text as annotation_highlights_place stores it for these boxes, or
    None when it is not found there."""
    quote = " ".join(annotation.text.split())
    on_a_page = 1 <= annotation.page <= document.page_count
    if not text_key(quote) or not annotation.rects or not on_a_page:
        return None
    pdf_page = document[annotation.page - 1]
    near = [pdf_to_page(pdf_page, rect) for rect in annotation.rects]
    found = find_passage(pdf_page, quote, near=near)
    return found.text if found is not None else None

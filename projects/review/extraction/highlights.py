"""Highlights of verified quotes in the extraction colour (docs/EXTRACTION.md, "Highlights").

A value or an adjudication whose quote is `verified` gets a highlight of those words on
their page, in purple (EXTRACTION_COLOR; find_quote marks in green and grey), with a
comment naming the field and who extracted it: "extraction: sample_size (agent:claude)".
The row keeps it (`highlight`) so that a link can open the reading page at the quote.
The highlight is placed at the line boxes the anchor found (papers/pdf/services
.annotation_highlights_place): the words are not searched for again, and the highlights
of one call are drawn into the annotated copy in one write.

Recording a field again does not pile highlights up: the row's highlight stays when the new
quote is anchored to the same words on the same page; otherwise an identical highlight of
the paper (same page, words, colour and comment) is reused or one is made, and the replaced
one is deleted unless another value or adjudication still shows it.

Highlights are made after the values are saved, outside their transaction (the PDF is read
and its annotated copy written). When they cannot be made (the file is gone) that is
reported, never raised: the values stand without them. Callers refuse writes on a
read-only server before they get here.
"""

from __future__ import annotations

from dataclasses import dataclass

from core.errors import DomainError
from papers.models import Annotation, Paper
from papers.pdf import services as pdf_services
from papers.pdf.locate import text_key
from papers.pdf.spec import color_resolve
from projects.models import AnchorStatus, ExtractionAdjudication, ExtractionValue

# Zotero's purple: a named colour (create_highlight's `section2`) no other feature marks with.
EXTRACTION_COLOR = "section2"

Anchored = ExtractionValue | ExtractionAdjudication


@dataclass(frozen=True)
class Wanted:
    """A saved row that should show its verified quote, the comment its highlight carries,
    and the row's former highlight (to delete once nothing shows it)."""

    row: Anchored
    comment: str
    replaced: int | None = None


def highlight_comment(field: str, who: str) -> str:
    return f"extraction: {field} ({who})"


def highlight_fits(
    annotation: Annotation | None, *, status: str, page: int | None, text: str
) -> bool:
    """Whether `annotation` already marks a verified quote found as `text` on `page`."""
    return (
        annotation is not None
        and status == AnchorStatus.VERIFIED
        and annotation.page == page
        and annotation.kind == Annotation.Kind.HIGHLIGHT
        and annotation.color == color_resolve(EXTRACTION_COLOR)
        and text_key(annotation.text) == text_key(text)
    )


def highlights_sync(*, paper: Paper, wanted: list[Wanted]) -> list[dict[str, object]]:
    """Give each saved row of `paper` the highlight of its verified quote when it has none
    (an identical one reused, the others made in one write), and delete each row's former
    highlight that nothing shows any more. Returns, per row: {"highlight": annotation id},
    {"highlight_error": why none was made}, or {} for a quote that is not verified."""
    existing = _extraction_highlights(paper)
    chosen: dict[int, Annotation] = {}  # index in `wanted` -> its highlight
    to_make: list[int] = []
    for index, item in enumerate(wanted):
        row = item.row
        if row.highlight_id is not None or not _verified(row):
            continue
        same = existing.get(
            (row.anchor_page or 0, item.comment, text_key(row.anchor_text or row.quote))
        )
        if same is not None:
            chosen[index] = same
        else:
            to_make.append(index)
    error = ""
    if to_make:
        try:
            made = pdf_services.annotation_highlights_place(
                paper=paper, marks=[_mark(wanted[index]) for index in to_make]
            )
        except DomainError as failure:  # e.g. the PDF file is gone
            error = failure.message
        else:
            chosen.update(zip(to_make, made, strict=True))
    shown: list[dict[str, object]] = []
    for index, item in enumerate(wanted):
        row = item.row
        if index in chosen:
            row.highlight = chosen[index]
            type(row).objects.filter(pk=row.pk).update(highlight=chosen[index])
        if row.highlight_id is not None:
            shown.append({"highlight": row.highlight_id})
        else:
            shown.append({"highlight_error": error} if error and index in to_make else {})
    _release(
        paper,
        {w.replaced for w in wanted if w.replaced is not None and w.replaced != w.row.highlight_id},
    )
    return shown


def _verified(row: Anchored) -> bool:
    return row.anchor_status == AnchorStatus.VERIFIED and bool(row.anchor_page)


def _extraction_highlights(paper: Paper) -> dict[tuple[int, str, str], Annotation]:
    """The paper's highlights in the extraction colour by (page, comment, words)."""
    found: dict[tuple[int, str, str], Annotation] = {}
    rows = Annotation.objects.filter(
        paper=paper, kind=Annotation.Kind.HIGHLIGHT, color=color_resolve(EXTRACTION_COLOR)
    )
    for annotation in rows.order_by("-pk"):  # the oldest wins
        found[(annotation.page, annotation.comment, text_key(annotation.text))] = annotation
    return found


def _mark(wanted: Wanted) -> pdf_services.HighlightAt:
    row = wanted.row
    assert row.anchor_page is not None
    return pdf_services.HighlightAt(
        page=row.anchor_page,
        rects=row.anchor_rects,
        text=row.anchor_text or row.quote,
        color=EXTRACTION_COLOR,
        comment=wanted.comment,
    )


def _release(paper: Paper, replaced: set[int]) -> None:
    """Delete replaced highlights that no value or adjudication shows any more."""
    ids = set(replaced)
    for model in (ExtractionValue, ExtractionAdjudication):
        ids -= set(
            model.objects.filter(highlight_id__in=ids).values_list("highlight_id", flat=True)
        )
    pdf_services.annotations_delete(paper=paper, annotation_ids=sorted(ids))

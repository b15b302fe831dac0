"""Highlights of verified quotes in the extraction colour (docs/EXTRACTION.md, "Highlights").

A value or an adjudication whose quote is `verified` gets a highlight of those words on
their page, made by the annotation service as find_quote's are
(papers/pdf/services.annotation_highlight_create), in purple (EXTRACTION_COLOR; find_quote
marks in green and grey), with a comment naming the field and who extracted it:
"extraction: sample_size (agent:claude)". The row keeps it (`highlight`) so that a link can
open the reading page at the quote.

Recording a field again does not pile highlights up: the row's highlight stays when the new
quote is anchored to the same words on the same page; otherwise an identical highlight of
the paper (same page, words, colour and comment) is reused or one is made, and the replaced
one is deleted unless another value or adjudication still shows it.

Highlights are made after the values are saved, outside their transaction (the PDF is read
and its annotated copy written). One that cannot be made (the words occur twice on the
page, the file is gone) is reported, never raised: the value stands without it. Callers
refuse writes on a read-only server before they get here.
"""

from __future__ import annotations

from core.errors import DomainError, NotFound
from papers.models import Annotation, Paper
from papers.pdf import services as pdf_services
from papers.pdf.locate import text_key
from papers.pdf.spec import color_resolve
from projects.models import AnchorStatus, ExtractionAdjudication, ExtractionValue

# Zotero's purple: a named colour (create_highlight's `section2`) no other feature marks with.
EXTRACTION_COLOR = "section2"

Anchored = ExtractionValue | ExtractionAdjudication


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


def highlight_sync(
    row: Anchored, *, paper: Paper, comment: str, replaced: int | None = None
) -> dict[str, object]:
    """Give the saved `row` the highlight of its verified quote when it has none (reusing an
    identical one, else making it), and delete `replaced`, the row's former highlight, when
    nothing shows it any more. Returns {"highlight": annotation id}, {"highlight_error":
    why none was made}, or {} for a quote that is not verified."""
    shown: dict[str, object] = {}
    page = row.anchor_page
    if row.anchor_status == AnchorStatus.VERIFIED and page:
        if row.highlight_id is None:
            try:
                row.highlight = _identical(row, page, comment) or _make(row, page, paper, comment)
            except DomainError as error:  # e.g. the words occur twice on the page
                shown["highlight_error"] = error.message
            else:
                type(row).objects.filter(pk=row.pk).update(highlight=row.highlight)
        if row.highlight_id is not None:
            shown["highlight"] = row.highlight_id
    if replaced is not None and replaced != row.highlight_id:
        _release(replaced)
    return shown


def _make(row: Anchored, page: int, paper: Paper, comment: str) -> Annotation:
    return pdf_services.annotation_highlight_create(
        paper=paper,
        page=page,
        text=row.anchor_text or row.quote,
        color=EXTRACTION_COLOR,
        comment=comment,
    )


def _identical(row: Anchored, page: int, comment: str) -> Annotation | None:
    same = Annotation.objects.filter(
        paper_id=row.paper_id,
        page=page,
        kind=Annotation.Kind.HIGHLIGHT,
        color=color_resolve(EXTRACTION_COLOR),
        comment=comment,
    )
    key = text_key(row.anchor_text or row.quote)
    return next((a for a in same.order_by("pk") if text_key(a.text) == key), None)


def _release(annotation_id: int) -> None:
    """Delete a replaced highlight that no value or adjudication shows any more."""
    for model in (ExtractionValue, ExtractionAdjudication):
        if model.objects.filter(highlight_id=annotation_id).exists():
            return
    try:
        pdf_services.annotation_delete(annotation_id=annotation_id)
    except NotFound:  # a person deleted it meanwhile
        pass

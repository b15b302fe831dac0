"""Anchoring a value's quote in its paper (projects/review/extraction/anchoring.py) with
find_quote's matcher, on real PDFs attached through the attach service: verified with the
page and line boxes, approximate with the closest text, not found, abstract only for a
paper without a PDF, within that one paper only."""

from __future__ import annotations

import pymupdf
import pytest

from core.errors import InvalidInput
from papers.models import Paper
from papers.pdf.locate import text_key
from projects.models import AnchorStatus
from projects.review.extraction.anchoring import quote_anchor, quote_clean
from tests.projects.review.extraction.builders import (
    ACL,
    ACL_QUOTE,
    ACL_QUOTE_CHANGED,
    ACL_QUOTE_PAGE,
    NOT_IN_ANY,
)


def test_a_quote_printed_on_a_page_is_verified_with_its_page_and_line_boxes(
    studies: dict[str, Paper],
) -> None:
    # As copied from the page: a line break, the 'Sci-' / 'enceParse' split, 'ﬁ'.
    copied = ACL_QUOTE.replace("ScienceParse", "Sci-\nenceParse").replace("fill", "ﬁll")
    anchor = quote_anchor(paper=studies["acl"], quote=copied)
    assert anchor.status == AnchorStatus.VERIFIED and anchor.page == ACL_QUOTE_PAGE
    assert anchor.score == 1.0 and len(anchor.rects) >= 2
    # The boxes hold the words on the page (PDF points, origin bottom-left).
    with pymupdf.open(ACL) as document:
        page = document[ACL_QUOTE_PAGE - 1]
        height = page.rect.height
        x0, y0, x1, y1 = anchor.rects[0]
        words = page.get_text("text", clip=pymupdf.Rect(x0, height - y1, x1, height - y0))
    assert text_key(words) in text_key(ACL_QUOTE) or text_key(ACL_QUOTE)[:20] in text_key(words)
    assert not anchor.flagged


def test_a_wrong_page_given_does_not_stop_the_quote_being_found_on_its_own(
    studies: dict[str, Paper],
) -> None:
    anchor = quote_anchor(paper=studies["acl"], quote=ACL_QUOTE, page=6)
    assert anchor.status == AnchorStatus.VERIFIED and anchor.page == ACL_QUOTE_PAGE


def test_a_quote_with_changed_words_is_approximate_with_the_closest_text(
    studies: dict[str, Paper],
) -> None:
    anchor = quote_anchor(paper=studies["acl"], quote=ACL_QUOTE_CHANGED)
    assert anchor.status == AnchorStatus.APPROXIMATE and anchor.page == ACL_QUOTE_PAGE
    assert 0.7 <= anchor.score < 1 and "recurrent" in anchor.text
    assert anchor.flagged


def test_a_quote_not_in_the_paper_is_not_found(studies: dict[str, Paper]) -> None:
    anchor = quote_anchor(paper=studies["acl"], quote=NOT_IN_ANY)
    assert anchor.status == AnchorStatus.NOT_FOUND and anchor.rects == []
    assert anchor.flagged


def test_a_quote_from_another_paper_of_the_library_is_not_found_in_this_one(
    studies: dict[str, Paper],
) -> None:
    # The words are on page 3 of the ACL paper; anchored in the quantum paper they are not.
    anchor = quote_anchor(paper=studies["quantum"], quote=ACL_QUOTE)
    assert anchor.status == AnchorStatus.NOT_FOUND


def test_a_paper_without_a_pdf_is_anchored_in_its_abstract(studies: dict[str, Paper]) -> None:
    paper = studies["abstract"]
    exact = quote_anchor(paper=paper, quote="included 37 randomised trials")
    assert (exact.status, exact.source, exact.score, exact.page) == (
        AnchorStatus.ABSTRACT_ONLY, "abstract", 1.0, None,
    )  # fmt: skip
    close = quote_anchor(paper=paper, quote="We screened 1,204 records and included 38 trials")
    assert close.status == AnchorStatus.ABSTRACT_ONLY and 0.7 <= close.score < 1
    assert "37" in close.text
    missing = quote_anchor(paper=paper, quote=NOT_IN_ANY)
    assert missing.status == AnchorStatus.NOT_FOUND and missing.source == "abstract"
    assert exact.flagged  # abstract-only anchors are flagged for a person to check


def test_no_quote_is_no_quote() -> None:
    assert quote_anchor(paper=Paper(), quote="").status == AnchorStatus.NO_QUOTE


@pytest.mark.parametrize(
    ("quote", "says"),
    [(12, "must be text"), ("— … —", "letters or digits"), ("x" * 4001, "at most")],
)
def test_a_quote_that_cannot_be_looked_for_is_refused(quote: object, says: str) -> None:
    with pytest.raises(InvalidInput) as raised:
        quote_clean(quote, where="values.task.quote")
    assert says in raised.value.message and raised.value.details["field"] == "values.task.quote"

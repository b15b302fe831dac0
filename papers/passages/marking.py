"""Locating a quote and, when asked, highlighting it: what find_quote and verify_quote do
(docs/EVIDENCE.md). The tools only shape the answer; the work is here, so another
interface (REST, the admin) would get the same behaviour."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from core.errors import DomainError
from papers.models import Paper
from papers.passages import selectors
from papers.passages.quotes import QuoteMatch
from papers.passages.services import passages_ensure
from papers.pdf import services as pdf_services

# The seed's semantic colours: green for a quote found as given, grey for the closest text.
HIGHLIGHT_COLORS = {"found": "positive", "approximate": "detail"}


@dataclass(frozen=True)
class QuoteOutcome:
    match: QuoteMatch
    # None when no highlight was asked for or there is nothing to mark; else
    # {"annotation_id": ...} or {"error": message}.
    highlight: dict[str, Any] | None = None


def quote_locate(
    *,
    text: str,
    paper_ids: Sequence[int] | None,
    page: int | None = None,
    highlight: bool = False,
    read_only: bool = False,
) -> QuoteOutcome:
    """Find `text` in the stored PDFs (of `paper_ids`, indexing any not indexed yet), and
    with `highlight` mark what was found (found: green, approximate: grey) through the
    annotation service. A refused highlight (read-only server, text occurring twice on
    the page) is reported in the outcome, never raised: the quote's answer still stands."""
    if paper_ids is not None:
        passages_ensure(paper_ids=paper_ids)
    match = selectors.quote_find(text=text, paper_ids=paper_ids, page=page)
    if not (highlight and match.status in HIGHLIGHT_COLORS and match.paper_id and match.page):
        return QuoteOutcome(match)
    if read_only:
        return QuoteOutcome(match, {"error": "This server is read-only: no highlight was made."})
    try:
        annotation = pdf_services.annotation_highlight_create(
            paper=Paper.objects.get(pk=match.paper_id),
            page=match.page,
            text=match.matched_text or match.closest_text or text,
            color=HIGHLIGHT_COLORS[match.status],
        )
    except DomainError as error:  # e.g. the words occur twice on the page
        return QuoteOutcome(match, {"error": error.message})
    return QuoteOutcome(match, {"annotation_id": annotation.pk})

"""Anchoring an extracted value's quote in its paper (docs/EXTRACTION.md, "Anchors").

The quote is looked for with find_quote's matcher (papers/passages/quotes.py, through
papers.passages.marking.quote_locate, which indexes the PDF first if it was not yet),
within that one paper only, the given page first:

- `verified`: the words are on a page (up to line breaks, hyphenation, ligatures, quotes,
  case) and their line boxes are known;
- `approximate`: only a close text was found (a few words differ): it is stored with its
  similarity, for a person to check;
- `not_found`: nothing close enough (the closest text, if any, is kept);
- `abstract_only`: the paper has no PDF text (no PDF stored, or one without a text layer),
  and the quote was found in its title or abstract, exactly (score 1) or closely (at least
  find_quote's approximate threshold); otherwise `not_found`;
- `no_quote`: no quote was given.

No writes here (the passage index may be built on the way, as find_quote does).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from core.errors import InvalidInput
from papers.models import Paper, PaperPdf, Passage
from papers.passages.marking import quote_locate
from papers.passages.quotes import APPROXIMATE_MIN, MAX_QUOTE_CHARS, closest_window
from papers.passages.services import passages_ensure
from papers.pdf.locate import text_key
from projects.models import AnchorStatus

# Statuses a person should look at (evidence rows and extract_record answers flag them).
FLAGGED = (AnchorStatus.APPROXIMATE, AnchorStatus.NOT_FOUND, AnchorStatus.ABSTRACT_ONLY)


@dataclass(frozen=True)
class Anchor:
    """Where a quote is in its paper: status (AnchorStatus), page and line boxes (PDF
    points, origin bottom-left), the text as printed (verified) or the closest text,
    similarity 0..1, and what it was looked for in ("pdf" or "abstract")."""

    status: str
    page: int | None = None
    rects: list[list[float]] = field(default_factory=list)
    text: str = ""
    score: float = 0.0
    source: str = "pdf"

    @property
    def flagged(self) -> bool:
        return self.status in FLAGGED

    def as_dict(self) -> dict[str, object]:
        shown: dict[str, object] = {"status": str(self.status), "source": self.source}
        if self.page is not None:
            shown["page"] = self.page
        if self.text:
            shown["text"] = self.text
        if self.status != AnchorStatus.NO_QUOTE:
            shown["score"] = round(self.score, 3)
        return shown


def quote_clean(quote: object, *, where: str) -> str:
    """A quote as stored: whitespace collapsed; '' for none. Raises InvalidInput for a
    quote that is not text, has no letters or digits, or is over MAX_QUOTE_CHARS."""
    if quote is None:
        return ""
    if not isinstance(quote, str):
        raise InvalidInput(f"{where}: a quote must be text.", field=where)
    text = " ".join(quote.split())
    if not text:
        return ""
    if not text_key(text):
        raise InvalidInput(f"{where}: a quote must contain letters or digits.", field=where)
    if len(text) > MAX_QUOTE_CHARS:
        raise InvalidInput(
            f"{where}: a quote is at most {MAX_QUOTE_CHARS} characters.", field=where
        )
    return text


def quote_anchor(*, paper: Paper, quote: str, page: int | None = None) -> Anchor:
    """Anchor `quote` (as quote_clean returns it) in `paper`, trying `page` first."""
    if not quote:
        return Anchor(AnchorStatus.NO_QUOTE, source="")
    if not _has_pdf_text(paper):
        return _in_abstract(paper, quote)
    match = quote_locate(text=quote, paper_ids=[paper.pk], page=page).match
    if match.status == "found" and match.page and match.rects:
        return Anchor(
            AnchorStatus.VERIFIED, match.page, match.rects, match.matched_text or quote, 1.0
        )
    if match.status in ("found", "approximate"):
        return Anchor(
            AnchorStatus.APPROXIMATE,
            match.page,
            match.rects,
            match.closest_text or match.matched_text or "",
            match.similarity,
        )
    return Anchor(
        AnchorStatus.NOT_FOUND, match.page, [], match.closest_text or "", match.similarity
    )


def _has_pdf_text(paper: Paper) -> bool:
    if not PaperPdf.objects.filter(paper=paper).exists():
        return False
    if Passage.objects.filter(paper=paper).exists():
        return True
    # Attached but not indexed yet: index it now (as find_quote would), then look again.
    passages_ensure(paper_ids=[paper.pk])
    return Passage.objects.filter(paper=paper).exists()


def _in_abstract(paper: Paper, quote: str) -> Anchor:
    key = text_key(quote)
    for text in (paper.title, paper.abstract or paper.snippet):
        if text and key in text_key(text):
            return Anchor(AnchorStatus.ABSTRACT_ONLY, None, [], quote, 1.0, "abstract")
    whole = " ".join(t for t in (paper.title, paper.abstract or paper.snippet) if t)
    score, window = closest_window(quote, whole) if whole else (0.0, "")
    if score >= APPROXIMATE_MIN:
        return Anchor(AnchorStatus.ABSTRACT_ONLY, None, [], window, score, "abstract")
    return Anchor(AnchorStatus.NOT_FOUND, None, [], window, score, "abstract")

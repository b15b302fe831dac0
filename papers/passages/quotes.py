"""Finding a quote in the library's PDFs: found (the words are on a page, up to line
breaks, hyphenation, ligatures, quotes, dashes, spacing and case), approximate (a few
words differ; the closest text and a similarity) or not found.

1. Candidates: the passages that rank best for the quote's words (BM25, ranking.py),
   within `paper_ids`, a word hyphenated at a copied line end counted both split and
   joined; a given page's passages come first.
2. Exact: the quote's key (papers/pdf/locate.text_key: letters and digits, case-folded)
   is looked for in the key of each candidate page's passages joined in order, so a quote
   that runs from one passage into the next is found too; then the page itself is read
   with papers/pdf/locate.find_passage for the boxes and the text as printed.
3. Approximate: each candidate passage, joined with the next one on its page, is aligned
   word by word with the quote (difflib); the best window's similarity is
   2 x matched words / (quote words + window words). At APPROXIMATE_MIN or more the
   answer is "approximate" with that window as closest_text.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from core.errors import InvalidInput
from papers.models import Paper, PaperPdf, Passage
from papers.passages.ranking import bm25_ranking
from papers.pdf.annotate import page_to_pdf
from papers.pdf.errors import PdfNotAvailable
from papers.pdf.locate import find_passage, text_key
from papers.pdf.selectors import paper_pdf_get, pdf_open
from papers.search import analysis

MAX_QUOTE_CHARS = 4_000
MAX_PAPER_IDS = 10_000
# Candidate passages aligned with the quote, and pages checked for the exact words.
CANDIDATES = 20
# Below this similarity a quote is not found (the closest text is still shown).
APPROXIMATE_MIN = 0.7
# The closest text of a not-found quote is shown from this similarity.
CLOSEST_MIN = 0.4
LEAD_WORDS = 30
_TOKEN_RE = re.compile(r"[^\W_]+", re.UNICODE)
_LINE_HYPHEN_RE = re.compile(r"([^\W\d_])[-\u00ad]\s+(?=[a-z])")


@dataclass(frozen=True)
class QuoteMatch:
    """Where a quote is: status "found" | "approximate" | "not_found"; the paper, page and
    one box per line (PDF points, origin bottom-left); `matched_text` as printed (found),
    `closest_text` (approximate, and not_found when something came close); similarity
    0..1 (1 for found)."""

    status: str
    paper_id: int | None = None
    page: int | None = None
    rects: list[list[float]] = field(default_factory=list)
    matched_text: str | None = None
    closest_text: str | None = None
    similarity: float = 0.0
    occurrences: int = 0


def lead(text: str) -> str:
    """The first LEAD_WORDS words of a passage (a snippet when no query word is in it)."""
    words = text.split()
    return " ".join(words[:LEAD_WORDS]) + (" …" if len(words) > LEAD_WORDS else "")


def check_paper_ids(paper_ids: Sequence[int] | None) -> list[int] | None:
    if paper_ids is None:
        return None
    ids = sorted({int(i) for i in paper_ids})
    if len(ids) > MAX_PAPER_IDS:
        raise InvalidInput(f"At most {MAX_PAPER_IDS} paper_ids.", field="paper_ids")
    return ids


def quote_find(
    *, text: str, paper_ids: Sequence[int] | None = None, page: int | None = None
) -> QuoteMatch:
    """Locate `text` in the indexed passages of the library's PDFs (or of `paper_ids`),
    trying `page` first when given. Raises InvalidInput (no letters, too long), and
    PdfNotAvailable when none of `paper_ids` has a PDF."""
    quote = " ".join((text or "").split())
    key = text_key(quote)
    if not key:
        raise InvalidInput("text must contain letters or digits to find.", field="text")
    if len(quote) > MAX_QUOTE_CHARS:
        raise InvalidInput(f"text is longer than {MAX_QUOTE_CHARS} characters.", field="text")
    ids = check_paper_ids(paper_ids)
    if ids is not None:
        _check_pdfs(ids)
    # A quote copied with a line-end hyphen ('pre- trained') is ranked by its words both
    # as written and joined as the passages read them ('pretrained'): with the parts alone,
    # passages that print the compound whole ('pre-trained') outrank the one quoted.
    joined = _LINE_HYPHEN_RE.sub(r"\1", quote)
    words = list(dict.fromkeys(analysis.words(quote) + analysis.words(joined)))
    ranked, _ = bm25_ranking(words, paper_ids=ids, limit=CANDIDATES)
    candidates = _candidates(ranked, ids, page)
    pages = _pages(candidates)
    for paper_id, number in dict.fromkeys((p.paper_id, p.page) for p in candidates):
        joined = "".join(text_key(p.text) for p in pages[(paper_id, number)])
        if key in joined:
            return _found(paper_id, number, quote, pages[(paper_id, number)])
    return _closest(quote, candidates, pages)


def _check_pdfs(ids: list[int]) -> None:
    if ids and not PaperPdf.objects.filter(paper_id__in=ids).exists():
        paper = Paper.objects.filter(pk__in=ids).first()
        if paper is None:
            raise InvalidInput("None of paper_ids is in the library.", field="paper_ids")
        paper_pdf_get(paper=paper)  # raises PdfNotAvailable, saying how to attach one


def _candidates(ranked: list[int], ids: list[int] | None, page: int | None) -> list[Passage]:
    rows = Passage.objects.defer("vector").in_bulk(ranked)
    candidates = [rows[pk] for pk in ranked if pk in rows]
    if page is not None and ids:
        on_page = list(
            Passage.objects.defer("vector").filter(paper_id__in=ids, page=page).order_by("order")
        )
        seen = {p.pk for p in on_page}
        candidates = on_page + [p for p in candidates if p.pk not in seen]
    return candidates


def _pages(candidates: list[Passage]) -> dict[tuple[int, int], list[Passage]]:
    """Every passage of the candidates' pages, in order, by (paper, page)."""
    wanted = {(p.paper_id, p.page) for p in candidates}
    pages: dict[tuple[int, int], list[Passage]] = {key: [] for key in wanted}
    if not wanted:
        return pages
    rows = Passage.objects.defer("vector").filter(
        paper_id__in={paper for paper, _ in wanted}, page__in={number for _, number in wanted}
    )
    for row in rows.order_by("paper_id", "page", "order"):
        if (row.paper_id, row.page) in pages:
            pages[(row.paper_id, row.page)].append(row)
    return pages


def _found(paper_id: int, number: int, quote: str, passages: list[Passage]) -> QuoteMatch:
    located = _locate(paper_id, number, quote)
    if located is not None:
        text, rects, occurrences = located
        return QuoteMatch("found", paper_id, number, rects, text, None, 1.0, occurrences)
    # The file is unreadable now: the lines of the passages that hold the quote.
    key = text_key(quote)
    holding = [p for p in passages if key[: len(key) // 2] in text_key(p.text)] or passages
    rects = [rect for p in holding for rect in p.rects]
    return QuoteMatch("found", paper_id, number, rects, quote, None, 1.0, 1)


def _locate(paper_id: int, number: int, quote: str) -> tuple[str, list[list[float]], int] | None:
    record = PaperPdf.objects.filter(paper_id=paper_id).first()
    if record is None:
        return None
    try:
        with pdf_open(record) as document:
            if not 1 <= number <= document.page_count:
                return None
            pdf_page = document[number - 1]
            found = find_passage(pdf_page, quote)
            if found is None:
                return None
            rects = [page_to_pdf(pdf_page, rect) for rect in found.rects]
            return found.text, rects, found.occurrences
    except Exception:
        return None


@dataclass
class _Window:
    similarity: float
    passage: Passage
    text: str


def _tokens(text: str) -> tuple[list[str], list[int], list[str]]:
    """(word keys, the index of the whitespace word each came from, whitespace words)."""
    spaced = text.split()
    keys: list[str] = []
    owners: list[int] = []
    for index, word in enumerate(spaced):
        for token in _TOKEN_RE.findall(word):
            keys.append(text_key(token))
            owners.append(index)
    return keys, owners, spaced


def _best_window(quote_keys: list[str], text: str) -> tuple[float, str]:
    keys, owners, spaced = _tokens(text)
    if not keys or not quote_keys:
        return 0.0, ""
    matcher = difflib.SequenceMatcher(None, keys, quote_keys, autojunk=False)
    matched = [
        block.a + offset for block in matcher.get_matching_blocks() for offset in range(block.size)
    ]
    if not matched:
        return 0.0, ""
    # The densest run of matched words no longer than the quote (with some slack).
    span = len(quote_keys) + max(3, len(quote_keys) // 5)
    best_start, best_count, right = 0, 0, 0
    for left in range(len(matched)):
        while right < len(matched) and matched[right] - matched[left] < span:
            right += 1
        if right - left > best_count:
            best_start, best_count = left, right - left
    first = matched[best_start]
    last = matched[best_start + best_count - 1]
    window = keys[first : last + 1]
    ratio = difflib.SequenceMatcher(None, window, quote_keys, autojunk=False).ratio()
    words = spaced[owners[first] : owners[last] + 1]
    return ratio, " ".join(words)


def closest_window(quote: str, text: str) -> tuple[float, str]:
    """The words of `text` closest to `quote` (aligned as for an approximate answer) and
    their similarity 0..1: for texts that are not in the passage index (an abstract)."""
    joined = _LINE_HYPHEN_RE.sub(r"\1", " ".join(quote.split()))
    quote_keys = [text_key(token) for token in _TOKEN_RE.findall(joined)]
    return _best_window(quote_keys, text)


def _closest(
    quote: str, candidates: list[Passage], pages: dict[tuple[int, int], list[Passage]]
) -> QuoteMatch:
    # A quote copied with a line-end hyphen ('canon- ical') is aligned as the passages
    # read ('canonical').
    joined = _LINE_HYPHEN_RE.sub(r"\1", quote)
    quote_keys = [text_key(token) for token in _TOKEN_RE.findall(joined)]
    best: _Window | None = None
    for passage in candidates:
        on_page = pages.get((passage.paper_id, passage.page), [])
        following = [p for p in on_page if p.order == passage.order + 1]
        text = " ".join([passage.text, *(p.text for p in following)])
        similarity, window = _best_window(quote_keys, text)
        if best is None or similarity > best.similarity:
            best = _Window(similarity, passage, window)
    if best is None or best.similarity < CLOSEST_MIN:
        return QuoteMatch("not_found")
    similarity = round(best.similarity, 3)
    paper_id, number = best.passage.paper_id, best.passage.page
    if best.similarity < APPROXIMATE_MIN:
        return QuoteMatch("not_found", paper_id, number, [], None, best.text, similarity)
    located = _locate(paper_id, number, best.text)
    rects = located[1] if located else list(best.passage.rects)
    return QuoteMatch("approximate", paper_id, number, rects, None, best.text, similarity)


__all__ = [
    "PdfNotAvailable",
    "QuoteMatch",
    "check_paper_ids",
    "closest_window",
    "lead",
    "quote_find",
]

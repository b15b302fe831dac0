"""Reads of the passage index: `passage_search` (search_passages), `quote_find`
(find_quote / verify_quote) and `page_passages` (the page resource).

Ranking is paper search's, over passages: BM25 by paper search's ranker (papers/search/
lexical.py over the passages' postings: ranking.py) and cosine similarity to the
first-tier model's vectors, fused by paper search's fusion (papers.search.semantic.
fuse_rankings; passages have first-tier vectors only, so the two-ranking form). Queries
are read by papers.search.query.understand, so phrases, `-word` and stop words behave as
in search_papers (the words rank; the constraint is not enforced on passages).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from django.conf import settings

from core.errors import InvalidInput
from papers.models import Passage
from papers.passages.quotes import QuoteMatch, check_paper_ids, lead, quote_find
from papers.passages.ranking import bm25_ranking, semantic_ranking
from papers.search import analysis
from papers.search import query as q
from papers.search.semantic import HYBRID_DEPTH, fuse_rankings
from papers.search.snippets import Highlighter

MAX_LIMIT = 100
MAX_QUERY_CHARS = settings.MAX_QUERY_CHARS


@dataclass(frozen=True)
class PassageHit:
    """A ranked passage: its paper, page and order on the page, its whole text, a snippet
    with the query's words in **bold**, the fused score (0..1) and its lines' boxes (PDF
    points, origin bottom-left)."""

    paper_id: int
    page: int
    text: str
    snippet: str
    score: float
    rects: list[list[float]] = field(default_factory=list)
    order: int = 0
    passage_id: int = 0


def passage_search(
    *, query: str, paper_ids: Sequence[int] | None = None, limit: int = 10
) -> list[PassageHit]:
    """The passages of the library's PDFs (or of `paper_ids`) that best answer `query`,
    best first. Raises InvalidInput for an empty or oversized query or a bad limit."""
    text = " ".join((query or "").split())
    if not analysis.words(text):
        raise InvalidInput("query must contain a word to search for.", field="query")
    if len(text) > MAX_QUERY_CHARS:
        raise InvalidInput(f"query is longer than {MAX_QUERY_CHARS} characters.", field="query")
    if not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"limit must be 1-{MAX_LIMIT}.", field="limit")
    ids = check_paper_ids(paper_ids)
    if ids == []:
        return []
    understood = q.understand(text)
    words = list(understood.words) or analysis.words(text)
    lexical = bm25_ranking(words, paper_ids=ids, limit=HYBRID_DEPTH)
    semantic = semantic_ranking(text, paper_ids=ids, limit=HYBRID_DEPTH)
    fused = fuse_rankings(lexical, semantic)[:limit]
    rows = Passage.objects.defer("vector").in_bulk([pk for pk, _ in fused])
    highlighter = Highlighter(words, understood.prefixes)
    hits = []
    for pk, score in fused:
        row = rows[pk]
        hits.append(
            PassageHit(
                paper_id=row.paper_id,
                page=row.page,
                text=row.text,
                snippet=highlighter.passage(row.text) or lead(row.text),
                score=round(score, 4),
                rects=row.rects,
                order=row.order,
                passage_id=row.pk,
            )
        )
    return hits


# --- pages and quotes ------------------------------------------------------------------


def page_passages(*, paper_id: int, page: int | None = None) -> list[Passage]:
    """A paper's indexed passages in reading order, of one page or all."""
    passages = Passage.objects.filter(paper_id=paper_id).defer("vector")
    if page is not None:
        passages = passages.filter(page=page)
    return list(passages.order_by("page", "order"))


__all__ = ["PassageHit", "QuoteMatch", "page_passages", "passage_search", "quote_find"]

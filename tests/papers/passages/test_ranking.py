"""papers/passages/ranking.py ranks passages by the papers' BM25 (papers/search/postings.py:
one impact, one idf, one choice of query terms): a passage and a paper with the same text
and the same index statistics score the same."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

from papers.models import Paper, Passage
from papers.passages import ranking, services
from papers.passages.extract import PagePassage
from papers.search import fulltext, postings

TEXTS = [
    "Neural machine translation of rare words with subword units",
    "Quality estimation for machine translation output and translation memories",
    "Protein structure predicted from the sequence alone",
    "Reading comprehension over long documents",
]
QUERIES = ["machine translation", "translation", "protein sequence", "rare words units"]


def test_a_passage_and_a_paper_with_the_same_text_and_statistics_score_the_same(
    make_paper: Callable[..., Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A paper whose only text is its title, every field weighted 1, holds what a passage
    # holds: one field of weight 1. Both indexes then have the same documents.
    monkeypatch.setattr(postings, "FIELD_WEIGHTS", (1.0,) * 5)
    papers = [make_paper(text, authors=[], abstract="") for text in TEXTS]
    postings.rebuild_postings()  # every impact with the whole library's average length
    monkeypatch.setitem(services._stats, "read_at", -math.inf)  # the passages' average, read now
    services.passages_write(
        paper_id=papers[0].pk,
        sha256="0" * 64,
        passages=[PagePassage(1, order, text, []) for order, text in enumerate(TEXTS, 1)],
    )
    paper_text = {paper.pk: paper.title for paper in papers}
    passage_text = dict(Passage.objects.values_list("pk", "text"))
    assert sorted(paper_text.values()) == sorted(passage_text.values()) == sorted(TEXTS)
    for query in QUERIES:
        ranked = fulltext.paper_search_scored(query=query, limit=10)
        by_papers = {paper_text[i]: s for i, s in zip(ranked.ids, ranked.scores, strict=True)}
        ids, scores = ranking.bm25_ranking(query.split(), paper_ids=None, limit=10)
        by_passages = {passage_text[i]: s for i, s in zip(ids, scores, strict=True)}
        assert by_papers.keys() == by_passages.keys() and by_papers, query
        for text, score in by_papers.items():
            assert by_passages[text] == pytest.approx(score, rel=1e-9), (query, text)


def test_one_impact_formula_and_one_weighing_of_query_terms() -> None:
    # The passages' writer and ranking call postings.py's functions, not copies of them.
    assert services.impact is postings.impact
    assert ranking.weigh_terms is postings.weigh_terms
    assert ranking.query_term_ids is postings.query_term_ids
    # A rare term outweighs a common one; past MAX_QUERY_TERMS the rarest are kept.
    many = list(range(postings.MAX_QUERY_TERMS + 3))
    weighted = postings.weigh_terms(many, {t: t + 1 for t in many}, 100)
    assert weighted.ids == tuple(many[: postings.MAX_QUERY_TERMS])
    assert list(weighted.weights) == sorted(weighted.weights, reverse=True)
    assert postings.weigh_terms([1, 2], {1: 0, 2: 3}, 10).ids == (2,)
    # The term-frequency part grows with the count and saturates at IMPACT_SCALE x (K1 + 1).
    assert postings.impact(1, 10, 10.0) < postings.impact(5, 10, 10.0)
    assert postings.impact(10**6, 10, 10.0) <= postings.IMPACT_SCALE * (postings.K1 + 1)

"""papers/passages/ranking.py ranks passages by paper search's ranker (papers/search/
lexical.py over the passages' postings, one analyzer, one impact formula, one set of
statistics, every top-k plan) and fuses by paper search's fusion: a passage and a paper
with the same text and the same index statistics score the same."""

from __future__ import annotations

import dataclasses
import random
from collections.abc import Callable
from typing import Any

import pytest

from papers.models import Paper, Passage, PassageTerm
from papers.passages import ranking, selectors, services
from papers.passages.extract import PagePassage
from papers.search import analysis, fulltext, lexical, postings, semantic

TEXTS = [
    "Neural machine translation of rare words with subword units",
    "Quality estimation for machine translation output and translation memories",
    "Protein structure predicted from the sequence alone",
    "Reading comprehension over long documents",
]
QUERIES = [
    "machine translation",
    "translation",
    "protein sequence",
    "rare words units",
    "What is translated by the machines?",  # stop words dropped, stems matched
]


def test_a_passage_and_a_paper_with_the_same_text_and_statistics_score_the_same(
    make_paper: Callable[..., Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    # A paper whose only text is its title, every field weighted 1, holds what a passage
    # holds: one field of weight 1. Both indexes then have the same documents.
    monkeypatch.setattr(postings, "FIELD_WEIGHTS", (1.0,) * 5)
    papers = [make_paper(text, authors=[], abstract="") for text in TEXTS]
    postings.rebuild_postings()  # every impact with the whole library's average length
    postings.forget_stats(ranking.PASSAGES)  # the passages' statistics, read now
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
    # The passages' writer calls postings.py's formula, not a copy of it.
    assert services.impact is postings.impact
    # A rare term outweighs a common one; past MAX_QUERY_TERMS the rarest are kept.
    many = list(range(postings.MAX_QUERY_TERMS + 3))
    weighted = postings.weigh_terms(many, {t: t + 1 for t in many}, 100)
    assert weighted.ids == tuple(many[: postings.MAX_QUERY_TERMS])
    assert list(weighted.weights) == sorted(weighted.weights, reverse=True)
    assert postings.weigh_terms([1, 2], {1: 0, 2: 3}, 10).ids == (2,)
    # The term-frequency part grows with the count and saturates at IMPACT_SCALE x (K1 + 1).
    assert postings.impact(1, 10, 10.0) < postings.impact(5, 10, 10.0)
    assert postings.impact(10**6, 10, 10.0) <= postings.IMPACT_SCALE * (postings.K1 + 1)


# --- one ranker: papers/search/lexical.py over the passages' postings ----------------

VOCABULARY = (
    "translation translations translating neural protein proteins folding sequence "
    "galaxy galaxies reading comprehension speech recognition graph graphs"
).split()
FILLER = "the of and with for is".split()


@pytest.fixture
def passages(make_paper: Callable[..., Paper]) -> dict[int, int]:
    """90 passages of words drawn from VOCABULARY and stop words, over 3 papers:
    {passage id: paper id}."""
    rng = random.Random(7)
    for number in range(3):
        paper = make_paper(f"Paper {number}", authors=[], abstract="")
        texts = [
            " ".join(rng.choice(VOCABULARY + FILLER) for _ in range(rng.randint(3, 30)))
            for _ in range(30)
        ]
        services.passages_write(
            paper_id=paper.pk,
            sha256=str(number) * 64,
            passages=[PagePassage(1 + order // 10, order, t, []) for order, t in enumerate(texts)],
        )
    return dict(Passage.objects.values_list("pk", "paper_id"))


def brute_force(terms: lexical.QueryTerms, allowed: set[int] | None) -> list[tuple[int, float]]:
    """Every passage's sum of weight x impact over the query's terms, best first (ties by
    id), read row by row: what every strategy of lexical.rank must return."""
    weight = dict(zip(terms.ids, terms.weights, strict=True))
    scores: dict[int, float] = {}
    rows = PassageTerm.objects.filter(term_id__in=terms.ids).values_list(
        "passage_id", "term_id", "impact"
    )
    for passage, term, impact in rows:
        if allowed is None or passage in allowed:
            scores[passage] = scores.get(passage, 0.0) + weight[term] * impact
    return sorted(scores.items(), key=lambda item: (-item[1], item[0]))


@pytest.mark.parametrize(
    "plan",
    ["exhaustive", "broad", "threshold", "maxscore", "small set", "threshold, restricted"],
)
@pytest.mark.parametrize(
    "query",
    ["translations", "protein folding", "galaxies of the speech graph", "reading neural graphs"],
)
def test_every_top_k_plan_of_paper_search_ranks_passages_exactly(
    passages: dict[int, int], monkeypatch: pytest.MonkeyPatch, plan: str, query: str
) -> None:
    # The plans lexical.rank chooses between on papers, each forced here on passages: its
    # SQL reads the passages' tables (PASSAGES), and each returns the exact top k. Broad
    # queries on passages take one aggregate (no sorted access: PASSAGES.sorted_access);
    # the threshold algorithm and MaxScore are forced with it turned on.
    if plan != "exhaustive":
        monkeypatch.setattr(lexical, "EXHAUSTIVE_BELOW", 0)
    if plan.startswith(("threshold", "maxscore")):
        sorted_passages = dataclasses.replace(ranking.PASSAGES, sorted_access=True)
        monkeypatch.setattr(ranking, "PASSAGES", sorted_passages)
    if plan == "threshold" or plan.startswith("threshold,"):
        monkeypatch.setattr(lexical, "MAXSCORE_FROM_TERMS", 99)
    if plan == "maxscore":
        monkeypatch.setattr(lexical, "MAXSCORE_FROM_TERMS", 1)
    if plan == "threshold, restricted":
        monkeypatch.setattr(lexical, "SMALL_SET", 0)
    monkeypatch.setattr(lexical, "FIRST_BLOCK", 4)  # several rounds of sorted access
    papers = sorted(set(passages.values()))
    paper_ids = papers[:2] if plan in {"small set", "threshold, restricted"} else None
    allowed = (
        None if paper_ids is None else {p for p, paper in passages.items() if paper in paper_ids}
    )
    terms = lexical.query_terms(query.split(), index=ranking.PASSAGES)
    assert terms.ids and terms.index is ranking.PASSAGES
    expected = brute_force(terms, allowed)[:5]
    ids, scores = ranking.bm25_ranking(query.split(), paper_ids=paper_ids, limit=5)
    assert ids == [p for p, _ in expected], plan
    assert scores == pytest.approx([s for _, s in expected], rel=1e-9)


def test_search_passages_ranks_by_paper_searchs_ranker_and_fusion(
    passages: dict[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # No BM25 or fusion of the passages' own: search_passages goes through lexical.rank
    # (over PASSAGES) and semantic.fuse_rankings, paper search's functions.
    ranked: list[lexical.QueryTerms] = []
    fused: list[int] = []
    rank, fuse = lexical.rank, semantic.fuse_rankings

    def spy_rank(terms: lexical.QueryTerms, **options: Any) -> lexical.Ranked:
        ranked.append(terms)
        return rank(terms, **options)

    def spy_fuse(*rankings: Any, **options: Any) -> list[tuple[int, float]]:
        fused.append(len(rankings))
        return fuse(*rankings, **options)

    monkeypatch.setattr(lexical, "rank", spy_rank)
    monkeypatch.setattr(selectors, "fuse_rankings", spy_fuse)
    hits = selectors.passage_search(query="What folds proteins?", limit=5)
    assert hits and ranked and fused
    assert all(terms.index is ranking.PASSAGES for terms in ranked)
    # Stop words dropped and words stemmed by the one analyzer: 'folds' is 'folding'.
    stems = {analysis.term_id(analysis.stem(word)) for word in ("folding", "protein")}
    assert set(ranked[0].ids) == stems
    assert all("protein" in hit.text or "fold" in hit.text for hit in hits)


def test_the_writer_and_the_ranking_share_one_set_of_statistics(
    passages: dict[int, int],
) -> None:
    # The average length the impacts were written with and the N of the idf come from
    # PASSAGES' statistics, which follow this process's writes and removals.
    stats = ranking.PASSAGES.stats
    lengths = list(Passage.objects.values_list("length", flat=True))
    assert (stats.documents, stats.total_length) == (len(lengths), sum(lengths))
    assert lexical.query_terms(["protein"], index=ranking.PASSAGES).documents == len(lengths)
    removed = services.passages_remove(paper_id=next(iter(passages.values())))
    assert removed and stats.documents == len(lengths) - removed
    assert lexical.query_terms(["protein"], index=ranking.PASSAGES).documents == stats.documents

"""The reranking stage (papers/search/reranker.py) with its real models on a small library:
it moves up the paper one of whose sentences answers the question, it is off at
SEARCH_RERANK_TOP_K=0 (nothing scored), and with it on, the ranking every interface
reads (local_search, local_search_ids) is the fused order with its head reordered.
tests/papers/search/test_quality_path.py holds search_papers over /mcp equal to the
service with the stage on."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.test import override_settings

from papers.models import Paper
from papers.search import reranker, semantic
from papers.search.local import local_search, local_search_ids

pytestmark = pytest.mark.django_db

QUESTION = "Vitamin D supplementation prevents hip fractures in elderly women."
# Has the question's words in its title, but is about something else.
DISTRACTOR = (
    "Prescribing vitamin D supplementation to elderly women",
    "We surveyed 412 general practitioners about vitamin D supplementation for elderly "
    "women. Rural practices prescribed supplementation less often than urban ones. "
    "Reasons given were cost and doubt about adherence.",
)
# Answers it in one sentence of four; its title says nothing of it.
ANSWER = (
    "Calcium and cholecalciferol in nursing-home residents",
    "We followed 3,270 residents of 180 nursing homes for 18 months. Falls, admissions "
    "and drug use were recorded by the staff. Daily vitamin D3 with calcium lowered the "
    "number of hip fractures in the elderly women by 43 per cent against placebo. Costs "
    "of care are discussed.",
)
OTHERS = [
    ("Sourdough fermentation and bread texture",
     "Yeast and lactic acid bacteria in sourdough change the crumb and rise of bread."),
    ("Galaxy formation in the early universe",
     "Telescope observations of distant galaxies show how stars and dark matter "
     "clustered after the big bang."),
    ("Hip replacement surgery outcomes",
     "Women and men recovered at the same pace after total hip replacement."),
    ("Sunlight exposure and vitamin synthesis",
     "Skin synthesis of vitamin D depends on latitude, season and age."),
]  # fmt: skip


@pytest.fixture(autouse=True)
def fresh() -> Iterator[None]:
    semantic.vector_index().reset()
    semantic._lazy_checked_at = -math.inf
    reranker.reset()
    yield
    semantic.vector_index().reset()
    reranker.reset()


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> dict[str, Paper]:
    papers = {
        "distractor": make_paper(DISTRACTOR[0], abstract=DISTRACTOR[1]),
        "answer": make_paper(ANSWER[0], abstract=ANSWER[1]),
    }
    for index, (title, abstract) in enumerate(OTHERS):
        papers[f"other{index}"] = make_paper(title, abstract=abstract)
    semantic.embed_papers([paper.pk for paper in papers.values()])
    return papers


def test_passages_are_the_title_and_the_sentences() -> None:
    assert reranker.passages(ANSWER[0], ANSWER[1]) == [
        ANSWER[0],
        "We followed 3,270 residents of 180 nursing homes for 18 months.",
        "Falls, admissions and drug use were recorded by the staff.",
        "Daily vitamin D3 with calcium lowered the number of hip fractures in the elderly "
        "women by 43 per cent against placebo.",
        "Costs of care are discussed.",
    ]
    # Short sentences are joined to the next; a paper without text still has a passage.
    assert reranker.passages("", "Yes. It works well on many sets of data.") == [
        "Yes. It works well on many sets of data."
    ]
    assert reranker.passages("", "") == [""]


def test_the_stage_moves_up_the_paper_that_answers(library: dict[str, Paper]) -> None:
    """With MiniLM (the default model). The static first-tier model puts the distractor,
    whose title has every word of the question, first here: it reads words, not claims."""
    model = "minilm-l6-int8"
    answer, distractor = library["answer"].pk, library["distractor"].pk
    others = [library[f"other{i}"].pk for i in range(len(OTHERS))]
    # The fused order put the distractor first and the answer a little below it.
    fused = [
        (distractor, 0.88),
        (answer, 0.85),
        *((pk, 0.3 - i / 20) for i, pk in enumerate(others)),
    ]
    texts = [(pk, *Paper.objects.values_list("title", "abstract").get(pk=pk)) for pk, _ in fused]
    scores = reranker.score(QUESTION, texts, model)
    assert scores.argmax() == 1  # the answer's best sentence is the closest text
    with override_settings(SEARCH_RERANK_MODEL=model):
        reranked = reranker.rerank(QUESTION, fused, k=len(fused))
        three = reranker.rerank(QUESTION, fused, k=3)
    assert [pk for pk, _ in reranked][:2] == [answer, distractor]
    # Positions keep their fused scores: still falling down the list.
    assert [s for _, s in reranked] == [s for _, s in fused]
    # Only the head is reordered.
    assert reranker.rerank(QUESTION, fused, k=1) == fused
    assert reranker.rerank(QUESTION, fused, k=0) == fused
    assert [pk for pk, _ in three] == [answer, distractor, *others]


def test_off_by_default_and_at_zero(
    library: dict[str, Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the stage scored papers while off")

    monkeypatch.setattr(reranker, "score", refuse)
    assert reranker.top_k() == 0  # the default (docs/SEARCH.md: measured, not worth it)
    assert reranker.rerank(
        QUESTION, [(library["answer"].pk, 0.9), (library["distractor"].pk, 0.8)]
    ) == [(library["answer"].pk, 0.9), (library["distractor"].pk, 0.8)]
    with override_settings(SEARCH_RERANK_TOP_K=0):
        page = local_search(query=QUESTION, limit=6, rerank=True)
    assert page.mode == "hybrid" and len(page.hits) == 6


def test_every_interface_reads_the_reordered_ranking(
    library: dict[str, Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    # The reranker's order alone (the blend's weight is chosen by measurement).
    monkeypatch.setattr(reranker, "RERANK_WEIGHT", 1.0)
    with override_settings(SEARCH_RERANK_TOP_K=0):
        off = local_search(query=QUESTION, limit=6, rerank=True)
    fused = [(hit.record["paper_id"], float(hit.score)) for hit in off.hits]
    expected = [pk for pk, _ in reranker.rerank(QUESTION, fused, k=6)]
    # The fused order puts the distractor first (its title has the question's words);
    # the stage puts the answer first.
    assert fused[0][0] == library["distractor"].pk
    assert expected[0] == library["answer"].pk
    with override_settings(SEARCH_RERANK_TOP_K=6):
        on = local_search(query=QUESTION, limit=6, rerank=True)
        second_page = local_search(query=QUESTION, limit=3, offset=3, rerank=True)
        ids = local_search_ids(query=QUESTION, rerank=True)
    assert [hit.record["paper_id"] for hit in on.hits] == expected
    assert [hit.record["paper_id"] for hit in second_page.hits] == expected[3:6]
    assert ids.ids[:6] == expected
    assert [hit.score for hit in on.hits] == [hit.score for hit in off.hits]

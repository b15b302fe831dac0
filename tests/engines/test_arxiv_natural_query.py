"""Seed 004's arXiv "natural language query processing": what a researcher or an agent
types becomes the query the real `arxiv` client sends (checked on a local server that
replays a recorded arXiv feed), and a query in arXiv's own syntax goes as typed."""

from __future__ import annotations

import pytest

from engines.arxiv import ArxivEngine
from engines.base import SearchRequest, SearchResults
from tests.engines.arxiv_builders import API_PATH, recorded, sent
from tests.engines.replay import ReplayServer


@pytest.fixture
def arxiv(replay_server: ReplayServer, settings) -> ReplayServer:
    settings.ARXIV_API_URL = replay_server.url + API_PATH
    # Any recorded feed will do: what is checked is the query the client sent.
    replay_server.add(API_PATH, recorded("q_testing_s0_m10_bc5a6c384fe9.json"))
    return replay_server


@pytest.mark.parametrize(
    ("typed", "query"),
    [
        (
            'What are the latest papers on "machine translation" with transformers?',
            'all:"machine translation" AND all:transformers',
        ),
        (
            "state-of-the-art BERT models for question answering",
            'all:"state-of-the-art" AND all:BERT AND all:models AND all:question AND all:answering',
        ),
        ("testing", "testing"),
        ("Find me papers about testing", "testing"),
        # arXiv's own syntax is the user's choice: sent as typed.
        ('ti:"attention is all you need" AND au:vaswani', None),
        ("graph ANDNOT neural", None),
        # Nothing but stop words: the words themselves, rather than an empty query.
        ("what is it", "all:what AND all:is AND all:it"),
    ],
)
def test_typed_questions_become_arxiv_queries(arxiv, typed: str, query: str | None) -> None:
    found = ArxivEngine().search(SearchRequest(typed, max_results=10))
    assert sent(arxiv)["search_query"] == (query or typed)
    # and says so, for the search log: the question was not what arXiv was sent
    assert isinstance(found, SearchResults) and found.sent == sent(arxiv)["search_query"]


def test_a_long_question_keeps_its_first_content_words(arxiv) -> None:
    ArxivEngine().search(
        SearchRequest("one two three four five six seven eight nine ten eleven", max_results=5)
    )
    assert sent(arxiv)["search_query"] == " AND ".join(
        f"all:{word}" for word in "one two three four five six seven eight".split()
    )


@pytest.mark.parametrize(
    ("typed", "dates"),
    [
        ("graph neural networks for drug discovery published since 2020", "[202001010000 TO "),
        ("speech recognition before 2000", "[199101010000 TO 199912312359]"),
        ("LLM evaluation in 2023", "[202301010000 TO 202312312359]"),
    ],
)
def test_years_in_a_question_become_the_submission_date_range(
    arxiv, typed: str, dates: str
) -> None:
    ArxivEngine().search(SearchRequest(typed))
    query = sent(arxiv)["search_query"]
    assert f"submittedDate:{dates}" in query
    assert "all:20" not in query and "all:19" not in query  # the year is not a word to match
    assert "since" not in query and "published" not in query


def test_the_request_s_own_dates_win_over_the_question_s(arxiv) -> None:
    ArxivEngine().search(SearchRequest("bert since 2020", date_from="2018", date_to="2018"))
    assert sent(arxiv)["search_query"] == (
        "(bert) AND submittedDate:[201801010000 TO 201812312359]"
    )

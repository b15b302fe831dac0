"""A filtered search reads the papers its filters allow once, and ranks as before.

A hybrid search ranks the full text and the vectors, each restricted to the filters'
papers; the two used to build the restriction and read its ids each (at 95k papers a
year filter's ids took ~5 ms a reading). Now `lexical.one_search` shares them within one
search, and `AllowedPapers.ids` returns them sorted, each once, whatever the restriction.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.models import Paper
from papers.search import lexical, semantic
from papers.search.local import local_search, local_search_ids
from papers.search.types import SearchFilters
from tests.papers.search.builders import TEXTS

pytestmark = pytest.mark.django_db


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> Iterator[list[Paper]]:
    """TEXTS published 2015-2022, with their vectors (the index lives in the process; each
    test's database is rolled back after it)."""
    years = [2015 + index % 8 for index in range(len(TEXTS))]
    papers = [
        make_paper(title, abstract=abstract, year=year)
        for (title, abstract), year in zip(TEXTS, years, strict=True)
    ]
    semantic.vector_index().reset()
    semantic.embed_papers([paper.pk for paper in papers])
    yield papers
    semantic.vector_index().reset()


def allowed_id_reads(queries: CaptureQueriesContext) -> int:
    return sum(
        "group_concat(paper_id)" in query["sql"] or "string_agg(paper_id" in query["sql"]
        for query in queries.captured_queries
    )


def filtered_hybrid_search(library: list[Paper], search: str) -> int:
    """Runs the search and checks its answer; how many times it read every allowed id."""
    filters = SearchFilters(year_from=2016)
    with CaptureQueriesContext(connection) as queries:
        if search == "local_search":
            page = local_search(query="machine translation of speech", filters=filters)
            mode, ids = page.mode, [hit.record["paper_id"] for hit in page.hits]
        else:
            ranking = local_search_ids(query="machine translation of speech", filters=filters)
            mode, ids = ranking.mode, ranking.ids
    assert mode == "hybrid"
    assert ids
    allowed = {paper.pk for paper in library if paper.year >= 2016}
    assert set(ids) <= allowed
    return allowed_id_reads(queries)


@pytest.mark.parametrize("search", ["local_search", "local_search_ids"])
def test_a_filtered_hybrid_search_reads_the_allowed_papers_once(
    library: list[Paper], search: str
) -> None:
    """SQLite: the full-text ranking reads them (its in-process aggregate) and the semantic
    ranking looks its candidates up in that list. PostgreSQL, in a transaction that has
    written (this test's): the full text restricts in SQL (no postings in memory there)
    and the semantic ranking asks about its candidates only, so none reads them all."""
    reads = filtered_hybrid_search(library, search)
    assert reads == (1 if connection.vendor == "sqlite" else 0)


@pytest.mark.django_db(transaction=True)
def test_a_committed_library_is_searched_as_on_sqlite(library: list[Paper]) -> None:
    """Outside a transaction that has written, as a server's searches are, PostgreSQL
    keeps the postings in memory as SQLite does, and takes SQLite's path: one reading."""
    assert filtered_hybrid_search(library, "local_search") == 1


def test_outside_a_search_each_reading_is_fresh(library: list[Paper]) -> None:
    """The sharing lasts one search: a paper added between two searches is seen."""
    restriction = [("SELECT paper_id FROM papers_paper WHERE year >= %s", [2018])]
    before = lexical.AllowedPapers(restriction).ids()
    Paper.objects.filter(pk=library[0].pk).update(year=2024)
    after = lexical.AllowedPapers(restriction).ids()
    assert library[0].year == 2015
    assert library[0].pk not in before.tolist()
    assert library[0].pk in after.tolist()


def test_allowed_ids_are_sorted_and_each_once(library: list[Paper]) -> None:
    # Every paper twice, in table order: as a restriction over link rows can list them.
    twice = "SELECT paper_id FROM papers_paper UNION ALL SELECT paper_id FROM papers_paper"
    ids = lexical.AllowedPapers([(twice, [])]).ids()
    assert ids.tolist() == sorted(paper.pk for paper in library)
    assert not ids.flags.writeable  # shared by a search's rankings: never changed in place
    none = lexical.AllowedPapers([("SELECT paper_id FROM papers_paper WHERE 1 = 0", [])])
    assert none.ids().size == 0


@pytest.mark.parametrize("probe", [(200, 20), (1, 0)], ids=["probe-fills", "every-allowed-row"])
@pytest.mark.parametrize("within_a_search", [False, True], ids=["probe-by-sql", "ids-read"])
def test_semantic_ranking_among_allowed_papers_is_the_exact_top(
    library: list[Paper],
    probe: tuple[int, int],
    within_a_search: bool,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Both ways of restricting the vectors (the best-scored probed among the allowed
    papers, by SQL or in the ids a search has read, or the allowed papers' own rows) give
    the exact order of the allowed papers by score."""
    monkeypatch.setattr(semantic, "PROBE_MIN", probe[0])
    monkeypatch.setattr(semantic, "PROBE_FACTOR", probe[1])
    tiers = semantic.current_tiers()
    vectors = tiers.encode("speech recognition")
    everything_ids, everything_scores = semantic._rank(tiers, vectors, len(library))
    sql = "SELECT paper_id FROM papers_paper WHERE year IN (2016, 2019, 2021)"
    allowed = lexical.AllowedPapers([(sql, [])])
    wanted = set(allowed.ids().tolist())
    with lexical.one_search():
        if within_a_search:
            allowed.ids()
        ids, scores = semantic._rank(tiers, vectors, 3, allowed)
    expected = [pk for pk in everything_ids if pk in wanted][:3]
    assert ids == expected
    assert scores == sorted(scores, reverse=True)
    assert len(everything_scores) == len(library)


def test_members_agree_by_sql_and_in_memory(library: list[Paper]) -> None:
    allowed = lexical.AllowedPapers(
        [("SELECT paper_id FROM papers_paper WHERE year >= %s", [2019])]
    )
    papers = np.asarray([paper.pk for paper in library] + [10**9], dtype=np.int64)
    expected = [paper.year >= 2019 for paper in library] + [False]
    assert allowed.members(papers).tolist() == expected
    with lexical.one_search():
        allowed.ids()
        assert allowed.members(papers).tolist() == expected
    assert allowed.members(np.zeros(0, dtype=np.int64)).tolist() == []

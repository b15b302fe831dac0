"""Facet counts: every category, ordering, scope, filters, query result sets and caching."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.core.cache import cache
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.errors import InvalidInput
from papers.models import Author, Paper, PaperAuthor
from papers.schemas import PaperRecord
from papers.search import facets
from papers.search.facets import facet_counts, top_facets
from papers.search.types import SearchFilters
from papers.services import paper_keywords_update, paper_upsert
from projects.services import project_add_papers, project_rename

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_cache() -> Iterator[None]:
    # Rolled-back tests reuse ids, so two tests can share a library version.
    cache.clear()
    yield
    cache.clear()


@pytest.fixture
def library(make_paper: Callable[..., Paper], make_project: Callable[..., Any]) -> dict[str, Any]:
    acl = "Proceedings of ACL"
    papers = {
        "a": make_paper(
            "Attention for Parsing",
            authors=[{"name": "Bo Li", "affiliation": "MIT"}, "Ana Ruiz"],
            year=2023, venue=acl, keywords=["parsing", "attention"], categories=["cs.CL"],
        ),
        "b": make_paper(
            "Parsing Morphology",
            authors=[
                {"name": "Bo Li", "affiliation": "MIT"}, {"name": "Cy Wu", "affiliation": "CMU"},
            ],
            year=2023, venue=acl, keywords=["parsing"], categories=["cs.CL"],
        ),
        "c": make_paper(
            "Vision Attention",
            authors=["Cy Wu", "Ana Ruiz"],
            year=2021, venue="CVPR", keywords=["vision"], categories=["cs.CV"],
        ),
        "d": make_paper("Old Parsing Notes", authors=["Dee Park"], year=1999),
    }  # fmt: skip
    nlp = make_project("NLP Reading")
    vision = make_project("Vision")
    project_add_papers(project=nlp, paper_ids=[papers["a"].pk, papers["b"].pk])
    project_add_papers(project=vision, paper_ids=[papers["b"].pk, papers["c"].pk])
    return {"papers": papers, "nlp": nlp, "vision": vision}


def counts(category: str, **options: Any) -> list[tuple[str, int]]:
    return [(v["name"], v["paper_count"]) for v in top_facets(category=category, **options)]


def test_each_category_counts_papers_most_first_then_by_name(library: dict[str, Any]) -> None:
    assert counts("author") == [("Ana Ruiz", 2), ("Bo Li", 2), ("Cy Wu", 2), ("Dee Park", 1)]
    assert counts("venue") == [("Proceedings of ACL", 2), ("CVPR", 1)]
    assert counts("keyword") == [("parsing", 2), ("attention", 1), ("vision", 1)]
    assert counts("institution") == [("MIT", 2), ("CMU", 1)]
    assert counts("tag") == [("NLP Reading", 2), ("Vision", 2)]
    assert counts("category") == [("cs.CL", 2), ("cs.CV", 1)]
    assert counts("year") == [("2023", 2), ("1999", 1), ("2021", 1)]


def test_limit_cuts_after_ordering(library: dict[str, Any]) -> None:
    assert counts("author", limit=2) == [("Ana Ruiz", 2), ("Bo Li", 2)]
    assert counts("year", limit=1) == [("2023", 2)]


def test_values_carry_a_filter_that_selects_their_papers(library: dict[str, Any]) -> None:
    from papers.search.filters import filters_from_payload
    from papers.search.listings import paper_search_by_payload

    for category in ("author", "venue", "keyword", "institution", "tag", "category", "year"):
        for value in top_facets(category=category):
            page = paper_search_by_payload(filters=filters_from_payload(value["filter"]))
            assert page.total == value["paper_count"], (category, value)
    tag = top_facets(category="tag")[0]
    assert tag["project_id"] == library["nlp"].id


def test_a_paper_listing_an_author_twice_counts_once(
    library: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    paper = library["papers"]["d"]
    PaperAuthor.objects.create(paper=paper, author=Author.objects.get(name="Dee Park"), position=5)
    PaperAuthor.objects.create(paper=paper, author=Author.objects.get(name="Dee Park"), position=6)
    assert counts("author")[-1] == ("Dee Park", 1)
    # the ranking shortcut (COUNT(*) candidates, exact counts for them) on a small margin,
    # both when it can answer and when a tie forces the exact aggregate
    monkeypatch.setattr(facets, "_TIE_MARGIN", 1)
    cache.clear()
    assert counts("author", limit=1) == [("Ana Ruiz", 2)]
    cache.clear()
    assert counts("author", limit=3) == [("Ana Ruiz", 2), ("Bo Li", 2), ("Cy Wu", 2)]


def test_scope_limits_counts_and_hides_other_projects(library: dict[str, Any]) -> None:
    scope = [library["nlp"].id]
    assert counts("author", scope=scope) == [("Bo Li", 2), ("Ana Ruiz", 1), ("Cy Wu", 1)]
    # paper b is also in Vision, which this client cannot see
    assert counts("tag", scope=scope) == [("NLP Reading", 2)]
    assert counts("venue", scope=["Vision"]) == [("CVPR", 1), ("Proceedings of ACL", 1)]
    assert counts("year", scope=["no such project"]) == []
    result = facet_counts(category="year", scope=scope)
    assert result.notes == ["Counts are over the papers in your collections."]


def test_filters_narrow_the_counted_papers(library: dict[str, Any]) -> None:
    only_2023 = SearchFilters(year=2023)
    assert counts("author", filters=only_2023) == [("Bo Li", 2), ("Ana Ruiz", 1), ("Cy Wu", 1)]
    assert counts("keyword", filters=SearchFilters(venue="CVPR")) == [("vision", 1)]
    assert counts("venue", filters=SearchFilters(year_to=2000)) == []


def test_facets_over_a_query_count_its_hits(library: dict[str, Any], settings: Any) -> None:
    result = facet_counts(category="year", query="parsing")
    assert [(v["name"], v["paper_count"]) for v in result.values] == [("2023", 2), ("1999", 1)]
    assert result.papers_considered == 3
    assert result.notes == ["Counts are over the 3 papers matching the query."]
    assert counts("author", query="parsing", scope=[library["vision"].id]) == [
        ("Bo Li", 1), ("Cy Wu", 1),
    ]  # fmt: skip
    assert counts("venue", query="nothingmatchesthis") == []
    settings.FACETS_QUERY_CAP = 1
    capped = facet_counts(category="year", query="parsing")
    assert capped.papers_considered == 1
    assert capped.notes == [
        "Capped: the query matches about 3 papers; counts are over its 1 best-ranked (the cap)."
    ]


def test_a_querys_papers_go_to_every_count_as_one_parameter(library: dict[str, Any]) -> None:
    # As `IN (%s, %s, ...)`, SQLite counted the authors of a query's 10,000 papers (the cap)
    # by walking every author link of a 1M library (0.38 s against 0.03 s).
    from core.sql import among_subquery

    subquery = among_subquery(connection.vendor, [])[0].split("%s")[0]
    for category in facets.FACET_CATEGORIES:
        cache.clear()
        with CaptureQueriesContext(connection) as statements:
            facet_counts(category=category, query="parsing")
        counting = [
            q["sql"] for q in statements if "GROUP BY" in q["sql"] and "lex_posting" not in q["sql"]
        ]
        assert counting, category
        assert all(subquery in sql for sql in counting), (category, counting)


def test_cached_counts_follow_library_changes(
    library: dict[str, Any], django_assert_max_num_queries: Any
) -> None:
    assert counts("keyword")[0] == ("parsing", 2)
    # The library version only (on PostgreSQL, inside this test's transaction, which has
    # written: whether it has, then the counts; committed, the generations: below).
    with django_assert_max_num_queries(1 if connection.vendor == "sqlite" else 2):
        assert counts("keyword")[0] == ("parsing", 2)
    paper_keywords_update(
        refs=[library["papers"]["c"].pk], action="add", keywords=["Parsing"], scope=None
    )
    assert counts("keyword")[0] == ("parsing", 3)
    paper_keywords_update(
        refs=[library["papers"]["a"].pk], action="remove", keywords=["parsing"], scope=None
    )
    assert counts("keyword")[0] == ("parsing", 2)


@pytest.mark.django_db(transaction=True)
def test_committed_changes_renew_the_cached_counts(
    library: dict[str, Any], django_assert_max_num_queries: Any
) -> None:
    """As a server's writes are, each committed: on PostgreSQL the version is the tables'
    generations, renewed at each commit (migrations papers 0017, projects 0018)."""
    assert counts("keyword")[0] == ("parsing", 2)
    with django_assert_max_num_queries(1):  # the library version only
        assert counts("keyword")[0] == ("parsing", 2)
    paper_keywords_update(
        refs=[library["papers"]["c"].pk], action="add", keywords=["Parsing"], scope=None
    )
    assert counts("keyword")[0] == ("parsing", 3)
    paper_keywords_update(
        refs=[library["papers"]["a"].pk], action="remove", keywords=["parsing"], scope=None
    )
    assert counts("keyword")[0] == ("parsing", 2)
    Paper.objects.filter(pk=library["papers"]["c"].pk).delete()
    assert dict(counts("keyword"))["parsing"] == 1


@pytest.mark.django_db(transaction=True)
def test_edits_in_place_renew_the_cached_counts_at_once(library: dict[str, Any]) -> None:
    """A paper's year changed by an UPDATE, a venue and a project renamed, a paper's text
    changed: the next call counts them (no wait for the cache's lifetime), both databases."""
    papers = library["papers"]
    assert counts("year")[0] == ("2023", 2)
    assert counts("year", query="vision") == [("2021", 1)]
    Paper.objects.filter(pk=papers["a"].pk).update(year=2021)
    assert counts("year")[:2] == [("2021", 2), ("1999", 1)]
    papers["c"].venue.name = "Computer Vision and Pattern Recognition"
    papers["c"].venue.save()
    assert ("Computer Vision and Pattern Recognition", 1) in counts("venue")
    project_rename(project=library["vision"], name="Seeing")
    assert ("Seeing", 2) in counts("tag")
    record = PaperRecord.build(
        title="Old Parsing Notes", authors=["Dee Park"], year=1999, abstract="Notes on vision."
    )
    assert paper_upsert(record=record) == (papers["d"], False)
    assert counts("year", query="vision") == [("1999", 1), ("2021", 1)]


@pytest.mark.django_db(transaction=True)
def test_whole_library_answers_are_kept_until_a_change(
    library: dict[str, Any], monkeypatch: pytest.MonkeyPatch, django_assert_num_queries: Any
) -> None:
    """Past CACHE_SECONDS (here 0: nothing kept by time) a whole-library answer is still
    kept, under generations that any change renews; an answer over a query is not."""
    monkeypatch.setattr(facets, "CACHE_SECONDS", 0)
    assert counts("author")[0] == ("Ana Ruiz", 2)
    with django_assert_num_queries(1):  # the library version only
        assert counts("author")[0] == ("Ana Ruiz", 2)
    assert counts("year", query="parsing")[0] == ("2023", 2)
    with CaptureQueriesContext(connection) as again:
        assert counts("year", query="parsing")[0] == ("2023", 2)
    assert len(again) > 1
    Author.objects.filter(name="Ana Ruiz").update(name="Ana Ruiz-Diaz")
    assert counts("author")[0] == ("Ana Ruiz-Diaz", 2)


def test_a_query_is_searched_once_for_several_categories(
    library: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    from papers.search import local

    calls: list[str] = []
    real = local.local_search_ids

    def counting(**options: Any) -> local.LocalRanking:
        calls.append(options["query"])
        return real(**options)

    monkeypatch.setattr(local, "local_search_ids", counting)
    assert counts("year", query="parsing") == [("2023", 2), ("1999", 1)]
    assert counts("venue", query="parsing") == [("Proceedings of ACL", 2)]
    assert calls == ["parsing"]
    assert counts("venue", query="vision") == [("CVPR", 1)]
    assert calls == ["parsing", "vision"]


@pytest.mark.parametrize(
    "options",
    [
        {"category": "authors"},
        {"category": "author", "limit": 0},
        {"category": "author", "limit": 101},
        {"category": "author", "query": "x" * 4001},
    ],
)
def test_bad_requests_are_invalid_input(db: None, options: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        top_facets(**options)


def test_short_venues_and_counts_per_year(
    library: dict[str, Any], make_paper: Callable[..., Paper]
) -> None:
    make_paper("Parsing Again", year=2021, venue="Proceedings of ACL 2021", venue_short="ACL")
    make_paper("Parsing Once", year=2019, venue="Proceedings of ACL 2019", venue_short="acl")
    # Papers whose record has no short name count under the full name.
    assert counts("venue_short") == [("acl", 2), ("Proceedings of ACL", 2), ("CVPR", 1)]
    assert counts("venue_short", limit=1) == [("acl", 2)]  # a tie at the cut: by name
    assert counts("venue_short", query="vision") == [("CVPR", 1)]
    assert counts("venue_short", filters=SearchFilters(year=2019)) == [("acl", 1)]
    result = facet_counts(category="venue_short", by_year=True)
    assert [value["by_year"] for value in result.values] == [
        {"2019": 1, "2021": 1}, {"2023": 2}, {"2021": 1},
    ]  # fmt: skip
    # One definition of a series for both counts: a short name lower-cased beyond ASCII
    # (SQLite's lower() folds ASCII only) gets its years too.
    make_paper("Étude", year=2020, venue="Actes de TALN 2020", venue_short="ÉTAL")
    series = facet_counts(category="venue_short", by_year=True, limit=10).values
    assert {v["name"]: v["by_year"] for v in series}["étal"] == {"2020": 1}
    authors = facet_counts(category="author", by_year=True, query="parsing morphology")
    assert {v["name"]: v["by_year"] for v in authors.values} == {
        "Ashish Vaswani": {"2019": 1, "2021": 1}, "Noam Shazeer": {"2019": 1, "2021": 1},
        "Bo Li": {"2023": 2}, "Ana Ruiz": {"2023": 1}, "Cy Wu": {"2023": 1},
        "Dee Park": {"1999": 1},
    }  # fmt: skip
    with pytest.raises(InvalidInput):
        facet_counts(category="year", by_year=True)


def test_the_start_counts_the_whole_librarys_facets(
    library: dict[str, Any], django_assert_num_queries: Any
) -> None:
    """A server's warm-up counts each category as list_top_facets asks by default (no
    query, 20 values): the first such call reads only the library's version."""
    from papers.search import warmup

    warmup._warm_facets()
    # PostgreSQL, in this test's transaction (which has written), asks whether it has first.
    for category in facets.FACET_CATEGORIES:
        with django_assert_num_queries(1 if connection.vendor == "sqlite" else 2):
            facet_counts(category=category)
    assert counts("author")[0] == ("Ana Ruiz", 2)

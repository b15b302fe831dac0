"""The listings that rank by no text (payload, keyword, author): paging, scope, arguments,
on the real database."""

# ruff: noqa: F811  (the imported fixture is a parameter of the tests below)
from __future__ import annotations

from typing import Any

import pytest

from core.errors import InvalidInput
from papers.search.filters import filters_from_payload
from papers.search.listings import (
    paper_search_by_author,
    paper_search_by_keyword,
    paper_search_by_payload,
)
from papers.search.types import SearchFilters
from tests.papers.search.builders import library  # noqa: F401

pytestmark = pytest.mark.django_db


# --- payload search ----------------------------------------------------------------


def test_payload_search_pages_deterministically(library: dict[str, Any]) -> None:
    filters = filters_from_payload({"year": "2000-2030"})
    first = paper_search_by_payload(filters=filters, limit=2, offset=0)
    second = paper_search_by_payload(filters=filters, limit=2, offset=2)
    assert first.mode == "payload" and first.total == 4 and first.has_more
    assert not second.has_more
    years = [hit.record["year"] for hit in first.hits + second.hits]
    assert years == [2023, 2023, 2021, 2003]
    ids = [hit.record["paper_id"] for hit in first.hits]
    assert ids == sorted(ids)
    assert first.hits[0].record["venue"]
    beyond = paper_search_by_payload(filters=filters, limit=2, offset=10)
    assert beyond.hits == [] and beyond.total == 4


def test_payload_search_respects_scope(library: dict[str, Any]) -> None:
    page = paper_search_by_payload(filters=SearchFilters(year_from=2000), scope=["Vision"])
    assert [hit.record["title"] for hit in page.hits] == ["Vision Transformers at Scale"]
    assert paper_search_by_payload(filters=SearchFilters(year_from=2000), scope=["nope"]).total == 0


@pytest.mark.parametrize(("limit", "offset"), [(0, 0), (101, 0), (10, -1), (10, 10_001)])
def test_payload_search_rejects_out_of_bounds_pages(limit: int, offset: int) -> None:
    with pytest.raises(InvalidInput):
        paper_search_by_payload(filters=SearchFilters(year=2020), limit=limit, offset=offset)


def test_payload_search_needs_a_filter(db: None) -> None:
    with pytest.raises(InvalidInput) as caught:
        paper_search_by_payload(filters=SearchFilters())
    assert "venue" in caught.value.message


# --- keyword search ----------------------------------------------------------------


def test_keyword_search_exact_is_case_insensitive_and_covers_categories(
    library: dict[str, Any],
) -> None:
    page = paper_search_by_keyword(keyword="TRANSFORMER")
    assert [hit.record["title"] for hit in page.hits] == ["Vision Transformers at Scale"]
    assert page.mode == "keyword"
    assert "**transformer**" in page.hits[0].snippet_markdown
    by_category = paper_search_by_keyword(keyword="cs.cl")
    assert [hit.record["title"] for hit in by_category.hits] == ["Parsing With 50% Less Data_v2"]
    assert "**cs.CL**" in by_category.hits[0].snippet_markdown


def test_keyword_search_prefix(library: dict[str, Any]) -> None:
    page = paper_search_by_keyword(keyword="transformer", match="prefix")
    assert [hit.record["title"] for hit in page.hits] == [
        "Vision Transformers at Scale", "Statistical Machine Translation",
    ]  # fmt: skip
    cs = paper_search_by_keyword(keyword="cs.", match="prefix", limit=1)
    assert cs.total == 2 and cs.has_more and len(cs.hits) == 1
    # '_' and '%' are literal in a prefix
    assert paper_search_by_keyword(keyword="cs_", match="prefix").total == 0


def test_keyword_search_respects_scope(library: dict[str, Any]) -> None:
    scoped = paper_search_by_keyword(keyword="transformer", match="prefix", scope=["NLP Reading"])
    assert scoped.total == 0
    assert paper_search_by_keyword(keyword="parsing", scope=["NLP Reading"]).total == 1


@pytest.mark.parametrize(
    "arguments", [{"keyword": " "}, {"keyword": "x" * 101}, {"keyword": "a", "match": "fuzzy"}]
)
def test_keyword_search_rejects_bad_arguments(db: None, arguments: dict[str, Any]) -> None:
    with pytest.raises(InvalidInput):
        paper_search_by_keyword(**arguments)


# --- author search -------------------------------------------------------------------


@pytest.mark.parametrize("name", ["Bo Li", "bo li", "Li, Bo", "B. Li", "Li", "B* Li", "*o L?"])
def test_author_search_accepts_the_usual_name_forms(library: dict[str, Any], name: str) -> None:
    page = paper_search_by_author(name=name)
    # same year: paper_id order, and "findings" was created first
    assert [hit.record["title"] for hit in page.hits] == [
        "Prompting in the Wild", "Parsing With 50% Less Data_v2",
    ]  # fmt: skip
    assert page.notes == ["Matched author name(s) on this page: Bo Li."]


def test_author_search_with_years_scope_and_misses(library: dict[str, Any]) -> None:
    assert paper_search_by_author(name="Dana Smith", year_to=2020).total == 0
    assert paper_search_by_author(name="Dana Smith", year_from=2021).total == 1
    assert paper_search_by_author(name="Garcia, Ana").total == 1
    assert paper_search_by_author(name="C. Li").total == 0
    assert paper_search_by_author(name="Dana Smith", scope=["NLP Reading"]).total == 0
    with pytest.raises(InvalidInput):
        paper_search_by_author(name="Dana Smith", year_from=2022, year_to=2021)
    with pytest.raises(InvalidInput):
        paper_search_by_author(name="  ")

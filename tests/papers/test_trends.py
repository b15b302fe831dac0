"""papers_trends and papers_trends_by_ref on a small real library."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.errors import InvalidInput, NotFound
from papers import trends
from papers.models import Paper
from papers.trends import ANALYSIS_TYPES, papers_resolve, papers_trends, papers_trends_by_ref
from projects.models import Project
from projects.services import project_add_papers

Library = dict[str, Paper]


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> Library:
    return {
        "a": make_paper(
            "Attention is all you need",
            authors=["Ashish Vaswani", "Noam Shazeer"],
            year=2017,
            venue="NeurIPS",
            keywords=["transformers", "attention"],
            categories=["cs.CL", "cs.LG"],
        ),
        "b": make_paper(
            "Mesh TensorFlow",
            authors=["Noam Shazeer", "Youlong Cheng"],
            year=2019,
            venue="NeurIPS",
            keywords=["transformers"],
            categories=["cs.LG"],
        ),
        "c": make_paper(
            "Switch transformers",
            authors=["William Fedus", "Noam Shazeer"],
            year=2021,
            venue="JMLR",
            keywords=["transformers", "mixture of experts"],
            categories=["cs.LG"],
        ),
        "d": make_paper(
            "Reformer",
            authors=["Nikita Kitaev"],
            year=2019,
            keywords=["attention"],
        ),
        "e": make_paper("An undated note", authors=["Ashish Vaswani"], year=None),
    }


def all_of(library: Library) -> list[Paper]:
    return list(library.values())


def test_timeline_has_every_year_in_range_including_empty_ones(library: Library) -> None:
    result = papers_trends(papers=all_of(library), analysis_type="timeline")
    assert result["items"] == [
        {"year": 2017, "paper_count": 1},
        {"year": 2018, "paper_count": 0},
        {"year": 2019, "paper_count": 2},
        {"year": 2020, "paper_count": 0},
        {"year": 2021, "paper_count": 1},
    ]
    assert result["summary"] == {
        "total_papers": 5,
        "first_year": 2017,
        "last_year": 2021,
        "papers_without_year": 1,
        "years_with_papers": 3,
    }
    assert result["notes"] == ["1 paper has no year and is not on the timeline."]


def test_authors_are_counted_with_their_years(library: Library) -> None:
    result = papers_trends(papers=all_of(library), analysis_type="authors")
    assert result["items"] == [
        {"name": "Noam Shazeer", "paper_count": 3, "first_year": 2017, "last_year": 2021},
        {"name": "Ashish Vaswani", "paper_count": 2, "first_year": 2017, "last_year": 2017},
        {"name": "Nikita Kitaev", "paper_count": 1, "first_year": 2019, "last_year": 2019},
        {"name": "William Fedus", "paper_count": 1, "first_year": 2021, "last_year": 2021},
        {"name": "Youlong Cheng", "paper_count": 1, "first_year": 2019, "last_year": 2019},
    ]
    assert result["summary"]["distinct_values"] == 5
    assert result["summary"]["papers_without_value"] == 0


@pytest.mark.parametrize(
    ("analysis_type", "items", "without"),
    [
        (
            "keywords",
            [("transformers", 3), ("attention", 2), ("mixture of experts", 1)],
            1,  # the undated note
        ),
        ("categories", [("cs.LG", 3), ("cs.CL", 1)], 2),
        ("venues", [("NeurIPS", 2), ("JMLR", 1)], 2),
    ],
)
def test_named_values_are_counted_most_papers_first(
    library: Library, analysis_type: str, items: list[tuple[str, int]], without: int
) -> None:
    result = papers_trends(papers=all_of(library), analysis_type=analysis_type)
    assert [(row["name"], row["paper_count"]) for row in result["items"]] == items
    assert result["summary"]["distinct_values"] == len(items)
    assert result["summary"]["papers_without_value"] == without
    assert result["summary"]["total_papers"] == 5


def test_papers_can_be_a_queryset_objects_or_ids(library: Library) -> None:
    chosen = [library["a"], library["b"]]
    as_objects = papers_trends(papers=chosen, analysis_type="keywords")
    as_ids = papers_trends(papers=[p.pk for p in chosen], analysis_type="keywords")
    as_queryset = papers_trends(
        papers=Paper.objects.filter(pk__in=[p.pk for p in chosen]), analysis_type="keywords"
    )
    assert as_objects == as_ids == as_queryset
    assert as_ids["items"] == [
        {"name": "transformers", "paper_count": 2},
        {"name": "attention", "paper_count": 1},
    ]


def test_the_whole_library_as_an_unfiltered_queryset(library: Library) -> None:
    everything = papers_trends(papers=Paper.objects.all(), analysis_type="authors")
    assert everything == papers_trends(papers=all_of(library), analysis_type="authors")


def test_a_sliced_queryset_counts_only_its_slice(library: Library) -> None:
    first_two = Paper.objects.order_by("paper_id")[:2]
    result = papers_trends(papers=first_two, analysis_type="timeline")
    assert result["summary"]["total_papers"] == 2


def test_ties_at_the_cut_are_ordered_by_name(
    library: Library, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three authors have one paper each; with no margin the cut falls inside the tie,
    and the one kept is the first by name, not the first created (Youlong Cheng)."""
    monkeypatch.setattr(trends, "_TIE_MARGIN", 0)
    result = papers_trends(papers=all_of(library), analysis_type="authors", limit=3)
    assert [row["name"] for row in result["items"]] == [
        "Noam Shazeer",
        "Ashish Vaswani",
        "Nikita Kitaev",
    ]


def test_limit_cuts_the_list_and_says_so(library: Library) -> None:
    result = papers_trends(papers=all_of(library), analysis_type="authors", limit=2)
    assert [row["name"] for row in result["items"]] == ["Noam Shazeer", "Ashish Vaswani"]
    assert result["summary"]["distinct_values"] == 5
    assert result["notes"] == ["Showing the top 2 of 5 authors."]


def test_an_empty_selection_has_empty_counts(db: None) -> None:
    timeline = papers_trends(papers=[], analysis_type="timeline")
    assert timeline["items"] == []
    assert timeline["summary"] == {
        "total_papers": 0,
        "first_year": None,
        "last_year": None,
        "papers_without_year": 0,
    }
    assert papers_trends(papers=[], analysis_type="authors")["items"] == []


def test_scope_leaves_out_papers_outside_the_collections(
    library: Library, make_project: Callable[..., Project]
) -> None:
    project = make_project("Efficient transformers")
    project_add_papers(project=project, paper_ids=[library["c"].pk, library["d"].pk])
    result = papers_trends(papers=all_of(library), analysis_type="timeline", scope=[project.id])
    assert result["summary"]["total_papers"] == 2
    assert result["items"] == [
        {"year": 2019, "paper_count": 1},
        {"year": 2020, "paper_count": 0},
        {"year": 2021, "paper_count": 1},
    ]


def test_unknown_analysis_type_lists_the_allowed_ones(library: Library) -> None:
    with pytest.raises(InvalidInput) as raised:
        papers_trends(papers=all_of(library), analysis_type="citations")
    assert raised.value.details["allowed"] == list(ANALYSIS_TYPES)
    assert "authors, keywords, timeline, categories, venues" in raised.value.message
    assert raised.value.details["field"] == "analysis_type"


@pytest.mark.parametrize("limit", [0, 1001, True])
def test_limit_out_of_range_is_invalid(library: Library, limit: Any) -> None:
    with pytest.raises(InvalidInput):
        papers_trends(papers=all_of(library), analysis_type="authors", limit=limit)


# --- by reference and by project ---------------------------------------------------------------


def test_references_of_every_kind_resolve_in_order(library: Library) -> None:
    a, b, c, d = library["a"], library["b"], library["c"], library["d"]
    refs: list[str | int] = [c.citekey, a.pk, str(b.pk), d.human_id, c.pk]
    assert papers_resolve(refs=refs) == [c.pk, a.pk, b.pk, d.pk]  # each once
    result = papers_trends_by_ref(paper_ids=refs, analysis_type="venues")
    assert result["summary"]["total_papers"] == 4
    assert result["items"] == [
        {"name": "NeurIPS", "paper_count": 2},
        {"name": "JMLR", "paper_count": 1},
    ]


def test_unknown_references_are_all_named(library: Library) -> None:
    with pytest.raises(NotFound) as raised:
        papers_trends_by_ref(
            paper_ids=[library["a"].pk, "nosuch2020paper", 999_999, "[Nobody, N. 1999]"],
            analysis_type="authors",
        )
    assert raised.value.details["paper_ids"] == ["nosuch2020paper", "999999", "[Nobody, N. 1999]"]
    assert "'nosuch2020paper'" in raised.value.message and "999999" in raised.value.message


def test_references_outside_the_scope_are_unknown(
    library: Library, make_project: Callable[..., Project]
) -> None:
    project = make_project("Only A")
    project_add_papers(project=project, paper_ids=[library["a"].pk])
    with pytest.raises(NotFound) as raised:
        papers_resolve(refs=[library["a"].pk, library["b"].pk], scope=[project.id])
    assert raised.value.details["paper_ids"] == [str(library["b"].pk)]


@pytest.mark.parametrize(
    "refs",
    [["x"] * 1001, ["  "], [None], [True], "a-single-string"],
    ids=["too-many", "blank", "none", "bool", "string"],
)
def test_malformed_reference_lists_are_invalid(db: None, refs: Any) -> None:
    with pytest.raises(InvalidInput):
        papers_trends_by_ref(paper_ids=refs, analysis_type="authors")


def test_a_projects_papers(library: Library, make_project: Callable[..., Project]) -> None:
    project = make_project("Shazeer")
    project_add_papers(project=project, paper_ids=[library["a"].pk, library["b"].pk])
    result = papers_trends_by_ref(project_id="shazeer", analysis_type="authors")
    assert result["items"][0] == {
        "name": "Noam Shazeer",
        "paper_count": 2,
        "first_year": 2017,
        "last_year": 2019,
    }
    assert result["summary"]["total_papers"] == 2


def test_references_and_project_together_keep_the_papers_in_the_project(
    library: Library, make_project: Callable[..., Project]
) -> None:
    project = make_project("Shazeer")
    project_add_papers(project=project, paper_ids=[library["a"].pk, library["b"].pk])
    result = papers_trends_by_ref(
        paper_ids=[library["a"].pk, library["c"].pk],
        project_id=project.id,
        analysis_type="timeline",
    )
    assert result["items"] == [{"year": 2017, "paper_count": 1}]
    assert result["notes"][0] == (
        f"1 paper of the list is not in project {project.id!r} and was left out."
    )


def test_a_project_outside_the_scope_is_not_found(
    library: Library, make_project: Callable[..., Project]
) -> None:
    hidden = make_project("Hidden")
    visible = make_project("Visible")
    with pytest.raises(NotFound):
        papers_trends_by_ref(project_id=hidden.id, analysis_type="timeline", scope=[visible.id])


def test_neither_references_nor_project_is_invalid(db: None) -> None:
    with pytest.raises(InvalidInput):
        papers_trends_by_ref(analysis_type="timeline")


def test_timeline_honours_limit_keeping_the_most_recent_years(
    library: Library, make_paper: Callable[..., Paper]
) -> None:
    """One paper dated 1805 used to add 212 empty years to the answer, whatever the limit."""
    old = make_paper("A Very Old Treatise", authors=["Ada Old"], year=1805)
    papers = [*all_of(library), old]
    result = papers_trends(papers=papers, analysis_type="timeline", limit=3)
    assert result["items"] == [
        {"year": 2019, "paper_count": 2},
        {"year": 2020, "paper_count": 0},
        {"year": 2021, "paper_count": 1},
    ]
    assert result["summary"]["years_with_papers"] == 4
    assert any("217 years (1805-2021)" in note and "2 papers" in note for note in result["notes"])
    assert len(papers_trends(papers=papers, analysis_type="timeline", limit=100)["items"]) == 100


def test_trends_over_the_papers_matching_a_query(library: Library) -> None:
    result = papers_trends_by_ref(analysis_type="venues", query="transformers")
    # Full-text matches: the two with the word in the title or keywords.
    names = {item["name"]: item["paper_count"] for item in result["items"]}
    assert sum(names.values()) == result["summary"]["total_papers"] >= 2
    assert "NeurIPS" in names and "JMLR" in names
    assert any("transformers" in note for note in result["notes"])
    # Intersected with references: only the listed papers that match.
    listed = papers_trends_by_ref(
        analysis_type="timeline",
        query="switch",
        paper_ids=[library["a"].pk, library["c"].citekey],
    )
    assert listed["summary"]["total_papers"] == 1
    assert listed["items"] == [{"year": 2021, "paper_count": 1}]
    with pytest.raises(InvalidInput):
        papers_trends_by_ref(analysis_type="timeline", query="   ")
    with pytest.raises(InvalidInput, match="query"):
        papers_trends_by_ref(analysis_type="timeline")

"""Projects: creation, names, renaming, deletion that never deletes papers."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from core.errors import Conflict, InvalidInput
from papers.models import Paper
from projects.models import Project, ProjectPaper
from projects.selectors import project_get, project_papers
from projects.services import (
    project_add_papers,
    project_create,
    project_delete,
    project_rename,
)

pytestmark = pytest.mark.django_db


def test_project_gets_slug_id_and_is_found_by_id_or_name() -> None:
    project = project_create(name="Graph Neural Networks", description="GNN survey")
    assert project.id == "graph-neural-networks"
    assert project_get(ref="graph-neural-networks") == project
    assert project_get(ref="graph neural NETWORKS") == project


def test_project_names_are_unique_regardless_of_case() -> None:
    project_create(name="Surveys")
    with pytest.raises(Conflict):
        project_create(name="surveys")


@pytest.mark.parametrize("name", ["", "   ", "x" * 201, "a\x07b"])
def test_bad_project_names_are_refused(name: str) -> None:
    with pytest.raises(InvalidInput):
        project_create(name=name)
    assert not Project.objects.exists()


def test_rename_keeps_the_id() -> None:
    project = project_create(name="Old")
    renamed = project_rename(project=project.id, name="New name")
    assert (renamed.id, renamed.name) == ("old", "New name")


def test_deleting_a_project_keeps_its_papers(
    make_paper: Callable[..., Paper], make_project: Callable[..., Project]
) -> None:
    shared = make_paper("Shared")
    only_here = make_paper("Only here", authors=["Solo Author"])
    doomed = make_project("Doomed")
    kept = make_project("Kept")
    project_add_papers(project=doomed, paper_ids=[shared.pk, only_here.pk])
    project_add_papers(project=kept, paper_ids=[shared.pk])
    assert project_delete(project=doomed.id) == 2
    assert Paper.objects.count() == 2
    assert list(ProjectPaper.objects.values_list("project_id", "paper_id")) == [("kept", shared.pk)]


def test_project_listing_pages(
    make_paper: Callable[..., Paper], make_project: Callable[..., Project]
) -> None:
    project = make_project()
    papers = [make_paper(f"Paper {i}", authors=[f"Author{i} X"]) for i in range(5)]
    assert project_add_papers(project=project, paper_ids=[p.pk for p in papers]) == 5
    assert project_add_papers(project=project, paper_ids=[papers[0].pk]) == 0
    page, total = project_papers(project=project, limit=2, offset=2)
    assert total == 5
    assert len(page) == 2


# --- curation (issue 18, item 3): counts, detail, membership by any id, confirmed delete -----


@pytest.fixture
def shelf(make_paper: Callable[..., Paper], make_project: Callable[..., Project]) -> dict:
    papers = {
        "a": make_paper("Alpha Retrieval", year=2019, keywords=["retrieval", "dense"]),
        "b": make_paper("Beta Retrieval", authors=["Bea Beta"], year=2023, keywords=["retrieval"]),
        "c": make_paper("Gamma Parsing", authors=["Gus Gamma"], year=2021, keywords=["parsing"]),
    }
    reading, empty = make_project("Reading"), make_project("Empty one")
    project_add_papers(project=reading, paper_ids=[papers["a"].pk, papers["b"].pk])
    return {**papers, "reading": reading, "empty": empty}


def test_project_list_counts_papers_in_one_query(
    shelf: dict, django_assert_num_queries: Callable
) -> None:
    from projects.selectors import project_brief, project_list

    with django_assert_num_queries(1):
        briefs = [project_brief(p) for p in project_list()]
    assert [(b["project_id"], b["paper_count"]) for b in briefs] == [
        ("empty-one", 0),
        ("reading", 2),
    ]
    assert [
        b["project_id"] for b in (project_brief(p) for p in project_list(scope=["Reading"]))
    ] == ["reading"]


def test_project_detail_has_counts_years_and_keywords(shelf: dict) -> None:
    from projects.selectors import project_detail

    detail = project_detail(ref="READING")
    assert detail["project_id"] == "reading" and detail["paper_count"] == 2
    assert (detail["first_year"], detail["last_year"]) == (2019, 2023)
    assert detail["keywords"] == [
        {"name": "retrieval", "paper_count": 2},
        {"name": "dense", "paper_count": 1},
    ]
    assert detail["distinct_keywords"] == 2
    assert detail["created_at"] and detail["last_added_at"]
    empty = project_detail(ref="empty-one")
    assert (empty["paper_count"], empty["keywords"], empty["first_year"]) == (0, [], None)


def test_adding_papers_accepts_every_id_form_and_counts_those_already_in(shelf: dict) -> None:
    from projects.services import project_papers_add

    a, b, c = shelf["a"], shelf["b"], shelf["c"]
    result = project_papers_add(project="Reading", refs=[str(c.pk), a.citekey, b.human_id])
    assert result == {
        "project_id": "reading",
        "added": 1,
        "already_in": 2,
        "paper_ids": [c.pk, a.pk, b.pk],
    }
    assert ProjectPaper.objects.filter(project_id="reading").count() == 3


def test_adding_unknown_papers_adds_nothing_and_names_every_unknown_one(shelf: dict) -> None:
    from core.errors import NotFound
    from projects.services import project_papers_add

    with pytest.raises(NotFound) as missing:
        project_papers_add(project="empty-one", refs=[shelf["c"].pk, "nosuchkey2020", 999_999])
    assert missing.value.details["paper_ids"] == ["nosuchkey2020", "999999"]
    assert "'nosuchkey2020'" in missing.value.message
    assert not ProjectPaper.objects.filter(project_id="empty-one").exists()
    with pytest.raises(InvalidInput, match="non-empty list"):
        project_papers_add(project="empty-one", refs=[])
    with pytest.raises(NotFound):
        project_papers_add(project="no-such-project", refs=[shelf["c"].pk])


def test_a_scoped_client_adds_only_papers_and_projects_it_can_see(shelf: dict) -> None:
    from core.errors import NotFound
    from projects.services import project_papers_add

    with pytest.raises(NotFound):  # paper c is outside the client's collection
        project_papers_add(project="reading", refs=[shelf["c"].pk], scope=["reading"])
    with pytest.raises(NotFound):  # so is the project
        project_papers_add(project="empty-one", refs=[shelf["a"].pk], scope=["reading"])


def test_removing_papers_reports_those_not_in_the_project(shelf: dict) -> None:
    from projects.services import project_papers_remove

    result = project_papers_remove(project="reading", refs=[shelf["a"].citekey, shelf["c"].pk])
    assert result["removed"] == 1 and result["not_in_project"] == [shelf["c"].pk]
    assert Paper.objects.count() == 3  # papers stay in the library


def test_delete_needs_the_projects_exact_name(shelf: dict) -> None:
    from projects.services import project_delete_confirmed

    with pytest.raises(InvalidInput) as wrong:
        project_delete_confirmed(project="reading", confirm_name="reading")
    assert "confirm_name='Reading'" in wrong.value.message and "2 papers" in wrong.value.message
    assert wrong.value.details["field"] == "confirm_name"
    with pytest.raises(InvalidInput):
        project_delete_confirmed(project="reading", confirm_name="")
    assert Project.objects.filter(pk="reading").exists()
    done = project_delete_confirmed(project="reading", confirm_name=" Reading ")
    assert done == {
        "project_id": "reading",
        "name": "Reading",
        "deleted": True,
        "papers_removed": 2,
    }
    assert not Project.objects.filter(pk="reading").exists()
    assert Paper.objects.count() == 3


def test_a_scoped_client_s_writes_file_only_papers_it_sees_or_just_created(
    make_paper: Callable[..., Paper], make_project: Callable[..., Project]
) -> None:
    """Engine results and identifiers that de-duplicate into a paper outside a scoped
    client's collections are never filed into them (that would hand the paper over)."""
    from core.scope import client_scope
    from papers.schemas import PaperRecord
    from papers.services import paper_upsert
    from projects.services import projects_adder

    mine, other = make_project("Mine"), make_project("Other")
    theirs = make_paper("A Paper Of Another Project")
    project_add_papers(project=other, paper_ids=[theirs.pk])
    unfiled = make_paper("A Paper In No Project")
    seen = make_paper("A Paper Already Mine")
    project_add_papers(project=mine, paper_ids=[seen.pk])
    with client_scope(("Mine",)):
        hook = projects_adder([mine.id])
        assert hook is not None
        new, created = paper_upsert(
            record=PaperRecord.build(title="Brand New Work", authors=["Ann Other"], year=2024),
            on_saved=hook,
        )
        hook([theirs.pk, unfiled.pk, seen.pk])
    assert created
    filed = set(ProjectPaper.objects.filter(project=mine).values_list("paper_id", flat=True))
    assert filed == {new.pk, seen.pk}
    assert set(ProjectPaper.objects.filter(paper=theirs).values_list("project_id", flat=True)) == {
        other.id
    }

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

"""The extraction tests' library: fixture PDFs attached (and indexed) through the attach
service, a project holding them, and a review whose included studies they are."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from papers.models import Paper
from papers.pdf import services as pdf_services
from projects.models import Project
from projects.review.extraction.services import form_create
from projects.services import project_add_papers
from tests.projects.review.extraction.builders import ACL, FIELDS, QUANTUM


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    # The index task runs in this process, on this test's folders.
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.EXTRACTION_STRICT = False
    return tmp_path


@pytest.fixture
def attach(
    make_paper: Callable[..., Paper], django_capture_on_commit_callbacks: Any
) -> Callable[..., Paper]:
    """A paper with this PDF attached, its after-commit work (the index task) run."""

    def make(path: Path, title: str | None = None, **values: Any) -> Paper:
        paper = make_paper(title=title or f"Paper {path.stem}", **values)
        with django_capture_on_commit_callbacks(execute=True):
            pdf_services.pdf_attach_file(paper_id=paper.pk, path=path)
        return paper

    return make


@pytest.fixture
def studies(attach: Callable[..., Paper], make_paper: Callable[..., Paper]) -> dict[str, Paper]:
    """Two papers with PDFs and one with an abstract only."""
    return {
        "acl": attach(ACL, title="Construction of the Literature Graph in Semantic Scholar"),
        "quantum": attach(QUANTUM, title="Quantum Criticality for Extended Nodes"),
        "abstract": make_paper(
            title="A study known by its abstract",
            abstract="We screened 1,204 records and included 37 randomised trials in adults.",
            authors=["B. Reader"],
            year=2020,
        ),
    }


@pytest.fixture
def project(make_project: Callable[..., Project], studies: dict[str, Paper]) -> Project:
    """A project holding the studies, with the form FIELDS."""
    made = make_project(name="Evidence")
    project_add_papers(project=made, paper_ids=[p.pk for p in studies.values()])
    form_create(project_id=made.pk, name="Study data", fields=FIELDS)
    return made

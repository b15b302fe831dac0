"""The library's PDF coverage (issue 24, item 4): projects.coverage.library_pdf_coverage,
`manage.py pdf_coverage` (table and --json) and `GET /api/papers/pdf-coverage` count the
same papers, per project, per paper source and per PDF origin."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from papers.models import Paper, PaperPdf
from papers.pdf import services as pdf_services
from projects.coverage import library_pdf_coverage
from projects.models import Project
from projects.services import project_add_papers
from tests.api.conftest import Api
from tests.papers.pdf.builders import EXPOSITORY, QUANTUM

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> None:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture
def library(make_paper: Callable[..., Paper], make_project: Callable[..., Project]) -> None:
    """Five papers: arxiv 2 (1 with a PDF, attached), acl 2 (1 with a PDF, downloaded),
    openalex 1 (none). Project "Survey" holds three (two with PDFs), "Empty" none, and a
    paper with a PDF is in both "Survey" and "Other"."""
    arxiv_pdf = make_paper("Arxiv With PDF", source="arxiv")
    arxiv_bare = make_paper("Arxiv Without", source="arxiv")
    acl_pdf = make_paper("ACL With PDF", source="acl")
    make_paper("ACL Without", source="acl")
    openalex = make_paper("OpenAlex Without", source="openalex")
    pdf_services.pdf_attach_file(paper_id=arxiv_pdf.pk, path=EXPOSITORY)
    pdf_services.pdf_attach_file(paper_id=acl_pdf.pk, path=QUANTUM)
    PaperPdf.objects.filter(paper=acl_pdf).update(origin="downloaded", source_url="https://x/y")
    survey, other = make_project("Survey"), make_project("Other")
    make_project("Empty")
    project_add_papers(project=survey.id, paper_ids=[arxiv_pdf.pk, acl_pdf.pk, arxiv_bare.pk])
    project_add_papers(project=other.id, paper_ids=[acl_pdf.pk])
    del openalex


EXPECTED = {
    "papers": 5,
    "with_pdf": 2,
    "share": 0.4,
    "by_project": [
        {"project_id": "empty", "name": "Empty", "papers": 0, "with_pdf": 0, "share": 0.0},
        {"project_id": "other", "name": "Other", "papers": 1, "with_pdf": 1, "share": 1.0},
        {"project_id": "survey", "name": "Survey", "papers": 3, "with_pdf": 2, "share": 0.6667},
        {"project_id": None, "name": "(no project)", "papers": 2, "with_pdf": 0, "share": 0.0},
    ],
    "by_source": [
        {"source": "acl", "papers": 2, "with_pdf": 1, "share": 0.5},
        {"source": "arxiv", "papers": 2, "with_pdf": 1, "share": 0.5},
        {"source": "openalex", "papers": 1, "with_pdf": 0, "share": 0.0},
    ],
    "by_origin": [{"origin": "attached", "pdfs": 1}, {"origin": "downloaded", "pdfs": 1}],
}


def test_the_selector_counts_per_project_source_and_origin(library: None) -> None:
    assert library_pdf_coverage() == EXPECTED


def test_the_command_prints_tables_and_json(library: None) -> None:
    out = io.StringIO()
    call_command("pdf_coverage", "--json", stdout=out)
    assert json.loads(out.getvalue()) == EXPECTED
    out = io.StringIO()
    call_command("pdf_coverage", stdout=out)
    lines = out.getvalue().splitlines()
    assert lines[0] == "2 of 5 papers have a PDF (40%)."
    assert "Survey              3         2     67%" in lines
    assert "(no project)        2         0      0%" in lines
    assert "openalex        1         0      0%" in lines
    assert "downloaded        1" in lines


def test_the_rest_endpoint_answers_the_same(library: None, api: Api) -> None:
    response = api.get("/api/papers/pdf-coverage")
    assert response.status_code == 200, response.content
    assert response.json() == EXPECTED


def test_an_empty_library_has_no_share(api: Api) -> None:
    assert library_pdf_coverage() == {
        "papers": 0, "with_pdf": 0, "share": 0.0, "by_project": [], "by_source": [],
        "by_origin": [],
    }  # fmt: skip
    assert api.get("/api/papers/pdf-coverage").json()["papers"] == 0

"""A paper's page in the admin (authors, keywords, citations both ways, assets, annotations,
projects and its PDF), and the SVG charts of the trends pages."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from papers.assets.services import asset_save
from papers.charts import MAX_AXIS_LABELS, Bar, bar_chart, column_chart
from papers.models import Paper
from papers.pdf import services as pdf_services
from papers.services import citations_add
from projects.services import project_add_papers, project_create
from tests.papers.pdf.builders import EXPOSITORY

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the folders are this process's own
    return tmp_path


@pytest.fixture
def cited(make_paper: Callable[..., Paper]) -> Paper:
    """A paper with everything its page shows: two citing papers, one reference, keywords,
    a summary, a PDF with an annotation, and a project."""
    paper = make_paper("Attention Is All You Need", authors=["Ashish Vaswani", "Noam Shazeer"],
                       keywords=["transformers"])  # fmt: skip
    bert = make_paper("BERT", authors=["Jacob Devlin"], year=2019)
    gpt = make_paper("GPT-3", authors=["Tom Brown"], year=2020)
    lstm = make_paper("Long Short-Term Memory", authors=["Sepp Hochreiter"], year=1997)
    citations_add(pairs=[(bert.pk, paper.pk), (gpt.pk, paper.pk), (paper.pk, lstm.pk)])
    asset_save(paper=paper, kind="summary", name="brief", content='{"summary": "Attention."}')
    pdf_services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    pdf_services.annotation_area_create(paper=paper, page=1, rect=[50, 50, 200, 200],
                                        comment="The key figure")  # fmt: skip
    project = project_create(name="Reading")
    project_add_papers(project=project, paper_ids=[paper.pk])
    return paper


def test_the_paper_page_shows_everything_about_the_paper(
    admin_client: Client, cited: Paper
) -> None:
    response = admin_client.get(reverse("admin:papers_paper_change", args=[cited.pk]))
    assert response.status_code == 200
    page = response.content.decode()
    assert "Noam Shazeer" in page  # authors inline
    assert "transformers" in page  # keywords inline
    assert "[Devlin, J. 2019]" in page and "[Brown, T. 2020]" in page  # cited by
    assert "Long Short-Term Memory" in page  # references
    assert "brief" in page  # the summary asset
    assert "The key figure" in page  # the annotation
    assert reverse("admin:projects_project_papers", args=["reading"]) in page
    assert reverse("admin:papers_paper_pdf", args=[cited.pk]) in page
    assert "Open the PDF</a> (4 pages" in page


def test_the_pdf_link_serves_the_file_to_readers_too(client: Client, cited: Paper) -> None:
    reader = User.objects.create_user("reader", password="pw", is_staff=True)
    reader.groups.add(Group.objects.get(name="Readers"))
    client.force_login(reader)
    response = client.get(reverse("admin:papers_paper_pdf", args=[cited.pk]))
    assert response.status_code == 200
    assert response["Content-Type"] == "application/pdf"
    assert b"".join(response.streaming_content) == EXPOSITORY.read_bytes()  # type: ignore[attr-defined]
    assert response["Content-Disposition"].startswith("inline")


def test_a_paper_without_pdf_offers_an_upload_and_its_pdf_link_is_404(
    admin_client: Client, make_paper: Callable[..., Paper]
) -> None:
    paper = make_paper(pdf_url="https://example.org/x.pdf")
    page = admin_client.get(reverse("admin:papers_paper_change", args=[paper.pk])).content.decode()
    assert "No PDF yet" in page and f"/admin/papers/paperpdf/add/?paper={paper.pk}" in page
    assert "No paper in the library cites it." in page and "In no project." in page
    assert admin_client.get(reverse("admin:papers_paper_pdf", args=[paper.pk])).status_code == 404


def test_a_pdf_whose_file_is_gone_is_404(
    admin_client: Client, cited: Paper, knowledge_base: Path
) -> None:
    for file in (knowledge_base / "downloads").iterdir():
        file.unlink()
    assert admin_client.get(reverse("admin:papers_paper_pdf", args=[cited.pk])).status_code == 404


def test_the_add_page_renders(admin_client: Client) -> None:
    assert admin_client.get(reverse("admin:papers_paper_add")).status_code == 200


def test_the_paper_list_links_to_the_adding_pages(admin_client: Client) -> None:
    page = admin_client.get(reverse("admin:papers_paper_changelist")).content.decode()
    assert reverse("admin:papers_paper_add_by_identifier") in page
    assert reverse("admin:papers_paper_import_bibtex") in page


# --- charts ---------------------------------------------------------------------------------


def test_column_chart_labels_every_year_and_titles_every_bar() -> None:
    svg = column_chart([Bar("2019", 3), Bar("2020", 0), Bar("2021", 1)], title="Per year")
    assert svg.startswith("<svg") and svg.endswith("</svg>")
    for year in ("2019", "2020", "2021"):
        assert f">{year}</text>" in svg
    assert "2019: 3 papers</title>" in svg and "2021: 1 paper</title>" in svg
    assert svg.count('class="bar"') == 3


def test_a_long_timeline_thins_axis_labels_but_keeps_every_bar_titled() -> None:
    bars = [Bar(str(year), year % 7) for year in range(1900, 2025)]
    svg = column_chart(bars, title="Per year")
    assert svg.count('class="axis-label"') <= MAX_AXIS_LABELS + 1
    assert ">1900</text>" in svg and ">2024</text>" in svg
    assert all(f"{bar.label}: " in svg for bar in bars)


def test_chart_labels_are_escaped() -> None:
    svg = bar_chart([Bar("<script>alert(1)</script> & co", 2)], title='A "title" <b>')
    assert "<script>" not in svg and "&lt;script&gt;" in svg and "&amp; co" in svg
    assert 'aria-label="A &quot;title&quot; &lt;b&gt;"' in svg


def test_long_labels_are_shortened_on_the_axis_but_whole_in_the_title() -> None:
    name = "A Very Long Venue Name That Goes On And On For Quite A While Indeed"
    svg = bar_chart([Bar(name, 5)], title="Venues")
    assert f"{name}: 5 papers</title>" in svg
    assert ">A Very Long Venue Name That Goes On And…</text>" in svg


def test_empty_charts_say_no_data() -> None:
    assert "No data" in column_chart([], title="x") and "No data" in bar_chart([], title="x")

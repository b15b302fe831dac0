"""A paper's reading page in the admin (issue 21, item 2): the record as a reader wants it,
the PDF's annotations as JSON for the viewer, highlights made from a selection through
create_highlight's service, projects edited in place and a PDF uploaded from the page.
The viewer itself (pdf.js) is driven in Chromium: tests/browser/test_reading_page.py."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from papers.models import Annotation, Author, Paper
from papers.pdf import services as pdf_services
from papers.services import citations_add
from projects.models import Project
from projects.services import project_add_papers
from tests.papers.pdf.builders import EXPOSITORY

pytestmark = pytest.mark.django_db

QUOTE = "Large language models have introduced exciting new opportunities"


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> None:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.CELERY_TASK_ALWAYS_EAGER = True


@pytest.fixture
def paper(make_paper: Callable[..., Paper], make_project: Callable[..., Project]) -> Paper:
    paper = make_paper(
        "Beyond Summarization", authors=["Zejiang Shen", "Tal August"], year=2023,
        doi="10.48550/arXiv.2304.02623", arxiv_id="2304.02623",
        abstract="Large language models have introduced exciting new opportunities.",
        keywords=["writing support"], source_url="javascript:alert(1)",
    )  # fmt: skip
    project_add_papers(project=make_project("Writing tools"), paper_ids=[paper.pk])
    make_project("Other reading")
    citations_add(pairs=[(paper.pk, make_paper("Attention Is All You Need").pk)])
    return paper


def curator(client: Client, group: str = "Curators") -> Client:
    user = User.objects.create_user(f"{group.lower()}-user", password="pw-long-enough-1",
                                    is_staff=True)  # fmt: skip
    user.groups.add(Group.objects.get(name=group))
    client.force_login(user)
    return client


def read_url(paper: Paper) -> str:
    return reverse("admin:papers_paper_read", args=[paper.pk])


def test_the_reading_page_shows_the_record_as_a_reader_wants_it(
    admin_client: Client, paper: Paper
) -> None:
    page = admin_client.get(read_url(paper)).content.decode()
    shen = Author.objects.get(name="Zejiang Shen")
    assert f'href="/admin/papers/paper/?author={shen.pk}">Zejiang Shen</a>' in page
    assert 'href="https://doi.org/10.48550/arxiv.2304.02623"' in page.lower()
    assert 'href="https://arxiv.org/abs/2304.02623"' in page
    assert "javascript:alert(1)" not in page  # a stored URL never becomes a script link
    assert "writing support" in page and "Writing tools" in page
    assert "Cites (1)" in page and "Attention Is All You Need" in page
    assert "This paper has no PDF in the library." in page
    assert 'name="pdf"' in page  # the upload form is on the page
    assert 'id="cite-box"' in page and "Shen, Z., &amp; August, T. (2023)" in page


def test_the_author_links_list_that_authors_papers(
    admin_client: Client, paper: Paper, make_paper: Callable[..., Paper]
) -> None:
    make_paper("Another paper by Shen", authors=["Zejiang Shen"], year=2024)
    make_paper("Someone else's paper", authors=["Jane Doe"], year=2024)
    shen = Author.objects.get(name="Zejiang Shen")
    listing = admin_client.get(f"/admin/papers/paper/?author={shen.pk}").content.decode()
    assert "Another paper by Shen" in listing and "Beyond Summarization" in listing
    assert "Someone else" not in listing


def test_the_edit_forms_view_on_site_button_opens_the_reading_page(
    admin_client: Client, paper: Paper
) -> None:
    form = admin_client.get(reverse("admin:papers_paper_change", args=[paper.pk]))
    assert read_url(paper) in form.content.decode()


def test_highlights_from_a_selection_are_stored_and_listed(client: Client, paper: Paper) -> None:
    pdf_services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    client = curator(client)
    page = client.get(read_url(paper)).content.decode()
    assert 'id="reader-config"' in page and "papers/pdfjs/pdf.min.mjs" in page
    url = reverse("admin:papers_paper_annotations", args=[paper.pk])
    # A selection across a line break, as the browser's text layer gives it.
    selected = "exciting new opportunities\nand challenges in designing"
    made = client.post(url, {"page": 1, "text": selected, "color": "#5fb236"},
                       content_type="application/json")  # fmt: skip
    assert made.status_code == 201, made.content
    stored = Annotation.objects.get(paper=paper)
    assert stored.page == 1 and stored.color == "#5fb236" and len(stored.rects) == 2
    listed = client.get(url).json()["annotations"]
    assert [a["annotation_id"] for a in listed] == [stored.pk]


def test_page_and_quote_open_the_pdf_where_the_quote_is(
    admin_client: Client, paper: Paper, django_capture_on_commit_callbacks: Any
) -> None:
    with django_capture_on_commit_callbacks(execute=True):  # the passage index, built now
        pdf_services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)

    def focus(query: dict[str, str]) -> Any:
        page = admin_client.get(read_url(paper), query).content.decode()
        found = re.search(r'<script id="reader-config" type="application/json">(.*?)</script>',
                          page, re.S)  # fmt: skip
        assert found, page[:300]
        return json.loads(found.group(1))["focus"]

    found = focus({"page": "1", "quote": QUOTE})
    assert found["page"] == 1 and found["rects"] and len(found["rects"][0]) == 4
    assert focus({"page": "3", "quote": QUOTE})["page"] == 1  # the page given is tried first
    assert focus({"page": "2"}) == {"page": 2}
    assert focus({"page": "2", "quote": "zebra quagga okapi nowhere in it"}) == {"page": 2}
    assert focus({"page": "2", "quote": "!!!"}) == {"page": 2}
    for ignored in ({"page": "x"}, {"page": "0"}, {"page": "²"}, {"quote": QUOTE}, {}):
        assert focus(ignored) is None


def test_a_selection_that_is_not_on_the_page_gets_the_services_message(
    client: Client, paper: Paper
) -> None:
    pdf_services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    client = curator(client)
    url = reverse("admin:papers_paper_annotations", args=[paper.pk])
    answer = client.post(url, {"page": 2, "text": QUOTE}, content_type="application/json")
    assert answer.status_code == 400 and "It is on page 1" in answer.json()["error"]
    bad = client.post(url, b"[1, 2]", content_type="application/json")
    assert bad.status_code == 400 and "page" in bad.json()["error"]
    for rects in ("here", [1, 2, 3, 4], [[0, 0, 1]]):
        answer = client.post(url, {"page": 1, "text": QUOTE, "rects": rects},
                             content_type="application/json")  # fmt: skip
        assert answer.status_code == 400 and "boxes" in answer.json()["error"]
    assert not Annotation.objects.exists()


def test_readers_read_but_cannot_annotate_upload_or_refile(client: Client, paper: Paper) -> None:
    pdf_services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    client = curator(client, "Readers")
    page = client.get(read_url(paper)).content.decode()
    assert 'id="highlight-bar"' not in page and 'name="pdf"' not in page
    url = reverse("admin:papers_paper_annotations", args=[paper.pk])
    assert client.get(url).status_code == 200
    assert client.post(url, {"page": 1, "text": QUOTE},
                       content_type="application/json").status_code == 403  # fmt: skip
    projects = reverse("admin:papers_paper_projects", args=[paper.pk])
    assert client.post(projects, {"project": "other-reading"}).status_code == 403
    assert not Annotation.objects.exists()


def test_read_only_mode_refuses_every_write_from_the_page(
    client: Client, paper: Paper, settings: Any
) -> None:
    pdf_services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    settings.MCP_READ_ONLY = True
    client = curator(client)
    url = reverse("admin:papers_paper_annotations", args=[paper.pk])
    assert client.post(url, {"page": 1, "text": QUOTE},
                       content_type="application/json").status_code == 403  # fmt: skip
    upload = reverse("admin:papers_paper_upload_pdf", args=[paper.pk])
    with EXPOSITORY.open("rb") as handle:
        assert client.post(upload, {"pdf": handle}).status_code == 403


def test_projects_are_edited_in_place(client: Client, paper: Paper) -> None:
    client = curator(client)
    url = reverse("admin:papers_paper_projects", args=[paper.pk])
    added = client.post(url, {"project": "other-reading", "action": "add"}, follow=True)
    assert added.redirect_chain[-1][0] == read_url(paper)
    assert set(paper.projects.values_list("id", flat=True)) == {"writing-tools", "other-reading"}
    assert "Added to project &#x27;Other reading&#x27;." in added.content.decode()
    # A name typed without the picker's script is resolved too; a second add says so.
    again = client.post(url, {"project": "OTHER READING", "action": "add"}, follow=True)
    assert "Already in project &#x27;Other reading&#x27;." in again.content.decode()
    client.post(url, {"project": "writing-tools", "action": "remove"})
    assert list(paper.projects.values_list("id", flat=True)) == ["other-reading"]
    assert Paper.objects.filter(pk=paper.pk).exists()  # removed from a project, kept
    unknown = client.post(url, {"project": "no-such-project", "action": "add"}, follow=True)
    assert "no-such-project" in unknown.content.decode()


def test_a_pdf_uploaded_on_the_page_comes_back_to_the_page(client: Client, paper: Paper) -> None:
    client = curator(client)
    upload = reverse("admin:papers_paper_upload_pdf", args=[paper.pk])
    with EXPOSITORY.open("rb") as handle:
        answer = client.post(upload, {"pdf": handle}, follow=True)
    assert answer.redirect_chain[-1][0] == read_url(paper)
    assert "attached" in answer.content.decode() and paper.pdf.page_count == 4
    not_a_pdf = client.post(upload, {"pdf": _named(b"hello", "notes.pdf")}, follow=True)
    assert "not a PDF" in not_a_pdf.content.decode() or "PDF" in not_a_pdf.content.decode()
    assert Paper.objects.get(pk=paper.pk).pdf.page_count == 4  # the good one is kept


def _named(data: bytes, name: str) -> Any:
    from django.core.files.uploadedfile import SimpleUploadedFile

    return SimpleUploadedFile(name, data, content_type="application/pdf")


def test_a_missing_paper_is_404(admin_client: Client) -> None:
    assert admin_client.get("/admin/papers/paper/999999/read/").status_code == 404

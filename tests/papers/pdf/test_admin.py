"""The admin's PDF upload, the PDF and annotation inlines on a paper, the annotation list
(recolour, comment, delete redraw the annotated copy) and the annotation exports."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from papers.models import Annotation, Paper, PaperPdf
from papers.pdf import services
from tests.papers.pdf.builders import EXPOSITORY, FACTS, QUANTUM, WRAPPED

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    # These folders are this process's own, so tasks run here even where CI has a worker
    # (test_pdf_worker.py covers the worker).
    settings.CELERY_TASK_ALWAYS_EAGER = True
    return tmp_path


def upload(path: Path, name: str | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name or path.name, path.read_bytes(), "application/pdf")


def test_uploading_a_pdf_attaches_it_through_the_service(
    admin_client: Client, make_paper: Callable[..., Paper]
) -> None:
    paper = make_paper()
    response = admin_client.post(
        reverse("admin:papers_paperpdf_add"), {"paper": paper.pk, "upload": upload(EXPOSITORY)}
    )
    assert response.status_code == 302, response.content
    record = PaperPdf.objects.get(paper=paper)
    assert (record.origin, record.original_name, record.sha256) == (
        "uploaded",
        "2304.02623v1.pdf",
        FACTS["2304.02623v1.pdf"]["sha256"],
    )
    # Uploading again for the same paper replaces the file.
    response = admin_client.post(
        reverse("admin:papers_paperpdf_add"), {"paper": paper.pk, "upload": upload(QUANTUM)}
    )
    assert response.status_code == 302
    assert PaperPdf.objects.get(paper=paper).page_count == 8


def test_an_upload_that_is_not_a_pdf_is_a_form_error(
    admin_client: Client, make_paper: Callable[..., Paper], knowledge_base: Path
) -> None:
    paper = make_paper()
    fake = SimpleUploadedFile("paper.pdf", b"<html>login</html>", "application/pdf")
    response = admin_client.post(
        reverse("admin:papers_paperpdf_add"), {"paper": paper.pk, "upload": fake}
    )
    assert response.status_code == 200
    assert "The file is not a PDF" in response.content.decode()
    assert not PaperPdf.objects.exists()
    assert not any((knowledge_base / "downloads").iterdir())


def test_paper_page_shows_the_pdf_and_its_annotations(
    admin_client: Client, make_paper: Callable[..., Paper]
) -> None:
    paper = make_paper()
    record = services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    services.annotation_highlight_create(paper=paper, page=1, text=WRAPPED, comment="Key claim")
    response = admin_client.get(reverse("admin:papers_paper_change", args=[paper.pk]))
    page = response.content.decode()
    assert response.status_code == 200
    assert record.file_name in page and "Key claim" in page
    assert reverse("admin:papers_paperpdf_export", args=[record.pk, "pdf"]) in page


def test_recolouring_and_deleting_in_the_admin_redraw_the_annotated_copy(
    admin_client: Client, make_paper: Callable[..., Paper], knowledge_base: Path
) -> None:
    paper = make_paper()
    record = services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    annotation = services.annotation_highlight_create(paper=paper, page=1, text=WRAPPED)
    change = reverse("admin:papers_annotation_change", args=[annotation.pk])
    response = admin_client.post(change, {"color": "negative", "comment": "Doubtful"})
    assert response.status_code == 302, response.content
    record.refresh_from_db()
    copy = knowledge_base / "downloads" / record.annotated_file_name
    with pymupdf.open(copy) as document:
        [drawn] = list(document[0].annots())
        assert drawn.info["content"] == "Doubtful"
        assert drawn.colors["stroke"][0] == pytest.approx(1.0, abs=0.01)  # #ff6666
    assert Annotation.objects.get().color == "#ff6666"

    delete = reverse("admin:papers_annotation_delete", args=[annotation.pk])
    assert admin_client.post(delete, {"post": "yes"}).status_code == 302
    assert not Annotation.objects.exists() and not copy.exists()


def test_annotation_exports_download_from_the_admin(
    admin_client: Client, make_paper: Callable[..., Paper]
) -> None:
    paper = make_paper()
    record = services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    services.annotation_area_create(paper=paper, page=2, rect=[50, 50, 200, 200], comment="Fig")
    exported = {
        fmt: admin_client.get(reverse("admin:papers_paperpdf_export", args=[record.pk, fmt]))
        for fmt in ("json", "markdown", "pdf")
    }
    assert json.loads(exported["json"].content)["annotations"][0]["comment"] == "Fig"
    assert "## Page 2" in exported["markdown"].content.decode()
    assert exported["pdf"]["Content-Type"] == "application/pdf"
    with pymupdf.open(stream=exported["pdf"].content) as document:
        assert [a.info["content"] for a in document[1].annots()] == ["Fig"]
    assert 'filename="' in exported["pdf"]["Content-Disposition"]


def test_download_action_schedules_papers_with_a_pdf_url(
    admin_client: Client, make_paper: Callable[..., Paper], settings: Any
) -> None:
    settings.PDF_ALLOW_PRIVATE_URLS = False  # the URL is refused: no network in this test
    paper = make_paper(pdf_url="http://127.0.0.1:9/paper.pdf")
    other = make_paper(title="No link", authors=["Ada Lovelace"])
    response = admin_client.post(
        reverse("admin:papers_paper_changelist"),
        {"action": "download_pdfs", "_selected_action": [paper.pk, other.pk]},
        follow=True,
    )
    assert "1 of 2 papers have a pdf_url" in response.content.decode()


def test_deleting_a_pdf_in_the_admin_removes_its_files(
    admin_client: Client, make_paper: Callable[..., Paper], knowledge_base: Path,
    django_capture_on_commit_callbacks: Any,
) -> None:  # fmt: skip
    paper = make_paper()
    record = services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    services.annotation_area_create(paper=paper, page=1, rect=[50, 50, 200, 200])
    assert len(list((knowledge_base / "downloads").iterdir())) == 2
    with django_capture_on_commit_callbacks(execute=True):
        response = admin_client.post(
            reverse("admin:papers_paperpdf_delete", args=[record.pk]), {"post": "yes"}
        )
    assert response.status_code == 302
    assert not PaperPdf.objects.exists() and Annotation.objects.count() == 1
    assert list((knowledge_base / "downloads").iterdir()) == []

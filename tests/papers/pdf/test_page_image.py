"""Page 1's picture (papers.pdf.page_image), which the reading page shows at its first paint
until pdf.js has drawn the page: made when a PDF is attached, else on the first request;
cached by the PDF's sha256; served with the PDF's permission check and caching; a PDF that
cannot be drawn is a clear 422 (and a reading page without the picture), never a 500."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pymupdf
import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from papers.models import Paper, PaperPdf
from papers.pdf import page_image, services
from papers.pdf.files import stored_path
from tests.papers.pdf.builders import EXPOSITORY, PAPERMAGE, QUANTUM

pytestmark = pytest.mark.django_db

# A PDF whose page tree is empty: MuPDF opens it, with no page to draw.
NO_PAGES = (
    b"%PDF-1.4\n1 0 obj <</Type/Catalog/Pages 2 0 R>> endobj\n"
    b"2 0 obj <</Type/Pages/Kids[]/Count 0>> endobj\ntrailer <</Root 1 0 R>>\n%%EOF\n"
)


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.CACHE_DIR = tmp_path / "cache"
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.READER_PAGE_IMAGE_WIDTH = 600
    return tmp_path


@pytest.fixture
def attached(
    make_paper: Callable[..., Paper], django_capture_on_commit_callbacks: Any
) -> Callable[[Path], Paper]:
    def attach(pdf: Path) -> Paper:
        paper = make_paper(f"A paper with {pdf.name}")
        with django_capture_on_commit_callbacks(execute=True):
            services.pdf_attach_file(paper_id=paper.pk, path=pdf)
        return paper

    return attach


def image_url(paper: Paper) -> str:
    return reverse("admin:papers_paper_page_image", args=[paper.pk])


def picture_size(data: bytes) -> tuple[int, int]:
    """A JPEG's width and height in pixels, as MuPDF reads it back."""
    assert data[:3] == b"\xff\xd8\xff"  # JPEG
    picture = pymupdf.Pixmap(data)
    return int(picture.width), int(picture.height)


def reading_page(client: Client, paper: Paper) -> str:
    response = client.get(reverse("admin:papers_paper_read", args=[paper.pk]))
    assert response.status_code == 200
    return str(response.content.decode())


def test_attaching_a_pdf_makes_its_picture_which_is_then_served_from_the_cache(
    admin_client: Client, attached: Callable[[Path], Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    paper = attached(EXPOSITORY)
    sha = hashlib.sha256(EXPOSITORY.read_bytes()).hexdigest()
    made = page_image.cache_dir() / f"{sha}-600.jpg"
    assert made.is_file() and (page_image.cache_dir() / f"{sha}.json").is_file()
    width, height = picture_size(made.read_bytes())
    assert width == 600 and abs(height - 600 * 792 / 612) < 1.5  # a US letter page

    def no_pdf(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the PDF was opened although its picture was cached")

    monkeypatch.setattr(page_image, "pdf_open", no_pdf)
    response = admin_client.get(image_url(paper))
    assert response.status_code == 200 and response["Content-Type"] == "image/jpeg"
    assert response.content == made.read_bytes()
    assert response["Cache-Control"] == "private, no-cache"
    assert response["ETag"] == f'"{sha[:16]}-600"'
    page = reading_page(admin_client, paper)  # sized from the cached facts, no PDF opened
    assert "aspect-ratio: 612.0 / 792.0" in page


def test_the_reading_page_shows_the_picture_as_page_1_at_its_size_and_preloads_it(
    admin_client: Client, attached: Callable[[Path], Paper]
) -> None:
    paper = attached(EXPOSITORY)
    page = reading_page(admin_client, paper).replace("&amp;", "&")
    found = re.search(r'<img class="page-image" src="([^"]+)" alt="([^"]+)"', page)
    assert found, page[-3000:]
    url, alt = found.groups()
    assert url.startswith(image_url(paper) + "?v=") and "Page 1 of the PDF" in alt
    assert f'<link rel="preload" href="{url}" as="image"' in page
    frame = re.search(r'<div class="page-frame page-picture" id="page-1"[^>]*>', page)
    assert frame and 'role="region" aria-label="Page 1"' in frame.group(0)
    assert "aspect-ratio: 612.0 / 792.0" in frame.group(0)
    # This PDF has an outline: its panel is there from the start (the column keeps its width).
    assert re.search(r'<details class="pdf-outline" id="pdf-outline" open>', page)
    kept = admin_client.get(url)  # the versioned address: the browser keeps it
    assert kept.status_code == 200 and kept["Cache-Control"] == "private, max-age=86400"
    again = admin_client.get(url, HTTP_IF_NONE_MATCH=kept["ETag"])
    assert again.status_code == 304 and not again.content
    # Without an outline the panel stays hidden until pdf.js finds one.
    other = reading_page(admin_client, attached(PAPERMAGE))
    assert re.search(r'<details class="pdf-outline" id="pdf-outline" open hidden>', other)


def test_a_replaced_pdf_gets_a_new_picture_at_a_new_address(
    admin_client: Client, attached: Callable[[Path], Paper], django_capture_on_commit_callbacks: Any
) -> None:
    paper = attached(EXPOSITORY)
    first = admin_client.get(image_url(paper))
    with django_capture_on_commit_callbacks(execute=True):
        services.pdf_attach_file(paper_id=paper.pk, path=QUANTUM)
    replaced = admin_client.get(image_url(paper), HTTP_IF_NONE_MATCH=first["ETag"])
    assert replaced.status_code == 200 and replaced["ETag"] != first["ETag"]
    assert replaced.content != first.content
    assert f"?v={replaced['ETag'].strip(chr(34))}" in reading_page(admin_client, paper)


def test_a_picture_not_cached_is_made_on_the_first_request(
    admin_client: Client, make_paper: Callable[..., Paper]
) -> None:
    paper = make_paper("Attached before pictures existed")
    services.pdf_attach_file(paper_id=paper.pk, path=QUANTUM)  # on_commit never runs here
    assert not list(page_image.cache_dir().glob("*.jpg"))
    assert "page-image" in reading_page(admin_client, paper)
    response = admin_client.get(image_url(paper))
    assert response.status_code == 200 and picture_size(response.content)[0] == 600
    assert len(list(page_image.cache_dir().glob("*.jpg"))) == 1


def test_the_width_is_the_settings_and_bounded(
    admin_client: Client, attached: Callable[[Path], Paper], settings: Any
) -> None:
    paper = attached(EXPOSITORY)
    settings.READER_PAGE_IMAGE_WIDTH = 100_000
    response = admin_client.get(image_url(paper) + "?w=5000")
    assert picture_size(response.content)[0] == page_image.MAX_WIDTH  # the request cannot choose
    settings.READER_PAGE_IMAGE_WIDTH = 0  # turned off: the reading page as without it
    assert admin_client.get(image_url(paper)).status_code == 404
    page = reading_page(admin_client, paper)
    assert "page-image" not in page and 'id="pdf-pages"' in page


def test_the_picture_needs_the_permission_to_view_the_pdf(
    client: Client, admin_client: Client, attached: Callable[[Path], Paper]
) -> None:
    paper = attached(EXPOSITORY)
    etag = admin_client.get(image_url(paper))["ETag"]
    anonymous = client.get(image_url(paper))
    assert anonymous.status_code == 302 and "/login/" in anonymous["Location"]
    stranger = User.objects.create_user("stranger", password="pw", is_staff=True)
    client.force_login(stranger)  # staff, but no permission on papers
    assert client.get(image_url(paper)).status_code == 403
    assert client.get(image_url(paper), HTTP_IF_NONE_MATCH=etag).status_code == 403
    reader = User.objects.create_user("reader", password="pw", is_staff=True)
    reader.groups.add(Group.objects.get(name="Readers"))
    client.force_login(reader)
    assert client.get(image_url(paper)).status_code == 200


def test_no_pdf_or_a_missing_file_is_a_404(
    admin_client: Client, make_paper: Callable[..., Paper], attached: Callable[[Path], Paper]
) -> None:
    assert admin_client.get(image_url(make_paper("No PDF"))).status_code == 404
    paper = attached(PAPERMAGE)
    record = PaperPdf.objects.get(paper=paper)
    stored_path(record.file_name).unlink()
    for path in page_image.cache_dir().iterdir():
        path.unlink()
    assert admin_client.get(image_url(paper)).status_code == 404
    assert "page-image" not in reading_page(admin_client, paper)


@pytest.mark.parametrize(
    ("content", "says"),
    [(b"%PDF-1.7\n" + b"\x00garbage" * 200, "damaged"), (NO_PAGES, "damaged")],
)
def test_a_pdf_that_cannot_be_drawn_is_a_clear_error_not_a_500(
    admin_client: Client, attached: Callable[[Path], Paper], content: bytes, says: str
) -> None:
    paper = attached(EXPOSITORY)
    record = PaperPdf.objects.get(paper=paper)
    # The stored file damaged (or left without pages) since it was attached, the record's
    # sha256 and size made to match it (no picture cached for it): made from this file.
    path = stored_path(record.file_name)
    path.write_bytes(content)
    sha = hashlib.sha256(content).hexdigest()
    PaperPdf.objects.filter(pk=record.pk).update(sha256=sha, size=len(content))
    response = admin_client.get(image_url(paper))
    assert response.status_code == 422
    text = response.content.decode()
    assert text.startswith("Page 1 of this PDF cannot be drawn:") and says in text
    assert str(path.parent) not in text  # no path on the server
    page = reading_page(admin_client, paper)  # the reader without a picture; pdf.js says why
    assert "page-image" not in page and 'id="reader-config"' in page


def test_pages_of_another_size_are_given_to_the_reader_for_their_placeholders(
    admin_client: Client, attached: Callable[[Path], Paper], tmp_path: Path
) -> None:
    document = pymupdf.open()
    for width, height in ((595, 842), (595, 842), (842, 595), (595, 842)):  # page 3 landscape
        document.new_page(width=width, height=height).insert_text((72, 72), "Some text.")
    mixed = tmp_path / "mixed.pdf"
    document.save(mixed)
    page = reading_page(admin_client, attached(mixed))
    found = re.search(r'<script id="reader-config" type="application/json">(.*?)</script>', page)
    assert found
    assert json.loads(found.group(1))["pageSizes"] == {"3": [842.0, 595.0]}
    same = reading_page(admin_client, attached(EXPOSITORY))  # every page the same size
    config = re.search(r'<script id="reader-config" type="application/json">(.*?)</script>', same)
    assert config and json.loads(config.group(1))["pageSizes"] == {}

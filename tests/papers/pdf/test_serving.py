"""The PDF view the reading page's pdf.js reads from (papers.pdf.serving): byte ranges,
validators and revalidation, the reading page's versioned address, and the permission
check before any of it."""

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

from papers.models import Paper
from papers.pdf import services
from tests.papers.pdf.builders import EXPOSITORY, QUANTUM

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> Path:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the folders are this process's own
    return tmp_path


@pytest.fixture
def paper(make_paper: Callable[..., Paper]) -> Paper:
    paper = make_paper("Language models and their uses")
    services.pdf_attach_file(paper_id=paper.pk, path=EXPOSITORY)
    return paper


def body(response: Any) -> bytes:
    if response.streaming:
        return b"".join(response.streaming_content)
    return bytes(response.content)


def pdf_url(paper: Paper) -> str:
    return reverse("admin:papers_paper_pdf", args=[paper.pk])


def reader_pdf_url(client: Client, paper: Paper) -> str:
    page = client.get(reverse("admin:papers_paper_read", args=[paper.pk])).content.decode()
    found = re.search(r'<script id="reader-config" type="application/json">(.*?)</script>',
                      page, re.S)  # fmt: skip
    assert found, page[:300]
    url: str = json.loads(found.group(1))["pdf"]
    assert f'<link rel="preload" href="{url}" as="fetch"' in page.replace("&amp;", "&")
    return url


def test_the_whole_pdf_says_it_serves_ranges_and_must_be_revalidated(
    admin_client: Client, paper: Paper
) -> None:
    response = admin_client.get(pdf_url(paper))
    assert response.status_code == 200
    assert body(response) == EXPOSITORY.read_bytes()
    assert response["Accept-Ranges"] == "bytes"
    assert response["Cache-Control"] == "private, no-cache"  # not the admin's no-store
    assert response["ETag"].startswith('"') and response["Last-Modified"]
    assert response["Content-Disposition"].startswith("inline")


def test_a_range_is_answered_with_those_bytes(admin_client: Client, paper: Paper) -> None:
    data, size = EXPOSITORY.read_bytes(), EXPOSITORY.stat().st_size
    cases = {
        "bytes=0-99": (0, 100),
        "bytes=65536-131071": (65536, 131072),
        f"bytes={size - 10}-": (size - 10, size),
        "bytes=-1024": (size - 1024, size),  # the last 1024: where pdf.js finds the xref
        f"bytes=100-{size + 500}": (100, size),
    }
    for header, (start, end) in cases.items():
        response = admin_client.get(pdf_url(paper), HTTP_RANGE=header)
        assert response.status_code == 206, header
        assert body(response) == data[start:end], header
        assert response["Content-Range"] == f"bytes {start}-{end - 1}/{size}", header
        assert response["Content-Type"] == "application/pdf"
    past = admin_client.get(pdf_url(paper), HTTP_RANGE=f"bytes={size}-")
    assert past.status_code == 416 and past["Content-Range"] == f"bytes */{size}"
    # Several ranges, another unit or nonsense: the whole file, as HTTP allows.
    for header in ("bytes=0-9,20-29", "pages=1-2", "bytes=50-10", "bytes=-"):
        whole = admin_client.get(pdf_url(paper), HTTP_RANGE=header)
        assert whole.status_code == 200 and body(whole) == data, header


def test_a_kept_copy_is_revalidated_and_a_replaced_pdf_is_sent_anew(
    admin_client: Client, paper: Paper
) -> None:
    first = admin_client.get(pdf_url(paper))
    etag = first["ETag"]
    again = admin_client.get(pdf_url(paper), HTTP_IF_NONE_MATCH=etag)
    assert again.status_code == 304 and again["ETag"] == etag and not again.content
    # A range of another version (If-Range): the whole file instead.
    stale_range = admin_client.get(pdf_url(paper), HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE='"old"')
    assert stale_range.status_code == 200
    same_range = admin_client.get(pdf_url(paper), HTTP_RANGE="bytes=0-9", HTTP_IF_RANGE=etag)
    assert same_range.status_code == 206
    services.pdf_attach_file(paper_id=paper.pk, path=QUANTUM)  # replaced
    replaced = admin_client.get(pdf_url(paper), HTTP_IF_NONE_MATCH=etag)
    assert replaced.status_code == 200 and replaced["ETag"] != etag
    assert body(replaced) == QUANTUM.read_bytes()


def test_the_reading_page_links_the_current_version_which_the_browser_may_keep(
    admin_client: Client, paper: Paper
) -> None:
    url = reader_pdf_url(admin_client, paper)
    assert url.startswith(pdf_url(paper) + "?v=")
    kept = admin_client.get(url)
    assert kept.status_code == 200 and kept["Cache-Control"] == "private, max-age=86400"
    services.pdf_attach_file(paper_id=paper.pk, path=QUANTUM)
    new_url = reader_pdf_url(admin_client, paper)
    assert new_url != url
    # The old address now names a version that is gone: revalidated every time.
    old = admin_client.get(url)
    assert old["Cache-Control"] == "private, no-cache" and body(old) == QUANTUM.read_bytes()


def test_ranges_and_revalidation_still_need_the_permission_to_view(
    client: Client, admin_client: Client, paper: Paper
) -> None:
    etag = admin_client.get(pdf_url(paper))["ETag"]
    stranger = User.objects.create_user("stranger", password="pw", is_staff=True)
    client.force_login(stranger)  # staff, but no permission on papers
    cases: list[dict[str, Any]] = [{}, {"HTTP_RANGE": "bytes=0-99"}, {"HTTP_IF_NONE_MATCH": etag}]
    for headers in cases:
        assert client.get(pdf_url(paper), **headers).status_code == 403, headers
    reader = User.objects.create_user("reader", password="pw", is_staff=True)
    reader.groups.add(Group.objects.get(name="Readers"))
    client.force_login(reader)
    assert client.get(pdf_url(paper), HTTP_RANGE="bytes=0-99").status_code == 206

"""attach_pdf's service (issue 18, item 3): a PDF from a URL or from the open-access
locations the paper's metadata names, through the same guarded download as every PDF
download, served by a real local HTTP server (tests/papers/pdf/builders.PdfServer)."""

# ruff: noqa: F811  (the imported fixtures are parameters of the tests below)
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.errors import InvalidInput, NotFound
from papers.models import Paper, PaperIdentifier, PaperPdf
from papers.pdf import fetch
from papers.pdf.fetch import NoPdfLocation, PdfFetchFailed, paper_pdf_attach, pdf_locations

# The local PDF server and the download settings are the download tests' own fixtures.
from tests.papers.pdf.builders import FACTS, PdfServer, knowledge_base, server  # noqa: F401

pytestmark = pytest.mark.django_db


@pytest.fixture
def paper(make_paper: Callable[..., Paper]) -> Paper:
    return make_paper("A Paper Without Its PDF", arxiv_id="2304.02623")


def test_a_pdf_from_a_url_is_attached_and_the_record_says_so(
    paper: Paper, server: PdfServer
) -> None:
    record = paper_pdf_attach(ref=paper.citekey, url=server.url("/paper.pdf"))
    assert record["paper_id"] == paper.pk and record["has_pdf"] is True
    assert record["pdf"]["page_count"] == FACTS["2304.02623v1.pdf"]["pages"]
    assert record["pdf"]["origin"] == "downloaded"
    assert record["pdf"]["source_url"] == server.url("/paper.pdf")
    assert record["tried"] == []
    assert PaperPdf.objects.get(paper=paper).page_count == record["pdf"]["page_count"]


def test_without_a_url_the_metadata_locations_are_tried_in_order(
    paper: Paper, server: PdfServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # arXiv and the Anthology are the world outside: the local server answers for them
    # (the id goes in the fragment, which is not sent, so the server's paths match).
    monkeypatch.setattr(fetch, "ARXIV_PDF", server.url("/missing#arxiv={}"))
    monkeypatch.setattr(fetch, "ACL_ANTHOLOGY_PDF", server.url("/paper.pdf#acl={}"))
    Paper.objects.filter(pk=paper.pk).update(pdf_url=server.url("/page.html"))
    PaperIdentifier.objects.create(paper=paper, scheme="acl", value="2023.acl-long.1")
    paper.refresh_from_db()
    assert pdf_locations(paper) == [
        server.url("/page.html"),
        server.url("/missing#arxiv=2304.02623"),
        server.url("/paper.pdf#acl=2023.acl-long.1"),
    ]
    record = paper_pdf_attach(ref=paper.pk)
    assert record["has_pdf"] is True
    assert [(t["url"], t["reason"]) for t in record["tried"]] == [
        (server.url("/page.html"), "not_pdf"),
        (server.url("/missing#arxiv=2304.02623"), "http_error"),
    ]
    assert record["pdf"]["source_url"] == server.url("/paper.pdf#acl=2023.acl-long.1")
    # Asked again without a url: the PDF is there, nothing is downloaded.
    server.requests.clear()
    assert paper_pdf_attach(ref=paper.pk)["has_pdf"] is True
    assert server.requests == []


def test_the_default_locations_are_arxiv_and_the_anthology(make_paper: Callable) -> None:
    paper = make_paper("Located", arxiv_id="1706.03762", pdf_url="https://example.org/a.pdf")
    PaperIdentifier.objects.create(paper=paper, scheme="acl", value="P17-1001")
    assert pdf_locations(paper) == [
        "https://example.org/a.pdf",
        "https://arxiv.org/pdf/1706.03762",
        "https://aclanthology.org/P17-1001.pdf",
    ]


def test_every_failed_location_is_reported(
    paper: Paper, server: PdfServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fetch, "ARXIV_PDF", server.url("/busy#{}"))
    with pytest.raises(PdfFetchFailed) as failed:
        paper_pdf_attach(ref=paper.pk)
    assert failed.value.code == "asset_fetch_failed"
    assert failed.value.details["tried"][0]["reason"] == "http_error"
    assert failed.value.details["retryable"] is True  # a 503 may work later
    assert "HTTP 503" in failed.value.message and server.url("/busy#") in failed.value.message
    assert not PaperPdf.objects.filter(paper=paper).exists()


def test_a_paper_naming_no_location_needs_a_url(make_paper: Callable[..., Paper]) -> None:
    bare = make_paper("Nowhere To Be Found")
    with pytest.raises(NoPdfLocation) as nowhere:
        paper_pdf_attach(ref=bare.pk)
    assert nowhere.value.code == "no_pdf_location" and "pass the PDF's" in nowhere.value.message


def test_a_loopback_url_is_refused_by_the_download_guard(
    paper: Paper, server: PdfServer, settings: Any
) -> None:
    settings.PDF_ALLOW_PRIVATE_URLS = False
    for url in (server.url("/paper.pdf"), server.url("/paper.pdf", host="localhost")):
        with pytest.raises(PdfFetchFailed) as refused:
            paper_pdf_attach(ref=paper.pk, url=url)
        assert refused.value.details["tried"][0]["reason"] == "private_address"
        assert "PDF_ALLOW_PRIVATE_URLS" in refused.value.message
    assert server.requests == []  # nothing reached the server
    assert not PaperPdf.objects.filter(paper=paper).exists()


@pytest.mark.parametrize(
    ("url", "reason"),
    [("file:///etc/passwd", "bad_scheme"), ("javascript:alert(1)", "bad_scheme")],
)
def test_only_http_urls_are_fetched(paper: Paper, url: str, reason: str) -> None:
    with pytest.raises(PdfFetchFailed) as refused:
        paper_pdf_attach(ref=paper.pk, url=url)
    assert refused.value.details["tried"][0]["reason"] == reason


def test_bad_arguments(paper: Paper) -> None:
    with pytest.raises(InvalidInput):
        paper_pdf_attach(ref=paper.pk, url="  ")
    with pytest.raises(NotFound):
        paper_pdf_attach(ref="nosuchpaper2099", url="https://example.org/x.pdf")
    with pytest.raises(NotFound):  # outside a scoped client's collections
        paper_pdf_attach(ref=paper.pk, url="https://example.org/x.pdf", scope=["nothing"])


def test_the_admin_action_attaches_pdfs_and_reports_failures(
    admin_client: Any, make_paper: Callable[..., Paper], server: PdfServer
) -> None:
    from django.urls import reverse

    found = make_paper("Has A Link", pdf_url=server.url("/paper.pdf"))
    lost = make_paper("Has Nothing", authors=["Ada Lovelace"])
    response = admin_client.post(
        reverse("admin:papers_paper_changelist"),
        {"action": "attach_pdfs", "_selected_action": [found.pk, lost.pk]},
        follow=True,
    )
    page = response.content.decode()
    assert "1 of 2 papers have their PDF" in page
    assert f"paper {lost.pk}: Paper {lost.pk} names no place to fetch a PDF from" in page
    assert PaperPdf.objects.filter(paper=found).exists()
    assert not PaperPdf.objects.filter(paper=lost).exists()

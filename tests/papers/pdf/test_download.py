"""Downloading a paper's pdf_url against a local HTTP server: the download task, size and
type checks, redirects, and the refusal of loopback/private addresses.

The server is on loopback, so most tests allow private URLs (PDF_ALLOW_PRIVATE_URLS, as a
closed intranet would). The refusal tests turn it off; to test a *redirect* to a private
address (and a name that resolves differently when connecting), which needs a public first
hop that a machine without internet does not have, they judge 127.0.0.1 public and every
other address private through `address_allowed`, the one function that decides.
"""

# ruff: noqa: F811  (the imported fixtures are parameters of the tests below)
from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from papers.models import Paper, PaperPdf
from papers.pdf import download, services
from papers.pdf.errors import DownloadFailed, NotAPdf
from papers.tasks import download_pdf_task
from tests.papers.pdf.builders import EXPOSITORY, FACTS, PDF, PdfServer, knowledge_base, server  # noqa: F401


@pytest.fixture
def paper_at(make_paper: Callable[..., Paper]) -> Callable[[str], Paper]:
    made: list[Paper] = []

    def make(url: str) -> Paper:
        made.append(make_paper(title=f"Downloaded paper {len(made) + 1}", pdf_url=url))
        return made[-1]

    return make


def leftovers(knowledge_base: Path) -> list[str]:
    folder = knowledge_base / "downloads"
    return sorted(p.name for p in folder.iterdir()) if folder.exists() else []


def test_download_task_attaches_the_pdf(
    server: PdfServer, paper_at: Callable[[str], Paper], knowledge_base: Path
) -> None:
    paper = paper_at(server.url("/paper.pdf"))
    result = download_pdf_task.apply(args=[paper.pk]).get()
    assert result == {
        "paper_id": paper.pk,
        "status": "attached",
        "sha256": FACTS["2304.02623v1.pdf"]["sha256"],
        "page_count": 4,
    }
    record = PaperPdf.objects.get(paper=paper)
    assert (record.origin, record.source_url, record.original_name) == (
        "downloaded",
        server.url("/paper.pdf"),
        "paper.pdf",
    )
    assert leftovers(knowledge_base) == [record.file_name]


def test_schedule_downloads_after_commit_and_makes_the_source(
    server: PdfServer,
    paper_at: Callable[[str], Paper],
    make_paper: Callable[..., Paper],
    django_capture_on_commit_callbacks: Any,
) -> None:
    from papers import assets

    paper = paper_at(server.url("/paper.pdf"))
    without_url = make_paper(title="No link")
    with django_capture_on_commit_callbacks(execute=True):
        scheduled = services.pdf_download_schedule(paper_ids=[paper.pk, without_url.pk])
        assert server.requests == []  # nothing before the commit
    assert scheduled == 1 and server.requests == ["/paper.pdf"]
    assert "<!-- page 4 -->" in assets.source_get(paper=paper).text


def test_redirects_are_followed_up_to_the_limit(
    server: PdfServer, paper_at: Callable[[str], Paper]
) -> None:
    record = services.pdf_download(paper_id=paper_at(server.url("/chain/3")).pk)
    assert record.page_count == 4
    assert server.requests == ["/chain/3", "/chain/2", "/chain/1", "/paper.pdf"]


def test_one_redirect_too_many_is_refused(
    server: PdfServer, paper_at: Callable[[str], Paper], knowledge_base: Path
) -> None:
    with pytest.raises(DownloadFailed) as raised:
        services.pdf_download(paper_id=paper_at(server.url("/chain/4")).pk)
    assert raised.value.details == {"reason": "too_many_redirects"}
    assert len(server.requests) == 4 and "/paper.pdf" not in server.requests
    assert leftovers(knowledge_base) == [] and not PaperPdf.objects.exists()


def test_a_redirect_loop_is_refused(server: PdfServer, paper_at: Callable[[str], Paper]) -> None:
    with pytest.raises(DownloadFailed) as raised:
        services.pdf_download(paper_id=paper_at(server.url("/loop")).pk)
    assert raised.value.details["reason"] == "redirect_loop"
    assert server.requests == ["/loop"]


@pytest.mark.parametrize("path", ["/big", "/endless"])
def test_too_large_downloads_are_refused_and_leave_no_file(
    server: PdfServer, paper_at: Callable[[str], Paper], knowledge_base: Path, path: str
) -> None:
    paper = paper_at(server.url(path))
    result = download_pdf_task.apply(args=[paper.pk]).get()
    assert result["status"] == "failed"
    assert (result["error"]["code"], result["error"]["reason"]) == ("not_a_pdf", "too_large")
    assert leftovers(knowledge_base) == [] and not PaperPdf.objects.exists()


@pytest.mark.parametrize(("path", "message"), [("/page.html", "text/html"), ("/octet", "%PDF")])
def test_pages_that_are_not_pdfs_are_refused(
    server: PdfServer,
    paper_at: Callable[[str], Paper],
    knowledge_base: Path,
    path: str,
    message: str,
) -> None:
    with pytest.raises(NotAPdf) as raised:
        services.pdf_download(paper_id=paper_at(server.url(path)).pk)
    assert raised.value.details["reason"] == "not_pdf" and message in raised.value.message
    assert leftovers(knowledge_base) == []


@pytest.mark.parametrize(
    ("path", "reason", "retryable"),
    [("/missing", "http_error", False), ("/busy", "http_error", True), ("/slow", "timeout", True)],
)
def test_http_errors_and_timeouts_say_whether_to_retry(
    server: PdfServer,
    paper_at: Callable[[str], Paper],
    settings: Any,
    path: str,
    reason: str,
    retryable: bool,
) -> None:
    settings.PDF_DOWNLOAD_TIMEOUT = 1
    with pytest.raises(DownloadFailed) as raised:
        services.pdf_download(paper_id=paper_at(server.url(path)).pk)
    assert raised.value.details["reason"] == reason
    assert raised.value.retryable is retryable


def test_in_process_task_reports_transient_failures_without_retrying(
    server: PdfServer, paper_at: Callable[[str], Paper]
) -> None:
    paper = paper_at(server.url("/busy"))
    result = download_pdf_task.apply(args=[paper.pk]).get()
    assert result["status"] == "failed" and result["error"]["status"] == 503
    assert server.requests == ["/busy"]


@pytest.mark.parametrize(
    "url",
    ["ftp://example.org/paper.pdf", "file:///etc/passwd", "not a url", "http:///paper.pdf"],
)
def test_only_http_urls_with_a_host_are_downloaded(
    paper_at: Callable[[str], Paper], url: str
) -> None:
    with pytest.raises(DownloadFailed) as raised:
        services.pdf_download(paper_id=paper_at(url).pk)
    assert raised.value.details["reason"] in ("bad_scheme", "bad_url")


# --- private addresses -------------------------------------------------------------------


@pytest.mark.parametrize(
    "host",
    [
        "127.0.0.1",
        "localhost",
        "[::1]",
        "[::ffff:127.0.0.1]",
        "2130706433",  # 127.0.0.1 as one number
        "0.0.0.0",  # noqa: S104 - a URL under test, not a bind address
        "10.1.2.3",
        "192.168.0.10",
        "169.254.169.254",  # cloud metadata
        "[fe80::1]",
    ],
)
def test_private_addresses_are_refused_before_any_request(
    server: PdfServer, paper_at: Callable[[str], Paper], settings: Any, host: str
) -> None:
    settings.PDF_ALLOW_PRIVATE_URLS = False
    paper = paper_at(server.url("/paper.pdf", host=host))
    with pytest.raises(DownloadFailed) as raised:
        services.pdf_download(paper_id=paper.pk)
    assert raised.value.details == {"reason": "private_address"}
    assert "PDF_ALLOW_PRIVATE_URLS" in raised.value.message
    assert server.requests == []


@pytest.fixture
def only_127_0_0_1_is_public(monkeypatch: pytest.MonkeyPatch, settings: Any) -> None:
    settings.PDF_ALLOW_PRIVATE_URLS = False
    monkeypatch.setattr(download, "address_allowed", lambda address: address == "127.0.0.1")


@pytest.mark.usefixtures("only_127_0_0_1_is_public")
def test_a_redirect_to_a_private_address_is_refused(
    server: PdfServer, paper_at: Callable[[str], Paper]
) -> None:
    assert services.pdf_download(paper_id=paper_at(server.url("/chain/1")).pk).page_count == 4
    server.requests.clear()
    private_target = server.url("/paper.pdf", host="127.0.0.2")
    with pytest.raises(DownloadFailed) as raised:
        services.pdf_download(paper_id=paper_at(server.url(f"/to/{private_target}")).pk)
    assert raised.value.details == {"reason": "private_address"}
    assert server.requests == [f"/to/{private_target}"]  # the hop was never requested


def test_a_name_that_resolves_elsewhere_when_connecting_is_refused(
    server: PdfServer,
    paper_at: Callable[[str], Paper],
    monkeypatch: pytest.MonkeyPatch,
    settings: Any,
) -> None:
    """DNS rebinding: the check before connecting passes, the connected peer does not."""
    settings.PDF_ALLOW_PRIVATE_URLS = False
    answers = iter([True])
    monkeypatch.setattr(download, "address_allowed", lambda address: next(answers, False))
    with pytest.raises(DownloadFailed) as raised:
        services.pdf_download(paper_id=paper_at(server.url("/paper.pdf")).pk)
    assert raised.value.details == {"reason": "private_address"}
    assert server.requests == []

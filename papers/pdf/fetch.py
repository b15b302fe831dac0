"""Attaching a paper's PDF from the web (`attach_pdf`): from a URL the caller gives, or
from the open-access locations the paper's own metadata names.

Every download goes through `services.pdf_download`, so the same guard applies as to any
PDF download (papers/pdf/download.py: http(s) only, no loopback/private/link-local address
at any hop unless PDF_ALLOW_PRIVATE_URLS, PDF_MAX_REDIRECTS, PDF_MAX_BYTES,
PDF_DOWNLOAD_TIMEOUT, a real PDF checked by content type, header and by opening it).
Locations are tried in order and the first PDF wins; when none works, the error lists
each location tried and why it failed, so an agent can pass a better URL.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from core.errors import InvalidInput
from papers.models import Paper, PaperIdentifier, PaperPdf
from papers.pdf.errors import DownloadFailed, NoPdfLocation, NotAPdf, PdfFetchFailed
from papers.pdf.files import stored_intact
from papers.pdf.services import pdf_download
from papers.selectors import paper_detail, paper_get

# Open-access locations a paper's identifiers name: the arXiv id and the ACL Anthology id
# (PaperIdentifier scheme "acl", set by the ACL importer).
ARXIV_PDF = "https://arxiv.org/pdf/{}"
ACL_ANTHOLOGY_PDF = "https://aclanthology.org/{}.pdf"
MAX_URL_CHARS = 2000


def pdf_locations(paper: Paper) -> list[str]:
    """Where the paper's metadata says its PDF is, best first, each once: its pdf_url,
    arXiv (https://arxiv.org/pdf/<id>), the ACL Anthology (https://aclanthology.org/<id>.pdf)."""
    locations = [paper.pdf_url.strip()] if paper.pdf_url.strip() else []
    if paper.arxiv_id:
        locations.append(ARXIV_PDF.format(paper.arxiv_id))
    anthology = (
        PaperIdentifier.objects.filter(paper=paper, scheme="acl")
        .values_list("value", flat=True)
        .first()
    )
    if anthology:
        locations.append(ACL_ANTHOLOGY_PDF.format(anthology))
    return list(dict.fromkeys(locations))


def paper_pdf_attach(
    *, ref: str | int, url: str | None = None, scope: Sequence[str] | None = None
) -> dict[str, Any]:
    """Download a PDF for the paper (any paper id form) and attach it as its PDF.

    With `url` (http or https), that file, replacing a PDF the paper may have. Without it,
    the locations `pdf_locations` names, in order; a paper that already has its PDF in
    the library is returned as it is, with no download.

    Returns the paper's complete record (papers.selectors.paper_detail: `has_pdf` true)
    plus `pdf`: {page_count, size, origin, source_url} and `tried`: the locations tried
    before the one that worked, with why they failed. Network work happens outside any
    transaction. Raises NotFound (paper, or out of scope), InvalidInput (empty or
    oversized url), NoPdfLocation (no url and the metadata names none: pass a url),
    PdfFetchFailed (`asset_fetch_failed`: every location failed; `tried` lists
    {url, reason, message, retryable}, `retryable` whether trying later may help).
    """
    paper = paper_get(ref=ref, scope=scope)
    target = checked_url(url)
    if target is not None:
        locations = [target]
    else:
        current = intact_pdf(paper)
        if current is not None:
            return attached_record(paper, scope, current, tried=[])
        locations = pdf_locations(paper)
        if not locations:
            raise no_location(paper)
    tried: list[dict[str, Any]] = []
    for location in locations:
        try:
            record = pdf_download(paper_id=paper.pk, url=location)
        except (DownloadFailed, NotAPdf) as error:
            tried.append(
                {
                    "url": location,
                    "reason": error.details.get("reason", error.code),
                    "message": error.message,
                    "retryable": bool(error.details.get("retryable")),
                }
            )
            continue
        return attached_record(paper, scope, record, tried)
    summary = "; ".join(f"{a['url']} ({a['message'].rstrip('.')})" for a in tried)
    raise PdfFetchFailed(
        f"No PDF could be fetched for paper {paper.pk}. Tried: {summary}.",
        paper_id=paper.pk,
        tried=tried,
        retryable=any(attempt["retryable"] for attempt in tried),
    )


def checked_url(url: str | None) -> str | None:
    """The caller's url, stripped; None when none was given. InvalidInput when empty or
    over MAX_URL_CHARS."""
    if url is None:
        return None
    target = url.strip() if isinstance(url, str) else ""
    if not target:
        raise InvalidInput("url cannot be empty; omit it to use the paper's own.", field="url")
    if len(target) > MAX_URL_CHARS:
        raise InvalidInput(f"url is over {MAX_URL_CHARS} characters.", field="url")
    return target


def intact_pdf(paper: Paper) -> PaperPdf | None:
    """The paper's PDF when the library holds it, unchanged on disk."""
    current = PaperPdf.objects.filter(paper=paper).first()
    if current is not None and stored_intact(current.file_name, current.sha256):
        return current
    return None


def no_location(paper: Paper) -> NoPdfLocation:
    return NoPdfLocation(
        f"Paper {paper.pk} names no place to fetch a PDF from (no pdf_url, arXiv id "
        "or ACL Anthology id); pass the PDF's http(s) url.",
        paper_id=paper.pk,
    )


def attached_record(
    paper: Paper, scope: Sequence[str] | None, record: PaperPdf, tried: list[dict[str, Any]]
) -> dict[str, Any]:
    """attach_pdf's answer: the paper's record with its `pdf` and the locations `tried`."""
    return {
        **paper_detail(ref=paper.pk, scope=scope),
        "pdf": {
            "page_count": record.page_count,
            "size": record.size,
            "origin": record.origin,
            "source_url": record.source_url or None,
        },
        "tried": tried,
    }

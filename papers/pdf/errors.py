"""The errors of the library's PDFs. Messages say what would work instead and never name
a path on the server (agents must not learn internal locations)."""

from __future__ import annotations

from core.errors import DomainError, NotFound
from papers.assets.errors import AssetFetchFailed


def how_to_attach(paper_id: int) -> str:
    # Agents first: attach_pdf is the tool (and POST /api/papers/{ref}/pdf) they can call.
    return (
        f"Fetch one with attach_pdf (paper_id {paper_id}, an http(s) url, or none to use the "
        "paper's pdf_url, arXiv or ACL Anthology id); people can upload one on the paper's "
        f"admin page or run `manage.py attach_pdf {paper_id} FILE` (or `--download`)."
    )


class PdfNotAvailable(NotFound):
    """The paper has no PDF in the library."""

    code = "pdf_not_available"


class PdfFileMissing(DomainError):
    """The paper's PDF is recorded but its file is gone from the knowledge base."""

    code = "pdf_file_missing"


class NotAPdf(DomainError):
    """A file or a download that is not a readable PDF (or is too large, or encrypted)."""

    code = "not_a_pdf"


class TextNotFound(NotFound):
    """The text to highlight is not on the page."""

    code = "text_not_found"


class DownloadFailed(DomainError):
    """A PDF download that did not work; `retryable` says whether trying later may help."""

    code = "pdf_download_failed"

    @property
    def retryable(self) -> bool:
        return bool(self.details.get("retryable"))


class LocalFileRefused(DomainError):
    """attach_pdf's `path` from a client that may not read the server's files (a remote
    HTTP client, or a loopback one while PDF_IMPORT_DIR is not set), or a path outside the
    import folder."""

    code = "local_file_refused"


class NoPdfLocation(NotFound):
    """attach_pdf without a URL, for a paper whose metadata names no place to fetch its PDF
    from (no pdf_url, arXiv id or ACL Anthology id)."""

    code = "no_pdf_location"


class PdfFetchFailed(AssetFetchFailed):
    """attach_pdf: every location tried failed (`asset_fetch_failed`, REST 502); `tried`
    says how each one did, `retryable` whether trying later may help."""

"""The errors of the library's PDFs. Messages say what would work instead and never name
a path on the server (agents must not learn internal locations)."""

from __future__ import annotations

from core.errors import DomainError, NotFound


def how_to_attach(paper_id: int) -> str:
    return (
        f"Attach one with `manage.py attach_pdf {paper_id} FILE` or the PDF upload on the "
        f"paper's admin page, or download its pdf_url with `manage.py attach_pdf {paper_id} "
        "--download`."
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

"""REST: `GET /api/papers/pdf-coverage`, how much of the library has its PDF (the numbers
of `manage.py pdf_coverage --json`). Mounted under /papers before papers.api's router, so
that `/{ref}` does not take the path; it lives here because it counts per project."""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja import Router, Schema

from core.schemas import with_errors
from projects.coverage import library_pdf_coverage

router = Router(tags=["papers"])


class ProjectCoverage(Schema):
    project_id: str | None
    name: str
    papers: int
    with_pdf: int
    share: float


class SourceCoverage(Schema):
    source: str
    papers: int
    with_pdf: int
    share: float


class OriginCount(Schema):
    origin: str
    pdfs: int


class PdfCoverage(Schema):
    papers: int
    with_pdf: int
    share: float
    by_project: list[ProjectCoverage]
    by_source: list[SourceCoverage]
    by_origin: list[OriginCount]


@router.get(
    "/pdf-coverage",
    operation_id="pdf_coverage",
    summary="How many papers have a PDF, per project, source and PDF origin",
    response=with_errors({200: PdfCoverage}),
)
def pdf_coverage(request: HttpRequest) -> dict[str, Any]:
    return library_pdf_coverage()

"""Read: how much of the library has its PDF (docs/OPEN-ACCESS.md), for `manage.py
pdf_coverage` and `GET /api/papers/pdf-coverage`. It lives here, above papers, because it
counts per project; a paper in several projects counts in each.
"""

from __future__ import annotations

from typing import Any

from django.db.models import Count, Q

from papers.models import Paper, PaperPdf
from projects.models import Project


def _share(with_pdf: int, papers: int) -> float:
    return round(with_pdf / papers, 4) if papers else 0.0


def library_pdf_coverage() -> dict[str, Any]:
    """How many papers have a PDF: in the whole library, per project (and papers in no
    project), per paper source (`Paper.source`: the importer or engine that brought it)
    and, among the PDFs, per origin (attached, uploaded, downloaded). Each row has
    `papers`, `with_pdf` and `share` (0-1); origins count PDFs. Four aggregate queries,
    whatever the library's size."""
    papers = Paper.objects.count()
    with_pdf = PaperPdf.objects.count()
    has_pdf = Q(paper_links__paper__pdf__isnull=False)
    projects = (
        Project.objects.annotate(
            paper_count=Count("paper_links", distinct=True),
            pdf_count=Count("paper_links", filter=has_pdf, distinct=True),
        )
        .order_by("name")
        .values("id", "name", "paper_count", "pdf_count")
    )
    unfiled = Paper.objects.filter(project_links__isnull=True).aggregate(
        papers=Count("pk"), with_pdf=Count("pk", filter=Q(pdf__isnull=False))
    )
    by_project = [
        {"project_id": row["id"], "name": row["name"], "papers": row["paper_count"],
         "with_pdf": row["pdf_count"], "share": _share(row["pdf_count"], row["paper_count"])}
        for row in projects
    ]  # fmt: skip
    if unfiled["papers"]:
        by_project.append(
            {"project_id": None, "name": "(no project)", **unfiled,
             "share": _share(unfiled["with_pdf"], unfiled["papers"])}
        )  # fmt: skip
    sources = (
        Paper.objects.values("source")
        .annotate(papers=Count("pk"), with_pdf=Count("pk", filter=Q(pdf__isnull=False)))
        .order_by("-papers", "source")
    )
    origins = (
        PaperPdf.objects.values("origin").annotate(pdfs=Count("pk")).order_by("-pdfs", "origin")
    )
    return {
        "papers": papers,
        "with_pdf": with_pdf,
        "share": _share(with_pdf, papers),
        "by_project": by_project,
        "by_source": [{**row, "share": _share(row["with_pdf"], row["papers"])} for row in sources],
        "by_origin": list(origins),
    }

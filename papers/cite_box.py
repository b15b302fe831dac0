"""The Cite box of a paper's admin pages (the edit form, PaperAdmin.change_view, and the
reading page, projects.reading): the paper's reference and in-text citation in one of
COMMON_STYLES, or its BibTeX or RIS entry.

One path for both: the page is drawn with `cite_box`, and the box's script
(papers/static/papers/cite-box.mjs) switches style without a reload by asking
`cite_box_view` (`/admin/papers/paper/<id>/cite.json?style=`), which answers with the same
`cite_box`. References come from `csl.citations_for_refs`, the service under the MCP tool
`format_citations` and REST `/api/papers/cite`; BibTeX and RIS from `render_export`, the
exporters of `export_papers` (abstracts left out: a citation, not an archive).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING, Any

from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, JsonResponse
from django.urls import reverse

from core.errors import DomainError
from papers.citations import csl
from papers.citations.styles import COMMON_STYLES, DEFAULT_STYLE
from papers.exports import render_export
from papers.models import Paper
from papers.selectors import with_relations

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

logger = logging.getLogger(__name__)

# Offered beside the CSL styles: whole entries for a reference manager or a .bib file.
EXPORT_FORMATS = {"bibtex": "BibTeX", "ris": "RIS"}


def cite_box(paper_id: int, style: str | None) -> dict[str, Any]:
    """What the Cite box shows for `style` (a COMMON_STYLES id or an EXPORT_FORMATS one;
    anything else: DEFAULT_STYLE): `reference` (text, to copy), `reference_html` and
    `in_text` for a CSL style, `reference` only for an export format; `error` instead when
    the paper cannot be formatted."""
    chosen = style if style in COMMON_STYLES or style in EXPORT_FORMATS else DEFAULT_STYLE
    box: dict[str, Any] = {
        "paper_id": paper_id,
        "styles": list(COMMON_STYLES.items()),
        "formats": list(EXPORT_FORMATS.items()),
        "style": chosen,
        "label": COMMON_STYLES.get(chosen) or EXPORT_FORMATS[chosen],
        "kind": "export" if chosen in EXPORT_FORMATS else "csl",
        "url": reverse("admin:papers_paper_cite", args=[paper_id]),
    }
    try:
        if chosen in EXPORT_FORMATS:
            papers = list(with_relations(Paper.objects.filter(pk=paper_id)))
            text = render_export(papers, chosen, abstracts=False).strip()
            return {**box, "reference": text, "reference_html": "", "in_text": ""}
        plain = csl.citations_for_refs(refs=[paper_id], style=chosen, locale=None)
        html = csl.citations_for_refs(refs=[paper_id], style=chosen, locale=None, output="html")
    except DomainError as error:
        return {**box, "error": error.message}
    except Exception:
        # A citeproc-py failure on odd data must not take the paper page down with it.
        logger.exception("Cite box: paper %s in %s", paper_id, chosen)
        return {**box, "error": "This paper could not be formatted in this style."}
    entry = plain.entries[0]
    return {**box, "reference": entry.reference, "in_text": entry.in_text,
            "reference_html": html.entries[0].reference}  # fmt: skip


def cite_box_view(
    model_admin: ModelAdmin[Paper], request: HttpRequest, paper_id: int
) -> JsonResponse:
    """GET `?style=`: the Cite box's content as JSON (cite_box's keys but the lists of
    styles); 400 with `error` for a style the box does not offer, 422 when the paper
    cannot be formatted in it."""
    if request.method != "GET":
        return JsonResponse({"error": "Only GET."}, status=405)
    paper = Paper.objects.filter(pk=paper_id).first()
    if paper is None:
        raise Http404("No paper with this id.")
    if not model_admin.has_view_permission(request, paper):
        raise PermissionDenied
    style = request.GET.get("style", "")
    if style not in COMMON_STYLES and style not in EXPORT_FORMATS:
        offered = ", ".join([*COMMON_STYLES, *EXPORT_FORMATS])
        message = f"Unknown style {style!r}; use one of {offered}."
        return JsonResponse({"error": message}, status=400)
    box = cite_box(paper_id, style)
    shown = {key: value for key, value in box.items() if key not in ("styles", "formats")}
    return JsonResponse(shown, status=422 if "error" in box else 200)

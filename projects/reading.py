"""A paper's reading page in the admin: `/admin/papers/paper/<id>/read/`.

The edit form stays for editing; this page is for reading. It shows the record as a reader
wants it (authors by name, each a link to their other papers; venue, year, identifiers as
links, abstract, keywords, summaries, papers it cites and that cite it, its projects with
add / remove in place through the project picker of papers.pickers, the Cite box of
papers.admin) beside the PDF, drawn by pdf.js
(vendored from its npm package, scripts/vendor-pdfjs.sh; no CDN) with the stored highlights
and area annotations in their colours. Selecting text offers "Highlight": the page's JSON
endpoint calls the same service as MCP's `create_highlight`, so the highlight is found
tolerant of line breaks and is drawn into the annotated PDF too. Uploading a PDF comes back
to this page.

`?page=N` opens the PDF at page N; with `&quote=...` as well, the quote is looked up in the
paper (find_quote's matcher, page N first; nothing is written) and flashed where it is, so
a link from an extracted value's quote (the extraction page's evidence table) lands on it.

The views are LibraryPaperAdmin's (projects.curation): they live in `projects` because the
page files papers into projects. Every write checks the admin permission it needs and
MCP_READ_ONLY, and goes through a service; errors come back as the service's message.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.contrib import messages
from django.core.exceptions import PermissionDenied
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.shortcuts import render
from django.urls import reverse
from django.views.decorators.http import require_http_methods, require_POST

from core.errors import DomainError
from papers.cite_box import cite_box
from papers.models import Citation, Paper, PaperPdf
from papers.passages.quotes import MAX_QUOTE_CHARS
from papers.passages.selectors import quote_find
from papers.pdf.files import stored_path
from papers.pdf.page_image import first_page, image_version, image_width
from papers.pdf.selectors import annotation_list, annotation_record
from papers.pdf.services import annotation_highlight_create, pdf_attach_upload
from papers.pdf.serving import pdf_version
from papers.pickers import ProjectPicker
from papers.selectors import paper_record, with_relations
from projects.models import Project
from projects.selectors import project_get
from projects.services import project_add_papers, project_remove_papers

if TYPE_CHECKING:
    from django.contrib.admin import ModelAdmin

CITATIONS_SHOWN = 25
HIGHLIGHT_COLOURS = (
    ("#ffd400", "yellow"),
    ("#ff6666", "red"),
    ("#5fb236", "green"),
    ("#2ea8e5", "blue"),
    ("#a28ae5", "purple"),
)  # fmt: skip  (the seed's colours, as create_highlight names them)


def _paper(model_admin: ModelAdmin[Paper], request: HttpRequest, paper_id: int) -> Paper:
    paper = with_relations(Paper.objects.filter(pk=paper_id)).first()
    if paper is None:
        raise Http404("No paper with this id.")
    if not model_admin.has_view_permission(request, paper):
        raise PermissionDenied
    return paper


def _focus(request: HttpRequest, paper: Paper) -> dict[str, Any] | None:
    """Where `?page=N[&quote=...]` opens the PDF: that page, or where the quote is found
    (exactly or closely) with its line boxes to flash. Anything else is ignored."""
    page = request.GET.get("page", "")
    if not re.fullmatch(r"[0-9]{1,6}", page) or int(page) < 1:
        return None
    focus: dict[str, Any] = {"page": int(page)}
    quote = " ".join(request.GET.get("quote", "").split())
    if not quote or len(quote) > MAX_QUOTE_CHARS:
        return focus
    try:
        match = quote_find(text=quote, paper_ids=[paper.pk], page=int(page))
    except DomainError:  # no letters in it, or no PDF text to look in
        return focus
    if match.status in ("found", "approximate") and match.page and match.rects:
        focus = {"page": match.page, "rects": match.rects}
    return focus


def _refuse_if_read_only(request: HttpRequest) -> None:
    if settings.MCP_READ_ONLY:
        raise PermissionDenied("The server is read-only (MCP_READ_ONLY).")


def _links(record: dict[str, Any]) -> list[tuple[str, str]]:
    links = []
    if record["doi"]:
        links.append((f"DOI {record['doi']}", f"https://doi.org/{record['doi']}"))
    if record["arxiv_id"]:
        links.append((f"arXiv {record['arxiv_id']}", f"https://arxiv.org/abs/{record['arxiv_id']}"))
    if record["source_url"]:
        links.append(("Source page", record["source_url"]))
    if record["pdf_url"]:
        links.append(("PDF at the source", record["pdf_url"]))
    # Only web links: a stored URL is data from outside, never a javascript: link.
    return [(label, url) for label, url in links if url.startswith(("https://", "http://"))]


def _citations(paper: Paper) -> dict[str, Any]:
    cites = Citation.objects.filter(citing=paper).select_related("cited").order_by("cited__year")
    cited_by = Citation.objects.filter(cited=paper).select_related("citing")
    return {
        "cites": [c.cited for c in cites[:CITATIONS_SHOWN]],
        "cites_total": cites.count(),
        "cited_by": [c.citing for c in cited_by.order_by("-citing__year")[:CITATIONS_SHOWN]],
        "cited_by_total": cited_by.count(),
    }


def _pdf_url(paper: Paper, stored: PaperPdf | None) -> str:
    """The PDF's address for pdf.js, with the file's version: the browser keeps that one
    (papers.pdf.serving) and a replaced PDF gets a new address."""
    url = reverse("admin:papers_paper_pdf", args=[paper.pk])
    if stored is None:
        return url
    try:
        return f"{url}?v={pdf_version(stored_path(stored.file_name))}"
    except (DomainError, OSError):  # a bad name or a missing file: the view says so
        return url


def _page_picture(paper: Paper, stored: PaperPdf | None) -> dict[str, Any] | None:
    """Page 1's picture for the first paint (papers.pdf.page_image): its URL (with its
    version: the browser keeps it) and page 1's size in points, which the page's frame is
    given so that pdf.js's page takes its place without moving; None without a PDF, with
    the picture turned off, or when the PDF cannot be read (pdf.js then says why)."""
    if stored is None or not image_width():
        return None
    try:
        page = first_page(stored)
        version = image_version(stored)
    except (DomainError, OSError):  # a cache that cannot be written is no reason for a 500
        return None
    url = reverse("admin:papers_paper_page_image", args=[paper.pk])
    return {
        "url": f"{url}?v={version}",
        "width": round(page.width, 3),
        "height": round(page.height, 3),
        "outline": page.outline,
        "others": {str(number): list(size) for number, size in page.others.items()},
    }


def paper_read_view(
    request: HttpRequest, model_admin: ModelAdmin[Paper], paper_id: int
) -> HttpResponse:
    """The reading page."""
    paper = _paper(model_admin, request, paper_id)
    record = paper_record(paper)
    stored = (
        PaperPdf.objects.filter(paper=paper)
        .only("paper_id", "file_name", "sha256", "size", "page_count")
        .first()
    )
    has_pdf = stored is not None
    can_change = not settings.MCP_READ_ONLY and model_admin.has_change_permission(request, paper)
    can_annotate = not settings.MCP_READ_ONLY and request.user.has_perm("papers.add_annotation")
    member_of = set(record["projects"])
    picture = _page_picture(paper, stored)
    context = {
        **model_admin.admin_site.each_context(request),
        "title": paper.title,
        "opts": model_admin.model._meta,
        "paper": paper,
        "record": record,
        "authors": [link.author for link in paper.author_links.all()],
        "links": _links(record),
        "projects": Project.objects.filter(pk__in=member_of).order_by("name"),
        "project_picker": ProjectPicker(attrs={"id": "add-project", "required": True}).render(
            "project", ""
        ),
        "has_pdf": has_pdf,
        "can_change": can_change,
        "can_annotate": can_annotate and has_pdf,
        "colours": HIGHLIGHT_COLOURS,
        "page_picture": picture,
        "reader_config": (
            {
                "pdf": _pdf_url(paper, stored),
                "annotations": reverse("admin:papers_paper_annotations", args=[paper.pk]),
                "worker": settings.STATIC_URL + "papers/pdfjs/pdf.worker.min.mjs",
                "canAnnotate": can_annotate and has_pdf,
                "focus": _focus(request, paper) if has_pdf else None,
                # Pages of another size than page 1, which their placeholders take.
                "pageSizes": picture["others"] if picture else {},
            }
        ),
        "cite": cite_box(paper.pk, request.GET.get("cite_style")),
        **_citations(paper),
    }
    return render(request, "projects/paper_read.html", context)


@require_http_methods(["GET", "POST"])
def paper_annotations_view(
    request: HttpRequest, model_admin: ModelAdmin[Paper], paper_id: int
) -> JsonResponse:
    """GET: the paper's annotations as list_annotations gives them. POST (JSON `page`,
    `text`, optional `color` and `comment`): a highlight of the selected text, made by
    create_highlight's service; the new annotation, or `{"error": message}` with 400."""
    paper = _paper(model_admin, request, paper_id)
    if request.method == "GET":
        records = [annotation_record(a) for a in annotation_list(paper=paper)]
        return JsonResponse({"annotations": records})
    _refuse_if_read_only(request)
    if not request.user.has_perm("papers.add_annotation"):
        raise PermissionDenied
    try:
        body = json.loads(request.body or b"{}")
        if not isinstance(body, dict):
            raise ValueError
        page = int(body["page"])
        text, comment = str(body.get("text") or ""), str(body.get("comment") or "")
        color = body.get("color") or None
        # The selection's line boxes (PDF points): they pick the occurrence selected.
        near = body.get("rects") or []
        if not isinstance(near, list) or not all(isinstance(box, list) for box in near):
            raise ValueError
    except (ValueError, TypeError, KeyError):
        return JsonResponse(
            {"error": "Send JSON with page (a number), text and optionally rects (boxes)."},
            status=400,
        )
    try:
        annotation = annotation_highlight_create(
            paper=paper, page=page, text=text, color=color, comment=comment, near=near
        )
    except DomainError as error:
        return JsonResponse({"error": str(error)}, status=400)
    return JsonResponse(annotation_record(annotation), status=201)


@require_POST
def paper_projects_view(
    request: HttpRequest, model_admin: ModelAdmin[Paper], paper_id: int
) -> HttpResponse:
    """Add the paper to a project or remove it from one, then back to the reading page."""
    paper = _paper(model_admin, request, paper_id)
    _refuse_if_read_only(request)
    if not request.user.has_perm("projects.change_project"):
        raise PermissionDenied
    back = HttpResponseRedirect(reverse("admin:papers_paper_read", args=[paper.pk]))
    try:
        # The picker sends the project's id; a form without its script, the typed name.
        project = project_get(ref=request.POST.get("project", ""))
        if request.POST.get("action") == "remove":
            project_remove_papers(project=project, paper_ids=[paper.pk])
            messages.success(request, f"Removed from project {project.name!r}.")
        else:
            added = project_add_papers(project=project, paper_ids=[paper.pk])
            done = "Added to" if added else "Already in"
            messages.success(request, f"{done} project {project.name!r}.")
    except DomainError as error:
        messages.error(request, str(error))
    return back


@require_POST
def paper_upload_view(
    request: HttpRequest, model_admin: ModelAdmin[Paper], paper_id: int
) -> HttpResponse:
    """Attach (or replace) the paper's PDF from an upload, then back to the reading page."""
    paper = _paper(model_admin, request, paper_id)
    _refuse_if_read_only(request)
    if not model_admin.has_change_permission(request, paper):
        raise PermissionDenied
    upload = request.FILES.get("pdf")
    if upload is None:
        messages.error(request, "Choose a PDF file to upload.")
    else:
        try:
            pdf_attach_upload(paper_id=paper.pk, chunks=upload.chunks(), name=upload.name or "")
            messages.success(request, f"PDF {upload.name!r} attached.")
        except DomainError as error:
            messages.error(request, str(error))
    return HttpResponseRedirect(reverse("admin:papers_paper_read", args=[paper.pk]))

"""REST endpoints for papers (`/api/papers`): records, keywords, exports, citations in a
CSL style, summaries and sources. The same selectors and services as the MCP `library`
and `assets` tools, with the same limits; errors are mapped once in `research_site.api_errors`.

A paper is named by its paper_id (`/api/papers/12`), its human id (URL-encoded:
`/api/papers/%5BVaswani%2C%20A.%202017%5D`) or its citekey (`/api/papers/vaswani2017attention`).
The search endpoints (`/api/search/...`) are in `papers.search.api`.

One module because it is one ninja router (`/api/papers`): its schemas and endpoints are
read together, and each endpoint is a few lines over a selector or service.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema
from pydantic import ConfigDict

from core.errors import InvalidInput
from core.schemas import with_errors
from papers import assets
from papers import selectors as paper_selectors
from papers import services as paper_services
from papers.bibtex import render_bibtex
from papers.citations import csl as citations
from papers.citations.styles import COMMON_STYLES, MAX_STYLE_ID_LENGTH
from papers.exports import EXTENSIONS, FORMATS, export_search_results, render_export
from papers.pdf import fetch

router = Router(tags=["papers"])

MAX_REF_CHARS = paper_selectors.MAX_REF_LENGTH
MAX_PAPERS = settings.MAX_PAGE_SIZE
# Large enough for any asset (ASSET_MAX_BYTES is 5 MB by default), as the MCP tools.
MAX_CHARS_LIMIT = 10_000_000
EXPORT_CONTENT_TYPES = {
    "bibtex": "application/x-bibtex",
    "csv": "text/csv",
    "json": "application/json",
    "jsonl": "application/x-ndjson",
    "markdown": "text/markdown",
    "ris": "application/x-research-info-systems",
    "csl-json": "application/vnd.citationstyles.csl+json",
    "bibliography": "text/plain",
}

PaperRefValue = paper_selectors.PaperRefValue
PaperRefs = Annotated[
    list[PaperRefValue],
    Field(
        min_length=1,
        max_length=MAX_PAPERS,
        description="Up to 100 papers: paper_id, human id or citekey.",
    ),
]
Keyword = Annotated[str, Field(min_length=1, max_length=100)]
Keywords = Annotated[
    list[Keyword], Field(max_length=50, description="Keywords, each up to 100 characters.")
]
ExportFormat = Annotated[
    str,
    Field(
        description="The file format.",
        # The list comes from papers.exports, which validates the value.
        json_schema_extra={"enum": list(FORMATS)},
    ),
]
ProjectRef = Annotated[str, Field(min_length=1, max_length=200)]
CitationStyle = Annotated[
    str,
    Field(
        min_length=1,
        max_length=MAX_STYLE_ID_LENGTH,
        description=(f"A CSL style id of the CSL repository, e.g. {', '.join(COMMON_STYLES)}."),
    ),
]
CitationLocale = Annotated[
    str,
    Field(
        min_length=2, max_length=20, description="e.g. en-US, en-GB, de-DE; default: the style's."
    ),
]
MaxChars = Annotated[
    int | None,
    Field(
        ge=1,
        le=MAX_CHARS_LIMIT,
        description=(
            "Return at most this many characters; longer content is cut and ends with a "
            "[TRUNCATED: ...] marker. Omit for the full content."
        ),
    ),
]


# --- schemas -------------------------------------------------------------------------------


class PaperBrief(Schema):
    """The short record of lists and search results (more fields may follow)."""

    model_config = ConfigDict(extra="allow")

    paper_id: int = Field(description="Integer id; the cheapest way to refer to the paper.")
    id: str = Field(description="Human-readable id, e.g. '[Vaswani, A., Shazeer, N. 2017]'.")
    citekey: str = Field(description="BibTeX citation key.")
    title: str
    year: int | None = None
    venue: str | None = None
    publication: str | None = Field(
        default=None, description="Where it appeared: 'Journal Name, Volume(Issue), Pages'."
    )
    authors: list[str] = Field(default_factory=list)
    keywords: list[str] = Field(default_factory=list)
    doi: str | None = None
    arxiv_id: str | None = None
    source_id: str | None = Field(
        default=None, description="The source's own id (ACL Anthology id, a collection's id)."
    )
    url: str | None = Field(default=None, description="The paper's page at its source.")
    pdf_url: str | None = None
    pages: str | None = None
    publisher: str | None = None
    has_pdf: bool = Field(
        default=False,
        description="A PDF is stored in the library (pdf_url alone is only a download link).",
    )
    projects: list[str] = Field(default_factory=list, description="Project ids.")
    summaries: list[str] = Field(default_factory=list, description="Summary templates saved.")
    annotation_count: int = 0


class PaperDetail(PaperBrief):
    """The complete record: abstract, authors with affiliations, identifiers, projects..."""

    abstract: str | None = None
    authors_detail: list[dict[str, Any]] = Field(default_factory=list)
    categories: list[str] = Field(default_factory=list)
    identifiers: dict[str, str] = Field(default_factory=dict)
    created_at: str
    updated_at: str


class PdfAttachIn(Schema):
    url: str | None = Field(
        default=None,
        max_length=2000,
        description=(
            "An http(s) URL of the PDF. Omit it to use the paper's own open-access locations: "
            "its pdf_url, arXiv, the ACL Anthology."
        ),
    )


class PdfFacts(Schema):
    page_count: int
    size: int = Field(description="Bytes.")
    origin: str
    source_url: str | None = None


class PaperWithPdf(PaperDetail):
    pdf: PdfFacts
    tried: list[dict[str, Any]] = Field(
        default_factory=list, description="Locations that failed before the one that worked."
    )


class PaperMetadata(PaperBrief):
    """The compact record (no abstract or free-form blobs) plus the summary templates."""

    preferred_summary_template: str | None = None
    available_summary_templates: list[str] = Field(default_factory=list)


class KeywordsChange(Schema):
    paper_ids: Annotated[PaperRefs, Field(description="One or more papers, up to 100.")]
    action: Literal["add", "remove", "set"] = Field(
        description="'add' adds the keywords, 'remove' removes them, 'set' replaces them all."
    )
    keywords: Keywords


class KeywordsChanged(Schema):
    action: Literal["add", "remove", "set"]
    keywords_by_paper: dict[str, list[str]] = Field(
        description="paper_id (as text) -> the paper's keywords after the change."
    )


class PaperKeywordsIn(Schema):
    keywords: Keywords


class PaperKeywords(Schema):
    paper_id: int
    keywords: list[str] = Field(description="The paper's keywords after the change.")


class BibtexEntry(Schema):
    paper_id: int
    citekey: str
    bibtex: str


class ExportFileIn(Schema):
    paper_ids: PaperRefs | None = Field(
        default=None, description="Up to 100 papers; omit with project_id for the whole project."
    )
    format: ExportFormat
    project_id: ProjectRef | None = Field(
        default=None,
        description="The project to export; with paper_ids, only those of them in it.",
    )
    filename: str | None = Field(
        default=None,
        max_length=100,
        description="File name without extension (letters, digits, '-', '_', '.'); "
        "a dated default when omitted.",
    )
    overwrite: bool = Field(
        default=False,
        description="Replace a file of that name; otherwise the export takes name-2, name-3...",
    )
    style: CitationStyle | None = Field(
        default=None, description="For the bibliography format: a CSL style id (default apa)."
    )
    locale: CitationLocale | None = None
    abstracts: bool = Field(
        default=True, description="false: leave abstracts out (most of a BibTeX export)."
    )


class ExportFile(Schema):
    success: bool
    filename: str
    path: str = Field(description="Where the file is, relative to the knowledge-base folder.")
    format: str
    count: int = Field(description="How many papers were written.")
    size: int = Field(description="Bytes written.")


class SummaryContent(Schema):
    paper_id: int
    template: str = Field(description="The template returned (the preferred one by default).")
    content: str = Field(description="The summary: its JSON text (unless truncated).")
    total_chars: int
    truncated: bool


class SourceContent(Schema):
    paper_id: int
    lang: str | None = Field(description="The translation's language; null for the original.")
    content: str = Field(description="The paper's source markdown (unless truncated).")
    total_chars: int
    truncated: bool


class SummaryIn(Schema):
    content: dict[str, Any] = Field(description="The summary, a JSON object.")
    set_preferred: bool = Field(
        default=False, description="Make this template the paper's preferred summary."
    )


class SummarySaved(Schema):
    paper_id: int
    template: str
    size: int = Field(description="Bytes stored.")
    preferred_summary_template: str | None
    available_summary_templates: list[str]


class ExportQuery(Schema):
    paper_ids: list[Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS)]] = Field(
        default_factory=list,
        max_length=MAX_PAPERS,
        description=(
            "Up to 100 papers (paper_id, human id or citekey); repeat the parameter. Omit "
            "with project_id to export the whole project."
        ),
    )
    format: ExportFormat
    project_id: ProjectRef | None = Field(
        default=None,
        description="The project to export; with paper_ids, only those of them in it.",
    )
    style: CitationStyle | None = Field(
        default=None, description="For the bibliography format: a CSL style id (default apa)."
    )
    locale: CitationLocale | None = None
    abstracts: bool = Field(
        default=True, description="false: leave abstracts out (most of a BibTeX export)."
    )


class CiteQuery(Schema):
    paper_ids: list[Annotated[str, Field(min_length=1, max_length=MAX_REF_CHARS)]] = Field(
        min_length=1,
        max_length=MAX_PAPERS,
        description="Up to 100 papers (paper_id, human id or citekey); repeat the parameter.",
    )
    style: CitationStyle = "apa"
    locale: CitationLocale | None = None
    locators: list[Annotated[str, Field(min_length=3, max_length=MAX_REF_CHARS + 60)]] = Field(
        default_factory=list,
        max_length=MAX_PAPERS,
        description=(
            "A page for a paper's in-text citation as '<paper>:<page>', e.g. "
            "'vaswani2017attention:5'; repeat the parameter."
        ),
    )
    format: Literal["text", "html"] = "text"


class CitationOut(Schema):
    paper_id: int
    citekey: str
    reference: str = Field(description="The paper's entry in the style's reference list.")
    in_text: str = Field(description="Its in-text citation, with the page when given.")


class CitationsOut(Schema):
    style: str
    style_title: str
    locale: str
    format: str
    entries: list[CitationOut] = Field(description="In the style's reference-list order.")
    citation: str = Field(description="All the papers cited together.")


class SummaryQuery(Schema):
    template: str | None = Field(
        default=None,
        pattern=assets.TEMPLATE_PATTERN,
        description="Summary template, e.g. 'brief'; the paper's preferred one when omitted.",
    )
    max_chars: MaxChars = None


class SourceQuery(Schema):
    lang: str | None = Field(
        default=None,
        pattern=assets.LANGUAGE_PATTERN,
        description="A language code (e.g. 'zh', 'pt-BR'): return the translation instead.",
    )
    max_chars: MaxChars = None


def _content(text: str, max_chars: int | None, more: str) -> dict[str, Any]:
    shown = assets.truncate(text, max_chars, more=more)
    return {"content": shown, "total_chars": len(text), "truncated": shown != text}


# --- exports (before /{ref}, so "export" is never taken for a citekey) ---------------------


@router.get(
    "/export",
    operation_id="export_papers",
    summary="Export papers (the file's content is the response)",
    response=with_errors({200: str}, 404),
    openapi_extra={
        "responses": {
            200: {
                "description": "The export's content.",
                "content": {
                    EXPORT_CONTENT_TYPES.get(fmt, "text/plain"): {"schema": {"type": "string"}}
                    for fmt in FORMATS
                },
            }
        }
    },
)
def export_inline(request: HttpRequest, query: Query[ExportQuery]) -> HttpResponse:
    """The papers as BibTeX, CSV, JSON, JSON Lines, Markdown, RIS, CSL-JSON or a
    bibliography in a CSL style (`style`, default apa) in the response body; nothing is
    written on the server. Repeat paper_ids for several papers, or give only
    project_id for a whole project."""
    if not query.paper_ids and not query.project_id:
        raise InvalidInput("Give paper_ids, a project_id, or both.", field="paper_ids")
    papers = paper_selectors.papers_filter(refs=query.paper_ids, project=query.project_id)
    content = render_export(
        papers, query.format, style=query.style, locale=query.locale, abstracts=query.abstracts
    )
    fmt = query.format.strip().lower()
    content_type = EXPORT_CONTENT_TYPES.get(fmt, "text/plain")
    response = HttpResponse(content, content_type=f"{content_type}; charset=utf-8")
    response["Content-Disposition"] = f'inline; filename="papers.{EXTENSIONS[fmt]}"'
    return response


@router.post(
    "/export",
    operation_id="export_search_results",
    summary="Export papers to a file in the knowledge base's exports folder",
    response=with_errors({200: ExportFile}, 403, 404),
)
def export_to_file(request: HttpRequest, body: ExportFileIn) -> dict[str, Any]:
    """As the MCP tool export_search_results, always to a file: write the papers to
    `<knowledge base>/exports/<filename>.<ext>` (never over an existing file unless
    `overwrite`) and say where. GET /api/papers/export returns the content instead."""
    result = export_search_results(
        fmt=body.format, refs=body.paper_ids, project=body.project_id, filename=body.filename,
        overwrite=body.overwrite, inline_max_bytes=0, style=body.style, locale=body.locale,
        abstracts=body.abstracts,
    )  # fmt: skip
    return result


@router.get(
    "/cite",
    operation_id="format_citations",
    summary="References and in-text citations of papers in a CSL style",
    response=with_errors({200: CitationsOut}, 404),
)
def cite(request: HttpRequest, query: Query[CiteQuery]) -> dict[str, Any]:
    """As the MCP tool format_citations: each paper's reference and in-text citation in
    any style of the CSL repository (apa, chicago-author-date, ieee, vancouver, ...), with
    a page for the in-text citation when `locators` gives one."""
    result = citations.citations_for_refs(
        refs=query.paper_ids, style=query.style, locale=query.locale,
        locators=citations.locators_parse(query.locators),
        output=query.format,
    )  # fmt: skip
    return result.as_dict()


# --- keywords of several papers ----------------------------------------------------------


@router.post(
    "/keywords",
    operation_id="manage_paper_keywords",
    summary="Add, remove or set the keywords of several papers",
    response=with_errors({200: KeywordsChanged}, 403, 404),
)
def keywords_change(request: HttpRequest, body: KeywordsChange) -> dict[str, Any]:
    """All or nothing: an unknown paper changes nothing (404)."""
    updated = paper_services.paper_keywords_update(
        refs=body.paper_ids, action=body.action, keywords=body.keywords
    )
    return {
        "action": body.action,
        "keywords_by_paper": {str(pid): names for pid, names in updated.items()},
    }


# --- one paper ---------------------------------------------------------------------------


@router.get(
    "/{ref}",
    operation_id="get_paper_details",
    summary="A paper's complete record",
    response=with_errors({200: PaperDetail}, 404),
)
def paper_detail(request: HttpRequest, ref: str) -> dict[str, Any]:
    return paper_selectors.paper_detail(ref=ref)


@router.post(
    "/{ref}/pdf",
    operation_id="attach_pdf",
    summary="Fetch a PDF for a paper from a URL or its open-access locations",
    response=with_errors({200: PaperWithPdf}, 403, 404, 502),
)
def paper_pdf_attach(request: HttpRequest, ref: str, body: PdfAttachIn) -> dict[str, Any]:
    """Downloads with the same guard as every PDF download (no private addresses, size
    and time limits, a real PDF). 404 `no_pdf_location` when no url is given and the paper
    names none; 502 `asset_fetch_failed` lists every location tried and why it failed."""
    return fetch.paper_pdf_attach(ref=ref, url=body.url)


@router.get(
    "/{ref}/metadata",
    operation_id="get_paper_metadata",
    summary="A paper's compact record and summary templates",
    response=with_errors({200: PaperMetadata}, 404),
)
def paper_metadata(request: HttpRequest, ref: str) -> dict[str, Any]:
    return paper_selectors.paper_metadata(ref=ref)


@router.get(
    "/{ref}/bibtex",
    operation_id="export_paper_bibtex",
    summary="A paper's BibTeX entry",
    response=with_errors({200: BibtexEntry}, 404),
)
def paper_bibtex(request: HttpRequest, ref: str) -> dict[str, Any]:
    papers = list(paper_selectors.papers_filter(refs=[ref]))
    return {"paper_id": papers[0].pk, "citekey": papers[0].citekey, "bibtex": render_bibtex(papers)}


def _keywords_of(ref: str, action: str, keywords: list[str]) -> dict[str, Any]:
    updated = paper_services.paper_keywords_update(refs=[ref], action=action, keywords=keywords)
    [(paper_id, names)] = updated.items()
    return {"paper_id": paper_id, "keywords": names}


@router.post(
    "/{ref}/keywords",
    operation_id="add_paper_keywords",
    summary="Add keywords to a paper",
    response=with_errors({200: PaperKeywords}, 403, 404),
)
def paper_keywords_add(request: HttpRequest, ref: str, body: PaperKeywordsIn) -> dict[str, Any]:
    return _keywords_of(ref, "add", body.keywords)


@router.put(
    "/{ref}/keywords",
    operation_id="set_paper_keywords",
    summary="Replace a paper's keywords (an empty list clears them)",
    response=with_errors({200: PaperKeywords}, 403, 404),
)
def paper_keywords_set(request: HttpRequest, ref: str, body: PaperKeywordsIn) -> dict[str, Any]:
    return _keywords_of(ref, "set", body.keywords)


@router.delete(
    "/{ref}/keywords/{keyword}",
    operation_id="remove_paper_keyword",
    summary="Remove a keyword from a paper",
    response=with_errors({200: PaperKeywords}, 403, 404),
)
def paper_keyword_remove(request: HttpRequest, ref: str, keyword: str) -> dict[str, Any]:
    return _keywords_of(ref, "remove", [keyword])


# --- summaries and sources -------------------------------------------------------------------


@router.get(
    "/{ref}/summary",
    operation_id="get_paper_summary",
    summary="A paper's summary (the preferred template unless one is named)",
    response=with_errors({200: SummaryContent}, 404, 502),
)
def paper_summary(request: HttpRequest, ref: str, query: Query[SummaryQuery]) -> dict[str, Any]:
    paper = paper_selectors.paper_get(ref=ref)
    summary = assets.summary_get(paper=paper, template=query.template)
    more = f"Ask with template={summary.name} and max_chars={len(summary.text)} for all of it."
    return {
        "paper_id": paper.pk,
        "template": summary.name,
        **_content(summary.text, query.max_chars, more),
    }


@router.put(
    "/{ref}/summaries/{template}",
    operation_id="save_paper_summary",
    summary="Store a summary under a template name, replacing an earlier one",
    response=with_errors({200: SummarySaved}, 403, 404),
)
def paper_summary_save(
    request: HttpRequest, ref: str, template: str, body: SummaryIn
) -> dict[str, Any]:
    """The paper's first summary becomes its preferred one; set_preferred makes this one
    preferred. At most ASSET_MAX_BYTES (5 MB by default) of JSON."""
    paper = paper_selectors.paper_get(ref=ref)
    asset = assets.asset_save(
        paper=paper,
        kind=assets.Kind.SUMMARY,
        name=template,
        content=json.dumps(body.content, ensure_ascii=False),
        set_preferred=body.set_preferred,
    )
    info = assets.summary_templates_info(paper_id=paper.pk)
    return {"paper_id": paper.pk, "template": asset.name, "size": asset.size, **info}


@router.get(
    "/{ref}/source",
    operation_id="get_paper_source",
    summary="A paper's full text as markdown, or a translation of it",
    response=with_errors({200: SourceContent}, 404, 502),
)
def paper_source(request: HttpRequest, ref: str, query: Query[SourceQuery]) -> dict[str, Any]:
    """Can be very large: pass max_chars to cut it (the cut is marked)."""
    paper = paper_selectors.paper_get(ref=ref)
    if query.lang is None:
        source = assets.source_get(paper=paper)
    else:
        source = assets.translation_get(paper=paper, lang=query.lang)
    more = f"Ask with max_chars={len(source.text)} for all of it."
    return {
        "paper_id": paper.pk,
        "lang": source.name or None,
        **_content(source.text, query.max_chars, more),
    }

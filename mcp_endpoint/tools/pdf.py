"""Tool set `pdf`: the library's own PDFs (the `zotero` set's operations, on files in the
knowledge base instead of a running Zotero; docs/PDF.md) — outline, text by pages or
sections, highlights, area annotations and their export.

Each tool parses its arguments and calls one selector or service of `papers.pdf`; the
registry maps the errors: bad arguments, a page out of range, an ambiguous quote and
a section asked of a PDF without outline are -32602; no PDF (`pdf_not_available`, saying
how to attach one), a missing file, a section or text not found are isError results.
create_highlight and create_area_annotation write, so read-only mode hides them.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Annotated, Any, Literal

from django.conf import settings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import AfterValidator, BaseModel, Field

from core.errors import InvalidInput
from mcp_endpoint.registry import READ_ONLY, Registry, mcp_tool
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.library import PaperRef, PaperRefValue
from papers.assets import truncate
from papers.models import Annotation
from papers.pdf import jobs, local, selectors, services
from papers.pdf.spec import SEMANTIC_COLORS
from papers.selectors import paper_get

MAX_CHARS_LIMIT = 10_000_000
# attach_pdf waits this long at most for its download, as the review tools do for a step.
MAX_WAIT_SECONDS = 20
# Text returned when max_chars is omitted (about 5,000 tokens); the marker says how to go on.
DEFAULT_MAX_CHARS = 20_000

# Downloads (open world); with a url it replaces the paper's PDF, so clients should confirm.
ATTACH = ToolAnnotations(
    read_only_hint=False, destructive_hint=True, idempotent_hint=True, open_world_hint=True
)
# Each call adds one annotation to the library (and redraws the annotated copy).
ANNOTATE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)

# Shared with the zotero_* tools: the same page, section, colour and comment arguments.
Page = Annotated[int, Field(ge=1, le=100_000)]
PagesSpec = Annotated[
    str | None, Field(max_length=200, description="'1', '1-5', '1,3,5-7' or 'all'.")
]
SectionNames = Annotated[
    str | None,
    Field(max_length=500, description="Outline titles, e.g. 'Introduction,Methods'."),
]
ColorName = Literal["section1", "section2", "section3", "positive", "negative", "detail", "code"]
HEX_COLOR = re.compile(r"#?[0-9a-fA-F]{6}")


def _hex_color(value: str) -> str:
    # Checked here rather than as a schema `pattern`: the description says the form in
    # fewer tokens (in four tools), and the error says it in words.
    if not HEX_COLOR.fullmatch(value):
        raise ValueError("a colour is a semantic name or #rrggbb")
    return value


HexColor = Annotated[str, AfterValidator(_hex_color)]
Color = Annotated[
    ColorName | HexColor | None,
    Field(description="A semantic name or #rrggbb; default yellow."),
]
Comment = Annotated[str, Field(max_length=10_000)]
Quote = Annotated[str, Field(min_length=1, max_length=4_000)]
Rect = Annotated[
    list[float],
    Field(
        min_length=4,
        max_length=4,
        description="[x1, y1, x2, y2], PDF points, origin bottom-left.",
    ),
]
MaxChars = Annotated[
    int | None,
    Field(ge=1, le=MAX_CHARS_LIMIT),
]


class OutlineItem(BaseModel):
    title: str
    page: int | None = Field(description="1-based page the section starts on (null if none).")
    level: int = Field(description="1 for top-level entries.")
    children: list[OutlineItem]


class PdfOutline(BaseModel):
    paper_id: int
    total_pages: int
    has_outline: bool
    items: list[OutlineItem]
    hint: str | None = Field(default=None, description="What to do when there is no outline.")


class SectionRead(BaseModel):
    requested: str
    title: str = Field(description="The outline title the requested name matched.")
    first_page: int
    last_page: int


class PdfPages(BaseModel):
    paper_id: int
    total_pages: int
    pages: list[int] = Field(description="The pages whose text is in content.")
    sections: list[SectionRead]
    content: str
    total_chars: int = Field(description="Length of the whole text before max_chars.")
    truncated: bool


class AnnotationRecord(BaseModel):
    annotation_id: int
    paper_id: int
    page: int
    kind: Literal["highlight", "area"]
    text: str = Field(description="The highlighted text as printed (area: the text inside).")
    color: str
    color_name: str | None = Field(description="The semantic name of the colour, if it has one.")
    comment: str
    rects: list[list[float]] = Field(
        description="[x1, y1, x2, y2] boxes in PDF points, origin bottom-left; one per line."
    )
    created_at: str


class AnnotationList(BaseModel):
    paper_id: int
    total: int = Field(description="How many annotations match (before limit/offset).")
    annotations: list[AnnotationRecord]


def _annotate(
    create: Callable[..., Annotation],
    paper_id: PaperRefValue,
    page: int,
    color: str | None,
    comment: str,
    **where: Any,
) -> AnnotationRecord:
    """The annotation `create` (a `papers.pdf.services` annotation maker) adds on `page` of
    the paper `paper_id` names in the caller's scope; `where` is its text or rect."""
    paper = paper_get(ref=paper_id, scope=current_scope())
    return _record(create(paper=paper, page=page, color=color, comment=comment, **where))


def _record(annotation: Annotation) -> AnnotationRecord:
    names = {value: name for name, value in SEMANTIC_COLORS.items()}
    return AnnotationRecord(
        annotation_id=annotation.pk,
        paper_id=annotation.paper_id,
        page=annotation.page,
        kind=annotation.kind,  # type: ignore[arg-type]
        text=annotation.text,
        color=annotation.color,
        color_name=names.get(annotation.color),
        comment=annotation.comment,
        rects=annotation.rects,
        created_at=annotation.created_at.isoformat(),
    )


@mcp_tool(
    name="attach_pdf",
    title="Attach a PDF",
    description=(
        "Fetch a paper's PDF into the library (for the PDF tools) from url, from path (a "
        "file in the server's import folder), or else from its record's open-access link. "
        "Still downloading after wait_seconds: job.state 'running'; repeat the call "
        "for the outcome."
    ),
    annotations=ATTACH,
)
def attach_pdf(
    paper_id: PaperRef,
    url: Annotated[
        str | None, Field(max_length=2000, description="http(s); replaces a current PDF.")
    ] = None,
    path: Annotated[
        str | None,
        Field(max_length=1000, description="Replaces a current PDF too."),
    ] = None,
    wait_seconds: Annotated[int, Field(ge=0, le=MAX_WAIT_SECONDS)] = MAX_WAIT_SECONDS,
) -> dict[str, Any]:
    if path is not None:
        if url is not None:
            raise InvalidInput("Give url or path, not both.", field="path")
        return local.paper_pdf_attach_local(ref=paper_id, path=path, scope=current_scope())
    return jobs.pdf_attach_job(
        ref=paper_id, url=url, scope=current_scope(), wait_seconds=wait_seconds
    )


@mcp_tool(
    name="get_pdf_outline",
    title="PDF outline",
    description=(
        "The table of contents of a paper's PDF (title, page, level, children) and "
        "total_pages. Call before read_pdf_pages."
    ),
    annotations=READ_ONLY,
)
def get_pdf_outline(paper_id: PaperRef) -> PdfOutline:
    paper = paper_get(ref=paper_id, scope=current_scope())
    outline = selectors.pdf_outline_get(paper=paper)
    return PdfOutline(
        paper_id=outline.paper_id,
        total_pages=outline.total_pages,
        has_outline=outline.has_outline,
        items=[OutlineItem.model_validate(item) for item in outline.items],
        hint=outline.hint,
    )


@mcp_tool(
    name="read_pdf_pages",
    title="Read PDF pages",
    description=(
        "Text of a paper's PDF by pages or by outline section (not both), each page "
        "headed '--- Page N of M ---'."
    ),
    annotations=READ_ONLY,
)
def read_pdf_pages(
    paper_id: PaperRef,
    pages: PagesSpec = None,
    section: SectionNames = None,
    max_chars: MaxChars = None,
) -> CallToolResult:
    paper = paper_get(ref=paper_id, scope=current_scope())
    reading = selectors.pdf_pages_read(paper=paper, pages=pages, section=section)
    text = reading.render()
    shown = truncate(
        text,
        max_chars or DEFAULT_MAX_CHARS,
        more=(
            "Read fewer pages or sections at a time, or call read_pdf_pages again with "
            f"max_chars={len(text)}."
        ),
    )
    return CallToolResult(content=[TextContent(type="text", text=shown)])


@mcp_tool(
    name="create_highlight",
    title="Highlight PDF text",
    description=(
        "Highlight a passage on a page of a paper's PDF (the original stays). Quote it from "
        "read_pdf_pages; it must occur once on the page."
    ),
    annotations=ANNOTATE,
)
def create_highlight(
    paper_id: PaperRef,
    page: Page,
    text: Quote,
    color: Color = None,
    comment: Comment = "",
) -> AnnotationRecord:
    return _annotate(
        services.annotation_highlight_create, paper_id, page, color, comment, text=text
    )


@mcp_tool(
    name="create_area_annotation",
    title="Mark a PDF area",
    description=(
        "Mark a rectangle (figure, table, equation) on a page of a paper's PDF (the "
        "original stays)."
    ),
    annotations=ANNOTATE,
)
def create_area_annotation(
    paper_id: PaperRef,
    page: Page,
    rect: Rect,
    color: Color = None,
    comment: Comment = "",
) -> AnnotationRecord:
    return _annotate(services.annotation_area_create, paper_id, page, color, comment, rect=rect)


@mcp_tool(
    name="list_annotations",
    title="List annotations",
    description=(
        "A paper's highlights and area annotations in page order: text, colour, comment, rects."
    ),
    annotations=READ_ONLY,
)
def list_annotations(
    paper_id: PaperRef,
    page: Annotated[int | None, Field(ge=1, le=100_000)] = None,
    limit: Annotated[int, Field(ge=1, le=settings.MAX_PAGE_SIZE)] = settings.MAX_PAGE_SIZE,
    offset: Annotated[int, Field(ge=0, le=settings.MAX_OFFSET)] = 0,
) -> AnnotationList:
    paper = paper_get(ref=paper_id, scope=current_scope())
    queryset = selectors.annotation_list(paper=paper, page=page)
    return AnnotationList(
        paper_id=paper.pk,
        total=queryset.count(),
        annotations=[_record(a) for a in queryset[offset : offset + limit]],
    )


@mcp_tool(
    name="export_annotations",
    title="Export annotations",
    description="A paper's annotations as markdown (quotes by page, with comments) or json.",
    annotations=READ_ONLY,
)
def export_annotations(
    paper_id: PaperRef,
    format: Literal["markdown", "json"] = "markdown",
    max_chars: MaxChars = None,
) -> str:
    paper = paper_get(ref=paper_id, scope=current_scope())
    text = selectors.annotations_export_text(paper=paper, format=format)
    return truncate(text, max_chars or DEFAULT_MAX_CHARS)


def register(registry: Registry) -> None:
    registry.add_tools(
        attach_pdf,
        get_pdf_outline,
        read_pdf_pages,
        create_highlight,
        create_area_annotation,
        list_annotations,
        export_annotations,
    )

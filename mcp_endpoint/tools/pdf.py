"""Tool set `pdf`: the library's own PDFs (seed 003's operations, on files in the knowledge
base instead of a running Zotero) — outline, text by pages or sections, highlights, area
annotations and their export.

Each tool parses its arguments and calls one selector or service of `papers.pdf`; the
registry maps the errors: bad arguments, a page out of range, an ambiguous quote and
a section asked of a PDF without outline are -32602; no PDF (`pdf_not_available`, saying
how to attach one), a missing file, a section or text not found are isError results.
create_highlight and create_area_annotation write, so read-only mode hides them.
"""

from __future__ import annotations

from typing import Annotated, Literal

from django.conf import settings
from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from mcp_endpoint.registry import READ_ONLY, Registry
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.library import PaperRef
from papers.assets import truncate
from papers.models import Annotation
from papers.pdf import selectors, services
from papers.pdf.spec import SEMANTIC_COLORS
from papers.selectors import paper_get

MAX_CHARS_LIMIT = 10_000_000

# Each call adds one annotation to the library (and redraws the annotated copy).
ANNOTATE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)

_COLOR_LIST = ", ".join(f"{name} {value}" for name, value in SEMANTIC_COLORS.items())
# Shared with the zotero_* tools: the same page and section arguments.
Page = Annotated[int, Field(ge=1, le=100_000, description="Page number, 1-based.")]
PagesSpec = Annotated[
    str | None,
    Field(
        max_length=200,
        description="Pages to read: '1', '1-5', '1,3,5-7' or 'all' (1-based).",
    ),
]
SectionNames = Annotated[
    str | None,
    Field(
        max_length=500,
        description=(
            "Section title(s) from the outline, comma-separated, e.g. 'Introduction,Methods'."
        ),
    ),
]
Color = Annotated[
    str | None,
    Field(
        min_length=1,
        max_length=20,
        description=(
            f"A semantic colour name ({_COLOR_LIST}) or a hex colour '#rrggbb'; default "
            "yellow #ffd400. Suggested use: section1-3 for headings by level, positive for "
            "agreement or key findings, negative for doubts, detail for minor points, code for "
            "code, data and figures."
        ),
    ),
]
Comment = Annotated[
    str,
    Field(max_length=10_000, description="Optional note stored and shown with the annotation."),
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


def register(registry: Registry) -> None:
    @registry.tool(
        name="get_pdf_outline",
        title="Get a paper's PDF outline",
        description=(
            "Return the table of contents (bookmarks) of a paper's PDF in the library as nested "
            "items (title, 1-based page, level, children) plus total_pages, so you can pick "
            "sections and estimate their length before reading. Cheap: no text is returned. A "
            "PDF without bookmarks gives has_outline false, empty items and a hint to read it "
            "by pages. Call this first, then read_pdf_pages with section or pages. A paper "
            "without a PDF gives a 'pdf_not_available' error."
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

    @registry.tool(
        name="read_pdf_pages",
        title="Read pages of a paper's PDF",
        description=(
            "Return the text of a paper's PDF in the library, by pages ('1', '1-5', "
            "'1,3,5-7' or 'all'; 1-based) or by section title from the outline "
            "('Introduction' or 'Introduction,Methods'; case and numbering ignored). Give "
            "pages or section, not both. Each page starts with '--- Page N of M ---' and each "
            "section with '=== Section: <title> (pages a-b) ==='. Text can be large (a whole "
            "paper is 30,000-100,000 characters): read a few pages or sections at a time, or "
            "pass max_chars; cut text ends with a [TRUNCATED: ...] marker. A page past the end "
            "is an error giving the page count; an unknown section is an error listing the "
            "sections; a PDF without outline cannot be read by section. Call get_pdf_outline "
            "first to see sections and total_pages. Quote text from here in create_highlight."
        ),
        annotations=READ_ONLY,
    )
    def read_pdf_pages(
        paper_id: PaperRef,
        pages: PagesSpec = None,
        section: SectionNames = None,
        max_chars: Annotated[
            int | None,
            Field(
                ge=1,
                le=MAX_CHARS_LIMIT,
                description=(
                    "Return at most this many characters; longer text is cut and ends with "
                    "a [TRUNCATED: ...] marker. Omit for all of it."
                ),
            ),
        ] = None,
    ) -> Annotated[CallToolResult, PdfPages]:
        paper = paper_get(ref=paper_id, scope=current_scope())
        reading = selectors.pdf_pages_read(paper=paper, pages=pages, section=section)
        text = reading.render()
        shown = truncate(
            text,
            max_chars,
            more=(
                "Read fewer pages or sections at a time, or call read_pdf_pages again with "
                f"max_chars={len(text)}."
            ),
        )
        structured = PdfPages(
            paper_id=paper.pk,
            total_pages=reading.total_pages,
            pages=reading.page_numbers,
            sections=[
                SectionRead(
                    requested=part.section.requested,
                    title=part.section.title,
                    first_page=part.section.first_page,
                    last_page=part.section.last_page,
                )
                for part in reading.parts
                if part.section is not None
            ],
            content=shown,
            total_chars=len(text),
            truncated=shown != text,
        )
        return CallToolResult(
            content=[TextContent(type="text", text=shown)],
            structured_content=structured.model_dump(),
        )

    @registry.tool(
        name="create_highlight",
        title="Highlight text in a paper's PDF",
        description=(
            "Highlight a passage on one page of a paper's PDF in the library and store it as "
            "an annotation (with an optional comment). Copy the text from read_pdf_pages for "
            "that page (a sentence or a phrase): line breaks, hyphenation, ligatures, quotes "
            "and case do not matter, but it must occur exactly once on the page (an ambiguous "
            "quote is an error asking for more of the sentence). Text not on the page is a "
            "'text_not_found' error that names the page it is on, if any. color is a semantic "
            f"name ({_COLOR_LIST}) or '#rrggbb'. Returns the annotation with one rect per line. "
            "The original PDF is never changed; an annotated copy is updated. Each call adds "
            "a new annotation."
        ),
        annotations=ANNOTATE,
    )
    def create_highlight(
        paper_id: PaperRef,
        page: Page,
        text: Annotated[
            str,
            Field(
                min_length=1,
                max_length=4_000,
                description="The passage to highlight, as read on that page (unique on it).",
            ),
        ],
        color: Color = None,
        comment: Comment = "",
    ) -> AnnotationRecord:
        paper = paper_get(ref=paper_id, scope=current_scope())
        return _record(
            services.annotation_highlight_create(
                paper=paper, page=page, text=text, color=color, comment=comment
            )
        )

    @registry.tool(
        name="create_area_annotation",
        title="Mark an area in a paper's PDF",
        description=(
            "Mark a rectangle on one page of a paper's PDF in the library (a figure, a table, "
            "an equation) and store it as an annotation with an optional comment; the text "
            "inside the area is stored with it. rect is [x1, y1, x2, y2] in PDF points (1/72 "
            "inch) with the origin at the BOTTOM-LEFT corner of the page, y growing upwards "
            "(Zotero's and the PDF's convention; a US-letter page is 612 x 792). Any two "
            "opposite corners will do; the rect must lie inside the page (the error gives the "
            f"page's box). color is a semantic name ({_COLOR_LIST}) or '#rrggbb'. Each call "
            "adds a new annotation; the original PDF is never changed."
        ),
        annotations=ANNOTATE,
    )
    def create_area_annotation(
        paper_id: PaperRef,
        page: Page,
        rect: Annotated[
            list[float],
            Field(
                min_length=4,
                max_length=4,
                description="[x1, y1, x2, y2] in PDF points, origin at the bottom-left.",
            ),
        ],
        color: Color = None,
        comment: Comment = "",
    ) -> AnnotationRecord:
        paper = paper_get(ref=paper_id, scope=current_scope())
        return _record(
            services.annotation_area_create(
                paper=paper, page=page, rect=rect, color=color, comment=comment
            )
        )

    @registry.tool(
        name="list_annotations",
        title="List a paper's annotations",
        description=(
            "Return the highlights and area annotations stored for a paper, in page order "
            "(optionally of one page): the highlighted text, colour, comment and rects of "
            "each. Cheap. Use it to see what was already marked before adding more, or to "
            "collect a paper's key passages. Pages of at most 100 with limit/offset."
        ),
        annotations=READ_ONLY,
    )
    def list_annotations(
        paper_id: PaperRef,
        page: Annotated[int | None, Field(ge=1, le=100_000, description="Only this page.")] = None,
        limit: Annotated[
            int, Field(ge=1, le=settings.MAX_PAGE_SIZE, description="At most this many, 1-100.")
        ] = settings.MAX_PAGE_SIZE,
        offset: Annotated[
            int, Field(ge=0, le=settings.MAX_OFFSET, description="Annotations to skip.")
        ] = 0,
    ) -> AnnotationList:
        paper = paper_get(ref=paper_id, scope=current_scope())
        queryset = selectors.annotation_list(paper=paper, page=page)
        return AnnotationList(
            paper_id=paper.pk,
            total=queryset.count(),
            annotations=[_record(a) for a in queryset[offset : offset + limit]],
        )

    @registry.tool(
        name="export_annotations",
        title="Export a paper's annotations",
        description=(
            "Return all annotations of a paper as one text: 'markdown' (quotes grouped by "
            "page with their comments, ready to paste into notes) or 'json' (every field, "
            "with Zotero-style positions). The annotated PDF itself is exported with "
            "`manage.py export_annotations --format pdf` or from the admin."
        ),
        annotations=READ_ONLY,
    )
    def export_annotations(
        paper_id: PaperRef,
        format: Annotated[
            Literal["markdown", "json"], Field(description="'markdown' or 'json'.")
        ] = "markdown",
        max_chars: Annotated[
            int | None,
            Field(ge=1, le=MAX_CHARS_LIMIT, description="Cut after this many characters."),
        ] = None,
    ) -> str:
        paper = paper_get(ref=paper_id, scope=current_scope())
        text = selectors.annotations_export_text(paper=paper, format=format)
        return truncate(text, max_chars)

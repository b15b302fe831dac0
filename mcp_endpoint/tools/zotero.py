"""Tool set `zotero`: the researcher's running Zotero desktop app (seed 003) — find an item
by citekey, read its PDF's outline and text, highlight text and mark areas in it.

Each tool validates its arguments and calls one selector or service of `papers.zotero`.
Zotero's failures arrive as domain errors and are mapped by `mcp_endpoint.registry`: bad
arguments and Zotero's 400s (a page out of range) are -32602; not found, Zotero not
running (`zotero_unreachable`), `zotero_timeout` and `zotero_error` are isError results.
The two annotation tools write to Zotero, so read-only mode hides them.
"""

from __future__ import annotations

from typing import Annotated, Any

from mcp_types import CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, Field

from mcp_endpoint.registry import Registry
from mcp_endpoint.tools.pdf import OutlineItem, Page, PagesSpec, SectionNames, SectionRead
from papers.pdf.spec import SEMANTIC_COLORS
from papers.zotero import selectors, services

MAX_CHARS_LIMIT = 1_000_000

# Zotero is outside the library (open world); reading it changes nothing.
ZOTERO_READ = ToolAnnotations(
    read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=True
)
# Each call adds one more annotation to the user's Zotero library.
ZOTERO_ANNOTATE = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=True
)

_COLOR_LIST = ", ".join(f"{name} {value}" for name, value in SEMANTIC_COLORS.items())
Key = Annotated[
    str,
    Field(
        pattern=r"^[A-Z0-9]{8}$",
        description=(
            "The 8-character Zotero key of the item or of its PDF attachment, e.g. 'ABCD2345', as "
            "zotero_lookup returns it (not the citekey)."
        ),
    ),
]
Color = Annotated[
    str,
    Field(
        min_length=1,
        max_length=20,
        description=(
            f"A semantic colour name ({_COLOR_LIST}) or a hex colour '#rrggbb'. Suggested use: "
            "section1-3 for headings by level, positive for agreement or key findings, negative "
            "for doubts, detail for minor points, code for code, data and figures."
        ),
    ),
]
Comment = Annotated[
    str | None,
    Field(max_length=10_000, description="Optional note shown with the annotation in Zotero."),
]


class Creator(BaseModel):
    name: str
    role: str = Field(description="Zotero's creator type: author, editor, ...")


class Attachment(BaseModel):
    key: str = Field(description="Attachment key; the PDF tools accept it as `key`.")
    title: str
    content_type: str


class ZoteroItem(BaseModel):
    key: str = Field(description="The item's Zotero key; the PDF tools accept it as `key`.")
    citekey: str
    item_type: str
    title: str
    creators: list[Creator]
    date: str
    has_pdf: bool
    pdf_attachment_keys: list[str]
    pdf_attachments: list[Attachment]
    note: str | None = Field(default=None, description="Set when the item has no PDF.")


class PdfOutline(BaseModel):
    key: str
    attachment_key: str
    total_pages: int
    has_outline: bool
    items: list[OutlineItem]
    hint: str | None = Field(default=None, description="What to do when there is no outline.")


class PdfPages(BaseModel):
    key: str
    attachment_key: str
    total_pages: int
    pages: list[int] = Field(description="The pages whose text is in content.")
    sections: list[SectionRead]
    missing_pages: list[int] = Field(description="Pages asked for that Zotero did not return.")
    content: str
    total_chars: int = Field(description="Length of the whole text before max_chars.")
    truncated: bool


class Highlight(BaseModel):
    annotation_key: str
    attachment_key: str | None
    page: int
    color: str
    color_name: str | None
    rects: list[list[float]] = Field(description="Highlighted line boxes, PDF points.")
    comment: str


class AreaAnnotation(BaseModel):
    annotation_key: str | None
    attachment_key: str
    page: int
    rect: list[float] = Field(description="[left, bottom, right, top] in PDF points.")
    position: dict[str, Any] = Field(description="The position sent to Zotero.")
    color: str
    color_name: str | None
    comment: str


def register(registry: Registry) -> None:
    @registry.tool(
        name="zotero_lookup",
        title="Find a Zotero item by citekey",
        description=(
            "Look up an item in the researcher's running Zotero app by its Better BibTeX citation "
            "key (e.g. 'smith2024deep'). Returns the item's Zotero key, title, creators, date and "
            "its PDF attachments (pdf_attachment_keys); has_pdf is false, with a note, when there "
            "is no PDF. Call this first: the other zotero_* tools take the item key (or an "
            "attachment key) it returns. Needs Zotero running with the mcp-zotero-api plugin; a "
            "'zotero_unreachable' error means it is not."
        ),
        annotations=ZOTERO_READ,
    )
    def zotero_lookup(
        citekey: Annotated[
            str,
            Field(
                min_length=1,
                max_length=200,
                description="Better BibTeX citation key, e.g. 'smith2024deep'.",
            ),
        ],
    ) -> ZoteroItem:
        return ZoteroItem.model_validate(selectors.zotero_item_lookup(citekey=citekey))

    @registry.tool(
        name="zotero_get_pdf_outline",
        title="Get a Zotero PDF's outline",
        description=(
            "Return the table of contents (bookmarks) of a Zotero item's PDF (key from "
            "zotero_lookup) as nested items (title, 1-based page, level, children) plus "
            "total_pages, so you can pick sections and estimate their length before reading. "
            "Cheap: no text is returned. A PDF without bookmarks gives has_outline false, empty "
            "items and a hint to read it by pages instead. Then call zotero_read_pdf_pages with "
            "section or pages."
        ),
        annotations=ZOTERO_READ,
    )
    def zotero_get_pdf_outline(key: Key) -> PdfOutline:
        return PdfOutline.model_validate(selectors.zotero_pdf_outline(key=key))

    @registry.tool(
        name="zotero_read_pdf_pages",
        title="Read pages of a Zotero PDF",
        description=(
            "Return the text of a Zotero item's PDF (key from zotero_lookup), by pages ('1', "
            "'1-5', '1,3,5-7' or 'all'; 1-based) or by section title from the outline "
            "('Introduction' or 'Introduction,Methods'; case and numbering ignored). Give pages "
            "or section, not both. Each page starts with '--- Page N of M ---' and each section "
            "with '=== Section: <title> (pages a-b) ==='. Text can be large (a whole paper "
            "is 30,000-100,000 characters): read a few pages or sections at a time, or pass "
            "max_chars; cut text ends with a [TRUNCATED: ...] marker. A page past the end is an "
            "error giving the page count; an unknown section is an error listing the sections; a "
            "PDF without outline cannot be read by section. Call zotero_get_pdf_outline first to "
            "see sections and total_pages."
        ),
        annotations=ZOTERO_READ,
    )
    def zotero_read_pdf_pages(
        key: Key,
        pages: PagesSpec = None,
        section: SectionNames = None,
        max_chars: Annotated[
            int | None,
            Field(
                ge=1,
                le=MAX_CHARS_LIMIT,
                description=(
                    "Return at most this many characters; longer text is cut and ends with "
                    "a [TRUNCATED: ...] marker. Omit for all the text Zotero returns."
                ),
            ),
        ] = None,
    ) -> Annotated[CallToolResult, PdfPages]:
        reading = selectors.zotero_pdf_read(
            key=key, pages=pages, section=section, max_chars=max_chars
        )
        structured = PdfPages(
            key=reading.key,
            attachment_key=reading.attachment_key,
            total_pages=reading.total_pages,
            pages=reading.pages,
            sections=[
                SectionRead(
                    requested=s.requested,
                    title=s.title,
                    first_page=s.first_page,
                    last_page=s.last_page,
                )
                for s in reading.sections
            ],
            missing_pages=reading.missing_pages,
            content=reading.content,
            total_chars=reading.total_chars,
            truncated=reading.truncated,
        )
        return CallToolResult(
            content=[TextContent(type="text", text=reading.content)],
            structured_content=structured.model_dump(),
        )

    @registry.tool(
        name="zotero_create_highlight",
        title="Highlight text in a Zotero PDF",
        description=(
            "Create a highlight annotation in the researcher's Zotero on one page of an item's "
            "PDF (key from zotero_lookup). text must be copied exactly from the page (as "
            "zotero_read_pdf_pages returns it) and occur once on it; otherwise the error says it "
            f"was not found. color is a semantic name ({_COLOR_LIST}) or '#rrggbb'. An optional "
            "comment is attached to the highlight. Writes to the user's Zotero library; each call "
            "adds a new highlight. A page past the end is an error giving the page range."
        ),
        annotations=ZOTERO_ANNOTATE,
    )
    def zotero_create_highlight(
        key: Key,
        page: Page,
        text: Annotated[
            str,
            Field(
                min_length=1,
                max_length=5_000,
                description="Exact text on that page to highlight (unique on the page).",
            ),
        ],
        color: Color,
        comment: Comment = None,
    ) -> Highlight:
        return Highlight.model_validate(
            services.zotero_highlight_create(
                key=key, page=page, text=text, color=color, comment=comment
            )
        )

    @registry.tool(
        name="zotero_create_area_annotation",
        title="Mark an area in a Zotero PDF",
        description=(
            "Create an image (area) annotation in the researcher's Zotero that selects a "
            "rectangle on one page of an item's PDF (key from zotero_lookup): a figure, a table, "
            "an equation. rect is [x1, y1, x2, y2] in PDF points (1/72 inch) with the origin at "
            "the BOTTOM-LEFT corner of the page, y growing upwards (Zotero's and the PDF's own "
            "convention; tools with a top-left origin need y' = page height - y). Any two "
            f"opposite corners will do. color is a semantic name ({_COLOR_LIST}) or '#rrggbb'; an "
            "optional comment is attached. Writes to the user's Zotero library; each call adds a "
            "new annotation. Returns the annotation's key and the position sent to Zotero "
            "(0-based pageIndex)."
        ),
        annotations=ZOTERO_ANNOTATE,
    )
    def zotero_create_area_annotation(
        key: Key,
        page: Page,
        rect: Annotated[
            list[float],
            Field(
                min_length=4,
                max_length=4,
                description="[x1, y1, x2, y2] in PDF points, origin at the bottom-left.",
            ),
        ],
        color: Color,
        comment: Comment = None,
    ) -> AreaAnnotation:
        return AreaAnnotation.model_validate(
            services.zotero_area_annotation_create(
                key=key, page=page, rect=rect, color=color, comment=comment
            )
        )

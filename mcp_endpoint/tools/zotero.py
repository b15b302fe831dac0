"""Tool set `zotero`: the researcher's running Zotero desktop app (docs/ZOTERO-TOOLS.md):
find an item by citekey, read its PDF's outline and text, highlight text and mark areas
in it.

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

from mcp_endpoint.registry import Registry, mcp_tool
from mcp_endpoint.tools.pdf import (
    DEFAULT_MAX_CHARS,
    ColorName,
    HexColor,
    OutlineItem,
    Page,
    PagesSpec,
    Rect,
    SectionNames,
    SectionRead,
)
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

Key = Annotated[
    str,
    Field(pattern=r"^[A-Z0-9]{8}$", description="From zotero_lookup."),
]
Color = Annotated[
    ColorName | HexColor,
    Field(description="A semantic name or #rrggbb."),
]
Comment = Annotated[str | None, Field(max_length=10_000)]


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


@mcp_tool(
    name="zotero_lookup",
    title="Zotero lookup",
    description=(
        "Find an item in the researcher's running Zotero by Better BibTeX citekey: its key "
        "(for the other zotero_* tools), title, creators, date and PDF attachments."
    ),
    annotations=ZOTERO_READ,
)
def zotero_lookup(
    citekey: Annotated[
        str,
        Field(min_length=1, max_length=200, description="e.g. 'smith2024deep'."),
    ],
) -> ZoteroItem:
    return ZoteroItem.model_validate(selectors.zotero_item_lookup(citekey=citekey))


@mcp_tool(
    name="zotero_get_pdf_outline",
    title="Zotero PDF outline",
    description="The table of contents of a Zotero item's PDF and total_pages.",
    annotations=ZOTERO_READ,
)
def zotero_get_pdf_outline(key: Key) -> PdfOutline:
    return PdfOutline.model_validate(selectors.zotero_pdf_outline(key=key))


@mcp_tool(
    name="zotero_read_pdf_pages",
    title="Read Zotero PDF pages",
    description="Text of a Zotero item's PDF by pages or by outline section (not both).",
    annotations=ZOTERO_READ,
)
def zotero_read_pdf_pages(
    key: Key,
    pages: PagesSpec = None,
    section: SectionNames = None,
    max_chars: Annotated[int | None, Field(ge=1, le=MAX_CHARS_LIMIT)] = None,
) -> CallToolResult:
    reading = selectors.zotero_pdf_read(
        key=key, pages=pages, section=section, max_chars=max_chars or DEFAULT_MAX_CHARS
    )
    text = reading.content
    if reading.missing_pages:
        text += f"\n[Pages not in Zotero's text: {reading.missing_pages}]"
    return CallToolResult(content=[TextContent(type="text", text=text)])


@mcp_tool(
    name="zotero_create_highlight",
    title="Highlight Zotero PDF text",
    description=(
        "Highlight text (quoted exactly, unique on the page) in a Zotero item's PDF. "
        "Writes to the user's Zotero."
    ),
    annotations=ZOTERO_ANNOTATE,
)
def zotero_create_highlight(
    key: Key,
    page: Page,
    text: Annotated[str, Field(min_length=1, max_length=5_000)],
    color: Color,
    comment: Comment = None,
) -> Highlight:
    return Highlight.model_validate(
        services.zotero_highlight_create(
            key=key, page=page, text=text, color=color, comment=comment
        )
    )


@mcp_tool(
    name="zotero_create_area_annotation",
    title="Mark a Zotero PDF area",
    description=(
        "Mark a rectangle (figure, table, equation) in a Zotero item's PDF. Writes to the "
        "user's Zotero."
    ),
    annotations=ZOTERO_ANNOTATE,
)
def zotero_create_area_annotation(
    key: Key,
    page: Page,
    rect: Rect,
    color: Color,
    comment: Comment = None,
) -> AreaAnnotation:
    return AreaAnnotation.model_validate(
        services.zotero_area_annotation_create(
            key=key, page=page, rect=rect, color=color, comment=comment
        )
    )


def register(registry: Registry) -> None:
    registry.add_tools(
        zotero_lookup,
        zotero_get_pdf_outline,
        zotero_read_pdf_pages,
        zotero_create_highlight,
        zotero_create_area_annotation,
    )

"""Writes to a running Zotero for the `zotero_*` tools (docs/ZOTERO-TOOLS.md): text
highlights and area (image) annotations on an item's PDF. Nothing here touches the
library's database.

Colours are the tools' semantic names or #rrggbb, resolved by papers.pdf.spec like the
library's own annotations. Coordinates are Zotero's: PDF points, origin at the bottom-left
of the page (docs/ZOTERO-TOOLS.md), pages 1-based for callers and 0-based `pageIndex` on the wire.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from core.errors import InvalidInput
from papers.pdf.spec import SEMANTIC_COLORS, color_resolve
from papers.zotero.client import ZoteroClient


def zotero_highlight_create(
    *, key: str, page: int, text: str, color: str, comment: str | None = None
) -> dict[str, Any]:
    """Highlight `text` on 1-based `page` of the item's PDF in Zotero.

    Side effect: a highlight annotation in the user's Zotero library. Raises InvalidInput
    for an unknown colour or a page out of range (Zotero's range in the message), NotFound
    when the text is not found on the page (it must be exact and unique) or the item has
    no PDF, and the client's errors when Zotero cannot be asked.
    """
    hex_color = color_resolve(color)
    if not text.strip():
        raise InvalidInput("text is empty: give the exact text to highlight.", field="text")
    annotation = ZoteroClient.from_settings().highlight_create(
        key=key, text=text, page=page, color=hex_color, comment=(comment or "").strip() or None
    )
    return {
        "annotation_key": annotation["key"],
        "attachment_key": annotation.get("parentItemKey"),
        "page": annotation.get("page", page),
        "color": annotation.get("color", hex_color),
        "color_name": _color_name(hex_color),
        "rects": annotation.get("rects", []),
        "comment": (comment or "").strip(),
    }


def zotero_area_annotation_create(
    *, key: str, page: int, rect: Sequence[float], color: str, comment: str | None = None
) -> dict[str, Any]:
    """Mark a rectangular area (a figure, a table, an equation) on 1-based `page` of the
    item's PDF as a Zotero image annotation.

    `rect` is [x1, y1, x2, y2] in PDF points with the origin at the bottom-left of the
    page; any two opposite corners will do. Asks Zotero for the PDF first (its attachment
    key and page count) so a page out of range is refused before anything is written.
    Side effect: an image annotation in the user's Zotero library. Raises InvalidInput for
    a bad rectangle, colour or page, NotFound when the item has no PDF, and the client's
    errors when Zotero cannot be asked.
    """
    x1, y1, x2, y2 = rect_normalize(rect)
    hex_color = color_resolve(color)
    client = ZoteroClient.from_settings()
    outline = client.pdf_outline(key)
    if page > outline.page_count:
        total = outline.page_count
        raise InvalidInput(
            f"Page {page} is out of range: the PDF has {total} page(s) (1-{total}).",
            field="page",
            total_pages=total,
        )
    position = {"pageIndex": page - 1, "rects": [[x1, y1, x2, y2]]}
    body: dict[str, Any] = {
        "parentItemKey": outline.attachment_key,
        "annotationType": "image",
        "position": position,
        "color": hex_color,
    }
    if comment and comment.strip():
        body["comment"] = comment.strip()
    annotation = client.annotation_create(body)
    return {
        "annotation_key": annotation.get("key"),
        "attachment_key": outline.attachment_key,
        "page": page,
        "rect": [x1, y1, x2, y2],
        "position": position,
        "color": hex_color,
        "color_name": _color_name(hex_color),
        "comment": body.get("comment", ""),
    }


def rect_normalize(rect: Sequence[float]) -> tuple[float, float, float, float]:
    """[x1, y1, x2, y2] (any two opposite corners) -> (left, bottom, right, top).

    Raises InvalidInput unless it is four finite numbers spanning a non-empty area.
    """
    values = list(rect)
    if len(values) != 4 or not all(
        isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in values
    ):
        raise InvalidInput(
            "rect must be four numbers [x1, y1, x2, y2] in PDF points.", field="rect"
        )
    left, right = sorted((float(values[0]), float(values[2])))
    bottom, top = sorted((float(values[1]), float(values[3])))
    if left == right or bottom == top:
        raise InvalidInput("rect has no area: x1 must differ from x2 and y1 from y2.", field="rect")
    return left, bottom, right, top


def _color_name(hex_color: str) -> str | None:
    return next((name for name, value in SEMANTIC_COLORS.items() if value == hex_color), None)

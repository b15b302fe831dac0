"""Writing annotations to Zotero (papers.zotero.services) against the fake Zotero: the
bodies sent, the colour map, the area annotation's position, and the errors."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.errors import InvalidInput, NotFound
from papers.zotero.services import (
    rect_normalize,
    zotero_area_annotation_create,
    zotero_highlight_create,
)
from tests.zotero_fake import FakeZotero, default_items

SEED_COLORS = {
    "section1": "#2ea8e5",
    "section2": "#a28ae5",
    "section3": "#e56eee",
    "positive": "#5fb236",
    "detail": "#aaaaaa",
    "negative": "#ff6666",
    "code": "#f19837",
}


@pytest.fixture
def fake(tmp_path: Path, settings: Any) -> Iterator[FakeZotero]:
    with FakeZotero(default_items(tmp_path)) as server:
        settings.ZOTERO_URL = server.url
        settings.ZOTERO_TIMEOUT = 5
        yield server


# --- highlights -----------------------------------------------------------------------


@pytest.mark.parametrize(("name", "hex_color"), SEED_COLORS.items())
def test_each_semantic_colour_is_sent_as_its_hex_code(
    fake: FakeZotero, name: str, hex_color: str
) -> None:
    result = zotero_highlight_create(key="MURRAY12", page=1, text="Bethe Lattice", color=name)
    [sent] = fake.posted("highlight")
    assert sent["color"] == hex_color
    assert (result["color"], result["color_name"]) == (hex_color, name)


def test_hex_colour_is_sent_normalised(fake: FakeZotero) -> None:
    zotero_highlight_create(key="MURRAY12", page=1, text="Bethe Lattice", color="#ABCDEF")
    assert fake.posted("highlight")[0]["color"] == "#abcdef"


def test_unknown_colour_is_refused_before_calling_zotero(fake: FakeZotero) -> None:
    with pytest.raises(InvalidInput, match="neither a semantic name nor #rrggbb"):
        zotero_highlight_create(key="MURRAY12", page=1, text="Bethe", color="chartreuse")
    assert fake.requests == []


def test_highlight_with_comment(fake: FakeZotero) -> None:
    result = zotero_highlight_create(
        key="MURRAY12", page=1, text="Bethe Lattice", color="positive", comment=" central "
    )
    assert fake.posted("highlight") == [
        {
            "key": "MURRAY12",
            "text": "Bethe Lattice",
            "page": 1,
            "color": "#5fb236",
            "comment": "central",
        }
    ]
    assert result["annotation_key"] == fake.annotations[0]["key"]
    assert result["attachment_key"] == "MURRAYPF"
    assert result["comment"] == "central"
    # Zotero's coordinates: y grows upwards, so the title line is near the top (792 pt).
    [[x1, y1, x2, y2], *_] = result["rects"]
    assert x1 < x2 and 700 < y1 < y2 <= 792


def test_highlight_without_comment_sends_none(fake: FakeZotero) -> None:
    zotero_highlight_create(key="MURRAY12", page=1, text="Bethe Lattice", color="detail")
    assert "comment" not in fake.posted("highlight")[0]


def test_text_not_on_the_page_is_not_found(fake: FakeZotero) -> None:
    with pytest.raises(NotFound) as raised:
        zotero_highlight_create(key="MURRAY12", page=2, text="Nodes on a Bethe", color="code")
    assert raised.value.message == "Zotero: Text not found on page 2 (use exact, unique text)"


def test_highlight_page_out_of_range_gives_zoteros_range(fake: FakeZotero) -> None:
    with pytest.raises(InvalidInput) as raised:
        zotero_highlight_create(key="SHEN2023", page=5, text="Writing", color="code")
    assert raised.value.message == "Zotero: page out of range (range: 1..4)"


# --- area annotations -------------------------------------------------------------------


def test_area_annotation_body_as_sent(fake: FakeZotero) -> None:
    result = zotero_area_annotation_create(
        key="SHEN2023", page=2, rect=[72, 400.5, 540, 700], color="code", comment="Figure 1"
    )
    assert fake.posted("pdfoutline") == [{"key": "SHEN2023"}]
    assert fake.posted("annotations") == [
        {
            "parentItemKey": "SHENPDF2",
            "annotationType": "image",
            "position": {"pageIndex": 1, "rects": [[72.0, 400.5, 540.0, 700.0]]},
            "color": "#f19837",
            "comment": "Figure 1",
        }
    ]
    assert result["annotation_key"] == fake.annotations[0]["key"]
    assert result["position"] == {"pageIndex": 1, "rects": [[72.0, 400.5, 540.0, 700.0]]}
    assert (result["color"], result["color_name"]) == ("#f19837", "code")


def test_area_annotation_on_the_first_page_is_page_index_zero(fake: FakeZotero) -> None:
    zotero_area_annotation_create(key="SHENPDF2", page=1, rect=[0, 0, 10, 10], color="#123456")
    [sent] = fake.posted("annotations")
    assert sent["position"]["pageIndex"] == 0
    assert sent["color"] == "#123456"
    assert "comment" not in sent


def test_area_annotation_page_out_of_range_writes_nothing(fake: FakeZotero) -> None:
    with pytest.raises(InvalidInput) as raised:
        zotero_area_annotation_create(key="SHEN2023", page=5, rect=[0, 0, 10, 10], color="code")
    assert "Page 5 is out of range: the PDF has 4 page(s) (1-4)" in raised.value.message
    assert fake.posted("annotations") == []


def test_area_annotation_on_item_without_pdf_is_not_found(fake: FakeZotero) -> None:
    with pytest.raises(NotFound, match="No PDF attachment"):
        zotero_area_annotation_create(key="NOPDF234", page=1, rect=[0, 0, 1, 1], color="code")


def test_rect_corners_in_any_order_are_normalised() -> None:
    assert rect_normalize([540, 700, 72, 400]) == (72.0, 400.0, 540.0, 700.0)


@pytest.mark.parametrize("rect", [[0, 0, 0, 10], [1, 5, 9, 5], [1, 2, 3], [0, 0, float("nan"), 1]])
def test_rect_without_area_or_numbers_is_refused(rect: list[float]) -> None:
    with pytest.raises(InvalidInput):
        rect_normalize(rect)

"""Reading from Zotero (papers.zotero.selectors) against the fake Zotero: lookup, outlines,
pages by spec and by section, truncation, and the errors for each."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from core.errors import InvalidInput, NotFound
from papers.pdf.spec import OutlineEntry
from papers.zotero.selectors import (
    NO_OUTLINE_HINT,
    outline_nest,
    page_spec_compact,
    zotero_item_lookup,
    zotero_pdf_outline,
    zotero_pdf_read,
)
from tests.zotero_fake import FakeZotero, default_items


@pytest.fixture
def fake(tmp_path: Path, settings: Any) -> Iterator[FakeZotero]:
    with FakeZotero(default_items(tmp_path)) as server:
        settings.ZOTERO_URL = server.url
        settings.ZOTERO_TIMEOUT = 5
        yield server


# --- lookup -------------------------------------------------------------------------


def test_lookup_returns_key_title_creators_date_and_pdf_keys(fake: FakeZotero) -> None:
    item = zotero_item_lookup(citekey="murray2012quantum")
    assert item["key"] == "MURRAY12"
    assert item["title"].startswith("Quantum Criticality for Extended Nodes")
    assert item["creators"][:2] == [
        {"name": "James M. Murray", "role": "author"},
        {"name": "Adrian Del Maestro", "role": "author"},
    ]
    assert item["date"] == "2012-04-03"
    assert item["has_pdf"] is True
    assert item["pdf_attachment_keys"] == ["MURRAYPF"]
    assert "note" not in item


def test_lookup_of_item_without_pdf_says_so(fake: FakeZotero) -> None:
    item = zotero_item_lookup(citekey="smith2024deep")
    assert item["has_pdf"] is False
    assert item["pdf_attachment_keys"] == []
    assert "no PDF attachment" in item["note"]
    assert item["creators"] == [{"name": "The Deep Learning Collective", "role": "editor"}]


def test_lookup_of_unknown_citekey_is_not_found(fake: FakeZotero) -> None:
    with pytest.raises(NotFound, match="Item not found for citekey"):
        zotero_item_lookup(citekey="nobody1999nothing")


# --- outline ------------------------------------------------------------------------


def test_outline_is_nested_from_zoteros_levels(fake: FakeZotero) -> None:
    outline = zotero_pdf_outline(key="MURRAY12")
    assert (outline["has_outline"], outline["total_pages"]) == (True, 8)
    assert outline["attachment_key"] == "MURRAYPF"
    [root] = outline["items"]
    assert root["level"] == 1 and root["page"] == 1
    sections = [child["title"] for child in root["children"]]
    assert sections[:4] == [
        "Abstract",
        "I Introduction",
        "II Self-consistent action in the large z limit",
        "III Critical point in N  limit",
    ]
    second = root["children"][2]
    assert [(c["title"], c["page"], c["level"]) for c in second["children"]] == [
        ("A Ordered Phase", 4, 3),
        ("B Disordered phase", 4, 3),
    ]
    assert "hint" not in outline


def test_pdf_without_outline_says_to_use_pages(fake: FakeZotero) -> None:
    outline = zotero_pdf_outline(key="PAPERMAG")
    assert outline["has_outline"] is False
    assert outline["items"] == []
    assert outline["total_pages"] == 13
    assert outline["hint"] == NO_OUTLINE_HINT
    assert "pages=" in outline["hint"]


def test_outline_of_item_without_pdf_is_not_found(fake: FakeZotero) -> None:
    with pytest.raises(NotFound, match="No PDF attachment for key"):
        zotero_pdf_outline(key="NOPDF234")


def test_outline_nest_puts_a_level_jump_one_step_down() -> None:
    entries = [
        OutlineEntry(1, "Intro", 1),
        OutlineEntry(3, "Deep", 2),
        OutlineEntry(2, "Middle", 3),
        OutlineEntry(1, "End", 4),
    ]
    tree = outline_nest(entries)
    assert [node["title"] for node in tree] == ["Intro", "End"]
    assert [node["title"] for node in tree[0]["children"]] == ["Deep", "Middle"]


# --- pages ----------------------------------------------------------------------------


def test_read_single_page(fake: FakeZotero) -> None:
    reading = zotero_pdf_read(key="MURRAY12", pages="1", max_chars=None)
    assert reading.pages == [1]
    assert reading.content.startswith("--- Page 1 of 8 ---\nQuantum Criticality")
    assert "--- Page 2" not in reading.content
    assert not reading.truncated


def test_read_range_delimits_each_page(fake: FakeZotero) -> None:
    reading = zotero_pdf_read(key="SHEN2023", pages="1-3", max_chars=None)
    assert reading.pages == [1, 2, 3]
    for page in (1, 2, 3):
        assert f"--- Page {page} of 4 ---\n" in reading.content
    assert reading.content.index("Page 1 of 4") < reading.content.index("Page 3 of 4")


def test_read_all_pages(fake: FakeZotero) -> None:
    reading = zotero_pdf_read(key="SHEN2023", pages="all", max_chars=None)
    assert reading.pages == [1, 2, 3, 4]
    # The outline is asked first (page count), then the text of the parsed pages.
    assert fake.posted("readpdf") == [{"key": "SHENPDF2", "pages": "1-4"}]


def test_page_list_is_sent_compact(fake: FakeZotero) -> None:
    zotero_pdf_read(key="MURRAY12", pages="5-7, 1,3 ,6", max_chars=None)
    assert fake.posted("readpdf") == [{"key": "MURRAYPF", "pages": "1,3,5-7"}]


def test_page_past_the_end_is_refused_with_the_page_count(fake: FakeZotero) -> None:
    with pytest.raises(InvalidInput) as raised:
        zotero_pdf_read(key="SHEN2023", pages="3-9", max_chars=None)
    assert "Page 9 is out of range: the PDF has 4 page(s) (1-4)" in raised.value.message
    assert fake.posted("readpdf") == []


def test_malformed_page_spec_is_refused(fake: FakeZotero) -> None:
    with pytest.raises(InvalidInput, match="is not a page or a range"):
        zotero_pdf_read(key="SHEN2023", pages="first", max_chars=None)


@pytest.mark.parametrize(("pages", "section"), [(None, None), ("1", "Introduction"), (" ", "")])
def test_pages_or_section_exactly_one(
    fake: FakeZotero, pages: str | None, section: str | None
) -> None:
    with pytest.raises(InvalidInput, match="Give either pages"):
        zotero_pdf_read(key="SHEN2023", pages=pages, section=section, max_chars=None)
    assert fake.requests == []


def test_missing_pdf_file_is_reported(fake: FakeZotero) -> None:
    with pytest.raises(Exception, match="PDF file not found") as raised:
        zotero_pdf_read(key="GONEFILE", pages="1", max_chars=None)
    assert getattr(raised.value, "code", None) == "zotero_error"
    details = raised.value.as_dict()  # type: ignore[attr-defined]
    assert details["reason"] == "pdf_file_missing" and details["key"] == "GONEFILE"
    assert details["path"].endswith("deleted.pdf")
    assert f"Zotero item GONEFILE is missing on this machine: {details['path']}" in str(
        details["message"]
    )


def test_max_chars_cuts_with_a_marker(fake: FakeZotero) -> None:
    reading = zotero_pdf_read(key="MURRAY12", pages="1-2", max_chars=200)
    assert reading.truncated
    assert reading.total_chars > 200
    head, marker = reading.content.split("\n\n[TRUNCATED: ", 1)
    assert len(head) == 200
    assert f"showed the first 200 of {reading.total_chars} characters" in marker
    assert "Ask for fewer pages or sections per call" in marker


def test_pages_zotero_did_not_return_are_named(fake: FakeZotero) -> None:
    fake.text_cap = 3000  # Zotero's 300,000-character cap, scaled to the fixture
    reading = zotero_pdf_read(key="MURRAY12", pages="1-4", max_chars=None)
    assert reading.missing_pages
    assert reading.pages + reading.missing_pages == [1, 2, 3, 4]
    assert "[Zotero cut the text of this page short.]" in reading.content
    spec = page_spec_compact(reading.missing_pages)
    assert f"[Zotero returned no text for page(s) {spec}" in reading.content


def test_page_spec_compact() -> None:
    assert page_spec_compact([7, 1, 2, 3, 5, 8, 2]) == "1-3,5,7-8"
    assert page_spec_compact([4]) == "4"


# --- sections -------------------------------------------------------------------------


def test_read_one_section_by_name(fake: FakeZotero) -> None:
    reading = zotero_pdf_read(key="MURRAY12", section="introduction", max_chars=None)
    [section] = reading.sections
    assert (section.title, section.first_page, section.last_page) == ("I Introduction", 1, 2)
    assert reading.pages == [1, 2]
    assert reading.content.startswith(
        "=== Section: I Introduction (pages 1-2) ===\n\n--- Page 1 of 8 ---\n"
    )
    assert "--- Page 2 of 8 ---" in reading.content


def test_read_several_sections_each_with_its_header(fake: FakeZotero) -> None:
    reading = zotero_pdf_read(key="SHEN2023", section="Introduction,4 Conclusion", max_chars=None)
    assert [(s.title, s.first_page, s.last_page) for s in reading.sections] == [
        ("1 Introduction", 1, 2),
        ("4 Conclusion", 3, 3),
    ]
    assert fake.posted("readpdf") == [{"key": "SHENPDF2", "pages": "1-3"}]
    intro = reading.content.index("=== Section: 1 Introduction (pages 1-2) ===")
    conclusion = reading.content.index("=== Section: 4 Conclusion (page 3) ===")
    assert intro < conclusion
    assert "--- Page 3 of 4 ---" in reading.content[conclusion:]


def test_unknown_section_lists_the_available_ones(fake: FakeZotero) -> None:
    with pytest.raises(NotFound) as raised:
        zotero_pdf_read(key="SHEN2023", section="NonExistent", max_chars=None)
    assert "Section 'NonExistent' is not in the outline" in raised.value.message
    assert raised.value.details["available_sections"] == [
        "Abstract",
        "1 Introduction",
        "2 Characterizing Expository Writing",
        "3 Designing AI Supports for Expository Writing",
        "4 Conclusion",
        "References",
    ]
    assert fake.posted("readpdf") == []


def test_section_of_pdf_without_outline_says_to_use_pages(fake: FakeZotero) -> None:
    with pytest.raises(InvalidInput) as raised:
        zotero_pdf_read(key="PAPERMAG", section="Introduction", max_chars=None)
    assert "no outline" in raised.value.message
    assert "pages" in raised.value.message
    assert raised.value.details["has_outline"] is False

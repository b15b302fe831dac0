"""Highlights on the reading page of a two-column ACL paper (issue 36): made by keyboard
(find, then "Highlight match"), stored with the text that was selected (line-end hyphens
joined, nothing past the selection), and the highlight bar next to the selection at 768 px.
The stored highlights are read back over MCP, as an agent would."""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.builders import log_in
from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots
from tests.mcp.conftest import mcp_client, tool_data

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Page

PDF = Path(__file__).resolve().parent.parent / "fixtures" / "pdfs" / "N18-3011.pdf"
PAGE_WIDTH = 612  # US Letter, PDF points
# Twice on page 1: in the abstract (left column, 'litera-' + 'ture' across a line break)
# and in the introduction (right column, 'fa-' + 'miliar').
TWICE = "reduce literature graph construction into familiar NLP"

SPAN_BOX = """(start) => {
  const span = [...document.querySelectorAll('#page-1 .textLayer > span')]
    .find((s) => s.textContent.startsWith(start));
  const r = span.getBoundingClientRect();
  return [r.left, r.top, r.right, r.bottom];
}"""

CENTRE_SPAN = """(start) => [...document.querySelectorAll('#page-1 .textLayer > span')]
  .find((s) => s.textContent.startsWith(start)).scrollIntoView({ block: "center" })"""

CHAR_BOX = """([start, text]) => {
  const span = [...document.querySelectorAll('#page-1 .textLayer > span')]
    .find((s) => s.textContent.startsWith(start));
  const at = span.textContent.indexOf(text);
  const range = document.createRange();
  range.setStart(span.firstChild, at);
  range.setEnd(span.firstChild, at + 1);
  const r = range.getBoundingClientRect();
  return [r.left, r.top, r.right, r.bottom];
}"""

SELECTION_BOX = """() => {
  const r = window.getSelection().getRangeAt(0).getBoundingClientRect();
  return [r.left, r.top, r.right, r.bottom];
}"""


def annotations_over_mcp(site: CurationSite, paper_id: int) -> list[dict[str, Any]]:
    async def listed() -> Any:
        async with mcp_client(site.url("/mcp")) as client:
            return tool_data(await client.call_tool("list_annotations", {"paper_id": paper_id}))

    # Playwright's sync API runs an event loop in this thread: the SDK client gets its own.
    with ThreadPoolExecutor(1) as thread:
        return list(thread.submit(asyncio.run, listed()).result()["annotations"])


def open_reader(page: Page, site: CurationSite) -> int:
    """The reading page of the Transformer-XL record, with N18-3011 as its PDF."""
    paper_id = int(site.data["papers"]["xl"]["paper_id"])
    log_in(page, site)
    page.goto(site.url(f"/admin/papers/paper/{paper_id}/read/"))
    if page.locator(".pdf-missing").count():
        page.set_input_files("input[name=pdf]", str(PDF))
        page.click(".upload-pdf button[type=submit]")
    expect(page.locator("body[data-reader-ready=true]")).to_have_count(1)
    expect(page.locator("#page-1[data-rendered=true] .textLayer span").first).to_be_attached()
    return paper_id


def drag(page: Page, start: tuple[float, float], end: tuple[float, float]) -> str:
    page.mouse.move(*start)
    page.mouse.down()
    page.mouse.move(*end, steps=8)
    page.mouse.up()
    return str(page.evaluate("window.getSelection().toString()"))


def test_a_highlight_made_by_keyboard_from_find(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    site = curation_site
    paper_id = open_reader(page, site)
    find = page.get_by_label("Find", exact=True)  # labelled, so assistive technology names it
    find.focus()
    page.keyboard.type(TWICE)
    page.keyboard.press("Enter")
    expect(page.locator("#find-status")).to_have_text("Match 1 of 2, page 1.")
    page.keyboard.press("Enter")
    expect(page.locator("#find-status")).to_have_text("Match 2 of 2, page 1.")
    page.keyboard.press("Shift+Enter")
    expect(page.locator("#find-status")).to_have_text("Match 1 of 2, page 1.")
    expect(find).to_be_focused()
    shots.take("found")
    page.keyboard.press("Alt+Enter")
    expect(page.locator("#reader-status")).to_have_text(f"Highlight saved on page 1: “{TWICE}”.")
    # Then the second match, reached by Tab to the button as a keyboard user would.
    find.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#find-status")).to_have_text("Match 2 of 2, page 1.")
    button = page.get_by_role("button", name="Highlight match")
    button.focus()
    page.keyboard.press("Enter")
    expect(page.locator("#annotation-list li")).to_have_count(2)
    shots.take("highlighted")

    stored = [a for a in annotations_over_mcp(site, paper_id) if a["text"] == TWICE]
    assert len(stored) == 2  # both occurrences, each where it was found
    abstract, introduction = sorted(stored, key=lambda a: a["rects"][0][0])
    assert abstract["rects"][0][2] < PAGE_WIDTH / 2 < introduction["rects"][0][0]
    assert len(abstract["rects"]) == len(introduction["rects"]) == 2  # across a line break


def test_the_highlight_is_what_was_dragged_over_and_no_more(
    page: Page, curation_site: CurationSite
) -> None:
    site = curation_site
    paper_id = open_reader(page, site)
    page.evaluate(CENTRE_SPAN, "for organizing published")
    # From the character, not a fixed offset into the line: the zoom decides where it is.
    first = page.evaluate(CHAR_BOX, ["for organizing published", "ng published"])
    second = page.evaluate(SPAN_BOX, "ture into a heterogeneous")
    # From inside 'organizing' to the gap between the columns, past the next line's end:
    # Chromium used to carry such a selection on into the following lines.
    selected = drag(
        page,
        (first[0] + 1, (first[1] + first[3]) / 2),
        (second[2] + 6, (second[1] + second[3]) / 2),
    )
    assert selected.startswith("ng published scientific litera-\nture into")
    assert "algorithmic" not in selected  # the line after the pointer
    expect(page.locator("#highlight-bar")).to_be_visible()
    page.click("#highlight-button")
    expect(page.locator("#reader-status")).to_contain_text("Highlight saved on page 1")
    expected = " ".join(selected.replace("-\n", "").split())
    stored = [a for a in annotations_over_mcp(site, paper_id) if a["text"] == expected]
    assert len(stored) == 1, expected  # 'literature', cut where the selection was cut
    assert len(stored[0]["rects"]) == 2


def test_the_highlight_bar_opens_next_to_the_selection_at_768_pixels(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    page.set_viewport_size({"width": 768, "height": 1000})
    open_reader(page, curation_site)
    for start, end in (("The goal of this work", "discovery in the scientific"),
                       ("a directed property graph", "information in the literature")):  # fmt: skip
        page.evaluate(CENTRE_SPAN, start)  # the lines in view, mid-window
        first, last = page.evaluate(SPAN_BOX, start), page.evaluate(SPAN_BOX, end)
        start_at = (first[0] + 30, (first[1] + first[3]) / 2)
        assert drag(page, start_at, (last[0] + 80, (last[1] + last[3]) / 2))
        bar = page.locator("#highlight-bar")
        expect(bar).to_be_visible()
        left, top, right, bottom = page.evaluate(SELECTION_BOX)
        placed = bar.bounding_box()
        assert placed is not None
        # Just below the selection's last line (or just above its first), overlapping it across.
        below = 0 <= placed["y"] - bottom <= 24
        above = 0 <= top - (placed["y"] + placed["height"]) <= 24
        assert below or above, (placed, (left, top, right, bottom))
        assert placed["x"] < right and placed["x"] + placed["width"] > left
        assert placed["x"] >= 0 and placed["x"] + placed["width"] <= 768
        shots.take(f"bar-{start[:12]}")
        page.mouse.click(2, 2)

"""Reading a paper in the browser (issue 21): a PDF uploaded on the paper's reading page is
drawn by pdf.js; text selected on a page becomes a highlight, which list_annotations over
MCP then returns; after a reload the stored highlight is drawn in its colour and the
annotation list jumps to it. The page fits a 768 px window."""

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

PDF = Path(__file__).resolve().parent.parent / "fixtures" / "pdfs" / "2304.02623v1.pdf"
# On page 1 across a line break: "...exciting new opportunities / and challenges in designing".
SELECTED_START, SELECTED_END = "exciting new opportunities", "and challenges in designing"

SELECT_ACROSS_LINES = """([start, end]) => {
  const spans = [...document.querySelectorAll('#page-1 .textLayer span')];
  const first = spans.find((s) => s.textContent.includes(start));
  const last = spans.find((s) => s.textContent.includes(end));
  if (!first || !last) return false;
  const range = document.createRange();
  range.setStart(first.firstChild, first.textContent.indexOf(start));
  range.setEnd(last.firstChild, last.textContent.indexOf(end) + end.length);
  const selection = window.getSelection();
  selection.removeAllRanges();
  selection.addRange(range);
  document.dispatchEvent(new Event('selectionchange'));
  return selection.toString();
}"""


async def annotations_over_mcp(url: str, paper_id: int) -> Any:
    async with mcp_client(url) as client:
        return tool_data(await client.call_tool("list_annotations", {"paper_id": paper_id}))


def test_a_researcher_reads_and_highlights_a_pdf_on_the_paper_page(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    site = curation_site
    paper_id = site.data["papers"]["lstm"]["paper_id"]
    log_in(page, site)
    page.goto(site.url(f"/admin/papers/paper/{paper_id}/read/"))
    expect(page.locator(".pdf-missing")).to_be_visible()
    page.set_input_files("input[name=pdf]", str(PDF))
    page.click(".upload-pdf button[type=submit]")
    expect(page).to_have_url(site.url(f"/admin/papers/paper/{paper_id}/read/"))
    expect(page.locator("body[data-reader-ready=true]")).to_have_count(1)
    expect(page.locator("#page-1[data-rendered=true] .textLayer span").first).to_be_attached()
    expect(page.locator("#reader-status")).to_have_text("4 pages.")
    shots.take("pdf-in-the-page")

    selected = page.evaluate(SELECT_ACROSS_LINES, [SELECTED_START, SELECTED_END])
    assert selected and SELECTED_START in selected
    expect(page.locator("#highlight-bar")).to_be_visible()
    page.select_option("#highlight-colour", "#5fb236")
    page.fill("#highlight-comment", "The paper's motivation")
    page.click("#highlight-button")
    expect(page.locator("#reader-status")).to_have_text(
        f"Highlight saved on page 1: “{SELECTED_START} {SELECTED_END}”."
    )  # the text selected, no more
    expect(page.locator("#annotation-list li")).to_have_count(1)
    shots.take("highlighted")

    # Playwright's sync API runs an event loop in this thread: the SDK client gets its own.
    with ThreadPoolExecutor(1) as thread:
        listed = thread.submit(asyncio.run, annotations_over_mcp(site.url("/mcp"), paper_id))
        listed = listed.result()
    (annotation,) = listed["annotations"]
    assert annotation["page"] == 1 and annotation["color"] == "#5fb236"
    assert annotation["comment"] == "The paper's motivation" and len(annotation["rects"]) == 2
    assert "opportunities" in annotation["text"] and "challenges" in annotation["text"]

    page.reload()
    expect(page.locator("body[data-reader-ready=true]")).to_have_count(1)
    marks = page.locator(f'#page-1 .mark[data-annotation="{annotation["annotation_id"]}"]')
    expect(marks).to_have_count(2)
    colour = marks.first.evaluate("(m) => getComputedStyle(m).backgroundColor")
    assert colour == "rgb(95, 178, 54)"
    page.click("#annotation-list a")
    expect(marks.first).to_have_class("mark mark-highlight flash")
    expect(marks.first).to_be_in_viewport()
    shots.take("jumped-to-annotation")


def test_the_reading_page_fits_a_768_pixel_window(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    site = curation_site
    log_in(page, site)
    page.set_viewport_size({"width": 768, "height": 1000})
    page.goto(site.url(f"/admin/papers/paper/{site.data['papers']['attention']['paper_id']}/read/"))
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    shots.take("768px")
    assert overflow <= 0

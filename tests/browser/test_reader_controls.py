"""The reading page's controls (issue 36): pages drawn lazily (page 1 before any other),
the page number following the scroll with a box to jump to a page, zoom that keeps the
stored highlights over their text, full width at 1366 px, and the PDF's outline when it
has one (tests/fixtures/pdfs/SOURCE.txt: 1111.2011v2 has 11 entries, papermage none)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser.builders import log_in
from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Page

PDFS = Path(__file__).resolve().parent.parent / "fixtures" / "pdfs"
NO_OUTLINE = ("resnet", PDFS / "papermage.pdf")  # 13 pages
WITH_OUTLINE = ("universal", PDFS / "1111.2011v2.pdf")  # 8 pages, "V Discussion" on page 8
TITLE_WORDS = "Bethe Lattice in the Large"  # page 1 of 1111.2011v2, its title

# What the page held at the moment the first page was drawn (before the reader went on).
RECORD_FIRST_DRAW = """
window.firstDraw = null;
new MutationObserver((records, watcher) => {
  const drawn = [...document.querySelectorAll('.page-frame[data-rendered=true]')];
  if (!drawn.length) return;
  const frames = [...document.querySelectorAll('.page-frame')];
  window.firstDraw = {
    drawn: drawn.map((frame) => frame.dataset.page),
    canvases: document.querySelectorAll('.page-frame canvas').length,
    frames: frames.length,
    heights: [...new Set(frames.map((frame) => frame.style.height))],
  };
  watcher.disconnect();
}).observe(document, { subtree: true, attributes: true, attributeFilter: ['data-rendered'] });
"""

# The stored highlight's boxes and the line boxes of the same words found again.
MARKS_AND_LINES = """() => {
  const box = (r) => [r.left, r.top, r.right, r.bottom];
  const marks = [...document.querySelectorAll('#page-1 .mark-highlight')]
    .map((m) => box(m.getBoundingClientRect()));
  const lines = [...window.getSelection().getRangeAt(0).getClientRects()]
    .filter((r) => r.width > 0 && r.height > 0).map(box);
  return [marks, lines];
}"""


def open_reader(
    page: Page, site: CurationSite, paper: tuple[str, Path], *, logged_in: bool = False
) -> None:
    name, pdf = paper
    if not logged_in:
        log_in(page, site)
    page.goto(site.url(f"/admin/papers/paper/{site.data['papers'][name]['paper_id']}/read/"))
    if page.locator(".pdf-missing").count():
        page.set_input_files("input[name=pdf]", str(pdf))
        page.click(".upload-pdf button[type=submit]")
    expect(page.locator("body[data-reader-ready=true]")).to_have_count(1)
    expect(page.locator("#page-1[data-rendered=true] .textLayer span").first).to_be_attached()


def assert_marks_over_text(page: Page) -> None:
    """Each mark of the highlight on a line of the words found, and as wide, together."""
    marks, lines = page.evaluate(MARKS_AND_LINES)
    assert marks and lines
    for left, top, right, bottom in marks:
        middle = (top + bottom) / 2
        assert any(
            line[1] <= middle <= line[3] and left < line[2] and right > line[0] for line in lines
        ), (marks, lines)
    marked, found = sum(m[2] - m[0] for m in marks), sum(n[2] - n[0] for n in lines)
    assert abs(marked - found) <= 0.1 * found, (marks, lines)


def test_page_one_is_drawn_before_any_other_page(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    page.add_init_script(RECORD_FIRST_DRAW)
    open_reader(page, curation_site, NO_OUTLINE)
    page.reload()  # the upload's redirect, or this, opens the page with the PDF
    expect(page.locator("body[data-reader-ready=true]")).to_have_count(1)
    first = page.evaluate("window.firstDraw")
    # Drawn alone: the 12 others are placeholders the size of page 1, so the scroll is right.
    assert first == {"drawn": ["1"], "canvases": 1, "frames": 13, "heights": [first["heights"][0]]}
    expect(page.locator("#page-13 canvas")).to_have_count(0)  # far from the view: not drawn
    page.locator("#page-13").scroll_into_view_if_needed()
    expect(page.locator("#page-13[data-rendered=true] .textLayer span").first).to_be_attached()
    assert page.locator(".page-frame[data-rendered=true]").count() < 13  # the middle skipped
    shots.take("last-page")


def test_the_page_number_follows_the_scroll_and_jumps(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    open_reader(page, curation_site, NO_OUTLINE)
    number = page.get_by_label("Page number, 1 to 13")
    expect(page.locator("#page-total")).to_have_text("/ 13")
    expect(number).to_have_value("1")
    page.evaluate("document.getElementById('page-5').scrollIntoView({ block: 'start' })")
    expect(number).to_have_value("5")
    shots.take("page-5")

    number.focus()
    number.fill("9")
    page.keyboard.press("Enter")
    expect(page.locator("#page-9[data-rendered=true]")).to_be_in_viewport()
    expect(number).to_have_value("9")
    expect(page.locator("#page-status")).to_have_text("")
    for typed in ("99", "0", "abc"):
        number.fill(typed)
        page.keyboard.press("Enter")
        expect(page.locator("#page-status")).to_have_text(
            f"“{typed}” is not a page of this PDF: type a number from 1 to 13."
        )
    expect(page.locator("#page-9")).to_be_in_viewport()  # left where it was
    shots.take("out-of-range")


def test_zoom_redraws_the_pages_and_the_highlight_stays_on_its_words(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    open_reader(page, curation_site, WITH_OUTLINE)
    find = page.get_by_label("Find", exact=True)
    find.fill(TITLE_WORDS)
    find.press("Enter")
    expect(page.locator("#find-status")).to_have_text("Match 1 of 1, page 1.")
    find.press("Alt+Enter")
    expect(page.locator("#reader-status")).to_contain_text("Highlight saved on page 1")
    page.reload()  # the highlight as stored, drawn from its PDF coordinates
    expect(page.locator("body[data-reader-ready=true]")).to_have_count(1)
    find.fill(TITLE_WORDS)
    canvas = page.locator("#page-1 canvas")
    widths = [canvas.evaluate("(c) => c.getBoundingClientRect().width")]
    level = page.locator("#zoom-level")
    fitted = level.text_content()

    for button, grows in (("Zoom in", True), ("Zoom in", True), ("Zoom out", False)):
        page.get_by_role("button", name=button).focus()  # by keyboard
        page.keyboard.press("Enter")
        expect(level).not_to_have_text(fitted or "")
        expect(page.locator("#page-1[data-rendered=true] .textLayer span").first).to_be_attached()
        widths.append(canvas.evaluate("(c) => c.getBoundingClientRect().width"))
        assert (widths[-1] > widths[-2] * 1.2) if grows else (widths[-1] < widths[-2] / 1.2)
        assert canvas.evaluate("(c) => c.width") >= int(widths[-1])  # drawn at that size
        page.evaluate("document.getElementById('page-1').scrollIntoView({ block: 'start' })")
        find.press("Enter")  # the same words, found again in the redrawn text
        expect(page.locator("#find-status")).to_have_text("Match 1 of 1, page 1.")
        assert_marks_over_text(page)
        shots.take(f"zoom-{len(widths)}")
    expect(page.get_by_role("button", name="Fit width")).to_have_attribute("aria-pressed", "false")
    page.get_by_role("button", name="Fit width").click()
    expect(level).to_have_text(fitted or "")
    expect(page.locator("#page-1[data-rendered=true] .textLayer span").first).to_be_attached()
    assert abs(canvas.evaluate("(c) => c.getBoundingClientRect().width") - widths[0]) < 2


def test_the_outline_is_shown_when_the_pdf_has_one_and_jumps(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    open_reader(page, curation_site, WITH_OUTLINE)
    outline = page.get_by_role("navigation", name="Outline of the PDF")
    expect(outline).to_be_visible()
    expect(outline.get_by_role("link")).to_have_count(11)
    discussion = outline.get_by_role("link", name="V Discussion")
    discussion.focus()
    page.keyboard.press("Enter")
    expect(page.get_by_label("Page number, 1 to 8")).to_have_value("8")
    expect(page.locator("#page-8[data-rendered=true] .textLayer span").first).to_be_attached()
    heading = page.locator("#page-8 .textLayer span", has_text="Discussion").first
    expect(heading).to_be_in_viewport()
    shots.take("outline-discussion")

    open_reader(page, curation_site, NO_OUTLINE, logged_in=True)
    expect(page.locator("#pdf-outline")).to_be_hidden()
    expect(page.get_by_role("navigation", name="Outline of the PDF")).to_have_count(0)


def test_the_pdf_takes_the_width_at_1366_pixels(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    page.set_viewport_size({"width": 1366, "height": 768})
    open_reader(page, curation_site, NO_OUTLINE)
    expect(page.locator("#nav-sidebar")).to_have_count(0)  # no admin app list beside it
    pages = page.locator("#pdf-pages")
    before = pages.evaluate("(p) => p.getBoundingClientRect().width")
    assert before > 700
    wide = page.get_by_role("button", name="Full width")
    wide.focus()
    page.keyboard.press("Enter")
    expect(wide).to_have_attribute("aria-pressed", "true")
    expect(page.locator("#paper-record")).to_be_hidden()
    assert pages.evaluate("(p) => p.getBoundingClientRect().width") >= 1000
    expect(page.locator("#page-1[data-rendered=true]")).to_have_count(1)
    # Fit width: the page fills the wider column.
    assert page.locator("#page-1").evaluate("(p) => p.getBoundingClientRect().width") >= 950
    shots.take("full-width")
    page.reload()  # remembered
    expect(page.locator("body[data-reader-ready=true]")).to_have_count(1)
    expect(page.locator("#paper-record")).to_be_hidden()
    page.get_by_role("button", name="Full width").click()
    expect(page.locator("#paper-record")).to_be_visible()


def test_the_page_number_and_jump_at_768_pixels(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    """One column: the window scrolls, not the pages' box; nothing wider than the window."""
    page.set_viewport_size({"width": 768, "height": 1000})
    open_reader(page, curation_site, WITH_OUTLINE)
    number = page.get_by_label("Page number, 1 to 8")
    page.evaluate("document.getElementById('page-4').scrollIntoView({ block: 'start' })")
    expect(number).to_have_value("4")
    number.fill("7")
    number.press("Enter")
    expect(page.locator("#page-7[data-rendered=true]")).to_be_in_viewport()
    expect(number).to_have_value("7")
    shots.take("page-7")
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0


def test_find_draws_the_page_of_a_match_not_yet_drawn(
    page: Page, curation_site: CurationSite
) -> None:
    open_reader(page, curation_site, WITH_OUTLINE)
    expect(page.locator("#page-8 canvas")).to_have_count(0)
    find = page.get_by_label("Find", exact=True)
    find.fill("Johns Hopkins-Princeton Institute for Quantum Matter")  # the acknowledgments
    find.press("Enter")
    expect(page.locator("#find-status")).to_have_text("Match 1 of 1, page 8.")
    expect(page.locator("#page-8[data-rendered=true]")).to_be_in_viewport()
    assert "Princeton Institute" in page.evaluate("window.getSelection().toString()")

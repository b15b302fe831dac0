"""The Cite box in a real browser (issue 36): another style is shown without loading the
page again, Copy puts the text on the clipboard and says so, BibTeX and RIS entries are
offered beside the styles, and the style chosen is the one shown on the next paper."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from tests.browser.builders import log_in
from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Page


IEEE_ATTENTION = re.compile(r"^\[1\] A\. Vaswani and N\. Shazeer, “Attention Is All You Need,”")


def read_page(site: CurationSite, paper: str) -> str:
    return site.url(f"/admin/papers/paper/{site.data['papers'][paper]['paper_id']}/read/")


def test_styles_switch_in_place_copy_and_are_remembered(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    site = curation_site
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.url(""))
    log_in(page, site)
    page.goto(read_page(site, "attention"))
    text = page.get_by_label("To copy:")
    expect(text).to_have_value(
        "Vaswani, A., & Shazeer, N. (2017). Attention Is All You Need. NeurIPS."
    )
    # A page loaded again would lose this mark.
    page.evaluate("window.sameDocument = true")
    loads: list[str] = []
    page.on("framenavigated", lambda frame: loads.append(frame.url))

    page.get_by_label("Style:").focus()
    page.get_by_label("Style:").select_option("ieee")
    expect(text).to_have_value(IEEE_ATTENTION)
    expect(page.get_by_label("In-text:")).to_have_value("[1]")
    expect(page.locator("#cite-error-row")).to_be_hidden()
    page.get_by_role("button", name="Copy", exact=True).click()
    expect(page.get_by_role("status").filter(has_text="Copied")).to_have_text(
        "Copied reference to the clipboard."
    )
    assert page.evaluate("navigator.clipboard.readText()") == text.input_value()
    shots.take("ieee-copied")

    page.get_by_label("Style:").select_option("bibtex")
    citekey = site.data["papers"]["attention"]["citekey"]
    expect(page.get_by_label("BibTeX:")).to_have_value(re.compile(rf"^@\w+\{{{citekey},"))
    expect(page.get_by_label("In-text:")).to_be_hidden()
    page.get_by_label("Style:").select_option("ris")
    expect(page.get_by_label("RIS:")).to_have_value(re.compile(r"^TY  - .*TI  - Attention", re.S))
    shots.take("ris")
    page.get_by_label("Style:").select_option("ieee")
    expect(text).to_have_value(IEEE_ATTENTION)
    assert page.evaluate("window.sameDocument") is True
    assert loads == []

    # Another paper, another visit: IEEE again, without choosing it.
    page.goto(read_page(site, "lstm"))
    expect(page.get_by_label("Style:")).to_have_value("ieee")
    expect(page.get_by_label("To copy:")).to_have_value(
        re.compile(r"^\[1\] S\. Hochreiter and J\. Schmidhuber, “Long")
    )
    page.goto(site.url(f"/admin/papers/paper/{site.data['papers']['xl']['paper_id']}/change/"))
    expect(page.get_by_label("Style:")).to_have_value("ieee")
    expect(page.get_by_label("In-text:")).to_have_value("[1]")


REFUSE_CLIPBOARD = """Object.defineProperty(navigator, 'clipboard', {
  value: { writeText: () => Promise.reject(new DOMException('denied', 'NotAllowedError')) },
});"""


def test_where_the_clipboard_is_refused_the_text_is_selected_to_copy(
    page: Page, curation_site: CurationSite
) -> None:
    site = curation_site
    page.add_init_script(REFUSE_CLIPBOARD)
    log_in(page, site)
    page.goto(read_page(site, "universal"))
    page.get_by_role("button", name="Copy in-text").click()
    expect(page.locator("#cite-status")).to_have_text(
        "Copying was refused: the in-text citation is selected, press Ctrl+C (⌘C on a Mac)."
    )
    in_text = page.get_by_label("In-text:")
    expect(in_text).to_be_focused()
    selected = page.evaluate(
        "(() => { const f = document.activeElement; "
        "return f.value.slice(f.selectionStart, f.selectionEnd); })()"
    )
    assert selected == in_text.input_value() and selected.startswith("(Dehghani")

"""The searched Paper list as results to read (issue 36), in a real browser: a search shows
each paper's full title, byline and highlighted passage; its title opens the reading page;
a corrected typo is said; the bulk actions still act on the selected results."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from tests.browser.builders import log_in
from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots
from tests.browser.pickers import autocomplete

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Page

PAPERS = "/admin/papers/paper/"
ATTENTION = "Attention Is All You Need"


def test_a_search_reads_as_results_and_a_title_opens_the_reading_page(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    log_in(page, curation_site)
    page.goto(curation_site.url(PAPERS))
    expect(page).to_have_title(re.compile(r"^Papers"))
    page.fill("#searchbar", "attention mechanisms")
    page.press("#searchbar", "Enter")
    expect(page).to_have_title(re.compile(r"^Search: attention mechanisms"))
    first = page.locator("#result_list tbody tr").first
    expect(first.locator(".result-title")).to_have_text(ATTENTION)
    expect(first.locator(".result-byline")).to_contain_text("Ashish Vaswani, Noam Shazeer")
    expect(first.locator(".result-byline")).to_contain_text("2017")
    expect(first.locator(".result-passage mark").first).to_have_text("attention")
    expect(first.locator(".result-edit")).to_have_attribute("href", re.compile(r"/change/$"))
    shots.take("results")
    first.locator(".result-title").click()
    expect(page).to_have_url(re.compile(r"/admin/papers/paper/\d+/read/$"))
    expect(page.locator("h1")).to_contain_text(ATTENTION)
    shots.take("reading-page")


def test_a_typo_is_said_corrected_and_bulk_actions_still_act(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    log_in(page, curation_site)
    page.goto(curation_site.url(PAPERS + "?q=resdual"))
    expect(page.locator(".search-corrected")).to_contain_text("Showing results for residual")
    expect(page.locator(".search-corrected a")).to_have_text("Search instead for resdual")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    shots.take("corrected")
    page.check("#action-toggle")
    page.select_option("select[name=action]", "add_keywords")
    autocomplete(page, "keywords", "image recognition")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("1 papers updated")
    page.goto(curation_site.url(PAPERS + "?keyword=image+recognition"))
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    page.goto(curation_site.url(PAPERS + "?q=resdual"))
    page.locator(".search-corrected a").click()
    expect(page.locator(".search-corrected")).to_have_count(0)
    expect(page.locator("#result_list tbody tr")).to_have_count(0)

"""The Paper list as results to read (issue 36), in a real browser: a search shows each
paper's full title, byline and highlighted passage; its title opens the reading page; a
corrected typo is said; the bulk actions still act on the selected results. Without a
search the list reads the same way, sorted as chosen above it, filters kept, at 1366 and
768 px without a horizontal scroll bar."""

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
NO_SIDEWAYS_SCROLL = "() => document.documentElement.scrollWidth <= window.innerWidth"


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


def test_the_unsearched_list_reads_as_results_sorted_as_chosen(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    papers = curation_site.data["papers"]
    log_in(page, curation_site)
    for width in (1366, 768):
        page.set_viewport_size({"width": width, "height": 900})
        page.goto(curation_site.url(PAPERS))
        expect(page.locator("#result_list tbody tr")).to_have_count(5)
        assert page.evaluate(NO_SIDEWAYS_SCROLL), f"horizontal scroll at {width} px"
        shots.take(f"unsearched-{width}")
    # The last added first, each row as a search's: title, byline, edit, no column arrows.
    sort = page.locator(".results-sort")
    expect(sort.locator("a[aria-current=true]")).to_have_text("Recently added")
    first = page.locator("#result_list tbody tr").first
    expect(first.locator(".result-title")).to_have_text("Long Short-Term Memory")
    expect(first.locator(".result-byline")).to_have_text(
        "Sepp Hochreiter, Jürgen Schmidhuber · Neural Computation · 1997"
    )
    expect(page.locator("#result_list thead th.sortable")).to_have_count(0)
    # Newest first, then a filter: the sort stays, and the sort's links keep the filter.
    sort.get_by_role("link", name="Newest").click()
    expect(sort.locator("a[aria-current=true]")).to_have_text("Newest")
    by_year = sorted(papers.values(), key=lambda paper: -paper["year"])
    expect(page.locator("#result_list tbody .result-byline")).to_contain_text(
        [str(paper["year"]) for paper in by_year]
    )
    page.get_by_role("textbox", name="Year (e.g. 2019 or 2018-2020)").fill("2016-2018")
    page.keyboard.press("Enter")
    expect(page.locator("#result_list tbody .result-title")).to_have_text(
        ["Universal Transformers", ATTENTION, "Deep Residual Learning for Image Recognition"]
    )
    expect(sort.locator("a[aria-current=true]")).to_have_text("Newest")
    sort.get_by_role("link", name="Title").click()
    expect(page).to_have_url(re.compile(r"sort=title"))
    expect(page.locator("#result_list tbody .result-title")).to_have_text(
        [ATTENTION, "Deep Residual Learning for Image Recognition", "Universal Transformers"]
    )
    shots.take("filtered-by-title")
    # The title opens the reading page; the bulk actions act on the checked rows.
    page.locator("#result_list tbody tr").nth(1).locator("input.action-select").check()
    page.select_option("select[name=action]", "add_keywords")
    autocomplete(page, "keywords", "vision")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("1 papers updated")
    keywords = page.locator("#result_list tbody tr").nth(1).locator(".result-keywords")
    expect(keywords).to_contain_text("vision")
    page.locator("#result_list tbody .result-title").first.click()
    expect(page).to_have_url(re.compile(r"/admin/papers/paper/\d+/read/$"))

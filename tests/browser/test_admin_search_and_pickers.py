"""The paper list in a real browser (issue 21): a search lists the best match first, not
the newest or the first by title, and only in that order; projects are picked in the
project picker, keywords in autocomplete boxes fed by the admin's endpoint; an export shows
a progress line until its file comes."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.browser.builders import listed_titles, log_in
from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots
from tests.browser.pickers import autocomplete, pick_project

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Page

PAPERS = "/admin/papers/paper/"


def test_a_search_lists_the_best_match_first(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    log_in(page, curation_site)
    page.goto(curation_site.url(PAPERS))
    page.fill("#searchbar", "transformer")
    page.press("#searchbar", "Enter")
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    shots.take("relevance")
    titles = listed_titles(page)
    # "Universal Transformers" is all about the word: the best match, although it comes
    # last by title, and neither the newest (Transformer-XL, 2019) nor the last added.
    assert titles[0] == "Universal Transformers"
    assert titles != sorted(titles)
    assert titles[0] != "Transformer-XL: Attentive Language Models beyond a Fixed-Length Context"
    # Relevance is the order, said so, with no column to sort by.
    expect(page.locator(".results-sort a[aria-current=true]")).to_have_text("Relevance")
    expect(page.locator("#result_list thead th.sortable")).to_have_count(0)


def test_projects_and_keywords_are_picked_by_autocomplete(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    log_in(page, curation_site)
    page.goto(curation_site.url("/admin/projects/project/add/"))
    page.fill("#id_name", "Recurrent nets")
    page.click("input[name=_save]")
    page.goto(curation_site.url(PAPERS + "?q=memory"))
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    page.check("#action-toggle")
    page.select_option("select[name=action]", "add_to_project")
    pick_project(page, "#id_project", "recur", "Recurrent nets")
    shots.take("project-picked")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("Add to project: 1 papers added")

    # A new keyword typed in, then found by the next box as an existing one.
    page.check("#action-toggle")
    page.select_option("select[name=action]", "add_keywords")
    autocomplete(page, "keywords", "sequence models")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("1 papers updated")
    page.goto(curation_site.url(PAPERS + "?q=residual"))
    page.check("#action-toggle")
    page.select_option("select[name=action]", "add_keywords")
    autocomplete(page, "keywords", "seq", "sequence models")
    shots.take("keyword-suggested")
    page.click("button[name=index]")
    expect(page.locator(".messagelist")).to_contain_text("1 papers updated")
    page.goto(curation_site.url(PAPERS + "?keyword=sequence+models"))
    expect(page.locator("#result_list tbody tr")).to_have_count(2)


def test_an_export_shows_a_progress_line_until_the_file_comes(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    log_in(page, curation_site)
    page.goto(curation_site.url(PAPERS))
    page.check("#action-toggle")
    page.select_option("select[name=action]", "export_ris")
    with page.expect_download() as download_info:
        page.click("button[name=index]")
    assert download_info.value.suggested_filename == "papers.ris"
    line = page.locator(".progress-line")
    expect(line).to_contain_text("Exporting 5 papers")
    expect(line).to_contain_text("done, the file is downloading")
    shots.take("export-done")

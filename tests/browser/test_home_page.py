"""The home page in a real browser (issue 21): signed out it says how to connect; signed in,
the admin's "View site" link leads to the library at a glance, whose quick search opens the
paper list; it fits a 768 px window without horizontal scrolling."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots
from tests.browser.test_curation_flow import listed_titles, log_in

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Page


def test_the_home_page_welcomes_visitors_and_researchers(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    site = curation_site
    page.goto(site.url("/"))
    config = json.loads(page.locator("#mcp-config").inner_text())
    assert config["mcpServers"]["research-mcp"]["url"] == site.url("/mcp")
    shots.take("signed-out")

    log_in(page, site)
    page.click("#user-tools a:has-text('View site')")
    expect(page).to_have_url(site.url("/"))
    expect(page.locator(".home-counts")).to_contain_text(f"{len(site.data['papers'])} papers")
    shots.take("signed-in")

    page.fill(".home-search input[type=search]", "attention")
    page.click(".home-search input[type=submit]")
    expect(page).to_have_url(site.url("/admin/papers/paper/?q=attention"))
    assert any("Attention" in title for title in listed_titles(page))


def test_the_home_page_fits_a_768_pixel_window(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    log_in(page, curation_site)
    page.set_viewport_size({"width": 768, "height": 1000})
    page.goto(curation_site.url("/"))
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    shots.take("768px")
    assert overflow <= 0

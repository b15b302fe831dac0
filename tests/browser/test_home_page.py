"""The home page in a real browser (issue 21): signed out it says how to connect; signed in,
the admin's "View site" link leads to the library at a glance, whose quick search opens the
paper list; it fits a 768 px window without horizontal scrolling."""

from __future__ import annotations

import asyncio
import json
import re
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING

import pytest

from tests.browser.builders import log_in
from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots
from tests.mcp.conftest import mcp_client

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

# Each row's title, in a plain list's column or a searched list's results.
TITLES = "#result_list tbody .result-title"

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
    expect(page.locator("#result_list")).to_contain_text("Attention Is All You Need")


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


async def _project_over_mcp(url: str, paper_ids: list[int]) -> None:
    async with mcp_client(url) as client:
        await client.call_tool("create_project", {"name": "Chart clicks"})
        await client.call_tool(
            "add_papers_to_project", {"project_id": "chart-clicks", "paper_ids": paper_ids}
        )


def test_a_chart_bar_leads_to_the_papers_it_counts(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    site = curation_site
    ids = [paper["paper_id"] for paper in site.data["papers"].values()]
    with ThreadPoolExecutor(1) as thread:  # Playwright's loop runs in this thread
        thread.submit(asyncio.run, _project_over_mcp(site.url("/mcp"), ids)).result()
    log_in(page, site)
    page.goto(site.url("/admin/projects/project/chart-clicks/trends/"))
    shots.take("trends")
    page.locator("#chart-timeline a").filter(has_text="2017").locator("rect.bar").click()
    expect(page).to_have_url(
        re.compile(r"/admin/projects/project/chart-clicks/papers/\?year=2017$")
    )
    expect(page.locator(TITLES)).to_have_text(["Attention Is All You Need"])
    page.go_back()
    page.locator("#chart-venues a").filter(has_text="CVPR").locator("rect.bar").click()
    expect(page).to_have_url(re.compile(r"/chart-clicks/papers/\?venue=CVPR$"))
    expect(page.locator(TITLES)).to_have_text(["Deep Residual Learning for Image Recognition"])


def test_the_paper_list_fits_a_768_pixel_window(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    log_in(page, curation_site)
    page.set_viewport_size({"width": 768, "height": 1000})
    page.goto(curation_site.url("/admin/papers/paper/?q=transformer"))
    expect(page.locator(TITLES).first).to_be_visible()
    shots.take("paper-list-768px")
    overflow = page.evaluate(
        "document.documentElement.scrollWidth - document.documentElement.clientWidth"
    )
    assert overflow <= 0
    # The list is not squeezed beside the filters: it takes the window's width.
    width = page.locator("#changelist .results").evaluate("(e) => e.getBoundingClientRect().width")
    assert width >= 600

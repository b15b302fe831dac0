"""Browser-test steps shared by the browser suites: logging in to the admin and reading a
change list's titles."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect


def log_in(page: Page, site: CurationSite) -> None:
    page.goto(site.url("/admin/login/?next=/admin/"))
    page.fill("#id_username", site.username)
    page.fill("#id_password", site.password)
    page.click("input[type=submit]")
    expect(page.locator("#user-tools")).to_contain_text(site.username)


def listed_titles(page: Page) -> list[str]:
    """The titles of a paper list, as a table's column or (searched) as results."""
    titles = "#result_list tbody .result-title"
    return page.locator(titles).all_inner_texts()

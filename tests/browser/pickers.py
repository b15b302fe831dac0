"""Driving the admin's pickers in the browser tests: the keywords' autocomplete boxes
(select2 over the admin's autocomplete endpoint) and the project picker (papers.pickers)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

import pytest

from tests.browser.conftest import PLAYWRIGHT_MISSING

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Page


def autocomplete(page: Page, name: str, typed: str, choice: str | None = None) -> None:
    """Open the box of the <select name=...>, type, and pick the suggestion `choice`
    (default: what was typed, e.g. a keyword not in the library yet)."""
    page.locator(f"select[name={name}] + .select2 .select2-selection").click()
    page.locator(".select2-container--open .select2-search__field").fill(typed)
    wanted = re.compile(rf"^\s*{re.escape(choice or typed)}\s*$")
    page.locator(".select2-results__option").filter(has_text=wanted).first.click()


def pick_project(page: Page, box: str, typed: str, choice: str) -> None:
    """In the project picker `box` (a CSS selector of its text box), type part of a name,
    then move down the listbox to `choice` with the arrow keys and press Enter."""
    field = page.locator(box)
    field.fill(typed)
    listbox = page.locator(f"#{field.get_attribute('aria-controls')}")
    expect(listbox.get_by_role("option", name=re.compile(re.escape(choice)))).to_be_visible()
    names = listbox.get_by_role("option").all_inner_texts()
    position = next(i for i, name in enumerate(names) if name.startswith(choice))
    for _ in range(position + 1):
        field.press("ArrowDown")
    field.press("Enter")
    expect(field).to_have_value(choice)

"""Driving the admin's autocomplete boxes (select2 over the admin's autocomplete endpoint,
papers.pickers) in the browser tests."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from playwright.sync_api import Page


def autocomplete(page: Page, name: str, typed: str, choice: str | None = None) -> None:
    """Open the box of the <select name=...>, type, and pick the suggestion `choice`
    (default: what was typed, e.g. a keyword not in the library yet)."""
    page.locator(f"select[name={name}] + .select2 .select2-selection").click()
    page.locator(".select2-container--open .select2-search__field").fill(typed)
    wanted = re.compile(rf"^\s*{re.escape(choice or typed)}\s*$")
    page.locator(".select2-results__option").filter(has_text=wanted).first.click()

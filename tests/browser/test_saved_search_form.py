"""Saving a search from the admin form in a real browser (issue 36, item 5): engines ticked
by name, the year range typed into fields; a refused range is explained under its field with
everything typed still there; once saved, the home page's panel links to it. No request of
any page fails (the favicon included)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest

from tests.browser.builders import log_in
from tests.browser.conftest import (
    PLAYWRIGHT_MISSING,
    CurationSite,
    SeededCuration,
    Shots,
    served_curation_copy,
)

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Page

MAKE_SUPERUSER = (
    "from django.contrib.auth.models import User; "
    "User.objects.filter(username={!r}).update(is_superuser=True)"
)


@pytest.fixture(scope="module")
def watch_site(
    tmp_path_factory: pytest.TempPathFactory, seeded_curation: SeededCuration
) -> Iterator[CurationSite]:
    """The browser tests' knowledge base, with arXiv and Crossref enabled (saving a search
    asks no engine) and its user allowed to keep saved searches."""
    directory = tmp_path_factory.mktemp("browser-watch-kb")
    env = {"ENGINES_ENABLED": "arxiv,crossref", "SAVED_SEARCH_SCHEDULER": "false"}
    with served_curation_copy(seeded_curation, directory, env, superuser=True) as site:
        yield site


def test_a_search_is_saved_from_the_form_and_listed_on_the_home_page(
    page: Page, watch_site: CurationSite, shots: Shots
) -> None:
    failed: list[str] = []
    page.on("response", lambda r: failed.append(f"{r.status} {r.url}") if r.status >= 400 else None)
    log_in(page, watch_site)
    page.goto(watch_site.url("/admin/projects/savedsearch/add/"))
    page.fill("#id_name", "Long-context evaluation")
    page.fill("#id_query", "long context language model evaluation")
    page.get_by_role("checkbox", name="arXiv").check()
    page.get_by_role("checkbox", name="Local library").check()
    page.fill("#id_filter_year_from", "2024")
    page.fill("#id_filter_year_to", "2019")
    page.fill("#id_filter_venue", "acl")
    page.select_option("#id_schedule", "weekly")
    shots.take("filled")
    page.click("input[name=_save]")

    expect(page.locator(".errorlist")).to_have_text(["year_from (2024) is after year_to (2019)."])
    expect(page.locator("#id_name")).to_have_value("Long-context evaluation")
    expect(page.locator("#id_filter_venue")).to_have_value("acl")
    expect(page.get_by_role("checkbox", name="arXiv")).to_be_checked()
    expect(page.get_by_role("checkbox", name="Crossref")).not_to_be_checked()
    shots.take("refused")

    page.fill("#id_filter_year_to", "2025")
    page.click("input[name=_save]")
    expect(page.locator(".messagelist")).to_contain_text("Long-context evaluation")

    page.goto(watch_site.url("/"))
    panel = page.locator("#home-saved-searches")
    expect(panel).to_contain_text("Long-context evaluation")
    expect(panel).to_contain_text("not run yet")
    shots.take("home")
    panel.get_by_role("link", name="Long-context evaluation").click()
    expect(page.get_by_role("checkbox", name="arXiv")).to_be_checked()
    expect(page.get_by_role("checkbox", name="Local library")).to_be_checked()
    expect(page.locator("#id_filter_year_from")).to_have_value("2024")
    expect(page.locator("#id_filter_year_to")).to_have_value("2025")
    assert failed == []  # no 404, the favicon's included

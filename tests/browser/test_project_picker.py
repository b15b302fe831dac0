"""The project picker on the reading page (issue 36): part of a name, in any case, lists
the matching projects; the keyboard chooses one and the paper is filed in that project (its
id submitted, not typed text). Text that names no project is stopped with a message and
kept, without leaving the page."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

from tests.browser.builders import log_in
from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots
from tests.browser.pickers import pick_project

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Page

PROJECTS = ("Memory networks", "Sequence models survey", "Vision backbones")


def create_projects(page: Page, site: CurationSite) -> None:
    for name in PROJECTS:
        page.goto(site.url("/admin/projects/project/add/"))
        page.fill("#id_name", name)
        page.click("input[name=_save]")
        expect(page.locator(".messagelist")).to_contain_text(name)


def test_a_partial_name_chosen_by_keyboard_files_the_paper(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    site = curation_site
    log_in(page, site)
    create_projects(page, site)
    paper_id = site.data["papers"]["lstm"]["paper_id"]
    page.goto(site.url(f"/admin/papers/paper/{paper_id}/read/"))
    box = page.get_by_role("combobox", name="Add to project")

    # Any part of a name, any case: "MODELS" finds "Sequence models survey" only.
    box.fill("MODELS")
    options = page.get_by_role("listbox", name="Matching projects").get_by_role("option")
    expect(options).to_have_count(1)
    expect(options.first).to_contain_text("Sequence models survey")
    shots.take("projects-listed")
    # "e" matches all three; the second is chosen with the arrow keys and Enter.
    pick_project(page, "#add-project", "e", "Sequence models survey")
    assert page.locator("input[type=hidden][name=project]").input_value() == (
        "sequence-models-survey"
    )
    shots.take("project-chosen")
    box.press("Enter")  # submits the form
    expect(page.locator(".messagelist")).to_contain_text(
        "Added to project 'Sequence models survey'."
    )
    expect(page.locator("#paper-projects")).to_contain_text("Sequence models survey")
    expect(page.locator("#paper-projects")).not_to_contain_text("Memory networks")


def test_text_naming_no_project_is_stopped_and_kept(
    page: Page, curation_site: CurationSite
) -> None:
    site = curation_site
    log_in(page, site)
    paper_id = site.data["papers"]["resnet"]["paper_id"]
    url = site.url(f"/admin/papers/paper/{paper_id}/read/")
    page.goto(url)
    box = page.get_by_role("combobox", name="Add to project")
    box.fill("no such project")
    expect(page.locator("#add-project-status")).to_contain_text("No project matches")
    box.press("Escape")
    expect(page.get_by_role("listbox", name="Matching projects")).to_be_hidden()
    page.get_by_role("button", name="Add").click()
    expect(page.locator("#add-project-status")).to_contain_text("Choose a project from the list")
    expect(box).to_have_value("no such project")
    expect(box).to_have_attribute("aria-invalid", "true")
    assert page.url == url
    expect(page.locator("#paper-projects")).to_contain_text("In no project.")

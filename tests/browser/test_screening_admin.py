"""Screening record by record in a real browser with JavaScript off (issue 23): the
screening panel's plain form still works. On a review waiting at its screen checkpoint, a
person excludes the record shown with a reason and includes the next with the panel's
buttons, each a page load confirming the paper by its title; Enter in the reason box
records nothing by itself. (With JavaScript, without reloads and by keyboard:
test_review_screen_view.py.) Screenshots: test-artifacts/browser/."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.builders import seeded_site
from tests.browser.conftest import PLAYWRIGHT_MISSING, TIMEOUT_MS, CurationSite, Shots
from tests.mcp.conftest import PYTHON, ROOT

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

SEED = """
import json, os
from django.contrib.auth.models import User
from core.bootstrap import prepare_knowledge_base
from papers.schemas import PaperRecord
from papers.services import papers_upsert
from projects.review import services
from tests.projects.review.builders import CORPUS, LONG_DOCS
prepare_knowledge_base(create_admin=False)
records = [PaperRecord.build(**values) for values in CORPUS.values()]
ids = dict(zip(CORPUS, papers_upsert(records=records).paper_ids))
User.objects.create_superuser("lead", "lead@example.org", os.environ["BROWSER_USER_PASSWORD"])
session = services.review_start(query=LONG_DOCS, max_results=10)
services.review_wait(session_id=str(session.pk), timeout=60)
services.review_decide(session_id=str(session.pk), action="approve")
services.review_wait(session_id=str(session.pk), timeout=60)
print(json.dumps({"session_id": str(session.pk), "papers": ids}))
"""
STATE = """
import json
from projects.models import ReviewCandidate
rows = ReviewCandidate.objects.filter(session_id="{session_id}").exclude(status="pending")
print(json.dumps({{str(c.paper_id): [c.status, c.reason, c.screened_by] for c in rows}}))
"""


@pytest.fixture(scope="module")
def review_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CurationSite]:
    directory = tmp_path_factory.mktemp("browser-screening-kb")
    with seeded_site(directory, "browserscreen", SEED) as site:
        yield site


def decided(site: CurationSite) -> dict[str, Any]:
    done = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", STATE.format(session_id=site.data["session_id"])],
        cwd=ROOT,
        capture_output=True, text=True, timeout=120, check=False, env=site.env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture
def page_without_scripts(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(
        java_script_enabled=False, viewport={"width": 1280, "height": 900}
    )
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def test_a_person_screens_records_one_by_one_without_javascript(
    review_site: CurationSite, page_without_scripts: Page, shots: Shots
) -> None:
    site, page = review_site, page_without_scripts
    shots.page = page
    page.goto(site.url("/admin/login/?next=/admin/"))
    page.fill("#id_username", site.username)
    page.fill("#id_password", site.password)
    page.click("input[type=submit]")
    page.goto(site.url(f"/admin/projects/reviewsession/{site.data['session_id']}/change/"))
    panel = page.locator("#screening-panel")
    expect(panel).to_contain_text("search rank (no decisions yet)")
    shots.take("screening-panel")
    first = int(panel.locator("#screening-record").get_attribute("data-paper") or 0)
    first_title = panel.locator("#screening-record h3").inner_text()

    # Enter in the reason box submits nothing (the panel's first button is a disabled one);
    # Exclude then records the record shown, with the reason.
    reason = page.locator("#screening-reason")
    reason.fill("not about long documents")
    reason.press("Enter")
    expect(page.locator("#screening-counts")).to_contain_text("Screened 0 of")
    page.get_by_role("button", name="Exclude").click()
    expect(page.locator("ul.messagelist")).to_contain_text(
        f"Excluded: {first_title} (reason: not about long documents)"
    )
    second = int(panel.locator("#screening-record").get_attribute("data-paper") or 0)
    assert second != first
    second_title = panel.locator("#screening-record h3").inner_text()
    page.get_by_role("button", name="Include").click()
    expect(page.locator("ul.messagelist")).to_contain_text(f"Included: {second_title}")
    expect(panel).to_contain_text("1 included, 1 excluded")
    shots.take("after-two-decisions")
    assert decided(site) == {
        str(first): ["excluded", "not about long documents", "admin:lead"],
        str(second): ["included", "", "admin:lead"],
    }

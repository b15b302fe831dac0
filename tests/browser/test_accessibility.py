"""Accessibility in a real browser (issue 36, item 6; docs/ACCESSIBILITY.md): axe-core, vendored
test-only in tests/browser/axe/ (scripts/vendor-axe.sh), runs on every page a researcher uses
against WCAG 2.1 A and AA and finds nothing critical or serious; from the admin's home a
keyboard user reaches the search box, searches and opens the first result in a few Tab presses.

The knowledge base holds a review with included studies (one with its PDF), extractions, a
project with papers, a saved search and an alert. The pages are the admin index's own links
(every model's list and add page) and the custom pages those lists lead to.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.builders import log_in, seeded_site
from tests.browser.conftest import PLAYWRIGHT_MISSING, TIMEOUT_MS, CurationSite

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

AXE = Path(__file__).with_name("axe") / "axe.min.js"
TAGS = ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]
BLOCKING = ("critical", "serious")
# Rules tolerated on a page, each listed in docs/ACCESSIBILITY.md ("Known exceptions"):
# none today.
KNOWN: dict[str, set[str]] = {}
RUN_AXE = """async (tags) => {
  const result = await axe.run(document, {runOnly: {type: 'tag', values: tags}});
  return result.violations.map((v) => ({
    id: v.id, impact: v.impact, help: v.help,
    targets: v.nodes.map((n) => n.target.join(' ')).slice(0, 5), count: v.nodes.length,
  }));
}"""
# axe reads the markup, which does not depend on the database: it runs on the embedded
# default's run; the PostgreSQL run still opens every page and checks it renders (most of
# the test's time was axe: about 70 s of a 2-core CI run's minutes, twice).
SCAN = not os.environ.get("DATABASE_URL", "").startswith(("postgres://", "postgresql://"))
# The admin index's links to model lists and add pages.
INDEX_LINKS = """() => [...document.querySelectorAll('#content-main a[href^="/admin/"]')]
  .map((a) => a.getAttribute('href'))"""
FOCUSED = """() => {
  const el = document.activeElement;
  return el ? (el.closest('#result_list') ? 'result:' + el.getAttribute('href')
    : el.getAttribute('name') || el.id || el.tagName) : '';
}"""
SEED = """
import json, os
from django.contrib.auth.models import User
from core.bootstrap import prepare_knowledge_base
from papers.models import Paper
from papers.pdf.services import pdf_attach_file
from papers.schemas import PaperRecord
from papers.services import papers_upsert
from projects.alerts import notify
from projects.models import ReviewCandidate, ReviewCheckpoint
from projects.review.extraction.services import extract_record, form_create
from projects.services import project_add_papers, project_create
from projects.watch.services import saved_search_save
from tests.projects.review.extraction.builders import ACL, ACL_VALUES, FIELDS, review_with_included
prepare_knowledge_base(create_admin=False)
ids = papers_upsert(records=[
    PaperRecord.build(title="Construction of the Literature Graph in Semantic Scholar",
                      authors=["Waleed Ammar"], year=2018, venue="NAACL"),
    PaperRecord.build(title="Attention Is All You Need", authors=["Ashish Vaswani"], year=2017,
        venue="NeurIPS", abstract="A new simple network architecture, the Transformer."),
    PaperRecord.build(title="Attention-based screening of trials", authors=["B. Reader"],
        year=2020, abstract="We screened 1,204 records and included 37 randomised trials."),
]).paper_ids
acl, attention, known = (Paper.objects.get(pk=pk) for pk in ids)
pdf_attach_file(paper_id=acl.pk, path=ACL)
User.objects.create_superuser("lead", "lead@example.org", os.environ["BROWSER_USER_PASSWORD"])
session = review_with_included([acl, known])
ReviewCandidate.objects.create(session=session, paper=attention, source="search", round=1,
                               rank=3, status="pending")
ReviewCheckpoint.objects.create(session=session, sequence=1, kind="screen", round=1)
owner = {"session_id": str(session.pk)}
form_create(**owner, name="Study data", fields=FIELDS)
extract_record(**owner, paper=acl.pk, agent="a", values=ACL_VALUES)
project = project_create(name="Graphs")
project_add_papers(project=project, paper_ids=ids[:2])  # the third is left to add
search, _ = saved_search_save(name="graph watch", query="literature graph", engines=[])
notify("new_papers", "2 new papers for graph watch", key="a11y", project=project, link="/admin/")
print(json.dumps({"session_id": str(session.pk), "acl": acl.pk, "project": project.pk,
                  "search": search.pk}))
"""


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CurationSite]:
    directory = tmp_path_factory.mktemp("browser-a11y-kb")
    with seeded_site(directory, "browsera11y", SEED, {"EXTRACTION_STRICT": "false"}) as site:
        yield site


@pytest.fixture
def axe_page(browser: Browser) -> Iterator[Page]:
    """A page whose Content-Security-Policy is bypassed, so the injected axe script runs
    (its own CSP test is tests/browser/test_content_security_policy.py)."""
    context = browser.new_context(bypass_csp=True, viewport={"width": 1366, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def findings(page: Page) -> list[dict[str, Any]]:
    """axe-core's WCAG 2.1 A/AA violations on the page as it is now."""
    if not page.evaluate("typeof window.axe !== 'undefined'"):
        page.add_script_tag(path=str(AXE))
    return page.evaluate(RUN_AXE, TAGS)


def custom_pages(site: CurationSite) -> dict[str, tuple[str, str]]:
    """Each page off the index: its path and what must be on it before axe looks."""
    data = site.data
    paper, review, project = data["acl"], data["session_id"], data["project"]
    papers, reviews = "/admin/papers/paper", "/admin/projects/reviewsession"
    projects = "/admin/projects/project"
    return {
        "home": ("/", ".home-search"),
        "admin home": ("/admin/", "#content-main"),
        "paper list with a search": (f"{papers}/?q=attention", "#result_list tbody tr"),
        "paper change page": (f"{papers}/{paper}/change/", ".tabular .select2"),
        "reading page": (
            f"{papers}/{paper}/read/",
            "body[data-reader-ready=true] #page-1[data-rendered=true] .textLayer span",
        ),
        "add by identifier": (f"{papers}/add-by-identifier/", "#content-main form"),
        "BibTeX import": (f"{papers}/import-bibtex/", "#content-main form"),
        "project page": (f"{projects}/{project}/change/", "#content-main form"),
        "project papers": (f"{projects}/{project}/papers/", "#result_list tbody tr"),
        "project library picker": (f"{projects}/{project}/papers/add/", "#result_list tbody tr"),
        "project trends": (f"{projects}/{project}/trends/", "svg.chart a"),
        "review page with its screening panel": (
            f"{reviews}/{review}/change/",
            "#screening-record[data-paper]",
        ),
        "extraction page": (f"{reviews}/{review}/extraction/", "#extraction-form"),
        "saved search form": (
            f"/admin/projects/savedsearch/{data['search']}/change/",
            "#content-main form",
        ),
    }


def settle(page: Page, url: str, ready: str = "#content, main") -> None:
    response = page.goto(url)
    assert response is not None and response.ok, f"{url}: {response and response.status}"
    page.wait_for_load_state("networkidle")
    expect(page.locator(ready).first).to_be_attached()


def test_no_page_has_a_critical_or_serious_axe_finding(
    axe_page: Page, library: CurationSite
) -> None:
    page, site = axe_page, library
    pages = {"login": site.url("/admin/login/")}
    settle(page, pages["login"])
    report: dict[str, list[dict[str, Any]]] = {"login": findings(page) if SCAN else []}
    log_in(page, site)
    links = sorted(set(page.evaluate(INDEX_LINKS)))
    assert len(links) >= 10, links  # the index lists every model's list and add page
    pages |= {link: site.url(link) for link in links}
    ready = {name: selector for name, (_, selector) in custom_pages(site).items()}
    pages |= {name: site.url(path) for name, (path, _) in custom_pages(site).items()}
    for name, url in pages.items():
        if name == "login":
            continue
        settle(page, url, ready.get(name, "#content, main"))
        assert "/login/" not in page.url, name
        report[name] = findings(page) if SCAN else []
    blocking: list[str] = []
    for name, violations in report.items():
        counts = {impact: 0 for impact in ("critical", "serious", "moderate", "minor")}
        for v in violations:
            counts[v["impact"]] += v["count"]
            if v["impact"] in BLOCKING and v["id"] not in KNOWN.get(name, set()):
                blocking.append(f"{name}: {v['impact']} {v['id']} ({v['help']}) {v['targets']}")
        print(f"axe {name}: {counts}")
    assert blocking == [], "\n".join(blocking)


def test_a_keyboard_user_searches_and_opens_the_first_result_in_a_few_keys(
    axe_page: Page, library: CurationSite
) -> None:
    """From the home page: Tab to the search box, type, Enter; on the results, Tab to
    "Skip to results" (after "Skip to main content"), Enter puts the focus on the first
    result's link, Enter opens it. Before the skip link, the first result was 86 Tabs away."""
    page, site = axe_page, library
    log_in(page, site)
    page.goto(site.url("/"))
    presses = 0
    while page.evaluate(FOCUSED) != "q":
        assert presses < 10, f"no search box after {presses} Tab presses"
        page.keyboard.press("Tab")
        presses += 1
    page.keyboard.type("attention")
    page.keyboard.press("Enter")
    page.wait_for_url("**/admin/papers/paper/?q=attention")
    keys: list[str] = []
    while not page.evaluate(FOCUSED).startswith("result:"):
        assert len(keys) < 10, f"no result after {keys}: at {page.evaluate(FOCUSED)}"
        key = "Enter" if page.evaluate(FOCUSED) == "skip-to-results" else "Tab"
        page.keyboard.press(key)
        keys.append(key)
    assert keys == ["Tab", "Tab", "Enter"]
    first = page.locator("#result_list tbody tr").first.locator("a[href]").first
    assert page.evaluate(FOCUSED) == f"result:{first.get_attribute('href')}"
    href = first.get_attribute("href")
    page.keyboard.press("Enter")
    page.wait_for_url(f"**{href}")
    expect(page.locator("#content")).to_contain_text("Attention Is All You Need")

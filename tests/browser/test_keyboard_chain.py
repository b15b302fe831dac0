"""The researcher's path through the browser with the keyboard alone (issue 36): signed in,
search from the paper list, open the first result, find a phrase in its PDF and highlight
it, file the paper in a project with the picker, open the Cite box, switch its style and
copy the reference. Every step is a key press (Tab, Enter, arrows, typing): no mouse, no
element.click(), no focus() from the test. Each step's effect is read back from the
server's database or the page's status text and the clipboard.
"""

from __future__ import annotations

import json
import re
import secrets
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.builders import log_in
from tests.browser.conftest import PLAYWRIGHT_MISSING, TIMEOUT_MS, CurationSite, Shots
from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    base_env,
    running_server,
    server_database,
)

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Browser, Page

# Twice on page 1 of N18-3011, the first time across a line-end hyphen ('litera-' 'ture').
PHRASE = "reduce literature graph construction into familiar NLP"
ACL_TITLE = "Construction of the Literature Graph in Semantic Scholar"
PROJECT = "Scholarly knowledge graphs"
SEED = """
import json, os
from django.contrib.auth.models import User
from core.bootstrap import prepare_knowledge_base
from papers.pdf.services import pdf_attach_file
from papers.schemas import PaperRecord
from papers.services import papers_upsert
from projects.services import project_create
from tests.projects.review.extraction.builders import ACL
prepare_knowledge_base(create_admin=False)
ids = papers_upsert(records=[
    PaperRecord.build(title="Construction of the Literature Graph in Semantic Scholar",
        authors=["Waleed Ammar", "Dirk Groeneveld", "Chandra Bhagavatula"], year=2018,
        venue="NAACL", abstract="We describe a deployed scalable system for organizing "
        "published scientific literature into a heterogeneous graph."),
    PaperRecord.build(title="Graph neural networks: a review", authors=["Jie Zhou"],
        year=2020, abstract="Graph neural networks for graph data."),
    PaperRecord.build(title="Attention Is All You Need", authors=["Ashish Vaswani"],
        year=2017, venue="NeurIPS"),
]).paper_ids
pdf_attach_file(paper_id=ids[0], path=ACL)
User.objects.create_superuser("reader", "reader@example.org", os.environ["BROWSER_USER_PASSWORD"])
for name in ("Memory networks", "Scholarly knowledge graphs", "Vision"):
    project_create(name=name)
print(json.dumps({"acl": ids[0]}))
"""
# What the server's database holds now, as JSON (run with the server's environment).
STORED = """
import json
from papers.models import Annotation
from projects.models import ProjectPaper
paper = {paper}
print(json.dumps({{
    "highlights": list(Annotation.objects.filter(paper_id=paper, kind="highlight")
                       .values_list("text", flat=True)),
    "projects": sorted(ProjectPaper.objects.filter(paper_id=paper)
                       .values_list("project__name", flat=True)),
}}))
"""
# The focused element, described the way the steps below look for it.
FOCUSED = """() => {
  const el = document.activeElement;
  if (!el || el === document.body) return "";
  const label = el.labels && el.labels.length ? el.labels[0].textContent.trim() : "";
  return [el.tagName.toLowerCase(), el.id, el.getAttribute("name") || "", label,
          el.getAttribute("aria-label") || "", (el.textContent || "").trim().slice(0, 60),
          el.closest("#result_list") ? "in-results" : ""].join("|");
}"""


@dataclass
class Library:
    site: CurationSite
    env: dict[str, str]

    def stored(self, paper_id: int) -> dict[str, Any]:
        done = subprocess.run(
            [PYTHON, "manage.py", "shell", "-c", STORED.format(paper=paper_id)], cwd=ROOT,
            capture_output=True, text=True, timeout=120, check=False, env=self.env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return dict(json.loads(done.stdout.strip().splitlines()[-1]))


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Library]:
    """A served knowledge base: the ACL paper with its PDF, two others, three projects."""
    directory = tmp_path_factory.mktemp("browser-keyboard-kb")
    password = secrets.token_urlsafe(16)
    with server_database("browserkeys") as database_url:
        env = base_env(directory, database_url)
        for name in ("REDIS_URL", "CELERY_BROKER_URL"):
            env.pop(name, None)  # the PDF's index task runs in the seeding process
        env["EMBEDDINGS_ENABLED"] = "false"
        seeded = subprocess.run(
            [PYTHON, "manage.py", "shell", "-c", SEED], cwd=ROOT, capture_output=True,
            text=True, timeout=180, check=False, env={**env, "BROWSER_USER_PASSWORD": password},
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        data = json.loads(seeded.stdout.strip().splitlines()[-1])
        with running_server(KnowledgeBase(directory, env)) as server:
            yield Library(CurationSite(server, "reader", password, data), env)


@pytest.fixture
def keyboard_page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1366, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


def tab_to(page: Page, wanted: str, most: int, key: str = "Tab") -> int:
    """Press Tab (or `key`, e.g. Shift+Tab) until the focused element's description
    (FOCUSED) matches `wanted`; the number of presses, at most `most`."""
    pattern = re.compile(wanted)
    passed = [page.evaluate(FOCUSED)]
    while not pattern.search(passed[-1]):
        assert len(passed) <= most, f"{wanted!r} not reached in {most} Tabs: {passed}"
        page.keyboard.press(key)
        passed.append(page.evaluate(FOCUSED))
    return len(passed) - 1


def test_search_read_highlight_file_and_cite_with_the_keyboard_alone(
    keyboard_page: Page, library: Library, shots: Shots
) -> None:
    page, site = keyboard_page, library.site
    paper_id = int(site.data["acl"])
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=site.url(""))
    log_in(page, site)

    # 1. Search from the paper list.
    page.goto(site.url("/admin/papers/paper/"))
    tab_to(page, r"\|Skip to main content\|", 3)  # past the admin's app list
    page.keyboard.press("Enter")
    tab_to(page, r"^input\|searchbar\|", 5)
    page.keyboard.type("literature graph")
    page.keyboard.press("Enter")
    page.wait_for_url(re.compile(r"\?q=literature\+graph(#.*)?$"))
    expect(page.locator("#result_list tbody .result-title").first).to_have_text(ACL_TITLE)
    shots.take("searched")

    # 2. Open the first result: Tab down from the search box to its title, then Enter.
    tab_to(page, rf"^a\|\|\|\|\|{ACL_TITLE}\|in-results$", 20)
    page.keyboard.press("Enter")
    page.wait_for_url(f"**/admin/papers/paper/{paper_id}/read/")
    expect(page.locator("body[data-reader-ready=true]")).to_have_count(1)
    expect(page.locator("#page-1[data-rendered=true] .textLayer span").first).to_be_attached()

    # 3. Find the phrase in the PDF and highlight the match with Alt+Enter.
    tab_to(page, r"^input\|find-input\|", 40)
    page.keyboard.type(PHRASE)
    page.keyboard.press("Enter")
    expect(page.locator("#find-status")).to_have_text("Match 1 of 2, page 1.")
    page.keyboard.press("Alt+Enter")
    expect(page.locator("#reader-status")).to_have_text(f"Highlight saved on page 1: “{PHRASE}”.")
    expect(page.locator("#annotation-list li")).to_contain_text([PHRASE])
    assert library.stored(paper_id)["highlights"] == [PHRASE]  # hyphen joined, no more
    shots.take("highlighted")

    # 4. File the paper in a project: part of its name, the arrow keys, Enter, Enter.
    tab_to(page, r"^input\|add-project\|", 40, key="Shift+Tab")  # back up the record's column
    page.keyboard.type("knowledge")
    options = page.get_by_role("listbox", name="Matching projects").get_by_role("option")
    expect(options).to_contain_text([PROJECT])
    expect(options).to_have_count(1)
    page.keyboard.press("ArrowDown")
    page.keyboard.press("Enter")
    expect(page.get_by_role("combobox", name="Add to project")).to_have_value(PROJECT)
    page.keyboard.press("Enter")
    expect(page.locator(".messagelist")).to_contain_text(f"Added to project '{PROJECT}'.")
    expect(page.locator("#paper-projects")).to_contain_text(PROJECT)
    assert library.stored(paper_id)["projects"] == [PROJECT]

    # 5. The Cite box: another style chosen from the keyboard, then Copy.
    page.evaluate("window.sameDocument = true")  # a page loaded again would lose this mark
    tab_to(page, r"^select\|[^|]*\|[^|]*\|Style:", 40)
    reference = page.get_by_label("To copy:")
    first_style = reference.input_value()
    page.keyboard.press("ArrowDown")  # the next style, shown without a page load
    expect(reference).not_to_have_value(first_style)
    chosen = page.get_by_label("Style:").input_value()
    tab_to(page, r"^button\|cite-copy\|", 5)
    page.keyboard.press("Enter")
    expect(page.locator("#cite-status")).to_have_text("Copied reference to the clipboard.")
    assert page.evaluate("navigator.clipboard.readText()") == reference.input_value()
    assert page.evaluate("window.sameDocument") is True
    shots.take("cited")
    # The style chosen is remembered on the next visit.
    page.reload()
    expect(page.get_by_label("Style:")).to_have_value(chosen)

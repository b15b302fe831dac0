"""The extraction page of a review in a real browser (docs/EXTRACTION.md, "Admin"): a
person adds a field through the form editor (version 2), reads the evidence table with its
flags, follows a quote's "open at p. N" link to the reading page, which opens the PDF at
that page and flashes the quote's words (papers/static/papers/reader.mjs), and settles a
disagreement with its form. Every control is labelled, and the page fits 1366 and 768 px
windows. Screenshots: the test's tmp dir."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser.builders import log_in, seeded_site
from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import Page

# A review whose included studies are the ACL paper (its PDF attached and indexed) and a
# paper known by its abstract, with the form FIELDS; agents a and b extract the ACL paper
# and differ on graph_kind; a's open_source quote is only close to the paper's words
# (approximate), and a's task quote for the other study is in its abstract only.
SEED = """
import json, os
from django.contrib.auth.models import User
from core.bootstrap import prepare_knowledge_base
from papers.models import Paper
from papers.pdf.services import pdf_attach_file
from papers.schemas import PaperRecord
from papers.services import papers_upsert
from projects.review.extraction.services import extract_record, form_create
from tests.projects.review.extraction.builders import (
    ACL, ACL_QUOTE_CHANGED, ACL_VALUES, FIELDS, review_with_included,
)
prepare_knowledge_base(create_admin=False)
acl, known = Paper.objects.filter(pk__in=papers_upsert(records=[
    PaperRecord.build(title="Construction of the Literature Graph in Semantic Scholar",
                      authors=["Waleed Ammar"], year=2018),
    PaperRecord.build(title="A study known by its abstract", authors=["B. Reader"], year=2020,
        abstract="We screened 1,204 records and included 37 randomised trials in adults."),
]).paper_ids).order_by("year")
pdf_attach_file(paper_id=acl.pk, path=ACL)
User.objects.create_superuser("lead", "lead@example.org", os.environ["BROWSER_USER_PASSWORD"])
session = review_with_included([acl, known])
owner = {"session_id": str(session.pk)}
form_create(**owner, name="Study data", fields=FIELDS)
extract_record(**owner, paper=acl.pk, agent="a", values={
    **ACL_VALUES, "open_source": {"value": "yes", "quote": ACL_QUOTE_CHANGED, "page": 3},
})
extract_record(**owner, paper=acl.pk, agent="b", values={
    **ACL_VALUES,
    "graph_kind": {"value": "RDF graph", "quote": "Resource Description Framework (RDF) graphs"},
})
extract_record(**owner, paper=known.pk, agent="a", values={
    "task": {"value": "Screening trials", "quote": "We screened 1,204 records"},
})
print(json.dumps({"session_id": str(session.pk), "acl": acl.pk, "known": known.pk}))
"""
# Form controls no label names (axe-core's `label` rule; labels may be visually hidden).
UNLABELLED = """() => [...document.querySelectorAll('#content-main :is(input, select, textarea)')]
  .filter((c) => !['hidden', 'submit', 'button'].includes(c.type))
  .filter((c) => ![...c.labels].some((l) => l.textContent.trim())
    && !c.getAttribute('aria-label') && !c.getAttribute('aria-labelledby'))
  .map((c) => c.name || c.id)"""
# Table cells whose text runs out of them (a header squeezed by the fixed column widths).
SQUEEZED = """() => [...document.querySelectorAll('#content-main :is(th, td)')]
  .filter((cell) => cell.scrollWidth > cell.clientWidth + 1)
  .map((cell) => cell.textContent.trim())"""
# Whether one of the marks (of this class) on a page covers the words in the text layer.
MARKED = """([page, kind, words]) => {
  const frame = document.getElementById(`page-${page}`);
  const span = [...frame.querySelectorAll('.textLayer span')]
    .find((s) => s.textContent.includes(words));
  if (!span) return false;
  const a = span.getBoundingClientRect();
  return [...frame.querySelectorAll(kind)].map((m) => m.getBoundingClientRect())
    .some((b) => b.left < a.right && a.left < b.right && b.top < a.bottom && a.top < b.bottom);
}"""
OVERFLOW = "document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.fixture(scope="module")
def extraction_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CurationSite]:
    directory = tmp_path_factory.mktemp("browser-extraction-kb")
    with seeded_site(directory, "browserextract", SEED, {"EXTRACTION_STRICT": "false"}) as site:
        yield site


def test_a_researcher_edits_the_form_follows_a_quote_and_adjudicates(
    page: Page, extraction_site: CurationSite, tmp_path: Path
) -> None:
    site, shots = extraction_site, Shots(tmp_path, page)
    acl = site.data["acl"]
    url = site.url(f"/admin/projects/reviewsession/{site.data['session_id']}/extraction/")
    page.set_viewport_size({"width": 1366, "height": 900})
    log_in(page, site)
    page.goto(url)
    expect(page.locator("#extraction-form")).to_have_text("Form: Study data, version 1")
    shots.take("extraction-1366px")
    assert page.evaluate(UNLABELLED) == []
    assert page.evaluate(SQUEEZED) == []
    assert page.evaluate(OVERFLOW) <= 0

    # A field typed in the blank row, one more row asked for (what was typed stays, and the
    # new row starts as a blank row does), then saved: version 2, with its column.
    page.fill("#id_form-6-key", "dataset")
    page.fill("#id_form-6-label", "Dataset")
    page.click("input[name=add_row]")
    expect(page.locator("tr.field-row")).to_have_count(8)
    expect(page.locator("#id_form-6-key")).to_have_value("dataset")
    expect(page.locator("#id_form-7-quote_required")).to_be_checked()
    page.click("#extraction-form-editor input[type=submit].default")
    expect(page.locator("ul.messagelist")).to_contain_text("Form saved as version 2.")
    expect(page.locator("#extraction-form")).to_have_text("Form: Study data, version 2")
    expect(page.locator("#evidence-table thead th").last).to_contain_text("Dataset")

    # The evidence table marks the flagged cells.
    row = page.locator(f'#evidence-table tr[data-paper="{acl}"]')
    expect(row.locator(".flag-approximate")).to_have_text("approximate")
    expect(row.locator(".flag-disagreement")).to_have_text("disagreement")
    known = page.locator(f'#evidence-table tr[data-paper="{site.data["known"]}"]')
    expect(known.locator(".flag-abstract_only")).to_have_text("abstract only")

    # "open at p. 2": the reading page scrolls its PDF to page 2 and flashes the quote, over
    # the purple highlight extraction made of the same words.
    row.locator("a.quote-link", has_text="open at p. 2").click()
    expect(page.locator("#reader-status")).to_have_text(
        "8 pages. Opened at page 2, the quote marked."
    )
    focus = page.locator("#page-2 .mark-focus")
    expect(focus).to_have_count(2)  # the quote runs over two lines
    expect(focus.first).to_have_class(re.compile(r"\bflash\b"))
    expect(focus.first).to_be_in_viewport()
    expect(page.locator("#page-2[data-rendered=true]")).to_have_count(1)
    assert page.evaluate(MARKED, [2, ".mark-focus", "37M"])
    assert page.evaluate(MARKED, [2, ".mark-highlight", "37M"])
    purple = page.locator("#page-2 .mark-highlight").first
    assert purple.evaluate("(m) => getComputedStyle(m).backgroundColor") == "rgb(162, 138, 229)"
    # Not full page: that screenshot resizes the window, which resets the PDF's scroller.
    page.screenshot(path=str(tmp_path / "quote-on-page-2-1366px.png"))

    # The disagreement settled through its form.
    page.go_back()
    form = f"#adjudicate-{acl}-graph_kind"
    page.select_option(f"{form}-value", "property graph")
    page.fill(f"{form}-reason", "Section 2 calls it a property graph.")
    page.click(f"{form} input[type=submit]")
    expect(page.locator("ul.messagelist")).to_contain_text(
        f"Adjudicated graph_kind of paper {acl}."
    )
    expect(page.locator("#content-main")).to_contain_text("Disagreements: 1, unresolved: 0.")
    expect(page.locator(form)).to_have_count(0)
    cell = row.locator("td").nth(3)  # graph_kind, after task, papers and pages
    expect(cell).to_contain_text("property graph")
    expect(cell).to_contain_text("adjudicated by user:lead")
    expect(row.locator(".flag-disagreement")).to_have_count(0)

    # 768 px: the editor stacks each field's controls under their labels; nothing runs off.
    page.set_viewport_size({"width": 768, "height": 1000})
    shots.take("extraction-768px")
    assert page.evaluate(UNLABELLED) == []
    assert page.evaluate(SQUEEZED) == []
    assert page.evaluate(OVERFLOW) <= 0
    row.locator("a.quote-link", has_text="open at p. 3").click()
    expect(page.locator("#reader-status")).to_have_text(
        "8 pages. Opened at page 3, the quote marked."
    )
    expect(page.locator("#page-3 .mark-focus").first).to_be_in_viewport()
    assert page.evaluate(MARKED, [3, ".mark-focus", "in this gap"])
    page.screenshot(path=str(tmp_path / "quote-on-page-3-768px.png"))

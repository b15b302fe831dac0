"""The screening view in a real browser (issue 36, "A screening view"): a researcher starts a
review from the form, edits the plan as fields, screens ten records by keyboard on one page
load while the progress and the stopping rule's estimate change, resolves two screeners'
disagreement side by side, and finishes; the review page shows the PRISMA 2020 diagram
(its text inside its boxes) and the recall curve.

The records come from a plugin engine answering from a local replay server; on PostgreSQL
with a broker the review's steps run on a Celery worker of the test's own
(tests/mcp/builders.py `review_backend`), else on the server's threads. Screenshots at 1366
and 768 px go to test-artifacts/browser/.
"""

from __future__ import annotations

import json
import secrets
import subprocess
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.builders import log_in
from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots
from tests.engines.plugins import write_plugin
from tests.engines.replay import ReplayServer, Reply
from tests.mcp.builders import review_backend
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
    from playwright.sync_api import Page

ENGINE = "rev_src"
QUESTION = "How does sparse self-attention let transformer encoders handle lengthy texts?"
CRITERIA = "Sparse or efficient attention over long inputs"
PLACES = ["Nordic", "Andean", "coastal", "alpine", "desert", "island", "river", "urban"]
TOPICS = ["legal", "scientific", "clinical", "patent", "news", "book", "code", "dialogue"]
LONG_REASON = (
    "about attention in the psychological sense (pupils, birds and readers), not the "
    "self-attention of transformer encoders over long inputs"
)
WIDTHS = (1366, 768)
SEED = """
import os
from django.contrib.auth.models import User
from core.bootstrap import prepare_knowledge_base
prepare_knowledge_base(create_admin=False)
User.objects.create_superuser("lead", "lead@example.org", os.environ["BROWSER_USER_PASSWORD"])
"""
STATE = """
import json
from projects.models import ReviewDecision, ReviewSession
session = ReviewSession.objects.get()
decisions = ReviewDecision.objects.filter(checkpoint__session=session)
decided = session.candidates.exclude(status="pending").select_related("paper")
print(json.dumps({
    "plan": session.plan, "status": session.status,
    "decisions": [[d.checkpoint.sequence, d.action, d.decided_by, d.data]
                  for d in decisions.select_related("checkpoint").order_by("checkpoint__sequence")],
    "screened": {c.paper.title: [c.status, c.reason, c.screened_by] for c in decided},
    "maybe": {c.paper.title: c.votes for c in session.candidates.filter(votes__has_key="_maybe")},
}))
"""
DECIDE_MAYBE = """
from projects.models import ReviewSession
from projects.review.screening import screening_decide
session = ReviewSession.objects.get()
paper = session.candidates.get(paper__title={title!r}).paper_id
screening_decide(session_id=session.pk, decided_by="admin:lead", decisions=[
    {{"paper": paper, "decision": "exclude", "reason": "off topic"}}])
"""
SECOND_SCREENER = """
from projects.models import ReviewSession
from projects.review.screening import screening_decide
session = ReviewSession.objects.get()
paper = session.candidates.get(paper__title={title!r}).paper_id
screening_decide(session_id=session.pk, decided_by="agent", decisions=[
    {{"paper": paper, "decision": "exclude", "reason": "not about encoders"}}])
"""
# Runs before the page's own scripts: what the Content-Security-Policy blocked on each page.
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  window.__violations.push(`${event.effectiveDirective} ${event.blockedURI}`);
});
"""
# Each text of the PRISMA diagram lies inside the box drawn before it (x and width only:
# wrapping is horizontal).
TEXT_OUTSIDE_ITS_BOX = """() => {
  const outside = [];
  let box = null;
  for (const element of document.querySelectorAll("#prisma-figure svg > *")) {
    if (element.tagName === "rect") box = element.getBBox();
    if (element.tagName !== "text" || !box || element.getAttribute("transform")) continue;
    const text = element.getBBox();
    if (text.y < box.y || text.y > box.y + box.height) continue;  // a heading, not in a box
    if (text.x < box.x || text.x + text.width > box.x + box.width + 0.5) {
      outside.push(element.textContent);
    }
  }
  return outside;
}"""


def records() -> list[dict[str, Any]]:
    """32 papers using the question's words in other senses, then 8 on the question."""
    off = []
    for place in PLACES:
        off += [
            {"title": f"Long documents on power transformers in {place} grids",
             "abstract": f"Maintenance documents of {place} substations and their transformers."},
            {"title": f"Attention to long documents among {place} pupils",
             "abstract": f"How {place} pupils keep attention reading long documents."},
            {"title": f"Archiving long legal documents in {place} courts",
             "abstract": f"Paper archives of {place} courts, scanned and catalogued."},
            {"title": f"Long distance attention of {place} migrating birds",
             "abstract": f"Radar tracks of {place} flocks show vigilance on long flights."},
        ]  # fmt: skip
    on = [
        {"title": f"Efficient self-attention for lengthy {topic} texts",
         "abstract": f"Sparse attention patterns let transformer encoders read lengthy {topic} "
                     "texts, with local windows and a few global tokens.",
         "venue": "Transactions of the ACL"}
        for topic in TOPICS
    ]  # fmt: skip
    items: list[dict[str, Any]] = [*off, *on]
    for number, item in enumerate(items):
        item.update(authors=[f"Ada Author{number}", "Ben Second"], year=2016 + number % 8,
                    doi=f"10.9999/review.{number}")  # fmt: skip
    return items


RELEVANT = {item["title"] for item in records()[-len(TOPICS) :]}


@pytest.fixture(scope="module")
def review_site(tmp_path_factory: pytest.TempPathFactory) -> Iterator[CurationSite]:
    source = ReplayServer().start()
    source.add(f"/{ENGINE}/search", Reply(200, records()))
    directory = tmp_path_factory.mktemp("browser-review-kb")
    write_plugin(directory / "engines", ENGINE, f"{source.url}/{ENGINE}", name="Replay source")
    password = secrets.token_urlsafe(16)
    try:
        with server_database("browserreview") as database_url:
            env = base_env(directory, database_url)
            env.update(ENGINES_ENABLED=f"local,{ENGINE}", EMBEDDINGS_ENABLED="false")
            seeded = subprocess.run(
                [PYTHON, "manage.py", "shell", "-c", SEED], cwd=ROOT, capture_output=True,
                text=True, timeout=180, check=False,
                env={**env, "BROWSER_USER_PASSWORD": password},
            )  # fmt: skip
            assert seeded.returncode == 0, seeded.stderr
            kb = KnowledgeBase(directory, env)
            with review_backend(kb) as (extra, _), running_server(kb, env=extra) as server:
                yield CurationSite(server, "lead", password, {"env": {**env, **extra}})
    finally:
        source.stop()


def manage_shell(site: CurationSite, code: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", "shell", "-c", code], cwd=ROOT, capture_output=True, text=True,
        timeout=120, check=False, env=site.data["env"],
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout


def review_state(site: CurationSite) -> dict[str, Any]:
    return dict(json.loads(manage_shell(site, STATE).strip().splitlines()[-1]))


def both_widths(page: Page, shots: Shots, name: str) -> None:
    for width in WIDTHS:
        page.set_viewport_size({"width": width, "height": 900})
        shots.take(f"{name}-{width}")
    page.set_viewport_size({"width": WIDTHS[0], "height": 900})


def on_screen(page: Page, selector: str) -> bool:
    """Whether the element starts within the first screenful (no scrolling to reach it)."""
    box = page.locator(selector).bounding_box()
    return box is not None and 0 <= box["y"] < page.viewport_size["height"]  # type: ignore[index]


def test_a_researcher_starts_a_review_edits_the_plan_and_screens_by_keyboard(
    review_site: CurationSite, page: Page, shots: Shots
) -> None:
    site = review_site
    page.set_viewport_size({"width": WIDTHS[0], "height": 900})
    page.add_init_script(RECORD_VIOLATIONS)
    log_in(page, site)
    page.goto(site.url("/admin/projects/reviewsession/"))
    page.get_by_role("link", name="Start a review").click()
    page.get_by_label("Research question").fill(QUESTION)
    page.get_by_label("Field").select_option("cs")
    page.get_by_label(f"Replay source ({ENGINE})").check()
    page.get_by_label("Inclusion criteria").fill(CRITERIA)
    page.get_by_label("Most candidates").fill("40")
    both_widths(page, shots, "start-form")
    page.get_by_role("button", name="Start the review").click()

    # The plan checkpoint: the planner's queries, with the start form's choices filled in.
    expect(page.get_by_role("heading", name="Decide: the plan")).to_be_visible(timeout=60_000)
    expect(page.locator(".review-carried")).to_contain_text("sources, criteria")
    expect(page.get_by_label(f"Replay source ({ENGINE})")).to_be_checked()
    expect(page.get_by_label("This library (local)")).not_to_be_checked()
    expect(page.get_by_label("inclusion criteria")).to_have_value(CRITERIA)
    assert "AND" in page.get_by_label("Queries").input_value()  # the planner's
    page.get_by_label("Queries").fill("long documents\nlengthy texts")
    page.get_by_label("published from").fill("")
    page.get_by_label("published from").press("Enter")  # submits nothing (a disabled default)
    expect(page.get_by_role("heading", name="Decide: the plan")).to_be_visible()
    assert review_state(site)["decisions"] == []
    both_widths(page, shots, "plan-as-fields")
    page.get_by_role("button", name="Approve and search").click()

    # The search runs; the page follows it and shows the screening panel near the top.
    record = page.locator("#screening-record[data-paper]")
    expect(record).to_be_visible(timeout=60_000)
    expect(page.locator("#screening-counts")).to_contain_text("Screened 0 of 40")
    assert on_screen(page, "#screening-record h3")
    stored = review_state(site)
    assert stored["plan"]["queries"] == ["long documents", "lengthy texts"]
    assert stored["plan"]["engines"] == [ENGINE] and stored["plan"]["criteria"] == [CRITERIA]
    assert stored["plan"]["date_from"] is None
    [plan_decision] = stored["decisions"]
    assert plan_decision[1:3] == ["edit", "admin:lead"]
    assert set(plan_decision[3]) == {"queries", "engines", "criteria", "date_from"}
    both_widths(page, shots, "screening-first-record")

    # Ten records by keyboard, on this one page load.
    page.evaluate("window.__screeningPage = 'still here'")
    stopping_before = page.locator("#screening-stopping").inner_text()
    url = page.url
    decided: dict[str, str] = {}
    for number in range(1, 11):
        title = record.get_attribute("data-title") or ""
        assert title and title not in decided
        page.locator("#screening-record").focus()
        if title in RELEVANT:
            page.keyboard.press("i")
            confirmation = f"Included: {title}"
        else:
            page.keyboard.press("r")
            expect(page.locator("#screening-reason")).to_be_focused()
            page.keyboard.type(LONG_REASON if number == 1 else "off topic")
            page.keyboard.press("Enter")
            confirmation = f"Excluded: {title}"
        expect(page.locator("#screening-status")).to_contain_text(confirmation)
        expect(page.locator("#screening-counts")).to_contain_text(f"Screened {number} of 40")
        expect(page.locator("#screening-record")).to_be_focused()
        outline = "getComputedStyle(document.activeElement).outlineStyle"
        assert page.evaluate(outline) != "none"  # the focus is visible
        decided[title] = "included" if title in RELEVANT else "excluded"
    # "m": maybe, with a reason; the record goes to the back of the queue, nothing counted.
    expect(page.locator("#screening-keys")).to_contain_text("m maybe")
    unsure = record.get_attribute("data-title") or ""
    page.locator("#screening-record").focus()
    page.keyboard.press("r")
    page.keyboard.type("check the methods")
    page.keyboard.press("Escape")
    expect(page.locator("#screening-record")).to_be_focused()
    page.keyboard.press("m")
    expect(page.locator("#screening-status")).to_contain_text(
        f"Maybe (back later): {unsure} (reason: check the methods)"
    )
    expect(page.locator("#screening-counts")).to_contain_text("Screened 10 of 40")
    expect(page.locator("#screening-counts")).to_contain_text("1 maybe, 29 to go")
    assert record.get_attribute("data-title") != unsure
    assert review_state(site)["maybe"] == {
        unsure: {"admin:lead": "maybe", "_maybe": {"admin:lead": "check the methods"}}
    }
    assert page.evaluate("window.__screeningPage") == "still here"
    assert page.evaluate("performance.getEntriesByType('navigation').length") == 1
    assert page.evaluate("window.__violations") == []  # the script and SVG within the CSP
    assert page.url == url
    assert page.locator("#screening-stopping").inner_text() != stopping_before
    both_widths(page, shots, "after-ten-decisions")
    screened = review_state(site)["screened"]
    assert {title: row[0] for title, row in screened.items()} == decided
    assert all(row[2] == "admin:lead" for row in screened.values())
    assert LONG_REASON in [row[1] for row in screened.values()]

    # The figures, refreshed with the decisions: the recall curve and the PRISMA diagram.
    expect(page.locator("#recall-figure svg polyline#model")).to_be_visible()
    expect(page.locator("#prisma-figure svg")).to_be_visible()
    expect(page.locator("#prisma-figure")).to_contain_text("Records screened (n = 40)")
    assert page.evaluate(TEXT_OUTSIDE_ITS_BOX) == []
    # Decided later (outside this page), so that the next test can finish screening.
    manage_shell(site, DECIDE_MAYBE.format(title=unsure))


def test_screeners_disagree_side_by_side_and_a_resolution_needs_no_reload(
    review_site: CurationSite, page: Page, shots: Shots
) -> None:
    """Follows the first test's review (module fixture): another screener disagrees with
    one of lead's inclusions; lead resolves it, then finishes screening."""
    site = review_site
    included = [t for t, row in review_state(site)["screened"].items() if row[0] == "included"]
    assert included, "the first test included nothing"
    manage_shell(site, SECOND_SCREENER.format(title=included[0]))
    log_in(page, site)
    page.goto(site.url("/admin/projects/reviewsession/"))
    page.get_by_role("link", name=QUESTION[:60]).click()
    table = page.locator("#screening-disagreements")
    expect(table).to_be_visible()
    headers = table.locator("thead th").all_inner_texts()
    assert headers[:3] == ["paper", "admin:lead", "agent"]
    row = table.locator("tbody tr").first
    expect(row.locator("th")).to_have_text(included[0])
    expect(row.locator("td.vote")).to_have_text(["include", "exclude"])
    both_widths(page, shots, "disagreement")

    page.evaluate("window.__screeningPage = 'still here'")
    row.get_by_label("Why").fill("encoders are the point: it stays in")
    row.get_by_role("button", name="Resolve: include").click()
    expect(page.locator("#screening-status")).to_contain_text(f"Resolved as include: {included[0]}")
    expect(page.locator("#screening-disagreements")).to_have_count(0)
    expect(page.locator("#screening-resolutions")).to_contain_text("encoders are the point")
    assert page.evaluate("window.__screeningPage") == "still here"

    page.locator("button[data-finish]").click()
    expect(page.locator(".review-headline")).to_contain_text("Complete.")
    expect(page.locator("#prisma-figure svg")).to_be_visible()
    expect(page.locator("#prisma-figure")).to_contain_text("not screened (screening stopped)")
    expect(page.locator("#recall-figure svg")).to_be_visible()
    expect(page.locator("table.review-counts")).to_contain_text("Records screened")
    assert page.evaluate(TEXT_OUTSIDE_ITS_BOX) == []
    both_widths(page, shots, "complete")
    assert review_state(site)["status"] == "complete"

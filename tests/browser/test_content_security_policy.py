"""The Content-Security-Policy in Chromium (research_site/security_headers.py): the reading
room draws a PDF with pdf.js, the paper page's Cite box and the admin work, with no
violation reported; a script injected into the page does not run and is reported."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.browser.builders import log_in
from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite, Shots

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect

if TYPE_CHECKING:
    from playwright.sync_api import ConsoleMessage, Page

PDF = Path(__file__).resolve().parent.parent / "fixtures" / "pdfs" / "2304.02623v1.pdf"
# Runs before the page's own scripts (Playwright injects it outside the page's policy).
RECORD_VIOLATIONS = """
window.__violations = [];
document.addEventListener("securitypolicyviolation", (event) => {
  const where = `${event.sourceFile}:${event.lineNumber}`;
  window.__violations.push(`${event.effectiveDirective} ${event.blockedURI} ${where}`);
});
"""
INJECT_INLINE_SCRIPT = """() => {
  const script = document.createElement("script");
  script.textContent = "window.__injected = true;";
  document.body.appendChild(script);
  const image = document.createElement("img");
  image.setAttribute("onerror", "window.__injected = true;");
  image.src = "/no-such-image.png";
  document.body.appendChild(image);
}"""


def watch(page: Page) -> list[str]:
    """Console messages that speak of the Content Security Policy (Chromium reports every
    violation there), in a list that fills as the page runs."""
    reported: list[str] = []

    def on_console(message: ConsoleMessage) -> None:
        if "Content Security Policy" in message.text:
            reported.append(f"{page.url}: {message.text[:160]}")

    page.on("console", on_console)
    page.add_init_script(RECORD_VIOLATIONS)
    return reported


def test_the_reading_room_draws_a_pdf_with_no_policy_violation(
    page: Page, curation_site: CurationSite, shots: Shots
) -> None:
    site = curation_site
    paper_id = site.data["papers"]["attention"]["paper_id"]
    reported = watch(page)
    log_in(page, site)
    response = page.goto(site.url(f"/admin/papers/paper/{paper_id}/read/"))
    assert response is not None
    assert "script-src 'self'" in response.headers["content-security-policy"]
    page.set_input_files("input[name=pdf]", str(PDF))
    page.click(".upload-pdf button[type=submit]")
    expect(page.locator("body[data-reader-ready=true]")).to_have_count(1)
    expect(page.locator("#page-1[data-rendered=true] .textLayer span").first).to_be_attached()
    expect(page.locator("#reader-status")).to_have_text("4 pages.")
    # The Cite box's style picker (a script file now, it was an inline handler): the
    # reference in another style is put in place by the script, through the CSP.
    page.select_option("#cite-style", "ieee")
    expect(page.locator("#cite-in-text")).to_have_value("[1]")
    page.goto(site.url(f"/admin/papers/paper/{paper_id}/change/"))
    page.goto(site.url("/admin/papers/paper/?q=attention"))
    expect(page.locator("#result_list")).to_be_visible()
    shots.take("admin-after-reading")
    assert page.evaluate("window.__violations") == []
    assert reported == []


def test_an_injected_inline_script_is_blocked_and_reported(
    page: Page, curation_site: CurationSite
) -> None:
    site = curation_site
    reported = watch(page)
    log_in(page, site)
    page.goto(site.url("/admin/papers/paper/"))
    page.evaluate(INJECT_INLINE_SCRIPT)
    page.wait_for_function("window.__violations.length >= 2")
    assert page.evaluate("window.__injected === true") is False
    assert all(v.startswith("script-src") for v in page.evaluate("window.__violations"))
    assert reported  # Chromium said so on the console too

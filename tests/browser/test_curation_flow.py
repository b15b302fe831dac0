"""The curation flow in a real browser: log in, create a project, search the library and
add papers to it, set keywords in bulk, export BibTeX and read the file, and see the
project's years on the trends chart. Screenshots of every step: test-artifacts/browser/."""

from __future__ import annotations

import re
from pathlib import Path
from typing import TYPE_CHECKING

from tests.browser.builders import expect, listed_titles, log_in
from tests.browser.conftest import CurationSite, Shots
from tests.browser.pickers import autocomplete

if TYPE_CHECKING:
    from playwright.sync_api import Page

PROJECT = "Transformers survey"


def run_action(page: Page, action: str, **fields: str) -> None:
    """Tick every row, choose the action, fill its fields and run it."""
    page.check("#action-toggle")
    page.select_option("select[name=action]", action)
    for name, value in fields.items():
        for part in value.split(","):  # autocomplete boxes (papers.pickers): one at a time
            autocomplete(page, name, part.strip())
    page.click("button[name=index]")


def test_a_curator_builds_a_project_in_the_browser(
    page: Page, shots: Shots, curation_site: CurationSite, tmp_path: Path
) -> None:
    site, papers = curation_site, curation_site.data["papers"]
    log_in(page, site)
    shots.take("logged-in")

    # Create the project: saving leads to its (empty) papers page.
    page.goto(site.url("/admin/projects/project/add/"))
    page.fill("#id_name", PROJECT)
    page.click("input[name=_save]")
    expect(page.locator("h1")).to_have_text(f"Papers in {PROJECT}")
    shots.take("project-created")

    # Search the whole library and add what is found.
    page.click("#add-from-library")
    page.fill("#searchbar", "transformer")
    page.press("#searchbar", "Enter")
    expect(page.locator("#result_list tbody tr")).to_have_count(3)
    shots.take("library-search")
    run_action(page, "add_to_this_project")
    expect(page.locator("h1")).to_have_text(f"Papers in {PROJECT}")
    expect(page.locator(".messagelist")).to_contain_text("3 papers added")
    assert sorted(listed_titles(page)) == [
        "Attention Is All You Need",
        "Transformer-XL: Attentive Language Models beyond a Fixed-Length Context",
        "Universal Transformers",
    ]
    shots.take("papers-added")

    # Keywords for all of them at once.
    run_action(page, "set_keywords", keywords="to-read, survey")
    expect(page.locator(".messagelist")).to_contain_text("3 papers updated")
    cells = page.locator("#result_list tbody td.field-keyword_list").all_inner_texts()
    assert cells == ["survey, to-read"] * 3
    shots.take("keywords-set")

    # Export BibTeX: a file download, read back.
    with page.expect_download() as download_info:
        run_action(page, "export_bibtex")
    download = download_info.value
    assert download.suggested_filename == "transformers-survey.bib"
    saved = tmp_path / download.suggested_filename
    download.save_as(saved)
    bibtex = saved.read_text(encoding="utf-8")
    for name in ("attention", "universal", "xl"):
        assert f"{{{papers[name]['citekey']},\n" in bibtex
    for name in ("resnet", "lstm"):
        assert papers[name]["citekey"] not in bibtex
    assert bibtex.count("keywords = {survey, to-read}") == 3

    # Trends: the chart carries the project's years, and only those.
    page.click("#trends-link")
    expect(page.locator("h1")).to_have_text(f"Trends in {PROJECT}")
    timeline = page.locator("#chart-timeline svg")
    expect(timeline).to_be_visible()
    years = timeline.locator("text.axis-label").all_text_contents()
    assert years == ["2017", "2018", "2019"]
    bars = timeline.locator("rect.bar title").all_text_contents()
    assert bars == ["2017: 1 paper", "2018: 1 paper", "2019: 1 paper"]
    expect(page.locator("#chart-keywords")).to_contain_text("to-read")
    expect(page.locator("#trend-summary")).to_contain_text(re.compile(r"3 papers, 2017.2019"))
    shots.take("trends")


BIBTEX = """@inproceedings{vaswani2017attention,
  title = {Attention Is All You Need},
  author = {Vaswani, Ashish and Shazeer, Noam},
  booktitle = {NeurIPS},
  year = {2017}
}

@article{devlin2019bert,
  title = {{BERT}: Pre-training of Deep Bidirectional Transformers},
  author = {Devlin, Jacob and Chang, Ming-Wei},
  year = {2019}
}
"""


def test_a_bibtex_upload_previews_duplicates_before_importing(
    page: Page, shots: Shots, curation_site: CurationSite, tmp_path: Path
) -> None:
    site = curation_site
    log_in(page, site)
    page.goto(site.url("/admin/papers/paper/"))
    page.click("text=Import BibTeX")
    bib = tmp_path / "references.bib"
    bib.write_text(BIBTEX, encoding="utf-8")
    page.set_input_files("#id_file", str(bib))
    page.click("input[name=_preview]")
    expect(page.locator("#preview-summary")).to_contain_text(
        "2 entries: 1 new, 1 already in the library"
    )
    expect(page.locator("#preview tbody tr").first).to_contain_text("in the library")
    shots.take("bibtex-preview")
    page.check("#id_skip_duplicates")
    page.click("input[name=_import]")
    expect(page.locator(".messagelist")).to_contain_text(
        "1 created, 0 updated, 0 skipped (already in the library, unchanged), 0 failed; "
        "1 skipped as already in the library"
    )
    page.fill("#searchbar", "bidirectional")
    page.press("#searchbar", "Enter")
    expect(page.locator("#result_list tbody tr")).to_have_count(1)
    shots.take("bibtex-imported")

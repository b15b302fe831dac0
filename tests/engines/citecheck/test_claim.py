"""Reading the citing sentence against papers without a PDF (engines/citecheck/claim.py),
through citations_check as the MCP tool calls it: the paths the /mcp tests on the real
ACL records (tests/mcp/test_check_citations_claims.py) do not take."""

from __future__ import annotations

from typing import Any

import pytest

from engines.citecheck.selectors import citations_check

pytestmark = pytest.mark.django_db

GLACIERS = dict(
    authors=["Imogen Quillfeather", "Rufus Penhallow", "Ann Lee"],
    abstract="We measure how fast alpine glaciers retreat with satellite altimetry and find "
    "that glacier retreat doubled between 1990 and 2020 across the Alps.",
)
SENTENCE = "Satellite altimetry shows that alpine glacier retreat doubled since 1990"


def only(text: str) -> dict[str, Any]:
    (citation,) = citations_check(text=text)["citations"]
    return dict(citation)


def test_none_of_the_papers_a_marker_names_fits_but_one_of_a_nearby_year_does(
    make_paper,
) -> None:
    make_paper("Glacier retreat measured by satellite altimetry", year=2018, **GLACIERS)
    for title in ("Sourdough fermentation kinetics", "Falconry and medieval law"):
        make_paper(title, authors=GLACIERS["authors"], year=2019,
                   abstract=f"A study of {title.lower()} in historical archives.")  # fmt: skip
    citation = only(f"{SENTENCE} (Quillfeather et al., 2019).")
    assert citation["status"] == "exists"
    assert citation["paper"]["cite"].startswith("Quillfeather et al. 2018. Glacier retreat")
    assert citation["metadata"] == ["year"]
    (flag,) = citation["flags"]
    assert flag["flag"] == "wrong_paper" and flag["fit"] < citation["fit"]


def test_an_entry_the_library_does_not_hold_finds_the_authors_paper_the_sentence_is_about(
    make_paper,
) -> None:
    make_paper("Glacier retreat measured by satellite altimetry", year=2018, **GLACIERS)
    citation = only(
        f"{SENTENCE} [1].\n\nReferences\n[1] I. Quillfeather, R. Penhallow, \u201cMountain "
        "ice in decline,\u201d in Proceedings, 2018.\n"
    )
    assert citation["status"] == "exists"
    assert citation["paper"]["cite"].startswith("Quillfeather et al. 2018. Glacier retreat")
    assert citation["metadata"] == ["title"]
    assert citation["picked"]["among"] == 1


def test_a_sentence_about_something_else_changes_nothing(make_paper) -> None:
    make_paper("Glacier retreat measured by satellite altimetry", year=2018, **GLACIERS)
    make_paper("Sourdough fermentation kinetics", authors=GLACIERS["authors"], year=2019)
    citation = only("Honeybees dream in colour at night (Quillfeather et al., 2019).")
    assert citation["paper"]["cite"].startswith("Quillfeather et al. 2019. Sourdough")
    assert citation["metadata"] == "ok"
    assert "flags" not in citation

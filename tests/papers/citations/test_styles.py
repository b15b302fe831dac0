"""Citations in CSL styles (papers/citations): APA 7, Chicago author-date (18th), IEEE and
Vancouver for a paper with 22 authors, a paper with no year and a corporate author, the
CSL-JSON mapping, styles, locales and locators.

The expected strings are written from each style's rules (the APA Publication Manual 7th
ed. §9.8 and §10.1, the Chicago Manual of Style 18th ed. ch. 13, the IEEE Reference Guide
2023, Citing Medicine 2nd ed.) as the CSL styles encode them; citeproc-js, the reference
processor, gives the same text. citeproc-py 0.11.1 alone does not, in four places, each
corrected in papers/citations/styles.py and marked below as "citeproc-py deviation":
Chicago's full given names (`initialize="false"`), the period or comma inside closing
quotes in American English (`punctuation-in-quote`), the space after IEEE's and
Vancouver's '[1]' / '1.' label, and MLA's title-less in-text citation (`disambiguate`).
Text output has no italics; the HTML test checks them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from core.errors import InvalidInput
from papers.citations import styles
from papers.citations.csl import citations_for_refs, citations_format, csl_name, paper_to_csl
from papers.models import Author, Paper
from papers.selectors import with_relations
from tests.papers.citations.builders import CITED, EXPECTED, MINIMAL_CSL, WHO_URL

pytestmark = pytest.mark.django_db


@pytest.fixture
def papers(make_paper: Callable[..., Paper]) -> dict[str, Paper]:
    return {which: make_paper(**values) for which, values in CITED.items()}


def loaded(*papers: Paper) -> list[Paper]:
    by_id = {p.pk: p for p in with_relations(Paper.objects.filter(pk__in=[p.pk for p in papers]))}
    return [by_id[p.pk] for p in papers]


@pytest.mark.parametrize(("style", "which"), list(EXPECTED))
def test_the_four_styles_give_the_references_their_rules_define(
    papers: dict[str, Paper], style: str, which: str
) -> None:
    paper = papers[which]
    result = citations_format(papers=loaded(paper), style=style, locators={paper.pk: "5"})
    in_text, reference = EXPECTED[style, which]
    assert result.entries[0].reference == reference
    assert result.entries[0].in_text == in_text
    assert result.entries[0].paper_id == paper.pk
    assert result.entries[0].citekey == paper.citekey


def test_without_a_locator_the_in_text_citation_has_no_page(papers: dict[str, Paper]) -> None:
    result = citations_format(papers=loaded(papers["many"]), style="apa")
    assert result.entries[0].in_text == "(Adams et al., 2023)"
    assert result.citation == "(Adams et al., 2023)"


def test_a_page_label_in_the_locator_is_not_doubled(papers: dict[str, Paper]) -> None:
    paper = papers["undated"]
    for given in ("p. 5", "pp. 5", "page 5", "5"):
        result = citations_format(papers=loaded(paper), style="apa", locators={paper.pk: given})
        assert result.entries[0].in_text == "(Smith & Doe, n.d., p. 5)"
    ranged = citations_format(papers=loaded(paper), style="apa", locators={paper.pk: "5-7"})
    assert ranged.entries[0].in_text == "(Smith & Doe, n.d., pp. 5–7)"


def test_bad_locators_are_refused(papers: dict[str, Paper]) -> None:
    paper, other = papers["many"], papers["undated"]
    with pytest.raises(InvalidInput, match="not cited"):
        citations_format(papers=loaded(paper), locators={other.pk: "5"})
    with pytest.raises(InvalidInput, match="page"):
        citations_format(papers=loaded(paper), locators={paper.pk: "5" * 60})


def test_author_date_styles_sort_and_numeric_styles_number_in_citation_order(
    papers: dict[str, Paper],
) -> None:
    chosen = loaded(papers["corporate"], papers["many"], papers["undated"])
    apa = citations_format(papers=chosen, style="apa")
    assert [e.paper_id for e in apa.entries] == [
        papers["many"].pk,
        papers["undated"].pk,
        papers["corporate"].pk,
    ]  # Adams, Smith, World
    assert apa.citation == (
        "(Adams et al., 2023; Smith & Doe, n.d.; World Health Organization, 2020)"
    )
    ieee = citations_format(papers=chosen, style="ieee")
    assert [e.paper_id for e in ieee.entries] == [p.pk for p in chosen]
    assert [e.in_text for e in ieee.entries] == ["[1]", "[2]", "[3]"]
    assert ieee.entries[1].reference.startswith("[2] A. Adams et al.")


def test_html_output_italicises_the_journal_and_escapes_text(
    papers: dict[str, Paper], make_paper: Callable[..., Paper]
) -> None:
    result = citations_format(papers=loaded(papers["many"]), style="apa", output="html")
    assert "<i>Journal of Machine Learning Research</i>, <i>24</i>(7), 101–135." in (
        result.entries[0].reference
    )
    hostile = make_paper("Tags <script>alert(1)</script> & more", authors=["Eve Evans"])
    html = citations_format(papers=loaded(hostile), style="apa", output="html")
    assert "<script>" not in html.entries[0].reference
    assert "&lt;script&gt;alert(1)&lt;/script&gt; &amp; more" in html.entries[0].reference


def test_mla_in_text_citations_carry_no_title_without_an_ambiguity(
    papers: dict[str, Paper],
) -> None:
    # citeproc-py deviation: its missing `disambiguate` test counted as true and put the
    # title in every MLA citation ('(Adams et al., “A Large...” 5)').
    paper = papers["many"]
    result = citations_format(
        papers=loaded(paper), style="modern-language-association", locators={paper.pk: "5"}
    )
    assert result.entries[0].in_text == "(Adams et al. 5)"
    assert result.entries[0].reference.startswith("Adams, Alice, et al. “A Large")


def test_mixed_case_words_keep_their_case_where_a_style_capitalises(
    make_paper: Callable[..., Paper],
) -> None:
    # citeproc-py deviation: capitalize-first made 'arXiv' 'ArXiv' (CSL: lower-case words only).
    preprint = make_paper("Attention is all you need", authors=["Ashish Vaswani"],
                          arxiv_id="1706.03762")  # fmt: skip
    result = citations_format(papers=loaded(preprint), style="apa")
    assert result.entries[0].reference == (
        "Vaswani, A. (2017). Attention is all you need (arXiv:1706.03762). arXiv. "
        "https://arxiv.org/abs/1706.03762"
    )


def test_british_english_keeps_punctuation_outside_quotes(papers: dict[str, Paper]) -> None:
    result = citations_format(papers=loaded(papers["undated"]), style="ieee", locale="en-GB")
    # British quotation marks, and the comma after them.
    assert "‘Notes on undated manuscripts’," in result.entries[0].reference
    assert result.locale == "en-GB"


def test_the_default_locale_is_the_styles_own(papers: dict[str, Paper]) -> None:
    din = citations_format(papers=loaded(papers["undated"]), style="din-1505-2", locale=None)
    assert din.locale == "de-DE"  # the style declares it
    assert citations_format(papers=loaded(papers["undated"]), locale=None).locale == "en-US"
    german = citations_format(papers=loaded(papers["undated"]), style="apa", locale="de")
    assert german.locale == "de-DE"
    assert german.entries[0].in_text == "(Smith & Doe, o. J.)"
    assert citations_format(papers=loaded(papers["undated"]), locale="en").locale == "en-US"


def test_unknown_styles_and_locales_are_refused_with_close_matches(
    papers: dict[str, Paper],
) -> None:
    chosen = loaded(papers["many"])
    with pytest.raises(InvalidInput) as error:
        citations_format(papers=chosen, style="chicago-autor-date")
    assert "chicago-author-date" in error.value.details["suggestions"]
    assert "Did you mean" in error.value.message
    with pytest.raises(InvalidInput, match="not a style id"):
        citations_format(papers=chosen, style="../../etc/passwd")
    with pytest.raises(InvalidInput) as error:
        citations_format(papers=chosen, locale="en-XX")
    assert error.value.details["field"] == "locale"
    with pytest.raises(InvalidInput, match="text or html"):
        citations_format(papers=chosen, output="rtf")
    with pytest.raises(InvalidInput, match="No papers"):
        citations_format(papers=[])


def test_styles_are_found_by_alias_and_repository_url(papers: dict[str, Paper]) -> None:
    chosen = loaded(papers["many"])
    by_url = citations_format(papers=chosen, style="http://www.zotero.org/styles/ieee")
    assert by_url.style_title.startswith("IEEE")
    assert citations_format(papers=chosen, style="vancouver").style_title.startswith("NLM")
    assert citations_format(papers=chosen, style="MLA").style_title.startswith("MLA")


def test_a_csl_document_can_be_given_as_text(papers: dict[str, Paper]) -> None:
    result = citations_format(papers=loaded(papers["undated"]), style=MINIMAL_CSL)
    assert result.style == "custom"
    assert result.style_title == "Minimal"
    assert result.entries[0].reference == "NOTES ON UNDATED MANUSCRIPTS"
    assert result.entries[0].in_text == "<Smith, Doe>"


def test_unsafe_or_foreign_csl_documents_are_refused(papers: dict[str, Paper]) -> None:
    chosen = loaded(papers["undated"])
    entity = '<?xml version="1.0"?><!DOCTYPE s [<!ENTITY x SYSTEM "file:///etc/passwd">]><s/>'
    with pytest.raises(InvalidInput, match="DOCTYPE"):
        citations_format(papers=chosen, style=entity)
    with pytest.raises(InvalidInput, match="CSL namespace"):
        citations_format(papers=chosen, style="<html><body/></html>")
    with pytest.raises(InvalidInput, match="well-formed"):
        citations_format(papers=chosen, style="<style")


def test_citekeys_and_ids_name_the_papers_with_a_locator_each(papers: dict[str, Paper]) -> None:
    many, undated = papers["many"], papers["undated"]
    result = citations_for_refs(
        refs=[many.citekey, undated.pk], style="apa",
        locators={many.citekey: "5", str(undated.pk): "12"},
    )  # fmt: skip
    assert [e.in_text for e in result.entries] == [
        "(Adams et al., 2023, p. 5)",
        "(Smith & Doe, n.d., p. 12)",
    ]
    assert result.citation == "(Adams et al., 2023, p. 5; Smith & Doe, n.d., p. 12)"
    with pytest.raises(InvalidInput, match="same paper"):
        citations_for_refs(refs=[many.pk], locators={many.citekey: "5", str(many.pk): "6"})


# --- the CSL-JSON mapping ------------------------------------------------------------------


def test_paper_to_csl_maps_the_record_as_zotero_would(papers: dict[str, Paper]) -> None:
    item = paper_to_csl(loaded(papers["many"])[0])
    assert item["id"] == item["citation-key"] == papers["many"].citekey
    assert item["type"] == "article-journal"
    assert item["author"][0] == {"family": "Adams", "given": "Alice"}
    assert len(item["author"]) == 22
    assert item["issued"] == {"date-parts": [[2023]]}
    assert item["container-title"] == "Journal of Machine Learning Research"
    assert (item["volume"], item["issue"], item["page"]) == ("24", "7", "101-135")
    assert item["DOI"] == "10.5555/jmlr.2023.101"
    undated = paper_to_csl(loaded(papers["undated"])[0])
    assert "issued" not in undated
    corporate = paper_to_csl(loaded(papers["corporate"])[0])
    assert corporate["type"] == "report"
    assert corporate["author"] == [{"literal": "World Health Organization"}]
    assert corporate["URL"] == WHO_URL


def test_preprints_conference_papers_and_full_dates(make_paper: Callable[..., Paper]) -> None:
    preprint = paper_to_csl(loaded(make_paper("A preprint", arxiv_id="2301.00001"))[0])
    assert preprint["type"] == "article"
    assert preprint["publisher"] == "arXiv"
    assert preprint["number"] == "arXiv:2301.00001"
    assert preprint["URL"] == "https://arxiv.org/abs/2301.00001"
    talk = make_paper("A talk", entry_type="inproceedings", venue="Proceedings of ACL",
                      publication_date="2017-06-12", arxiv_id="1706.00002")  # fmt: skip
    item = paper_to_csl(loaded(talk)[0])
    assert item["type"] == "paper-conference"
    assert item["container-title"] == "Proceedings of ACL"
    assert item["issued"] == {"date-parts": [[2017, 6, 12]]}
    assert "publisher" not in item  # published: the arXiv copy is not the venue


@pytest.mark.parametrize(
    ("name", "family", "given", "expected"),
    [
        ("Ludwig van Beethoven", "van Beethoven", "Ludwig",
         {"non-dropping-particle": "van", "family": "Beethoven", "given": "Ludwig"}),
        ("World Health Organization", "Organization", "World Health",
         {"literal": "World Health Organization"}),
        ("Gemini Team", "Team", "Gemini", {"literal": "Gemini Team"}),
        ("OpenAI", "OpenAI", "", {"family": "OpenAI"}),
        ("Ada Lovelace", "Lovelace", "Ada", {"family": "Lovelace", "given": "Ada"}),
    ],
)  # fmt: skip
def test_names_split_into_csl_parts(
    name: str, family: str, given: str, expected: dict[str, Any]
) -> None:
    author = Author(name=name, family_name=family, given_name=given)
    assert csl_name(author) == expected


def test_every_common_style_exists() -> None:
    for style in styles.COMMON_STYLES:
        assert styles.style_resolve(style).document.startswith(b"<?xml")

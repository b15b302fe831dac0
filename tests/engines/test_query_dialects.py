"""Search strings in each source's syntax (engines/query_dialects.py): one table per
dialect of what is sent and what is noted as lost, and strict mode's refusals
(docs/SEARCH-STRINGS.md, "Translation per source")."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from engines.query_dialects import DIALECTS, Untranslatable, translate
from engines.search_strings import DateRange, parse

REVIEW = (
    '("machine translation"[tiab] OR nmt[tiab]) AND neoplasms[mh] NOT review[pt] AND 2015:2020[dp]'
)

# --- translation, one table per dialect -----------------------------------------------------

TRANSLATIONS: list[tuple[str, str, str, list[str]]] = [
    # (dialect, search string, query sent, words each note must hold)
    ("pubmed", "heart attack[tiab] AND smith j[au]", "heart attack[tiab] AND smith j[au]", []),
    ("pubmed", "deep learning[ab] NOT (mouse OR rat)", "deep learning[tiab] NOT (mouse OR rat)",
     ["no abstract-only field"]),
    ("pubmed", REVIEW,
     '((("machine translation"[tiab] OR nmt[tiab]) AND neoplasms[mh]) NOT review[pt]) '
     "AND 2015:2020[dp]", []),
    ("pubmed", "x[Title/Abstract] AND 2019/06:3000[dp]", "(x[tiab]) AND 2019/06:3000[dp]", []),
    ("europepmc", REVIEW,
     '(((TITLE_ABS:"machine translation" OR TITLE_ABS:nmt) AND MESH_HEADING:"neoplasms") '
     'NOT PUB_TYPE:"review") AND PUB_YEAR:[2015 TO 2020]', []),
    ("europepmc", "heart attack[ti] AND smith j[au] AND covid-19[tw]",
     '(TITLE:heart AND TITLE:attack) AND AUTH:"smith j" AND '
     '(TITLE_ABS:"covid-19" OR KW:"covid-19" OR MESH_HEADING:"covid-19")', []),
    ("europepmc", "transl*[ab] AND 2019/06[dp]",
     "(ABSTRACT:transl*) AND FIRST_PDATE:[2019-06-01 TO 2019-06-30]", []),
    ("arxiv", "heart attack[tiab] AND smith j[au]",
     "((ti:heart OR abs:heart) AND (ti:attack OR abs:attack)) AND au:smith",
     ["authors by surname"]),
    ("arxiv", "deep learning[ab] NOT (mouse OR rat)",
     "(abs:deep AND abs:learning) ANDNOT (all:mouse OR all:rat)", []),
    ("arxiv", "transl*[ti] AND bert", "ti:transl AND all:bert", ["no truncation"]),
    ("google_scholar", "(bert OR elmo) AND attention[ti] NOT (vision OR image)",
     "bert OR elmo intitle:attention -vision -image", []),
    ("google_scholar", "smith j[au] AND cancer[tiab]", 'author:"j smith" cancer',
     ["whole text"]),
    ("google_scholar", "((a AND b) OR c) AND d", "a OR b OR c d", ["no parentheses"]),
    ("openalex", "(bert OR elmo) AND attention NOT vision",
     "((bert OR elmo) AND attention) NOT vision", []),
    ("openalex", "transformer*[tiab]", "transformer", ["title, abstract and full text",
                                                       "no truncation"]),
    ("local", REVIEW, '(("machine translation" OR nmt) AND neoplasms) NOT review',
     ["field tags widened"]),
    ("local", "transl* AND smith j[au]", "transl* AND smith", ["field tags widened"]),
    # DBLP requires every word: an OR group is DBLP's a|b, not words it would all require
    ("dblp", "(bert OR elmo) AND attention[ti]", "bert|elmo attention", ["no fields"]),
    ("dblp", "(asthma OR wheez*) NOT child*", "asthma|wheez", ["NOT parts left out"]),
    ("dblp", REVIEW, "machine|translation|nmt neoplasms",
     ["NOT parts left out", "an OR of all their words", "no MeSH heading field", "no fields"]),
    ("dblp", '"deep learning" AND transl*', "deep learning transl", ["no phrases"]),
    ("plain", "(bert OR elmo) AND attention[ti]", "bert elmo attention",
     ["OR groups sent as keywords", "field tags dropped"]),
    ("plain", "transl* NOT vision", "transl", ["no truncation", "NOT parts left out"]),
]  # fmt: skip


@pytest.mark.parametrize(("dialect", "text", "sent", "notes"), TRANSLATIONS)
def test_each_dialect_gets_its_own_syntax_and_says_what_it_lost(
    dialect: str, text: str, sent: str, notes: list[str]
) -> None:
    translation = translate(parse(text), dialect)
    assert translation.query == sent
    assert len(translation.notes) == len(notes), translation.notes
    for words in notes:
        assert any(words in note for note in translation.notes), (words, translation.notes)


def test_every_dialect_renders_the_review_string() -> None:
    search = parse(REVIEW)
    for dialect in DIALECTS:
        translation = translate(search, dialect)
        # DBLP has no phrases: their words (in an OR of words) stand for them
        phrase = "machine|translation" if dialect == "dblp" else "machine translation"
        assert translation.query and phrase in translation.query


def test_sources_whose_syntax_has_dates_carry_them_the_others_filter_by_the_request() -> None:
    search = parse("x AND 2015:2020[dp]")
    for dialect in ("pubmed", "europepmc"):
        assert translate(search, dialect).dates is None
    for dialect in ("arxiv", "google_scholar", "openalex", "dblp", "local", "plain"):
        assert translate(search, dialect).dates == DateRange("2015", "2020")


def test_an_open_date_range_ends_this_year_on_europe_pmc() -> None:
    sent = translate(parse("x AND 2015:3000[dp]"), "europepmc").query
    assert sent == f"(x) AND PUB_YEAR:[2015 TO {datetime.now(UTC).year}]"


def test_the_library_widens_months_to_years_with_a_note() -> None:
    translation = translate(parse("x AND 2019/06[dp]"), "local")
    assert any("whole years" in note for note in translation.notes)


def test_an_unknown_dialect_is_read_as_plain_keywords() -> None:
    translation = translate(parse("(a OR b) AND c"), "somebody_elses")
    assert (translation.dialect, translation.query) == ("plain", "a b c")


# --- strict mode: refuse rather than leave out a constraint -----------------------------------

STRICT: list[tuple[str, str, str | None]] = [
    # (dialect, search string, words of the refusal; None: translated)
    ("plain", "cancer NOT review", "NOT parts left out"),
    ("plain", "neoplasms[mh] AND therapy", "no MeSH heading field"),
    ("plain", "smith j[au] AND cancer", "no author field"),
    ("plain", "(bert OR elmo) AND attention[tiab] AND transl*", None),
    ("dblp", "cancer NOT review", "NOT parts left out"),
    ("dblp", "smith j[au] AND cancer", "no author field"),
    ("dblp", '("machine translation" OR nmt) AND attention[tiab] AND transl*', None),
    ("arxiv", "neoplasms[mh]", "no MeSH heading field"),
    ("arxiv", "cancer NOT review", None),
    ("openalex", "randomized controlled trial[pt] AND x", "no publication type field"),
    ("openalex", "smith j[au]", "no author field"),
    ("google_scholar", "x NOT (a AND b)", "single terms only"),
    ("google_scholar", "x NOT (a OR b)", None),
    ("europepmc", REVIEW, None),
    ("pubmed", REVIEW, None),
    ("local", REVIEW, None),
]


@pytest.mark.parametrize(("dialect", "text", "refusal"), STRICT)
def test_strict_mode_refuses_a_source_that_would_drop_a_constraint(
    dialect: str, text: str, refusal: str | None
) -> None:
    search = parse(text)
    if refusal is None:
        assert translate(search, dialect, strict=True).query == translate(search, dialect).query
        return
    with pytest.raises(Untranslatable) as raised:
        translate(search, dialect, strict=True)
    assert refusal in raised.value.message
    assert refusal in " ".join(translate(search, dialect).notes)  # lenient: a note instead


def test_preprint_servers_search_mesh_and_types_as_words_and_say_so() -> None:
    written = parse('asthma[tiab] AND "anti-asthmatic agents"[mh]')
    journals = translate(written, "europepmc")
    assert 'MESH_HEADING:"anti-asthmatic agents"' in journals.query and not journals.notes
    preprints = translate(written, "europepmc_preprints")
    assert preprints.query == 'TITLE_ABS:asthma AND TITLE_ABS:"anti-asthmatic agents"'
    assert any("preprints have no MeSH" in note for note in preprints.notes)
    with pytest.raises(Untranslatable, match="preprints have no MeSH"):
        translate(written, "europepmc_preprints", strict=True)  # a review refuses it

"""The reviewers' search-string language (engines/search_strings.py): what is one, how it
parses, the errors that name a position, and its translation into each source's syntax
(docs/SEARCH-STRINGS.md)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from core.errors import InvalidInput
from engines.search_strings import (
    DIALECTS,
    And,
    Clause,
    DateRange,
    Not,
    Or,
    Untranslatable,
    dates_within,
    is_search_string,
    parse,
    translate,
)

REVIEW = (
    '("machine translation"[tiab] OR nmt[tiab]) AND neoplasms[mh] NOT review[pt] AND 2015:2020[dp]'
)


# --- what is a search string ------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cancer[tiab]", True),
        ("heart failure[Title/Abstract]", True),
        ("Neoplasms[MeSH Terms] AND therapy", True),
        ("(bleu OR meteor) AND neural", True),
        ("neural AND (bleu OR meteor)", True),
        # Questions and the existing query languages stay as they were.
        ("What are recent papers on machine translation?", False),
        ("transformer AND attention", False),
        ("deep learning (survey)", False),
        ("risk of stroke (OR 2.1, 95% CI)", False),
        ('ti:"attention is all you need" AND au:vaswani', False),
        ("(ti:bert OR abs:bert) AND cat:cs.CL", False),
        ('intitle:transformer author:"A Vaswani"', False),
        ("TITLE:cancer AND (AUTH:smith OR AUTH:jones)", False),
    ],
)
def test_a_search_string_is_told_by_its_tags_or_boolean_groups(text: str, expected: bool) -> None:
    assert is_search_string(text) is expected


# --- parsing ----------------------------------------------------------------------------------


def test_a_review_search_string_parses_to_its_tree_and_date_range() -> None:
    search = parse(REVIEW)
    assert search.dates == DateRange("2015", "2020")
    assert search.node == Not(
        And(
            (
                Or(
                    (
                        Clause(("machine", "translation"), "tiab", quoted=True),
                        Clause(("nmt",), "tiab"),
                    )
                ),
                Clause(("neoplasms",), "mh"),
            )
        ),
        Clause(("review",), "pt"),
    )


@pytest.mark.parametrize(
    ("text", "node"),
    [
        ("heart attack[tiab]", Clause(("heart", "attack"), "tiab")),
        ("Smith J[Author]", Clause(("Smith", "J"), "au")),
        ("transl*[ti]", Clause(("transl*",), "ti")),
        ("a b", Clause(("a", "b"))),
        ("a[ti] b[ab]", And((Clause(("a",), "ti"), Clause(("b",), "ab")))),
        ("(a OR b) c", And((Or((Clause(("a",)), Clause(("b",)))), Clause(("c",))))),
        ("a NOT b AND c", And((Not(Clause(("a",)), Clause(("b",))), Clause(("c",))))),
        ("((a OR b))", Or((Clause(("a",)), Clause(("b",))))),
        ('"heart failure" [tiab]', Clause(("heart", "failure"), "tiab", quoted=True)),
    ],
)
def test_terms_tags_and_operators_parse(text: str, node: object) -> None:
    assert parse(text).node == node


@pytest.mark.parametrize(
    ("text", "dates"),
    [
        ("x AND 2015[dp]", DateRange("2015", "2015")),
        ("x AND 2015:2020[dp]", DateRange("2015", "2020")),
        ("x AND 2015:3000[dp]", DateRange("2015", None)),
        ("x AND 2019/06:2020/02/29[dp]", DateRange("2019-06", "2020-02-29")),
        ("2018[dp] AND x", DateRange("2018", "2018")),
        ('x AND "2018/03/01"[Date - Publication]', DateRange("2018-03-01", "2018-03-01")),
    ],
)
def test_date_ranges_parse(text: str, dates: DateRange) -> None:
    search = parse(text)
    assert search.dates == dates and search.node == Clause(("x",))


@pytest.mark.parametrize(
    ("text", "position", "words"),
    [
        ('"heart failure[tiab]', 1, "never closed"),
        ("(a OR b", 1, "never closed"),
        ("a OR b)", 7, "closes no parenthesis"),
        ("a AND", 3, "needs a term after it"),
        ("OR a", 1, "needs a term before it"),
        ("a AND OR b", 7, "needs a term before it"),
        ("cancer[tiab] OR x AND y", 19, "mixed with AND or NOT"),
        ("a OR b NOT c", 8, "mixed with AND or NOT"),
        ("cancer[xyz]", 7, "Unknown field tag [xyz]"),
        ("cancer[tiab", 7, "never closed"),
        ("(a OR b)[tiab]", 9, "not to a group"),
        ("[tiab] cancer", 1, "follows no term"),
        ("tra*[tiab]", 1, "at least 4 letters"),
        ("t*ansl[tiab]", 1, "truncation is a * at the end"),
        ('"machine transl*"[tiab]', 1, "inside a quoted phrase"),
        ("smit*[au]", 1, "takes no truncation"),
        ("x AND 2015-13[dp]", 7, "is not a date"),
        ("x AND 2020:2015[dp]", 7, "ends before it starts"),
        ("x OR 2015[dp]", 6, "filters the whole search"),
        ("(x AND 2015[dp])", 8, "filters the whole search"),
        ("x NOT 2015[dp]", 7, "filters the whole search"),
        ("x AND 2015[dp] AND 2016[dp]", 20, "more than one date range"),
        ("2015:2020[dp]", 1, "only a date range"),
        ("2015[dp] NOT x", 10, "NOT needs a term before it"),
        ("a ] b", 3, "closes no field tag"),
        ("   ", 1, "empty"),
    ],
)
def test_malformed_strings_are_refused_with_the_position(
    text: str, position: int, words: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        parse(text)
    error = raised.value
    assert words in error.message
    assert f"(at character {position})" in error.message
    assert error.details["position"] == position and error.details["hint"]


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
        assert translation.query and "machine translation" in translation.query


def test_sources_whose_syntax_has_dates_carry_them_the_others_filter_by_the_request() -> None:
    search = parse("x AND 2015:2020[dp]")
    for dialect in ("pubmed", "europepmc"):
        assert translate(search, dialect).dates is None
    for dialect in ("arxiv", "google_scholar", "openalex", "local", "plain"):
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


# --- dates -------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("dates", "date_from", "date_to", "expected"),
    [
        (None, "2019", None, ("2019", None)),
        (DateRange("2015", "2020"), None, None, ("2015", "2020")),
        (DateRange("2015", "2020"), "2018-05-01", None, ("2018-05-01", "2020")),
        (DateRange("2015", None), None, "2016-02", ("2015", "2016-02")),
        (DateRange("2019-06", "2019-06"), "2019", "2019", ("2019-06", "2019-06")),
    ],
)
def test_the_request_dates_narrow_to_the_search_string_range(
    dates: DateRange | None,
    date_from: str | None,
    date_to: str | None,
    expected: tuple[str | None, str | None],
) -> None:
    assert dates_within(dates, date_from, date_to) == expected


def test_ranges_that_do_not_overlap_are_refused() -> None:
    with pytest.raises(InvalidInput, match="do not overlap"):
        dates_within(DateRange("2015", "2016"), "2020", None)

"""The reviewers' search-string language (engines/search_strings.py): what is one, how it
parses, the errors that name a position, and how its date range narrows a request's
(docs/SEARCH-STRINGS.md)."""

from __future__ import annotations

import pytest

from core.errors import InvalidInput
from engines.search_strings import (
    And,
    Clause,
    DateRange,
    Not,
    Or,
    dates_within,
    is_search_string,
    parse,
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
        ("x 2018[dp]", DateRange("2018", "2018")),  # the tag dates only the word before it
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

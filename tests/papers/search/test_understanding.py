"""Query understanding (issue 38): authors, years and venues named in a library search read
as filters where the intent is clear, through the same filter path as explicit filters,
with a note; names that the library uses as words are not taken for names. Runs on SQLite
and, with DATABASE_URL, on PostgreSQL."""

from __future__ import annotations

import re

import pytest
from django.db import connection
from django.test import override_settings

from papers.schemas import PaperRecord
from papers.search.facets import facet_counts
from papers.search.local import local_search, local_search_ids, search_filters_build
from papers.search.understanding import _Reader, read_query
from papers.services import papers_upsert
from projects.services import project_add_papers, project_create

pytestmark = pytest.mark.django_db


def paper(key: str, title: str, authors: list[str], year: int, venue: str = "") -> PaperRecord:
    return PaperRecord.build(
        title=title, authors=authors, year=year, venue=venue.upper() + " proceedings",
        venue_short=venue, identifiers={"test": key},
    )  # fmt: skip


@pytest.fixture
def shelf(db: None) -> dict[str, int]:
    records = [
        paper("vaswani17", "Attention for translation", ["Ashish Vaswani", "N. Shazeer"], 2017),
        paper("vaswani19", "Attention in music generation", ["Ashish Vaswani"], 2019, "acl"),
        paper("other_att", "Attention over sentences", ["Maria Rossi"], 2019, "emnlp"),
        paper("manning", "Dependency parsing with trees", ["Christopher D. Manning"], 2014),
        paper("manning2", "Parsing English", ["Chris Manning"], 2021, "acl"),
        paper("parse23", "Dependency parsing revisited", ["Li Wei"], 2023, "acl"),
        paper("parse10", "Dependency parsing of Czech", ["Jan Novak"], 2010, "emnlp"),
        paper("brown_a", "Brown clustering for tagging", ["Li Wei"], 2012),
        paper("brown_b", "Brown clusters as features", ["Jan Novak"], 2013),
        paper("brown_c", "Word classes from Brown clustering", ["Maria Rossi"], 2015),
        paper("brown_p", "Statistical translation", ["Peter F. Brown"], 1993),
        paper("man", "Man and machine in translation", ["Jan Novak"], 2016),
    ]
    records += [
        paper(f"f{n}", f"Filler study number {n}", ["Filler Person"], 1990) for n in range(20)
    ]
    ids = papers_upsert(records=records).paper_ids
    return {r.identifiers["test"]: pid for r, pid in zip(records, ids, strict=True)}


def keys(page: object, shelf: dict[str, int]) -> set[str]:
    by_id = {pid: key for key, pid in shelf.items()}
    return {by_id.get(hit.record["paper_id"], "?") for hit in page.hits}  # type: ignore[attr-defined]


def test_by_author_is_a_filter_with_a_note(shelf: dict[str, int]) -> None:
    page = local_search(query="papers by Vaswani on attention", rerank=False)
    assert keys(page, shelf) == {"vaswani17", "vaswani19"}
    assert any("as the author Vaswani" in note for note in page.notes)
    assert any("double quotes" in note for note in page.notes)
    # Off: every word searched, the other attention paper found too.
    off = local_search(query="papers by Vaswani on attention", rerank=False, understand=False)
    assert "other_att" in keys(off, shelf)
    # Quoted, the words are searched as written (the way to undo a reading).
    quoted = read_query('papers "by Vaswani" on attention')
    assert quoted.understood == {}


def test_author_forms_et_al_full_name_and_nickname(shelf: dict[str, int]) -> None:
    assert read_query("Vaswani et al. attention").understood == {"author": "Vaswani"}
    full = local_search(query="Christopher Manning parsing", rerank=False)
    assert keys(full, shelf) == {"manning"}  # 'Christopher D. Manning' is him too
    nickname = local_search(query="dependency parsing by Chris Manning", rerank=False)
    assert keys(nickname, shelf) == {"manning", "manning2"}
    assert read_query("by vaswani").understood == {"author": "vaswani"}


def test_reading_names_reads_authors_through_indexes_only(shelf: dict[str, int]) -> None:
    """Every statement that reads the author table while reading a query uses an index: a
    full name is tried as 'Christopher*Manning' on every search holding two capitalised
    words, and a scan of the authors was the slowest statement of such searches at 95k
    papers (issue 37)."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert read_query("Christopher Manning parsing").understood == {
            "author": "Christopher*Manning"
        }
        assert read_query("Vaswani et al. attention").understood == {"author": "Vaswani"}
        assert read_query("Dependency Parsing").understood == {}
    statements = [q["sql"] for q in captured.captured_queries if "papers_author" in q["sql"]]
    assert any("LIKE" in sql for sql in statements)  # the pattern was tried
    with connection.cursor() as cursor:
        for sql in statements:
            if connection.vendor == "sqlite":
                cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
                plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
                # The author table's alias is U0; a count up to a limit scans its own rows.
                assert "SCAN" not in plan.replace("SCAN subquery", ""), (sql, plan)
            else:
                cursor.execute("SET LOCAL enable_seqscan = off")
                cursor.execute(f"EXPLAIN {sql}")
                plan = " ".join(row[0] for row in cursor.fetchall())
                # With sequential scans off, an author table read with no index condition
                # walks its primary key instead.
                assert "Seq Scan on papers_author" not in plan, (sql, plan)
                assert "papers_author_pkey" not in plan, (sql, plan)


def test_a_bare_surname_ranks_but_does_not_filter(shelf: dict[str, int]) -> None:
    reading = read_query("Vaswani attention")
    assert reading.understood == {} and reading.boosts == {"author": ["Vaswani"]}
    assert any("by Vaswani" in note for note in reading.notes)
    page = local_search(query="Vaswani attention", rerank=False)
    assert "other_att" in keys(page, shelf)  # not filtered


def test_a_family_name_alone_is_the_author_filter(shelf: dict[str, int]) -> None:
    # As a word, 'Manning' would also find 'Man and machine' (the same stem).
    unread = local_search(query="Manning", rerank=False, understand=False)
    assert "man" in keys(unread, shelf)
    for query in ("Manning", "Manning's papers", "Manning since 2020"):
        page = local_search(query=query, rerank=False)
        expected = {"manning2"} if "2020" in query else {"manning", "manning2"}
        assert keys(page, shelf) == expected, query
        assert any("as the author Manning" in note for note in page.notes), page.notes
        assert local_search_ids(query=query, rerank=False).ids == [
            hit.record["paper_id"] for hit in page.hits
        ]
    # With a topic the name stays a word, and the note promises no ranking.
    mixed = local_search(query="Manning parsing", rerank=False)
    assert {"manning", "manning2", "parse23"} <= keys(mixed, shelf)
    assert any("searched as a word" in note for note in mixed.notes), mixed.notes
    assert not any("rank higher" in note for note in mixed.notes)


def test_a_name_the_library_uses_as_a_word_is_not_a_name(shelf: dict[str, int]) -> None:
    reading = read_query("Brown clustering")
    assert reading.understood == {} and reading.boosts == {} and reading.notes == ()
    assert keys(local_search(query="Brown clustering", rerank=False), shelf) >= {
        "brown_a", "brown_b", "brown_c",
    }  # fmt: skip
    for negative in ("attention is all you need", "learning by reading", "transformer 2",
                     "tweets about the 2020 election", "papers about Vaswani"):  # fmt: skip
        assert read_query(negative).understood == {}, negative


@pytest.mark.parametrize(
    ("query", "years"),
    [
        ("dependency parsing since 2020", {"year_from": 2020}),
        ("dependency parsing after 2020", {"year_from": 2021}),
        ("dependency parsing before 2015", {"year_to": 2014}),
        ("dependency parsing until 2014", {"year_to": 2014}),
        ("dependency parsing in 2010", {"year": 2010}),
        ("dependency parsing 2010-2014", {"year_from": 2010, "year_to": 2014}),
        ("dependency parsing between 2010 and 2014", {"year_from": 2010, "year_to": 2014}),
        ("2023 papers on dependency parsing", {"year": 2023}),
    ],
)
def test_years(shelf: dict[str, int], query: str, years: dict[str, int]) -> None:
    reading = read_query(query)
    assert reading.understood == years
    low, high = (
        years.get("year", years.get("year_from", 0)),
        years.get("year", years.get("year_to", 9999)),
    )
    wanted = {
        k for k, y in [("manning", 2014), ("parse23", 2023), ("parse10", 2010)] if low <= y <= high
    }
    assert (
        keys(local_search(query=query, rerank=False), shelf) & {"manning", "parse23", "parse10"}
        == wanted
    )


def test_venues_of_the_library(shelf: dict[str, int]) -> None:
    reading = read_query("ACL 2023 papers on dependency parsing")
    assert reading.understood == {"venue": "acl", "year": 2023}
    assert reading.topic == "on dependency parsing"
    assert keys(
        local_search(query="ACL 2023 papers on dependency parsing", rerank=False), shelf
    ) == {"parse23"}
    assert read_query("parsing at EMNLP").understood == {"venue": "emnlp"}
    assert keys(local_search(query="EMNLP papers on parsing", rerank=False), shelf) == {"parse10"}
    # Not a venue of the library, or not introduced as one: words.
    assert read_query("NAACL 2019 parsing").understood.get("venue") is None
    assert read_query("acl parsing").understood == {}


def test_filters_read_from_a_query_that_leave_nothing_are_left_out_with_a_note(
    shelf: dict[str, int],
) -> None:
    """A reading is a guess ("... decreased since 1979" in a claim is not about when papers
    appeared): when what it read leaves no paper, the query as typed is searched with the
    request's own filters, and a note says so; the ids' order follows the same path."""
    query = "dependency parsing since 2024"
    assert read_query(query).understood == {"year_from": 2024}
    page = local_search(query=query, rerank=False)
    assert {"manning", "parse23", "parse10"} <= keys(page, shelf)
    assert page.notes[0].startswith(
        "query: no paper in the library passes the search's filters with those read from it"
    )
    assert "year_from=2024" in page.notes[0]
    assert not any("understood" in note for note in page.notes)
    ranking = local_search_ids(query=query, rerank=False)
    assert ranking.ids[: len(page.hits)] == [hit.record["paper_id"] for hit in page.hits]
    assert ranking.notes == tuple(page.notes)  # what the admin and facets pass on
    # Facets over the query count what it found, and say what was left out.
    counted = facet_counts(category="year", query=query)
    assert counted.notes[0] == page.notes[0]
    assert {value["name"] for value in counted.values} >= {"2014", "2023", "2010"}
    # The request's own filters still hold: from 2011 on, the query as typed finds nothing
    # but these papers; where the query as typed finds nothing either (no parsing paper by
    # Maria Rossi), the answer is the empty one as read, with its note.
    explicit = search_filters_build(payload={"year_from": 2011})
    kept = local_search(query=query, filters=explicit, rerank=False)
    assert keys(kept, shelf) & {"manning", "parse23", "parse10"} == {"manning", "parse23"}
    nothing = local_search(
        query=query, filters=search_filters_build(payload={"author": "Maria Rossi"}), rerank=False
    )
    assert nothing.hits == [] and any("understood" in note for note in nothing.notes)
    # Filters that hold papers, none of which has the words, are the empty answer: no
    # paper of Li Wei's from 2011 on is about Czech (parse10 is Jan Novak's, 2010).
    czech = local_search(query="Czech by Li Wei since 2011", rerank=False)
    assert read_query("Czech by Li Wei since 2011").understood.keys() == {
        "author",
        "year_from",
    }
    assert czech.hits == [] and any("understood" in note for note in czech.notes)
    # A reading that matches keeps its filter (test_years) and its note.
    matched = local_search(query="dependency parsing since 2020", rerank=False)
    assert keys(matched, shelf) & {"manning", "parse23", "parse10"} == {"parse23"}
    assert any("understood" in note for note in matched.notes)


def test_explicit_filters_win_and_understood_ones_merge(shelf: dict[str, int]) -> None:
    explicit = search_filters_build(payload={"author": "Li Wei"})
    reading = read_query("parsing by Vaswani since 2020", explicit)
    assert reading.filters is not None and reading.filters.author == "Li Wei"
    assert reading.understood == {"year_from": 2020}
    page = local_search(
        query="dependency parsing by Vaswani since 2020", filters=explicit, rerank=False
    )
    assert keys(page, shelf) == {"parse23"}


def test_the_scope_limits_what_a_name_can_mean(shelf: dict[str, int]) -> None:
    project = project_create(name="Parsing only")
    project_add_papers(project=project, paper_ids=[shelf["parse23"], shelf["parse10"]])
    scope = [project.id]
    reading = read_query("parsing by Vaswani", scope=scope)
    assert reading.understood == {} and reading.notes == ()  # nothing of his in scope
    page = local_search(query="dependency parsing since 2020", scope=scope, rerank=False)
    assert keys(page, shelf) == {"parse23"}


def test_ids_follow_the_same_reading_and_the_setting_turns_it_off(shelf: dict[str, int]) -> None:
    ranking = local_search_ids(query="attention by Vaswani", rerank=False)
    assert set(ranking.ids) == {shelf["vaswani17"], shelf["vaswani19"]}
    with override_settings(SEARCH_UNDERSTAND=False):
        assert read_query("attention by Vaswani").understood == {}
        assert (
            shelf["other_att"] in local_search_ids(query="attention by Vaswani", rerank=False).ids
        )


# Titles that the analyzer (postings) and the title pattern of `title_mentions` could read
# apart: stems, stop words, diacritics and case, hyphens, apostrophes, underscores, digits,
# a name inside a longer word.
TRICKY_TITLES = [
    "Manning and parsing", "MANNING AT SCALE", "Manningham estate records",
    "The manningham corpus", "Parsers for translations", "Translation of parsing",
    "Will it blend? Will it parse?", "Schütze on word senses", "SCHÜTZE REVISITED",
    "Schutze without an umlaut", "Søgaard tagging", "SØGAARD TAGGING", "García and Garcia",
    "Smith-Jones models", "Smith Jones models", "O'Brien's parser", "O’Brien with a curly one",
    "Brien alone", "smith_2020 dataset", "GPT4 and GPT-4", "Yıldız tagger", "yıldız tagger",
    "YILDIZ TAGGER", "Ängström units", "Jurafsky: speech (and language)",
    "Jurafsky's and JURAFSKY.",
]  # fmt: skip
TRICKY_WORDS = [
    "Manning", "manning", "Manningham", "Parsing", "Parsers", "parse", "Translations",
    "Will", "it", "Schütze", "SCHÜTZE", "Schutze", "Søgaard", "García", "Garcia",
    "Smith", "Jones", "Smith-Jones", "O'Brien", "O’Brien", "Brien", "O", "smith_2020",
    "GPT4", "GPT", "GPT-4", "Yıldız", "Ängström", "Jurafsky", "Jurafsky's", "and",
    "Vaswani", "Nobody",
]  # fmt: skip


def title_mentions_by_scan(word: str, most: int) -> int:
    """What title_mentions counted before it read the postings: the pattern over every
    title the LIKE finds."""
    from papers.models import Paper

    pattern = re.compile(rf"(?<!\w){re.escape(word)}(?!\w)", re.IGNORECASE)
    found = 0
    for title in Paper.objects.filter(title__icontains=word).values_list("title", flat=True):
        found += bool(pattern.search(title))
        if found > most:
            break
    return found


@pytest.fixture
def tricky_titles(db: None) -> list[int]:
    records = [
        paper(f"tricky{n}", title, ["Ann Author"], 2020) for n, title in enumerate(TRICKY_TITLES)
    ]
    return papers_upsert(records=records).paper_ids


@pytest.mark.parametrize("word", TRICKY_WORDS)
def test_title_mentions_counts_as_the_scan_of_every_title(
    tricky_titles: list[int], word: str
) -> None:
    """The titles that hold a name are read through the postings (a cost of the name's
    papers, not of the library's); the count is the one a scan of every title gives."""
    reader = _Reader("", None, None)
    for most in (0, 1, 100):
        assert reader.title_mentions(word, most) == title_mentions_by_scan(word, most), most
    expected = EXPECTED_MENTIONS.get(word, 0)
    if connection.vendor == "sqlite":
        expected = EXPECTED_ON_SQLITE.get(word, expected)
    assert title_mentions_by_scan(word, 100) == expected


# Titles holding each word as a word (the rest: none).
EXPECTED_MENTIONS = {
    "Manning": 2, "manning": 2, "Manningham": 2, "Parsing": 2, "Parsers": 1, "parse": 1,
    "Translations": 1, "Will": 1, "it": 1, "Schütze": 2, "SCHÜTZE": 2, "Schutze": 1,
    "Søgaard": 2, "García": 1, "Garcia": 1, "Smith": 2, "Jones": 2, "Smith-Jones": 1,
    "O'Brien": 1, "O’Brien": 1, "Brien": 3, "O": 2, "smith_2020": 1, "GPT4": 1, "GPT": 1,
    "GPT-4": 1, "Yıldız": 3, "Ängström": 1, "Jurafsky": 2, "Jurafsky's": 1, "and": 5,
}  # fmt: skip
# SQLite's LIKE, which picks the titles the pattern reads, ignores case for ASCII only.
EXPECTED_ON_SQLITE = {"Schütze": 1, "SCHÜTZE": 1, "Søgaard": 1, "Yıldız": 2}


def test_title_mentions_of_a_name_reads_no_title_but_its_papers(tricky_titles: list[int]) -> None:
    """No statement of the count of a name's titles walks the papers table."""
    from django.test.utils import CaptureQueriesContext

    with CaptureQueriesContext(connection) as captured:
        assert _Reader("", None, None).title_mentions("Jurafsky", 100) == 2
    statements = [q["sql"] for q in captured.captured_queries if "papers_paper" in q["sql"]]
    assert any("LIKE" in sql for sql in statements)
    with connection.cursor() as cursor:
        for sql in statements:
            if connection.vendor == "sqlite":
                cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
                steps = [str(row[-1]) for row in cursor.fetchall()]
                # The list of ids is one parameter, read by json_each (core.sql.among_ids).
                walks = [step for step in steps if "SCAN" in step and "json_each" not in step]
                assert not walks, (sql, steps)
            else:
                cursor.execute("SET LOCAL enable_seqscan = off")
                cursor.execute(f"EXPLAIN {sql}")
                plan = " ".join(row[0] for row in cursor.fetchall())
                assert "Seq Scan" not in plan, (sql, plan)
                assert "papers_paper_pkey" not in plan or "Index Cond" in plan, (sql, plan)


def test_title_mentions_keeps_to_the_scope(tricky_titles: list[int]) -> None:
    project = project_create(name="Manning titles")
    project_add_papers(project=project, paper_ids=tricky_titles[:1])
    assert _Reader("", None, [project.id]).title_mentions("Manning", 100) == 1


@pytest.mark.parametrize(("mentions", "name_like"), [(0, True), (1, True), (3, False)])
def test_a_prolific_family_is_counted_only_as_far_as_its_titles_need(
    db: None, monkeypatch: pytest.MonkeyPatch, mentions: int, name_like: bool
) -> None:
    """Whether a capitalised word is a name compares the titles holding it with its authors'
    papers (TITLE_SHARE). The papers are counted up to NAME_PAPERS_COUNTED: titles rare
    enough for that many decide without the rest ('Wang' is 34k papers at 500k); otherwise
    all are counted, so the answer is the one the full count gives."""
    from django.test.utils import CaptureQueriesContext

    from papers.search import understanding

    monkeypatch.setattr(understanding, "NAME_PAPERS_COUNTED", 10)
    papers_upsert(records=[
        paper(f"k{n}", f"Topic number {n}", [f"Given{n} Kovacs"], 2000) for n in range(40)
    ] + [
        paper(f"m{n}", f"The Kovacs method, part {n}", ["Ann Other"], 2001)
        for n in range(mentions)
    ])  # fmt: skip
    # 40 papers: the full count allows 2 titles (TITLE_SHARE), the first 10 half of one.
    assert understanding.TITLE_SHARE * 40 == 2
    with CaptureQueriesContext(connection) as captured:
        assert _Reader("", None, None).name_like("Kovacs") is name_like
    counts = [q["sql"] for q in captured.captured_queries if "COUNT(" in q["sql"].upper()]
    assert any("LIMIT 10" in sql for sql in counts)
    counted_all = any("LIMIT" not in sql for sql in counts)
    assert counted_all is (mentions > 0), counts


@pytest.mark.django_db(transaction=True)  # PostgreSQL renews generations at the commit
def test_title_mentions_over_the_whole_library_are_kept_until_a_title_changes(
    tricky_titles: list[int],
) -> None:
    """A prolific family's title mentions read the title of every paper its term lists:
    kept per process while the postings' generation stays, counted again after a change."""
    from django.test.utils import CaptureQueriesContext

    def mentions(most: int) -> tuple[int, int]:
        with CaptureQueriesContext(connection) as captured:
            found = _Reader("", None, None).title_mentions("Jurafsky", most)
        titles_read = sum("LIKE" in q["sql"] for q in captured.captured_queries)
        return found, titles_read

    assert mentions(100)[0] == 2
    assert mentions(100) == (2, 0)
    assert mentions(0) == (1, 0)  # more than 0, known without reading
    papers_upsert(records=[paper_record_titled("Jurafsky on speech")])
    assert mentions(100)[0] == 3
    from django.db import transaction

    with transaction.atomic():  # its own write, seen before the commit renews the generation
        papers_upsert(records=[paper_record_titled("Jurafsky again")])
        assert mentions(100)[0] == 4
    assert _Reader("", None, [project_create(name="None of them").id]).title_mentions(
        "Jurafsky", 100
    ) == 0  # fmt: skip


def paper_record_titled(title: str) -> PaperRecord:
    return PaperRecord.build(title=title, authors=["Some One"], year=2020)

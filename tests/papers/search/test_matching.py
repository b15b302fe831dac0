"""The query language's AND / OR / NOT of words matched on the BM25 postings
(lexical.rank's `matching`): from the lists held in memory, or by SQL over the postings
when they do not fit, the same papers either way, and the papers the engine's own index
matches for words both analyzers stem alike. Both databases."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext, override_settings

from papers.search import fulltext, lexical, native
from papers.search import query as q
from papers.search.postings import POSTING_TABLE
from papers.search.source import FTS_TABLE

pytestmark = pytest.mark.django_db(transaction=True)

ACL_SAMPLE = Path(__file__).parents[2] / "fixtures" / "acl" / "acl_sample300.jsonl"
QUERIES = [
    "translation AND neural",
    "translation OR parsing",
    "translation NOT neural",
    "(speech OR dialogue) corpus",
    "language NOT (model OR models)",
]


@pytest.fixture
def library() -> None:
    call_command("import_jsonl", str(ACL_SAMPLE), "--no-progress", stdout=io.StringIO())
    lexical.posting_cache_clear()


def ranked(query: str) -> tuple[lexical.Ranked, list[str]]:
    understood = q.understand(query)
    assert understood.constraint is not None
    matching = fulltext.term_matching(understood.constraint)
    assert matching is not None
    terms = lexical.query_terms(understood.words)
    with CaptureQueriesContext(connection) as statements:
        found = lexical.rank(terms, matching=matching, limit=1000)
    return found, [statement["sql"] for statement in statements.captured_queries]


def engine_matches(query: str) -> set[int]:
    """The papers the engine's index matches for the constraint and any ranking word."""
    understood = q.understand(query)
    constraint = native.match_restriction(understood.constraint)
    words = native.match_restriction(q.Or(tuple(q.Term(word) for word in understood.words)))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT paper_id FROM ({constraint[0]}) c WHERE paper_id IN ({words[0]})",  # noqa: S608
            [*constraint[1], *words[1]],
        )
        return {row[0] for row in cursor.fetchall()}


@pytest.mark.parametrize("query", QUERIES)
def test_held_lists_and_sql_match_the_same_papers_as_the_engine(library: None, query: str) -> None:
    held, held_sql = ranked(query)
    with override_settings(SEARCH_POSTINGS_CACHE_MB=0):
        by_sql, sql_sql = ranked(query)
    assert held.ids and held.total == len(held.ids)
    assert (held.ids, held.total) == (by_sql.ids, by_sql.total)
    assert held.scores == pytest.approx(by_sql.scores)
    assert set(held.ids) == engine_matches(query)
    # Each path is the one it says: sets combined in memory, or by SQL over the postings;
    # neither asks the engine's index.
    by_postings = f"AS paper_id FROM {POSTING_TABLE} WHERE term_id"  # matching_restriction's
    assert not any(by_postings in sql for sql in held_sql)
    understood = q.understand(query)
    matching = fulltext.term_matching(understood.constraint)
    # A boolean selecting the papers with any ranking term (an OR of words) is the
    # ranking's own matching: nothing to combine.
    anything = lexical._any_term(matching, lexical.query_terms(understood.words))
    assert anything == (query == "translation OR parsing")
    assert any(by_postings in sql for sql in sql_sql) != anything
    assert not any(FTS_TABLE in sql for sql in held_sql + sql_sql)


def test_exclusion_removes_every_paper_with_the_word(library: None) -> None:
    found, _ = ranked("translation NOT neural")
    both, _ = ranked("translation AND neural")
    either, _ = ranked("translation OR neural")
    alone, _ = ranked("translation OR translation")
    assert not set(found.ids) & set(both.ids)
    assert set(found.ids) | set(both.ids) == set(alone.ids) < set(either.ids)


@pytest.mark.parametrize(
    ("node", "matchable"),
    [
        (q.Term("GPT-3"), False),  # two terms: word order matters, the engine matches it
        (q.Term("the"), False),  # a stop word
        (q.Term("transl", prefix=True), False),
        (q.And((q.Term("neural"), q.Phrase(("machine", "translation")))), False),
        (q.Or((q.Term("Translations"), q.Term("translating"))), True),
    ],
)
def test_what_the_postings_can_match(node: q.Node, matchable: bool) -> None:
    found = fulltext.term_matching(node)
    if not matchable:
        assert found is None
    else:  # both words are one stem: one term twice
        assert isinstance(found, tuple) and found[0] == "or"
        assert found[1][0] == found[1][1] == lexical.matching_terms(found)[0]


def test_a_strict_query_through_the_search_service(library: None) -> None:
    page = fulltext.paper_search(query="translation NOT neural", limit=50)
    titles = " ".join(
        f"{hit.record['title']} {hit.record.get('abstract') or ''}" for hit in page.hits
    ).lower()
    assert page.total and "neural" not in titles


PHRASE_QUERIES = [
    '"machine translation"',
    '"language model" NOT neural',
    'parsing "dependency parsing"',
    '"neural machine translation" OR "statistical machine translation"',
]


def engine_ranked(understood: q.Understood, limit: int) -> lexical.Ranked:
    """The phrase matched by reading every match from the engine's index (the old plan)."""
    terms = lexical.query_terms(understood.words)
    restriction = native.match_restriction(understood.constraint)
    return lexical.rank(terms, restrictions=[restriction], limit=limit)


@pytest.mark.parametrize("query", PHRASE_QUERIES)
def test_a_phrase_checked_among_the_best_candidates_ranks_as_every_match_read(
    library: None, query: str
) -> None:
    understood = q.understand(query)
    terms = lexical.query_terms(understood.words)
    checked = fulltext._rank_checked(terms, understood.constraint, [], 20, 0)
    read = engine_ranked(understood, 20)
    assert checked is not None and read.ids
    assert (checked.ids, checked.total, checked.total_exact) == (read.ids, read.total, True)
    assert checked.scores == pytest.approx(read.scores)


def test_past_the_checked_candidates_the_total_is_an_estimate_said_so(
    library: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fulltext, "CHECKED_FIRST", 4)
    monkeypatch.setattr(fulltext, "CHECKED_MOST", 8)
    monkeypatch.setattr(fulltext, "TOTAL_SAMPLE", 6)
    monkeypatch.setattr(fulltext, "ESTIMATE_FROM_HITS", 1)
    understood = q.understand('"machine translation"')
    terms = lexical.query_terms(understood.words)
    read = engine_ranked(understood, 1000)
    assert read.total > 8  # more matches than the candidates checked
    checked = fulltext._rank_checked(terms, understood.constraint, [], 3, 1)
    assert checked is not None and not checked.total_exact
    assert checked.ids == read.ids[1:4]
    again = fulltext._rank_checked(terms, understood.constraint, [], 3, 1)
    assert again == checked  # the same sample, the same figure
    assert 3 <= checked.total <= lexical.query_terms(["machine"]).df[0]
    page = fulltext.paper_search(query='"machine translation"', limit=3, offset=1)
    assert [hit.record["paper_id"] for hit in page.hits] == read.ids[1:4]
    assert page.total == checked.total and "total is an estimate" in " ".join(page.notes)
    # Too few matches in the sample for an estimate: every match is read, exactly.
    monkeypatch.setattr(fulltext, "ESTIMATE_FROM_HITS", 7)
    assert fulltext._rank_checked(terms, understood.constraint, [], 3, 1) is None
    exact = fulltext.paper_search(query='"machine translation"', limit=3, offset=1)
    assert exact.total == read.total and "total is an estimate" not in " ".join(exact.notes)
    # A page deeper than the candidates checked reads every match, exactly.
    assert fulltext._rank_checked(terms, understood.constraint, [], 20, 0) is None
    deep = fulltext.paper_search(query='"machine translation"', limit=20)
    assert deep.total == read.total


def test_a_restriction_narrows_the_checked_candidates(library: None) -> None:
    from papers.search.types import SearchFilters

    restrictions = fulltext.search_restrictions(SearchFilters(year_from=2015), None)
    understood = q.understand('"machine translation"')
    terms = lexical.query_terms(understood.words)
    checked = fulltext._rank_checked(terms, understood.constraint, restrictions, 20, 0)
    read = lexical.rank(
        terms,
        restrictions=[*restrictions, native.match_restriction(understood.constraint)],
        limit=20,
    )
    assert checked is not None and read.ids
    assert (checked.ids, checked.total) == (read.ids, read.total)


def test_typo_tolerance_on_postgresql_matches_what_the_engine_matched(
    library: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """PostgreSQL's typo-tolerant matches come from the postings, ranked by BM25: the
    same papers its tsvector matched for the close spellings (SQLite keeps FTS5's title
    and author columns)."""
    from papers.search.vocabulary import build_vocabulary

    monkeypatch.setattr(native, "FUZZY_MAX_HITS", 1000)
    vocabulary = build_vocabulary()
    words = ["Macihne", "translatoin"]
    found = native.fuzzy_matches(words, [], [], vocabulary)
    groups = native._close_groups(words, vocabulary)
    assert found and groups is not None
    node = q.And(tuple(q.Or(tuple(q.Term(t) for t in group)) for group in groups))
    if connection.vendor != "postgresql":
        pytest.skip("SQLite matches typos on FTS5's title and author columns")
    by_engine = native.rank(node, [], 1000, 0, count=False)
    assert {pid for pid, _ in found} == set(by_engine.ids)
    scores = [score for _, score in found]
    assert scores == sorted(scores, reverse=True)


def test_unknown_terms_are_counted_from_their_lists_when_held(library: None) -> None:
    """A query's new terms take their document frequencies from their postings, read for
    the ranking anyway, not from a count of the postings' index; the same figures."""
    from papers.search import postings

    words = ["translation", "neural", "parsing", "zzzunknownword"]
    postings.forget_stats()
    lexical.posting_cache_clear()
    with CaptureQueriesContext(connection) as statements:
        held = lexical.query_terms(words)
    counts = [s["sql"] for s in statements.captured_queries if "count(*)" in s["sql"]]
    assert not any(POSTING_TABLE in sql for sql in counts)
    with override_settings(SEARCH_POSTINGS_CACHE_MB=0):
        postings.forget_stats()
        with CaptureQueriesContext(connection) as statements:
            counted = lexical.query_terms(words)
    assert any(
        "count(*)" in s["sql"] and POSTING_TABLE in s["sql"] for s in statements.captured_queries
    )
    assert held == counted and len(held.ids) == 3


def test_a_close_spelling_of_several_terms_is_left_out_beside_others(library: None) -> None:
    """PostgreSQL's vocabulary holds hyphenations as one word ('trans-lation'): beside
    other close spellings it is left out and the postings still answer; alone, the engine
    matches it."""
    found = native._fuzzy_by_postings([["translation", "trans-lation"]], [])
    assert found and found == native._fuzzy_by_postings([["translation"]], [])
    assert native._fuzzy_by_postings([["trans-lation"]], []) is None
    assert native._fuzzy_by_postings([["translation"], ["the"]], []) is None

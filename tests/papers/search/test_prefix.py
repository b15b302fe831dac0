"""A `prefix*` ranked from the postings of the terms of the words it begins, found in the
lexicon of words the postings keep (postings.LEXICON_TABLE): the papers holding a word that
begins with it (the engines' own indexes stem the prefix: 'embedd*' found nothing there,
'pars*' found 'parallel' on SQLite, 'subs*' found 'subject' on PostgreSQL), ranked by BM25
with the prefix's terms weighed as one word, alone or among the query's words and booleans;
the lexicon kept current by every write and filled for a library indexed before it. Both
databases."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db import connection
from django.test.utils import CaptureQueriesContext

from papers.models import Paper
from papers.schemas import PaperRecord
from papers.search import analysis, fulltext, lexical, native, postings
from papers.search import query as q
from papers.search.postings import LEXICON_TABLE, POSTING_TABLE
from papers.search.source import FTS_TABLE
from papers.search.types import SearchFilters
from papers.services import paper_upsert

pytestmark = pytest.mark.django_db(transaction=True)

ACL_SAMPLE = Path(__file__).parents[2] / "fixtures" / "acl" / "acl_sample300.jsonl"
# Prefixes the engines' stemmed prefix matching agrees on, and others: FTS5's Porter
# stemmer makes 'pars' 'par' (matching 'parallel'), and 'embedd' finds no stem.
SAME_AS_ENGINE = ["transl*", "dialog*", "Summar*"]
PREFIXES = [*SAME_AS_ENGINE, "pars*", "embedd*", "subs*", "Übers*"]


@pytest.fixture
def library() -> None:
    call_command("import_jsonl", str(ACL_SAMPLE), "--no-progress", stdout=io.StringIO())
    lexical.posting_cache_clear()


def holding_words(prefix: str) -> set[int]:
    """The papers with an indexed word (folded, not a stop word) beginning with `prefix`,
    or sharing its stem with one that does (the postings keep stems: 'embedd*' finds
    'embeds' beside 'embedding')."""
    ids = list(Paper.objects.values_list("pk", flat=True))
    with connection.cursor() as cursor:
        rows = postings._texts(cursor, ids)
    start = analysis.fold(prefix)
    words = {row[0]: {w for text in row[1:6] for w in analysis.words(text or "")} for row in rows}
    beginning = {w for found in words.values() for w in found if w.startswith(start)}
    stems = {analysis.stem(w) for w in beginning if not analysis.is_stop_word(w)}
    return {
        paper
        for paper, found in words.items()
        if any(analysis.stem(w) in stems for w in found if not analysis.is_stop_word(w))
    }


def engine_matches(query: str | q.Node) -> set[int]:
    node = q.understand(query).constraint if isinstance(query, str) else query
    sql, params = native.match_restriction(node)
    with connection.cursor() as cursor:
        cursor.execute(sql, params)
        matched = {row[0] for row in cursor.fetchall()}
    # (The engine's table may keep rows of an earlier test's papers: its flush skips it.)
    return matched & set(Paper.objects.values_list("pk", flat=True))


def ranked(query: str, restrictions: list | None = None) -> tuple[lexical.Ranked, list[str]]:
    with CaptureQueriesContext(connection) as statements:
        found = fulltext._rank(q.understand(query), restrictions or [], 1000, 0)
    return found, [statement["sql"] for statement in statements.captured_queries]


@pytest.mark.parametrize("query", PREFIXES)
def test_a_prefix_matches_the_papers_holding_a_word_it_begins(library: None, query: str) -> None:
    found, statements = ranked(query)
    expected = holding_words(query.rstrip("*"))
    assert set(found.ids) == expected and found.total == len(expected)
    if query in SAME_AS_ENGINE:
        assert found.ids and set(found.ids) == engine_matches(query)
    assert found.scores == sorted(found.scores, reverse=True)
    # Expanded in the lexicon, ranked from the postings: the engine's index is not read.
    assert any(LEXICON_TABLE in sql for sql in statements)
    assert not any(FTS_TABLE in sql for sql in statements)


def test_the_prefix_terms_are_weighed_as_one_word(library: None) -> None:
    expanded = lexical.prefix_terms("pars")
    assert expanded is not None and len(expanded.ids) >= 2  # 'pars', 'parser'...
    assert len(set(expanded.weights)) == 1
    # A paper's score is the sum of its postings of those terms, one weight for all.
    found, _ = ranked("pars*")
    best = found.ids[0]
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT term_id, impact FROM {POSTING_TABLE} WHERE paper_id = %s",  # noqa: S608
            [best],
        )
        impacts = dict(cursor.fetchall())
    held = sum(impacts.get(term, 0) for term in expanded.ids)
    assert found.scores[0] == pytest.approx(held * expanded.weights[0])


def test_a_prefix_standing_for_too_many_terms_is_left_to_the_engine(
    library: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(lexical, "PREFIX_MOST_WORDS", 1)
    assert lexical.prefix_terms("pars") is None
    found, statements = ranked("pars*")
    assert any(FTS_TABLE in sql for sql in statements)
    assert set(found.ids) == engine_matches("pars*")


def test_a_filter_narrows_a_prefix(library: None) -> None:
    restrictions = fulltext.search_restrictions(SearchFilters(year_from=2015), None)
    every, _ = ranked("transl*")
    narrowed, _ = ranked("transl*", restrictions)
    recent = set(Paper.objects.filter(year__gte=2015).values_list("pk", flat=True))
    assert narrowed.ids and set(narrowed.ids) == set(every.ids) & recent


def test_the_search_service_answers_a_prefix(library: None) -> None:
    page = fulltext.paper_search(query="dialog*", limit=5)
    assert page.total == len(engine_matches("dialog*"))
    assert len(page.hits) == 5


def test_a_new_word_is_found_by_its_prefix_at_once_and_gone_with_its_paper(library: None) -> None:
    assert not fulltext._rank(q.understand("quokkal*"), [], 10, 0).ids
    paper, _ = paper_upsert(
        record=PaperRecord.build(title="Quokkalogical parsing of marsupial speech", year=2021)
    )
    found = fulltext._rank(q.understand("quokkal*"), [], 10, 0)
    assert found.ids == [paper.pk] and found.total == 1
    paper.delete()
    assert fulltext._rank(q.understand("quokkal*"), [], 10, 0).ids == []


def stored_lexicon() -> set[tuple[str, int]]:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT word, term_id FROM {LEXICON_TABLE}")  # noqa: S608
        return set(cursor.fetchall())


def test_the_lexicon_holds_every_word_of_the_postings_and_fills_again(library: None) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT DISTINCT term_id FROM {POSTING_TABLE}")  # noqa: S608
        posted = {row[0] for row in cursor.fetchall()}
    written = stored_lexicon()  # (with the words of an earlier test's papers: never removed)
    assert posted <= {term for _, term in written}
    assert all(analysis.term_id(analysis.stem(word)) == term for word, term in written)
    # A library indexed before the lexicon existed: migration 0021 fills it from the text.
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {LEXICON_TABLE}")  # noqa: S608
    postings.fill_lexicon()
    filled = stored_lexicon()
    assert filled <= written and posted == {term for _, term in filled}


def test_words_the_analyzer_no_longer_holds_are_stemmed_again() -> None:
    words = ["translations", "parsing", "the", "embedding"]
    held = analysis.word_terms(words)
    analysis._word_terms.clear()
    assert analysis.word_terms(words) == held
    assert set(held) == {"translations", "parsing", "embedding"}
    assert held["embedding"] == analysis.term_id("embed")


PREFIX_QUERIES = [
    "neural transl*",  # natural: the prefix must match, both rank
    "transl* AND neural",
    "transl* OR pars*",
    "transl* NOT neural",
    "neural NOT pars*",
]


def expected_matches(node: q.Node) -> set[int]:
    """The papers a query's boolean selects, prefixes as the words they begin."""
    if isinstance(node, q.Term) and node.prefix:
        return holding_words(node.text)
    if isinstance(node, q.Term):
        return engine_matches(node)
    if isinstance(node, q.Not):
        return expected_matches(node.include) - expected_matches(node.exclude)
    parts = [expected_matches(child) for child in node.children]
    return set.intersection(*parts) if isinstance(node, q.And) else set.union(*parts)


@pytest.mark.parametrize("query", PREFIX_QUERIES)
def test_a_prefix_among_words_matches_the_words_it_begins(library: None, query: str) -> None:
    understood = q.understand(query)
    found, statements = ranked(query)
    assert found.ids and found.total == len(found.ids)
    assert set(found.ids) == expected_matches(understood.constraint)
    assert not any(FTS_TABLE in sql for sql in statements)
    # The prefixes' words rank with the query's words: a paper matching through a prefix
    # alone has a score of its own, not nothing.
    assert all(score > 0 for score in found.scores)


def test_writers_adding_the_same_new_words_do_not_deadlock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Two transactions indexing papers whose new words cross (one meets 'zetaone' then
    'zetatwo', the other the reverse, in batches of one paper): a writer waits on the
    other's uncommitted new word, so writing them batch by batch deadlocked; written once
    a call, in the words' order, the second waits for the first and both commit."""
    import threading

    from django.db import connections, transaction

    if connection.vendor != "postgresql":
        pytest.skip("SQLite has one writer at a time")
    first, second = (
        [paper_upsert(record=PaperRecord.build(title=title, year=2020))[0].pk for title in titles]
        for titles in (
            ("Zetaone for translation", "Zetatwo for parsing"),
            ("Tagging with zetatwo", "Summaries with zetaone"),
        )
    )
    with connection.cursor() as cursor:  # the words new again
        cursor.execute(f"DELETE FROM {LEXICON_TABLE} WHERE word LIKE 'zeta%%'")  # noqa: S608
    monkeypatch.setattr(postings, "INDEX_BATCH", 1)
    texts = postings._texts
    between = threading.Barrier(2, timeout=10)
    calls = threading.local()

    def after_the_first_batch(cursor: object, ids: list[int]) -> list:
        calls.n = getattr(calls, "n", 0) + 1
        if calls.n == 2:  # both writers are past their first batch
            between.wait()
        return texts(cursor, ids)

    monkeypatch.setattr(postings, "_texts", after_the_first_batch)
    failures: list[BaseException] = []

    def write(ids: list[int]) -> None:
        try:
            with transaction.atomic():
                postings.index_papers(ids)
        except BaseException as error:  # reported below
            failures.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=write, args=(ids,)) for ids in (first, second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert not failures
    assert {"zetaone", "zetatwo"} <= {word for word, _ in stored_lexicon()}


def test_many_terms_read_in_one_grouped_scan_as_term_by_term(
    library: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A prefix's many lists are read by one grouped scan (a sub-select per term was
    planned apart: seconds for hundreds of terms): the same lists, none for a term without
    postings, the same ranking."""
    every, _ = ranked("pars*")  # term by term: the prefix has fewer terms than the bound
    expanded = lexical.prefix_terms("pars")
    assert expanded is not None and len(expanded.ids) < lexical.SUBSELECTS_MOST
    terms = [*expanded.ids, lexical.NO_TERM]
    with connection.cursor() as cursor:
        _, one_by_one = lexical._read_postings(
            cursor, terms, postings.PAPERS, with_generation=False
        )
    monkeypatch.setattr(lexical, "SUBSELECTS_MOST", 1)
    with CaptureQueriesContext(connection) as statements, connection.cursor() as cursor:
        _, grouped = lexical._read_postings(cursor, terms, postings.PAPERS, with_generation=False)
        generation, with_it = lexical._read_postings(
            cursor, terms, postings.PAPERS, with_generation=True
        )
    assert generation is not None and with_it.keys() == grouped.keys()
    assert "GROUP BY term_id" in statements.captured_queries[0]["sql"]
    assert one_by_one.keys() == grouped.keys() and len(grouped[lexical.NO_TERM][0]) == 0
    for term in terms:
        assert sorted(one_by_one[term][0].tolist()) == sorted(grouped[term][0].tolist())
        assert sorted(zip(*one_by_one[term], strict=True)) == sorted(
            zip(*grouped[term], strict=True)
        )
    lexical.posting_cache_clear()
    again, _ = ranked("pars*")
    assert (again.ids, again.scores, again.total) == (every.ids, every.scores, every.total)

"""Questions typed as people and agents type them (issue 16): any content word may match,
papers sharing more of the words rank first, stop words never have to match, and the
query language keeps its strict meaning. Runs on SQLite and, with DATABASE_URL, on
PostgreSQL: the ranking is the same code on both."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.db import connection

from core.errors import InvalidInput
from papers.models import Paper
from papers.schemas import PaperRecord
from papers.search import lexical, postings
from papers.search.fulltext import paper_search, paper_search_ids, raw_search_ms
from papers.search.local import local_search, search_filters_build
from papers.services import papers_upsert
from projects.services import project_add_papers, project_create

pytestmark = pytest.mark.django_db

TITLES = {
    "four": "Protein folding kinetics in yeast",
    "three": "Protein folding kinetics",
    "two": "Protein folding",
    "one": "Protein structure",
    "none": "Graph neural networks",
}


@pytest.fixture
def shelf(db: None) -> dict[str, int]:
    records = [
        PaperRecord.build(title=title, year=2000 + n, authors=[f"Author {key}"])
        for n, (key, title) in enumerate(TITLES.items())
    ]
    # Filler papers, so that the words are not in every paper (idf stays positive).
    records += [PaperRecord.build(title=f"Filler study number {n}", year=1990) for n in range(20)]
    ids = papers_upsert(records=records).paper_ids
    return dict(zip(TITLES, ids, strict=False))


def keys(page: object, shelf: dict[str, int]) -> list[str]:
    by_id = {pid: key for key, pid in shelf.items()}
    return [by_id.get(hit.record["paper_id"], "?") for hit in page.hits]  # type: ignore[attr-defined]


def test_a_question_finds_papers_sharing_some_of_its_words_most_shared_first(
    shelf: dict[str, int],
) -> None:
    page = paper_search(query="What is known about protein folding kinetics in yeast?")
    assert keys(page, shelf) == ["four", "three", "two", "one"]
    assert page.total == 4
    scores = [hit.score for hit in page.hits]
    assert scores == sorted(scores, reverse=True) and len(set(scores)) == 4


def test_stop_words_never_have_to_match(shelf: dict[str, int]) -> None:
    assert keys(paper_search(query="the folding of the proteins"), shelf)[:3] == [
        "two", "three", "four"]  # fmt: skip
    # A question made only of stop words still searches, by all its words.
    assert paper_search(query="what is it").total == 0


def test_the_query_language_stays_strict(shelf: dict[str, int]) -> None:
    assert keys(paper_search(query="protein AND yeast"), shelf) == ["four"]
    assert set(keys(paper_search(query='"folding kinetics"'), shelf)) == {"four", "three"}
    assert set(keys(paper_search(query="protein NOT folding"), shelf)) == {"one"}
    assert set(keys(paper_search(query="protein -folding"), shelf)) == {"one"}
    assert set(keys(paper_search(query="kinet* yeast"), shelf)) == {"four", "three"}
    # A phrase is required, the other words still rank.
    assert keys(paper_search(query='"protein folding" yeast kinetics'), shelf) == [
        "four", "three", "two"]  # fmt: skip


def test_a_quoted_phrase_no_paper_has_is_searched_as_words(shelf: dict[str, int]) -> None:
    page = paper_search(query='Does yeast show "protein kinetics folding"?')
    assert keys(page, shelf)[0] == "four"
    assert "its words were searched" in page.notes[-1]
    assert paper_search_ids(query='"protein kinetics folding" AND yeast') == []  # strict


def test_unbalanced_quotes_and_parentheses_are_plain_words_with_a_note(
    shelf: dict[str, int],
) -> None:
    page = paper_search(query='"protein folding (in yeast')
    assert keys(page, shelf)[0] == "four"
    assert page.notes == [
        "query: an unpaired double quote was ignored",
        "query: an unmatched '(' was ignored",
    ]
    with pytest.raises(InvalidInput) as caught:
        paper_search(query="protein AND")
    assert "bleu AND meteor" in caught.value.details["hint"]


def test_the_length_limit_applies_to_what_was_sent(shelf: dict[str, int]) -> None:
    question = "Which papers study protein folding kinetics? " * 88  # 3,960 characters
    assert len(question) <= settings.MAX_QUERY_CHARS
    assert keys(paper_search(query=question), shelf)[0] == "three"
    with pytest.raises(InvalidInput):
        paper_search(query="protein " * 501)  # 4,008 characters


def test_snippet_shows_where_most_query_words_meet(db: None) -> None:
    abstract = (
        "We begin with unrelated background on many other things. " * 4
        + "Here the folding kinetics of proteins in yeast are measured directly. "
        + "Other material follows about something else entirely. " * 4
    )
    papers_upsert(records=[PaperRecord.build(title="A study", abstract=abstract, year=2020)])
    snippet = paper_search(query="protein folding kinetics yeast").hits[0].snippet_markdown
    assert "**folding** **kinetics** of **proteins** in **yeast**" in snippet
    assert snippet.startswith("…") and snippet.endswith("…")


def test_markup_in_titles_reaches_agents_as_text(db: None) -> None:
    papers_upsert(records=[PaperRecord.build(title="<script>alert(1)</script> *bold* claims")])
    snippet = paper_search(query="alert claims").hits[0].snippet_markdown
    assert "<script>" not in snippet and "&lt;script&gt;" in snippet
    assert "\\*" in snippet


def test_filters_and_projects_narrow_the_ranked_search(shelf: dict[str, int]) -> None:
    question = "protein folding kinetics in yeast"
    recent = local_search(query=question, filters=search_filters_build(date_from="2002"))
    assert keys(recent, shelf) == ["two", "one"]
    project = project_create(name="Kinetics")
    project_add_papers(project=project, paper_ids=[shelf["three"], shelf["one"]])
    scoped = local_search(query=question, filters=search_filters_build(project="Kinetics"))
    assert keys(scoped, shelf) == ["three", "one"]
    assert keys(local_search(query=question, scope=["Kinetics"]), shelf) == ["three", "one"]


def test_every_plan_returns_the_same_ranking(
    shelf: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Aggregate (with a filter: every posting summed, then the allowed papers kept),
    MaxScore and the threshold algorithm (with and without a filter checked on the way)
    and paper-by-paper scoring agree exactly."""
    question = "protein folding kinetics in yeast structure"
    filters = search_filters_build(date_from="2001")
    expected = [keys(local_search(query=question, filters=f), shelf) for f in (None, filters)]
    exact_total = local_search(query=question, filters=filters).total
    # A filter allowing many papers: every posting summed, the allowed kept (SQLite).
    monkeypatch.setattr(lexical, "SMALL_SET", 0)
    whole = local_search(query=question, filters=filters)
    assert keys(whole, shelf) == expected[1]
    assert whole.total == exact_total
    monkeypatch.setattr(lexical, "EXHAUSTIVE_BELOW", 0)
    # Lists in the posting cache (SQLite): summed whole, with a filter too.
    held = local_search(query=question, filters=filters)
    assert keys(held, shelf) == expected[1] and held.total == exact_total
    monkeypatch.setattr(lexical, "FIRST_BLOCK", 1)
    monkeypatch.setattr(lexical, "SMALL_SET", 0)
    # Lists read from the database: the pruned plans.
    monkeypatch.setattr(settings, "SEARCH_POSTINGS_CACHE_MB", 0)
    for maxscore_from in (1, 99):  # MaxScore, then the threshold algorithm
        monkeypatch.setattr(lexical, "MAXSCORE_FROM_TERMS", maxscore_from)
        pruned = [keys(local_search(query=question, filters=f), shelf) for f in (None, filters)]
        assert pruned == expected, maxscore_from
    monkeypatch.setattr(lexical, "SMALL_SET", 5_000)
    small = keys(local_search(query=question, filters=filters), shelf)
    assert small == expected[1]


def test_postings_follow_edits_and_deletes(shelf: dict[str, int]) -> None:
    Paper.objects.filter(pk=shelf["four"]).delete()
    assert "four" not in keys(paper_search(query="yeast kinetics"), shelf)
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT count(*) FROM {postings.POSTING_TABLE} WHERE paper_id = %s",  # noqa: S608
            [shelf["four"]],
        )
        assert cursor.fetchone()[0] == 0


def test_raw_engine_baseline_matches_any_word_of_a_question(shelf: dict[str, int]) -> None:
    """The benchmark's baseline is the database's own engine over the OR of the words."""
    from papers.search import native
    from papers.search import query as q

    either = q.Or((q.Term("yeast"), q.Term("structure")))
    assert set(native.raw_ranked_ids(either, 20)) == {shelf["four"], shelf["one"]}
    assert isinstance(raw_search_ms("protein folding in yeast"), float)

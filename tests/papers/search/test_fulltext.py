"""Full-text search (issue 4): ranking, the query language, snippets, fuzzy matching,
limits, scope, and the index following every write path. Runs on SQLite (FTS5) and, with
DATABASE_URL, on PostgreSQL (tsvector)."""

from __future__ import annotations

import importlib
import io
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command
from django.db import connection

from core.errors import InvalidInput
from papers.models import Paper
from papers.schemas import PaperRecord
from papers.search import lexical, postings, vocabulary
from papers.search.fulltext import (
    FTS_TABLE,
    index_papers,
    paper_search,
    paper_search_ids,
    raw_search_ms,
    rebuild_index,
)
from papers.search.query import parse_query, to_fts5
from papers.search.types import SearchFilters
from papers.selectors import paper_brief, with_relations
from papers.services import paper_keywords_update, paper_upsert, papers_upsert
from projects.services import project_add_papers

pytestmark = pytest.mark.django_db

CORPUS = Path(__file__).parents[2] / "fixtures" / "search" / "corpus.jsonl"
ACL_SAMPLE = Path(__file__).parents[2] / "fixtures" / "acl" / "acl_sample300.jsonl"


@pytest.fixture
def corpus(db: None) -> dict[str, int]:
    """The hand-made corpus, imported in one bulk upsert: key -> paper_id."""
    rows = [json.loads(line) for line in CORPUS.read_text().splitlines() if line.strip()]
    keys = [row.pop("key") for row in rows]
    outcome = papers_upsert(records=[PaperRecord.build(**row) for row in rows])
    return dict(zip(keys, outcome.paper_ids, strict=True))


def keys_of(page_or_ids: Any, corpus: dict[str, int]) -> list[str]:
    by_id = {pid: key for key, pid in corpus.items()}
    ids = (
        page_or_ids
        if isinstance(page_or_ids, list)
        else [hit.record["paper_id"] for hit in page_or_ids.hits]
    )
    return [by_id[i] for i in ids]


def found(query: str, corpus: dict[str, int], **kwargs: Any) -> set[str]:
    return set(keys_of(paper_search(query=query, limit=100, **kwargs), corpus))


def exact(query: str, corpus: dict[str, int], **kwargs: Any) -> set[str]:
    """What the query itself matches, without the fuzzy fallback."""
    return set(keys_of(paper_search_ids(query=query, **kwargs), corpus))


def index_rows() -> int:
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {FTS_TABLE}")  # noqa: S608
        return int(cursor.fetchone()[0])


# --- ranking and result shape -------------------------------------------------------------


def test_title_matches_rank_above_abstract_only_matches(corpus: dict[str, int]) -> None:
    page = paper_search(query="translation", limit=20)
    order = keys_of(page, corpus)
    in_title = {"nmt", "bleu", "speech"}
    # The papers that only mention the word in their abstract come after every title match.
    assert set(order[: len(in_title)]) == in_title
    assert set(order[len(in_title) :]) == {"meteor", "attention", "translation_mention"}
    scores = [hit.score for hit in page.hits]
    assert scores == sorted(scores, reverse=True)
    assert page.mode == "fulltext"
    assert page.total == len(page.hits)


def test_author_and_keyword_and_venue_fields_are_searched(corpus: dict[str, int]) -> None:
    assert keys_of(paper_search(query="Vaswani"), corpus) == ["attention"]
    assert found("pretraining", corpus) == {"bert"}  # a keyword only
    assert found("Interspeech", corpus) == {"speech"}  # the venue only


def test_hit_carries_the_brief_record_score_and_snippet(corpus: dict[str, int]) -> None:
    hit = paper_search(query="bidirectional").hits[0]
    paper = with_relations(Paper.objects.filter(pk=corpus["bert"])).get()
    assert hit.record == paper_brief(paper)
    data = hit.as_dict()
    for key in ("paper_id", "id", "title", "year", "venue", "authors", "keywords", "source"):
        assert key in data
    assert data["authors"][0] == "Jacob Devlin"
    assert data["score"] > 0
    assert "**bidirectional**" in data["snippet_markdown"].lower()


def test_snippet_bolds_every_matched_term_in_the_abstract_passage(
    corpus: dict[str, int],
) -> None:
    hit = paper_search(query="fixed-length bottleneck").hits[0]
    assert keys_of([hit.record["paper_id"]], corpus) == ["nmt"]
    snippet = hit.snippet_markdown
    assert "**bottleneck**" in snippet
    assert "**fixed**" in snippet or "**fixed-length**" in snippet or "**length**" in snippet


def test_snippet_falls_back_to_the_field_that_matched(corpus: dict[str, int]) -> None:
    hit = paper_search(query="Toutanova").hits[0]
    assert "**Toutanova**" in hit.snippet_markdown


# --- the query language ---------------------------------------------------------------------


def test_phrase_needs_the_words_together(corpus: dict[str, int]) -> None:
    phrase = exact('"machine translation"', corpus)
    assert {"nmt", "bleu", "meteor", "attention"} <= phrase
    assert "speech" not in phrase  # has 'speech translation', not the phrase
    assert exact('"translation machine"', corpus) == set()


def test_boolean_operators(corpus: dict[str, int]) -> None:
    assert exact("bleu OR meteor", corpus) == {"bleu", "meteor"}
    assert exact("evaluation AND automatic", corpus) == {"bleu", "meteor"}
    assert exact("parser NOT dependency", corpus) == {"constituency"}
    assert exact("speech AND NOT translation", corpus) == set()
    assert exact("(bleu OR meteor) NOT correlation", corpus) == {"bleu"}
    # Without operators, words are natural language: any of them may match.
    assert exact("bleu meteor", corpus) == {"bleu", "meteor"}
    assert exact("bleu AND meteor", corpus) == set()


def test_fuzzy_fallback_keeps_what_not_excludes(corpus: dict[str, int]) -> None:
    # One exact hit, so fuzzy matching runs too; it must not bring back 'Dependency Parser'.
    assert found("parser NOT dependency", corpus) == {"constituency"}
    assert found("bleu AND meteor", corpus) == set()  # typo tolerance keeps the AND


def test_prefix_matches_word_starts(corpus: dict[str, int]) -> None:
    assert {"parsing", "constituency"} <= exact("pars*", corpus)
    assert exact("Mikol*", corpus) == {"word2vec"}


def test_diacritics_are_ignored(corpus: dict[str, int]) -> None:
    assert exact("cafe", corpus) == {"accents"}
    assert exact("Muller", corpus) == {"translation_mention"}
    assert exact("Müller", corpus) == {"translation_mention"}


def test_lower_case_operators_are_words(corpus: dict[str, int]) -> None:
    # 'not' is an ordinary word here, so this is 'attention' AND 'not' AND 'all': nothing
    # has 'not', and no error is raised.
    page = paper_search(query="attention not all")
    assert page.mode in ("fulltext", "fuzzy")


@pytest.mark.parametrize(
    ("query", "hint"),
    [
        ("NOT vision", "transformer NOT vision"),
        ("transformer NOT", "transformer NOT vision"),
        ("bleu AND", "bleu AND meteor"),
        ("OR meteor", "bleu OR meteor"),
        ("()", "type at least one word"),
        ("-vision", "transformer -vision"),
        ("t*", "transl*"),
        ("tr*", "transl*"),
        ("--- ...", "type at least one word"),
    ],
)
def test_malformed_query_is_invalid_input_with_a_hint(
    corpus: dict[str, int], query: str, hint: str
) -> None:
    with pytest.raises(InvalidInput) as caught:
        paper_search(query=query)
    assert caught.value.details["field"] == "query"
    assert hint in caught.value.details["hint"]


@pytest.mark.parametrize(
    "query",
    [
        "{title}: attention",
        "title:attention",
        "NEAR(attention need)",
        "attention^ need",
        "attention'; DROP TABLE papers_paper; --",
        "a + b - c :: d",
        "attention's \\ ' %s ?",
        "ünïcödé 日本語 attention",
    ],
)
def test_engine_syntax_in_user_input_is_plain_text(corpus: dict[str, int], query: str) -> None:
    page = paper_search(query=query)
    assert page.mode in ("fulltext", "fuzzy")
    assert Paper.objects.count() == len(corpus)


def test_a_query_of_stop_words_is_not_an_error(corpus: dict[str, int]) -> None:
    # PostgreSQL drops 'the' and 'of' (english stop words) and finds nothing; FTS5 has no
    # stop words and finds them. Neither fails.
    page = paper_search(query="the of")
    assert page.total == len(page.hits) or page.has_more


def test_every_word_is_quoted_for_fts5() -> None:
    assert to_fts5(parse_query('a "b c" ddd* OR e NOT f')) == (
        '(("a" AND "b c" AND "ddd" *) OR ("e" NOT "f"))'
    )
    assert to_fts5(parse_query("NEAR")) == '"NEAR"'


# --- fuzzy matching -------------------------------------------------------------------------


def test_misspelled_author_falls_back_to_fuzzy(corpus: dict[str, int]) -> None:
    page = paper_search(query="Vaswanni")
    assert page.mode == "fuzzy"
    assert page.notes
    assert keys_of(page, corpus)[0] == "attention"


def test_misspelled_title_words_fall_back_to_fuzzy(corpus: dict[str, int]) -> None:
    page = paper_search(query="Constituensy Parsng")
    assert page.mode == "fuzzy"
    assert keys_of(page, corpus)[0] == "constituency"


def test_exact_results_with_enough_hits_are_not_fuzzy(corpus: dict[str, int]) -> None:
    page = paper_search(query="translation")
    assert page.mode == "fulltext"
    assert page.notes == []


def test_nothing_close_returns_an_empty_page(corpus: dict[str, int]) -> None:
    page = paper_search(query="zzyzx qwxqwx")
    assert page.hits == []
    assert page.total == 0


def test_vocabulary_finds_words_within_the_edit_budget() -> None:
    words = vocabulary.Vocabulary(
        [("transformer", 9), ("transformers", 3), ("translation", 5), ("vaswani", 1)]
    )
    assert words.close_terms("tranformer")[:2] == ["transformer", "transformers"]
    assert words.close_terms("vaswanni") == ["vaswani"]
    assert words.close_terms("bert") == []
    assert words.close_terms("vaswnai") == ["vaswani"]  # a transposition is one edit
    numbered = vocabulary.Vocabulary([("topic0", 4), ("gpt3", 2), ("llama2", 2), ("bert2vec", 1)])
    assert numbered.close_terms("topic4") == []  # a number is never corrected
    assert numbered.close_terms("llama3") == []
    assert numbered.close_terms("llamq2") == ["llama2"]  # the letters around it may be
    assert numbered.close_terms("bert2vce") == ["bert2vec"]
    assert vocabulary.edit_distance("kitten", "sitting", 3) == 3
    assert vocabulary.edit_distance("kitten", "sitting", 1) == 2  # stopped past the limit


# --- limits and paging ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"query": "x" * 4001}, "query"),
        ({"query": ""}, "query"),
        ({"query": "   "}, "query"),
        ({"query": "bleu", "limit": 0}, "limit"),
        ({"query": "bleu", "limit": 101}, "limit"),
        ({"query": "bleu", "limit": True}, "limit"),
        ({"query": "bleu", "offset": -1}, "offset"),
        ({"query": "bleu", "offset": 10_001}, "offset"),
    ],
)
def test_limits_are_rejected_not_clamped(kwargs: dict[str, Any], field: str) -> None:
    with pytest.raises(InvalidInput) as caught:
        paper_search(**kwargs)
    assert caught.value.details["field"] == field


def test_limits_at_the_edge_are_accepted(corpus: dict[str, int]) -> None:
    # The longest query, the largest page and the furthest offset are served, not refused.
    longest = ("translation " * 50)[:500]
    page = paper_search(query=longest, limit=100)
    assert keys_of(page, corpus) == keys_of(paper_search(query="translation", limit=100), corpus)
    assert page.hits and not page.has_more
    far = paper_search(query="translation", limit=100, offset=10_000)
    assert far.hits == [] and far.total == page.total and not far.has_more


def test_pagination_reports_total_and_has_more(corpus: dict[str, int]) -> None:
    everything = keys_of(paper_search(query="translation", limit=100), corpus)
    first = paper_search(query="translation", limit=2)
    second = paper_search(query="translation", limit=2, offset=2)
    last = paper_search(query="translation", limit=2, offset=len(everything) - 1)
    assert first.total == second.total == last.total == len(everything)
    assert first.has_more and second.has_more and not last.has_more
    assert keys_of(first, corpus) + keys_of(second, corpus) == everything[:4]
    assert len(last.hits) == 1
    beyond = paper_search(query="translation", limit=2, offset=50)
    assert beyond.hits == [] and beyond.total == len(everything) and not beyond.has_more


# --- filters and scope ----------------------------------------------------------------------


def test_filters_restrict_results(corpus: dict[str, int]) -> None:
    assert found("translation", corpus, filters=SearchFilters(year_from=2010)) == {
        "nmt", "speech", "translation_mention", "attention",
    }  # fmt: skip
    assert found("evaluation", corpus, filters=SearchFilters(venue="ACL")) == {"bleu"}
    assert found("evaluation", corpus, filters=SearchFilters(venue="ACL*")) == {"bleu", "meteor"}
    assert found("translation", corpus, filters=SearchFilters(source="nowhere")) == set()
    page = paper_search(query="translation", filters=SearchFilters(year=2002))
    assert page.total == 1


def test_project_filter_and_scope_isolation(
    corpus: dict[str, int], make_project: Callable[..., Any]
) -> None:
    thesis = make_project("Thesis")
    other = make_project("Other")
    project_add_papers(project=thesis, paper_ids=[corpus["bleu"], corpus["nmt"]])
    project_add_papers(project=other, paper_ids=[corpus["meteor"]])
    assert found("translation", corpus, scope=[thesis.id]) == {"bleu", "nmt"}
    assert found("translation", corpus, filters=SearchFilters(project=thesis.id)) == {
        "bleu", "nmt",
    }  # fmt: skip
    assert found("meteor", corpus, scope=[thesis.id]) == set()
    # Fuzzy matching stays inside the scope too.
    assert found("Lavvie", corpus, scope=[thesis.id]) == set()
    assert "meteor" in found("Lavvie", corpus, scope=[other.id])
    assert paper_search_ids(query="meteor", scope=[thesis.id]) == []


# --- keeping the index in step -----------------------------------------------------------------


def test_bulk_import_indexes_every_paper() -> None:
    call_command("import_jsonl", str(ACL_SAMPLE), "--no-progress", stdout=io.StringIO())
    assert index_rows() == Paper.objects.count() > 250
    paper = Paper.objects.get(identifiers__scheme="acl", identifiers__value="D18-1057")
    assert paper.pk in paper_search_ids(query='"context overlap" embeddings')


def test_update_reindexes_the_paper(corpus: dict[str, int]) -> None:
    assert found("zeugma", corpus) == set()
    paper = Paper.objects.get(pk=corpus["constituency"])
    # A merge that fills an empty field goes through the bulk path's update branch.
    paper.abstract = ""
    paper.save()
    index_papers([paper.pk])
    paper_upsert(
        record=PaperRecord.build(
            title=paper.title,
            year=paper.year,
            authors=["Nikita Kitaev", "Dan Klein"],
            abstract="Zeugma everywhere.",
        )
    )
    assert found("zeugma", corpus) == {"constituency"}
    assert found("LSTM", corpus) == set()


def test_keyword_changes_are_searchable_at_once(corpus: dict[str, int]) -> None:
    paper_keywords_update(refs=[corpus["word2vec"]], action="add", keywords=["embeddings"])
    assert found("embeddings", corpus) == {"word2vec"}
    paper_keywords_update(refs=[corpus["word2vec"]], action="remove", keywords=["embeddings"])
    assert found("embeddings", corpus) == set()


def test_deleted_paper_leaves_the_index(corpus: dict[str, int]) -> None:
    before = index_rows()
    Paper.objects.filter(pk=corpus["meteor"]).delete()
    assert index_rows() == before - 1
    assert found("meteor", corpus) == set()


def test_rolled_back_write_leaves_no_index_row(db: None) -> None:
    from django.db import transaction

    with pytest.raises(RuntimeError), transaction.atomic():
        paper_upsert(record=PaperRecord.build(title="Ephemeral Quokka Study", year=2020))
        assert paper_search_ids(query="quokka")
        raise RuntimeError
    assert paper_search_ids(query="quokka") == []
    assert index_rows() == 0


def test_rebuild_restores_a_wiped_index(corpus: dict[str, int]) -> None:
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {FTS_TABLE}")  # noqa: S608
        cursor.execute(f"DELETE FROM {postings.POSTING_TABLE}")  # noqa: S608
    postings.forget_stats()
    assert paper_search_ids(query="translation") == []
    assert rebuild_index(batch_size=5) == len(corpus)
    assert postings.rebuild_postings(batch_size=5) == len(corpus)
    assert index_rows() == len(corpus)
    assert "nmt" in found("translation", corpus)


def test_reindex_command_rebuilds_with_a_summary(corpus: dict[str, int]) -> None:
    out = io.StringIO()
    call_command("reindex_fulltext", "--no-progress", "--batch-size", "4", stdout=out)
    assert f"Indexed {len(corpus)} papers" in out.getvalue()
    assert index_rows() == len(corpus)


def test_reindex_command_creates_a_missing_index(corpus: dict[str, int]) -> None:
    """A knowledge base that recorded migration 0003 while it was a placeholder."""
    migration = importlib.import_module("papers.migrations.0003_fulltext")
    down = migration.PG_DOWN if connection.vendor == "postgresql" else migration.SQLITE_DOWN
    migration._execute(connection, down)
    assert FTS_TABLE not in connection.introspection.table_names()
    call_command("reindex_fulltext", "--no-progress", stdout=io.StringIO())
    assert index_rows() == len(corpus)
    assert "nmt" in found("translation", corpus)
    Paper.objects.filter(pk=corpus["nmt"]).delete()  # the delete trigger is back too
    assert index_rows() == len(corpus) - 1


# --- cheap entry points -----------------------------------------------------------------------


def test_search_ids_follow_the_ranking(corpus: dict[str, int]) -> None:
    page = paper_search(query="translation", limit=100)
    assert paper_search_ids(query="translation") == [h.record["paper_id"] for h in page.hits]
    assert paper_search_ids(query="translation", limit=2) == [
        h.record["paper_id"] for h in page.hits[:2]
    ]
    assert sorted(paper_search_ids(query="translation", ranked=False)) == sorted(
        h.record["paper_id"] for h in page.hits
    )


def test_sorted_access_finds_the_same_top_papers_as_scoring_every_hit(
    corpus: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The threshold algorithm (best postings first, tiny blocks so it needs many rounds)
    returns exactly the ranking of the aggregate over every posting."""
    queries = ["translation", "neural machine translation evaluation", "parsing of speech"]
    full = {q: paper_search(query=q, limit=5) for q in queries}
    monkeypatch.setattr(lexical, "EXHAUSTIVE_BELOW", 0)
    monkeypatch.setattr(lexical, "FIRST_BLOCK", 1)
    # MaxScore (from 1 term) with its candidates completed by random access, or handed to
    # the aggregate when there are more than MAXSCORE_MAX_CANDIDATES (0: always); the
    # threshold algorithm (from 99 terms) over rounds of sorted access, or handed to the
    # aggregate after its first round (MAX_SORTED_BLOCK 1).
    candidates, block = lexical.MAXSCORE_MAX_CANDIDATES, lexical.MAX_SORTED_BLOCK
    plans = [(1, candidates, block), (1, 0, block), (99, candidates, block), (99, candidates, 1)]
    for maxscore_from, max_candidates, max_block in plans:
        monkeypatch.setattr(lexical, "MAXSCORE_FROM_TERMS", maxscore_from)
        monkeypatch.setattr(lexical, "MAXSCORE_MAX_CANDIDATES", max_candidates)
        monkeypatch.setattr(lexical, "MAX_SORTED_BLOCK", max_block)
        for query, page in full.items():
            pruned = paper_search(query=query, limit=5)
            assert keys_of(pruned, corpus) == keys_of(page, corpus), query
            assert [h.score for h in pruned.hits] == pytest.approx([h.score for h in page.hits])


def test_raw_timing_helper_times_the_engine_query_that_finds_the_papers(
    corpus: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """raw_search_ms times the database engine's own ranked query (the benchmark's
    baseline): the query it runs finds the papers the search finds, and the time is that
    query's, not zero and not more than the whole call."""
    from papers.search import native

    ran: list[tuple[int, list[int]]] = []
    engine_query = native.raw_ranked_ids

    def spy(node: Any, limit: int) -> list[int]:
        ids = engine_query(node, limit)
        ran.append((limit, ids))
        return ids

    monkeypatch.setattr(native, "raw_ranked_ids", spy)
    started = time.perf_counter()
    took_ms = raw_search_ms("translation", limit=20)
    call_ms = (time.perf_counter() - started) * 1000
    assert 0 < took_ms <= call_ms
    [(limit, ids)] = ran
    assert limit == 20
    found = paper_search(query="translation", limit=20)
    assert ids and set(keys_of(ids, corpus)) == set(keys_of(found, corpus))


@pytest.mark.parametrize("offset", [0, 1, 3, 50])
def test_engine_ranking_counts_every_match_on_any_page(corpus: dict[str, int], offset: int) -> None:
    """native.rank carries the count with its page (one statement); a page past the last
    match counts apart, and typo tolerance's ranking (count=False) asks for none."""
    from papers.search import native
    from papers.search import query as q

    node = q.Term("trans", prefix=True)
    with connection.cursor() as cursor:
        every = native.rank(node, [], 1000, 0)
        sql, params = native.match_restriction(node)
        cursor.execute(f"SELECT count(*) FROM ({sql}) m", params)  # noqa: S608
        matched = cursor.fetchone()[0]
    assert matched >= 3 and every.total == matched == len(every.ids)
    page = native.rank(node, [], 2, offset)
    assert page.total == matched
    assert page.ids == every.ids[offset : offset + 2]
    uncounted = native.rank(node, [], 2, offset, count=False)
    assert uncounted.ids == page.ids and uncounted.total == 0

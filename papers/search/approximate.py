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

A graph built in the background is also saved under CACHE_DIR/vectors (`save`), with the
paper ids and a fingerprint of each vector it was built from, so that a process starting
later (a restart, another web process, a worker) loads it in seconds instead of building
it again (at 1M papers, tens of minutes on one core, while its searches score every row)
and applies only what changed since (`changes`, by fingerprint). A file that cannot be
read is ignored: the graph is built again.
"""

from __future__ import annotations

import atexit
import logging
import os
import secrets
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

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

    def __init__(self, dimensions: int, index: Any = None) -> None:
        from usearch.index import Index

        self.dimensions = dimensions
        if index is None:
            index = Index(
                ndim=dimensions,
                metric="cos",
                dtype="i8",
                connectivity=CONNECTIVITY,
                expansion_add=EXPANSION_ADD,
                expansion_search=EXPANSION_SEARCH,
            )
        else:  # a saved graph: usearch does not save the expansions
            index.expansion_add = EXPANSION_ADD
            index.expansion_search = EXPANSION_SEARCH
        self._index = index
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

    def write(self, path: Path) -> None:
        with self._lock:
            self._index.save(str(path))

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
    return graph if upsert_in_chunks(graph, ids, matrix, chunk) else None


def upsert_in_chunks(
    graph: Approximate,
    ids: np.ndarray,
    matrix: np.ndarray,
    chunk: int,
    *,
    threads: int | None = 1,
    on_chunk: Callable[[int], object] | None = None,
) -> bool:
    """`graph.upsert` of these vectors `chunk` at a time, on one core by default (None:
    every core), `on_chunk(vectors added)` after each; False when the interpreter began to
    exit (the graph then holds only some of them)."""
    for start in range(0, len(ids), chunk):
        if _exiting.is_set():
            return False
        part = slice(start, start + chunk)
        graph.upsert(ids[part], matrix[part], threads=threads)
        if on_chunk is not None:
            on_chunk(len(ids[part]))
    return True


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
    old_ids: np.ndarray,
    old_rows: np.ndarray,
    new_ids: np.ndarray,
    new_rows: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """(ids gone, rows of the new snapshot that are new or changed) between two snapshots,
    each its ids and, row for row, their vectors or their vectors' `fingerprints`."""
    gone = old_ids[~np.isin(old_ids, new_ids, assume_unique=True)]
    order = np.argsort(old_ids, kind="stable")
    sorted_old = old_ids[order]
    at = np.searchsorted(sorted_old, new_ids)
    at[at >= len(sorted_old)] = 0
    present = (sorted_old[at] == new_ids) if len(sorted_old) else np.zeros(len(new_ids), bool)
    changed = ~present
    rows_present = np.flatnonzero(present)
    old_at = order[at[rows_present]]
    for start in range(0, len(rows_present), 65_536):  # bounded temporaries at 1M rows
        part = rows_present[start : start + 65_536]
        differs = new_rows[part] != old_rows[old_at[start : start + 65_536]]
        if differs.ndim > 1:
            differs = differs.any(axis=1)
        changed[part[differs]] = True
    return gone, np.flatnonzero(changed)


# Odd 64-bit multipliers, the same in every process: a vector's fingerprint is the sum of
# its 64-bit words (two float32s each) times these, modulo 2**64; a change of any one word
# always changes it (an odd multiplier is invertible modulo 2**64).
_MULTIPLIERS = np.random.default_rng(0x5EED).integers(1, 2**63, size=4_096, dtype=np.uint64) | 1


def fingerprints(matrix: np.ndarray) -> np.ndarray:
    """A 64-bit fingerprint of each row of a float32 matrix (uint64, row for row)."""
    found = np.empty(len(matrix), dtype=np.uint64)
    for start in range(0, len(matrix), 16_384):
        part = np.ascontiguousarray(matrix[start : start + 16_384], dtype=np.float32)
        if part.shape[1] % 2:  # an odd width: one float32 a word
            words = part.view(np.uint32).astype(np.uint64)
        else:
            words = part.view(np.uint64)
        found[start : start + len(part)] = (words * _MULTIPLIERS[: words.shape[1]]).sum(axis=1)
    return found


def save(graph: Approximate, name: str, ids: np.ndarray, prints: np.ndarray) -> None:
    """Write `graph` (in step with these ids and fingerprints) under CACHE_DIR/vectors as
    `name`, replacing what was saved there (seconds for a large graph: best before it is
    searched, which would wait for its lock)."""
    folder = _folder()
    folder.mkdir(parents=True, exist_ok=True)
    token = secrets.token_hex(6)  # processes saving at once never write the same file
    graph_file = f"{name}.{token}.usearch"
    graph.write(folder / graph_file)
    partial = folder / f"{name}.{token}.partial"
    with open(partial, "wb") as out:
        np.savez(
            out, ids=np.asarray(ids, dtype=np.int64), fingerprints=prints,
            dimensions=graph.dimensions, graph=graph_file,
        )  # fmt: skip
    os.replace(partial, folder / f"{name}.npz")  # readers see the old pair or the new one
    for old in folder.glob(f"{name}.*.usearch"):
        if old.name != graph_file:
            old.unlink(missing_ok=True)


def saved(name: str) -> bool:
    """Whether a graph was saved as `name` (readable or not)."""
    return (_folder() / f"{name}.npz").exists()


def load(name: str, dimensions: int) -> tuple[Approximate, np.ndarray, np.ndarray] | None:
    """(the graph saved as `name`, its paper ids, their fingerprints), or None when none
    was saved or it cannot be read (logged: the caller builds one)."""
    from usearch.index import Index

    listing = _folder() / f"{name}.npz"
    if not listing.exists():
        return None
    try:
        with np.load(listing, allow_pickle=False) as saved:
            ids, prints = saved["ids"], saved["fingerprints"]
            saved_dimensions, graph_file = int(saved["dimensions"]), str(saved["graph"])
        index = Index.restore(str(_folder() / Path(graph_file).name))
        if (
            index is None
            or saved_dimensions != dimensions
            or index.ndim != dimensions
            or len(index) != len(ids)
            or len(prints) != len(ids)
        ):
            raise ValueError("the saved graph does not match its listing")
    except Exception as error:  # any unreadable file (zip, usearch, a mismatch): build again
        logger.warning("The saved vector graph %s was not used (%s); building it", name, error)
        return None
    return Approximate(dimensions, index), ids, prints


def _folder() -> Path:
    from django.conf import settings

    return Path(settings.CACHE_DIR) / "vectors"

"""The in-process vector index: every current-model embedding in one numpy matrix.

Each process that searches loads it lazily and checks it at most once a second: it reads
the table's generation (one row of `papers_vector_generation`, renewed by triggers on every
write of the table, migration 0014) and, only when that changed, compares the table's
count and newest `updated_at` with what it holds: only rows changed since are read, and a
deletion triggers a full reload. Same table, same code on SQLite and PostgreSQL. One
index per tier: `vector_index()` over PaperEmbedding (the first tier),
`strong_vector_index()` over PaperStrongEmbedding (the second, papers/search/tiers.py).

Above VECTOR_INDEX_APPROXIMATE_ABOVE vectors a tier also keeps an approximate graph
(papers/search/approximate.py) that searches ask for candidates instead of scoring every
row. It follows every refresh before the refreshed snapshot is published: the rows read
by an incremental refresh are replaced in it, and after a full reload (a deletion, a
vector changed out of order) the two snapshots are compared and the difference applied.
A small library's graph (INLINE_BUILD_MAX vectors at most) is built during the refresh;
a larger one on a background thread (one core) while searches stay exact, then brought
up to date with the snapshot current when it is done. Each process holds its own; one
built in the background is saved (approximate.save) and the next process to start loads
it and applies what changed since, instead of building it again. The commands that write
many vectors (the imports, `reindex_embeddings`) build or update the saved graph on every
core before they end (`VectorIndex.prepare_saved_graph`), so the server's first start
after them loads it in seconds.
"""

from __future__ import annotations

import hashlib
import itertools
import logging
import math
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from datetime import datetime, timedelta

import numpy as np
from django.conf import settings
from django.db import connection
from django.db.models import Count, Max

from core.sql import database_identity
from papers.models import PaperEmbedding, PaperStrongEmbedding
from papers.search import approximate
from papers.search.approximate import Approximate
from papers.search.embedding import EmbeddingModel

logger = logging.getLogger(__name__)

REFRESH_SECONDS = 1.0
# Rows committed slightly out of timestamp order are still caught by the incremental read.
REFRESH_SLACK = timedelta(seconds=2)
# Graphs of at most this many vectors are built inside the refresh (well under a second).
INLINE_BUILD_MAX = 5_000
BUILD_CHUNK = 10_000
# A saved graph is not used when more than this share of its vectors changed since (built
# again instead), and saved again once more than SAVE_AFTER_CHANGES were applied to it.
MAX_CHANGED_SHARE = 0.5
SAVE_AFTER_CHANGES = 10_000

_serials = itertools.count(1)


@dataclass
class PreparedGraph:
    """What `VectorIndex.prepare_saved_graph` did."""

    vectors: int
    changed: int | None  # vectors applied to the graph saved earlier; None: built anew
    seconds: float
    saved: bool


@dataclass
class Snapshot:
    model: str
    ids: np.ndarray  # int64 paper ids, one per row
    matrix: np.ndarray  # float32 (rows, dimensions), normalised
    rows: dict[int, int] = field(default_factory=dict)
    count: int = 0
    latest: datetime | None = None
    _order: np.ndarray | None = None  # argsort of ids, built on first use
    # The approximate graph in step with this snapshot (None: search exactly).
    approximate: Approximate | None = None
    serial: int = field(default_factory=lambda: next(_serials))
    # Made by an incremental refresh of snapshot `base`: the rows it read (new or replaced).
    base: int | None = None
    changed_rows: np.ndarray | None = None
    # The table's generation read before the rows this snapshot holds (None: unknown).
    generation: int | None = None

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
        self._approximate: Approximate | None = None
        self._building = False
        self._generation = 0  # reset() abandons a graph being built

    @property
    def graph_ready(self) -> bool:
        """Whether this process holds the approximate graph now (read without a refresh)."""
        return self._approximate is not None

    def invalidate(self) -> None:
        """Check the table on the next search (after a write by this process)."""
        self._checked_at = -math.inf

    def reset(self) -> None:
        with self._lock:
            self._snapshot = None
            self._checked_at = -math.inf
            self._approximate = None
            self._generation += 1

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
            previous = self._snapshot
            self._snapshot = self._refreshed(previous, model)
            self._follow(previous, self._snapshot)
            self._checked_at = time.monotonic()
            return self._snapshot

    # --- the approximate graph ------------------------------------------------------------

    def _follow(self, previous: Snapshot | None, current: Snapshot) -> None:
        """Bring the graph in step with `current` (under the lock, before it is published),
        or start building one, or drop it below the threshold."""
        if current.count <= settings.VECTOR_INDEX_APPROXIMATE_ABOVE or not approximate.available():
            self._approximate = current.approximate = None
            return
        if self._approximate is not None and (previous is None or previous.model != current.model):
            self._approximate = None
        if self._approximate is not None:
            if previous is not current:
                assert previous is not None
                _sync(self._approximate, previous, current)
            current.approximate = self._approximate
            return
        if current.count <= INLINE_BUILD_MAX:
            started = time.perf_counter()
            self._approximate = current.approximate = approximate.build(current.ids, current.matrix)
            self._built(current.count, started)
        elif not self._building:
            self._build_later(current)

    def _built(self, count: int, started: float) -> None:
        logger.info(
            "Approximate vector index of %s built: %d vectors in %.2f s",
            self._table.__name__, count, time.perf_counter() - started,
        )  # fmt: skip

    def _build_later(self, base: Snapshot) -> None:
        """Build a graph of `base` on a background thread (one core, so searches keep the
        other), then apply what changed since and hand it to the current snapshot."""
        self._building = True
        generation = self._generation

        def run() -> None:
            try:
                started = time.perf_counter()
                loaded = self._saved_graph(base)
                built = loaded is None
                if loaded is None:
                    graph = approximate.build_in_chunks(base.ids, base.matrix, BUILD_CHUNK)
                    if graph is not None:
                        self._save(graph, base)
                else:
                    graph, changed = loaded
                    if changed > SAVE_AFTER_CHANGES:
                        self._save(graph, base)
                with self._lock:
                    current = self._snapshot
                    if (
                        graph is None  # the interpreter is exiting
                        or generation != self._generation
                        or current is None
                        or current.model != base.model
                        or current.count <= settings.VECTOR_INDEX_APPROXIMATE_ABOVE
                    ):
                        return
                    if current is not base:
                        _sync(graph, base, current)
                    self._approximate = current.approximate = graph
                if built:
                    self._built(base.count, started)
            except Exception:  # searches stay exact; the next refresh tries again
                logger.exception("Building the approximate vector index failed")
            finally:
                self._building = False

        approximate.in_background(run, "vector-graph")

    def _graph_name(self, model: str) -> str:
        """The saved graph's name: this table's vectors of `model` in this database."""
        table = self._table._meta.db_table
        key = f"{connection.vendor}:{database_identity(connection)}:{table}:{model}"
        return f"{table}-{hashlib.sha256(key.encode()).hexdigest()[:16]}"

    def prepare_saved_graph(
        self,
        model: EmbeddingModel,
        written: int,
        on_progress: Callable[[int, int], object] | None = None,
    ) -> PreparedGraph | None:
        """Build on every core, or bring up to date, the saved graph of this table's
        vectors of `model`, so that the next process to search loads it at start instead
        of building it on one core while its searches score every row (300k vectors: six
        minutes). For the commands that write many vectors, at their end, saying how many
        they `written`. None when the table is small enough for a search to score every
        row or to build its graph inline, `usearch` is missing, or a graph is saved and
        at most SAVE_AFTER_CHANGES vectors were written (the process that loads it applies
        them in moments; reading every vector here would cost more).
        `on_progress(vectors added, of how many)`."""
        name = self._graph_name(model.name)
        if not approximate.available() or (
            written <= SAVE_AFTER_CHANGES and approximate.saved(name)
        ):
            return None
        started = time.perf_counter()
        if not approximate.saved(name):
            return self._build_streamed(model, name, started, on_progress)
        base = self._refreshed(None, model)
        if not graph_worth_saving(base.count):
            return None
        loaded = self._saved_graph(base)
        if loaded is not None:
            graph, changed = loaded
            saved = changed == 0 or self._save(graph, base)
        else:
            changed = None
            graph = Approximate(base.matrix.shape[1])

            def added(done: int) -> None:
                if on_progress is not None:
                    on_progress(done, base.count)

            if not approximate.upsert_in_chunks(
                graph, base.ids, base.matrix, BUILD_CHUNK, threads=None, on_chunk=added
            ):
                return None  # the interpreter is exiting
            saved = self._save(graph, base)
        return PreparedGraph(base.count, changed, time.perf_counter() - started, saved)

    def graph_grower(self, model: EmbeddingModel) -> GraphGrower | None:
        """For a command about to write many vectors of `model` (an import, alongside its
        records): a graph to grow as it writes them, holding `stored_vectors(model)` too
        (the caller adds them), when none is saved and usearch is installed. None when a
        graph is saved: `prepare_saved_graph` brings it up to date at the command's end."""
        name = self._graph_name(model.name)
        if not approximate.available() or approximate.saved(name):
            return None
        return GraphGrower(name, model.dimensions)

    def stored_vectors(
        self, model: EmbeddingModel, after: int, upto: int
    ) -> tuple[np.ndarray, np.ndarray]:
        """(paper ids, vectors) of the next BUILD_CHUNK vectors of `model` by paper id, from
        after `after` to `upto`: one query each, no cursor kept open between writes."""
        rows = self._table.objects.filter(
            model=model.name, paper_id__gt=after, paper_id__lte=upto
        ).order_by("paper_id")[:BUILD_CHUNK]
        for chunk in self._chunks(rows, model.dimensions, BUILD_CHUNK):
            return chunk
        return np.empty(0, dtype=np.int64), np.empty((0, model.dimensions), dtype=np.float32)

    def stored_range(self, model: EmbeddingModel) -> tuple[int, int]:
        """How many vectors of `model` the table holds, and the highest paper id among them."""
        state = self._table.objects.filter(model=model.name).aggregate(
            count=Count("*"), last=Max("paper_id")
        )
        return state["count"], state["last"] or 0

    def _build_streamed(
        self,
        model: EmbeddingModel,
        name: str,
        started: float,
        on_progress: Callable[[int, int], object] | None,
    ) -> PreparedGraph | None:
        """prepare_saved_graph when none was saved: the graph built on every core from the
        table's vectors read BUILD_CHUNK at a time, never all at once (at 1M papers the
        float32 matrix is 1 GB, which the command does not search with), and saved with
        their ids and fingerprints."""
        table = self._table.objects.filter(model=model.name)
        total = table.count()
        if not graph_worth_saving(total):
            return None
        graph = Approximate(model.dimensions)
        ids: list[np.ndarray] = []
        prints: list[np.ndarray] = []
        for chunk_ids, matrix in self._chunks(table, model.dimensions, BUILD_CHUNK):
            if not approximate.upsert_in_chunks(
                graph, chunk_ids, matrix, BUILD_CHUNK, threads=None
            ):
                return None  # the interpreter is exiting
            ids.append(chunk_ids)
            prints.append(approximate.fingerprints(matrix))
            if on_progress is not None:
                on_progress(len(chunk_ids), total)
        all_ids = np.concatenate(ids or [np.empty(0, dtype=np.int64)])
        saved = self._write(
            graph, name, all_ids, lambda: np.concatenate(prints or [np.empty(0, np.uint64)])
        )
        return PreparedGraph(len(all_ids), None, time.perf_counter() - started, saved)

    def _save(self, graph: Approximate, base: Snapshot) -> bool:
        return self._write(
            graph,
            self._graph_name(base.model),
            base.ids,
            lambda: approximate.fingerprints(base.matrix),
        )

    @staticmethod
    def _write(
        graph: Approximate, name: str, ids: np.ndarray, prints: Callable[[], np.ndarray]
    ) -> bool:
        """Save `graph` as `name` with these ids and their vectors' `prints()`; False (logged)
        when it cannot be saved."""
        try:
            approximate.save(graph, name, ids, prints())
        except Exception:  # a read-only or full disk (usearch raises its own errors): the
            # graph is still used here; the next process builds it again
            logger.exception("Saving the approximate vector index failed")
            return False
        return True

    def _saved_graph(self, base: Snapshot) -> tuple[Approximate, int] | None:
        """The graph saved by an earlier process, brought in step with `base`, and how many
        of its vectors changed since; None when there is none, it cannot be read, most of
        it changed since, or the interpreter is exiting."""
        started = time.perf_counter()
        saved = approximate.load(self._graph_name(base.model), base.matrix.shape[1])
        if saved is None:
            return None
        graph, ids, prints = saved
        loaded = time.perf_counter()
        now = approximate.fingerprints(base.matrix)
        gone, rows = approximate.changes(ids, prints, base.ids, now)
        changed = len(gone) + len(rows)
        if changed > MAX_CHANGED_SHARE * max(len(base.ids), 1):
            return None
        graph.remove(gone)
        if not approximate.upsert_in_chunks(graph, base.ids[rows], base.matrix[rows], BUILD_CHUNK):
            return None
        logger.info(
            "Approximate vector index of %s loaded from its saved file in %.2f s: %d vectors, "
            "%d changed since, applied in %.2f s",
            self._table.__name__, loaded - started, len(graph), changed,
            time.perf_counter() - loaded,
        )  # fmt: skip
        return graph, changed

    def _table_generation(self) -> int | None:
        """The table's generation (migration 0014): one row, whatever the table's size."""
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT n FROM papers_vector_generation WHERE name = %s",
                [self._table._meta.db_table],
            )
            row = cursor.fetchone()
        return None if row is None else int(row[0])

    def _refreshed(self, current: Snapshot | None, model: EmbeddingModel) -> Snapshot:
        # Read first: the rows read next are at least as new as the generation recorded.
        generation = self._table_generation()
        if (
            current is not None
            and current.model == model.name
            and generation is not None
            and generation == current.generation
        ):
            return current
        table = self._table.objects.filter(model=model.name)
        # COUNT(*), not COUNT(pk): the (model, updated_at) index answers it alone; counting
        # the key read every row, vectors and all (12 ms at 3k papers on a fresh connection).
        # Still a read of every index entry of the model: paid only after a write.
        state = table.aggregate(count=Count("*"), latest=Max("updated_at"))
        count, latest = state["count"], state["latest"]
        refreshed = self._compared(current, model, table, count, latest)
        refreshed.generation = generation
        return refreshed

    def _compared(
        self,
        current: Snapshot | None,
        model: EmbeddingModel,
        table: object,
        count: int,
        latest: datetime | None,
    ) -> Snapshot:
        if current is None or current.model != model.name:
            return self._load(table, model, count, latest)
        if count == current.count and latest == current.latest:
            return current
        if latest is not None and current.latest is not None and latest >= current.latest:
            changed = table.filter(updated_at__gte=current.latest - REFRESH_SLACK)  # type: ignore[attr-defined]
            updated = self._apply(current, changed, model)
            if updated.count == count:
                updated.latest = latest
                return updated
        return self._load(table, model, count, latest)

    @staticmethod
    def _chunks(
        queryset: object, dimensions: int, size: int = 5_000
    ) -> Iterator[tuple[np.ndarray, np.ndarray]]:
        """(paper ids, their vectors) of `dimensions` among these rows, `size` rows at a
        time (the last chunk shorter), one numpy copy a chunk rather than a row (a copy a
        row cost as much as the reading)."""
        chunk_ids: list[int] = []
        chunk: list[bytes] = []

        def joined() -> tuple[np.ndarray, np.ndarray]:
            matrix = np.frombuffer(b"".join(chunk), dtype="<f4").reshape(len(chunk), dimensions)
            return np.asarray(chunk_ids, dtype=np.int64), matrix

        for pk, vector, dims in queryset.values_list("paper_id", "vector", "dimensions").iterator(  # type: ignore[attr-defined]
            chunk_size=5_000
        ):
            if dims != dimensions:
                continue
            chunk_ids.append(pk)
            chunk.append(vector)
            if len(chunk_ids) == size:
                yield joined()
                chunk_ids.clear()
                chunk.clear()
        if chunk_ids:
            yield joined()

    @classmethod
    def _rows(
        cls, queryset: object, dimensions: int, expected: int = 0
    ) -> tuple[np.ndarray, np.ndarray]:
        """(paper ids, their vectors) of `dimensions` among these rows, copied a chunk at a
        time into a matrix of `expected` rows (grown if more come): the vectors are held
        once while read (at 1M papers 1 GB; collected whole and joined, 3 GB at the peak)."""
        ids = np.empty(max(expected, 1_024), dtype=np.int64)
        matrix = np.empty((len(ids), dimensions), dtype=np.float32)
        count = 0
        for chunk_ids, chunk in cls._chunks(queryset, dimensions):
            if count + len(chunk_ids) > len(ids):  # more rows than counted (written meanwhile)
                size = max(2 * len(ids), count + len(chunk_ids))
                ids = np.resize(ids, size)
                matrix = np.resize(matrix, (size, dimensions))
            ids[count : count + len(chunk_ids)] = chunk_ids
            matrix[count : count + len(chunk_ids)] = chunk
            count += len(chunk_ids)
        if count < len(ids):  # the rows only, without keeping the rest allocated
            ids, matrix = ids[:count].copy(), matrix[:count].copy()
        return ids, matrix

    def _load(
        self, table: object, model: EmbeddingModel, count: int, latest: datetime | None
    ) -> Snapshot:
        ids, matrix = self._rows(table, model.dimensions, count)
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
        changed_rows = np.fromiter((rows[pk] for pk in ids.tolist()), np.int64, count=len(ids))
        return Snapshot(
            current.model, all_ids, new_matrix, rows, len(all_ids), current.latest,
            base=current.serial, changed_rows=changed_rows,
        )  # fmt: skip


class GraphGrower:
    """An approximate graph grown as a command writes vectors (`VectorIndex.graph_grower`),
    on another thread than the command's if it likes (one at a time), then saved with the
    ids and fingerprints of what it was given, as `prepare_saved_graph` saves one. A
    vector given here but never stored (its write failed, its paper deleted) or stored
    but not given is no error: the process that loads the graph compares the
    fingerprints with the table and applies the difference."""

    def __init__(self, name: str, dimensions: int) -> None:
        self._name = name
        self._graph = Approximate(dimensions)
        self._ids: list[np.ndarray] = []
        self._prints: list[np.ndarray] = []
        self._whole = True
        self.seconds = 0.0
        # One core while the command's own work goes on beside; None: every core.
        self.threads: int | None = 1

    def add(self, ids: np.ndarray, matrix: np.ndarray) -> None:
        started = time.perf_counter()
        if not approximate.upsert_in_chunks(
            self._graph, ids, matrix, BUILD_CHUNK, threads=self.threads
        ):
            self._whole = False  # the interpreter is exiting
        self._ids.append(ids)
        self._prints.append(approximate.fingerprints(matrix))
        self.seconds += time.perf_counter() - started

    def save(self) -> PreparedGraph | None:
        """Save the graph when it is large enough to be searched through (more than
        VECTOR_INDEX_APPROXIMATE_ABOVE vectors); None when it is not, or was left unfinished."""
        ids = np.concatenate(self._ids or [np.empty(0, dtype=np.int64)])
        prints = np.concatenate(self._prints or [np.empty(0, dtype=np.uint64)])
        # A paper given twice: the graph holds the vector given last.
        _, first_from_end = np.unique(ids[::-1], return_index=True)
        last = len(ids) - 1 - first_from_end
        ids, prints = ids[last], prints[last]
        if not self._whole or not graph_worth_saving(len(ids)):
            return None
        started = time.perf_counter()
        saved = VectorIndex._write(self._graph, self._name, ids, lambda: prints)
        seconds = self.seconds + time.perf_counter() - started
        return PreparedGraph(len(ids), None, seconds, saved)


def graph_worth_saving(vectors: int) -> bool:
    """Whether a table of this many vectors is searched through a graph that a process
    should load rather than build (above VECTOR_INDEX_APPROXIMATE_ABOVE, and too many to
    build inline)."""
    return vectors > max(settings.VECTOR_INDEX_APPROXIMATE_ABOVE, INLINE_BUILD_MAX)


def _sync(graph: Approximate, previous: Snapshot, current: Snapshot) -> None:
    """Apply to `graph` (in step with `previous`) what differs in `current`."""
    if current.base == previous.serial and current.changed_rows is not None:
        rows = current.changed_rows
        graph.upsert(current.ids[rows], current.matrix[rows])
        return
    gone, rows = approximate.changes(previous.ids, previous.matrix, current.ids, current.matrix)
    graph.remove(gone)
    graph.upsert(current.ids[rows], current.matrix[rows])


_index = VectorIndex(PaperEmbedding)
_strong_index = VectorIndex(PaperStrongEmbedding)


def vector_index() -> VectorIndex:
    """The first tier's index (PaperEmbedding)."""
    return _index


def strong_vector_index() -> VectorIndex:
    """The second tier's index (PaperStrongEmbedding)."""
    return _strong_index

"""Storing paper vectors, for either embedding tier: `embed_with` encodes papers whose
stored vector is missing or stale (another model, or other text) and upserts them in short
transactions; semantic.py (first tier) and strong_tier.py (second tier) both use it.
"""

from __future__ import annotations

import logging
import os
import time
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

import numpy as np
from django.db import DatabaseError, transaction

from core.progress import progress_bar
from papers.bulk import insert_rows
from papers.models import Paper, PaperEmbedding, PaperStrongEmbedding, lock_papers
from papers.search.embedding import EmbeddingModel, paper_text, text_hash
from papers.search.vector_index import (
    GraphGrower,
    PreparedGraph,
    VectorIndex,
    graph_worth_saving,
)

logger = logging.getLogger(__name__)

EMBED_CHUNK = 1_000


@dataclass
class EmbedOutcome:
    embedded: int = 0
    unchanged: int = 0
    missing: int = 0  # ids with no paper (deleted meanwhile)
    seconds: float = 0.0

    def add(self, other: EmbedOutcome) -> None:
        self.embedded += other.embedded
        self.unchanged += other.unchanged
        self.missing += other.missing
        self.seconds += other.seconds

    def as_dict(self) -> dict[str, float | int]:
        return {
            "embedded": self.embedded,
            "unchanged": self.unchanged,
            "missing": self.missing,
            "seconds": round(self.seconds, 3),
        }


EmbeddingTable = type[PaperEmbedding] | type[PaperStrongEmbedding]


def embed_with(
    model: EmbeddingModel,
    table: EmbeddingTable,
    index: VectorIndex,
    paper_ids: Iterable[int],
    *,
    force: bool = False,
    chunk: int = EMBED_CHUNK,
    threads: int = 1,
) -> EmbedOutcome:
    """embed_papers for either tier: `model`'s vectors into `table`, `chunk` papers per
    transaction (encoded on `threads` threads), and `index` told to look again."""
    started = time.perf_counter()
    ids = sorted({int(i) for i in paper_ids})
    outcome = EmbedOutcome()
    for start in range(0, len(ids), chunk):
        outcome.add(
            _embed_chunk(model, table, ids[start : start + chunk], force=force, threads=threads)
        )
        if outcome.embedded:
            index.invalidate()  # each chunk is committed: searches may use it at once
    outcome.seconds = time.perf_counter() - started
    return outcome


def embed_in_batches(
    embed: Callable[[list[int]], EmbedOutcome],
    paper_ids: Sequence[int],
    *,
    batch_size: int = EMBED_CHUNK,
    on_progress: Callable[[int], object] = lambda done: None,
    on_error: Callable[[list[int], DatabaseError], object] = lambda chunk, error: None,
) -> tuple[EmbedOutcome, int]:
    """Run `embed` (either tier's embed_papers) over `paper_ids`, `batch_size` at a time:
    what the commands that embed many papers share (reindex_embeddings, the imports). A
    batch the database refuses is reported to `on_error` and counted; the rest go on.
    Returns the summed outcome and how many papers failed."""
    outcome = EmbedOutcome()
    failed = 0
    for start in range(0, len(paper_ids), batch_size):
        chunk = list(paper_ids[start : start + batch_size])
        try:
            outcome.add(embed(chunk))
        except DatabaseError as error:
            failed += len(chunk)
            on_error(chunk, error)
        on_progress(len(chunk))
    return outcome, failed


# Batches of an import's vectors that may wait to be encoded or written before the import
# waits for them: the texts waiting stay a few batches, whichever side is the slower.
ALONGSIDE_BEHIND = 4


class VectorsAlongside:
    """A bulk import's vectors made while it goes on, on the second core. After each
    batch of records has committed, `add(paper_ids)` reads (on the importing thread and
    its connection) which of them need a vector; one helper thread encodes them while the
    next batch is imported; the importing thread writes each batch's vectors in a short
    transaction of its own once they are encoded. Once the table holds enough vectors to
    be searched through a graph and none is saved (`graph_worth_saving`), the helper also
    grows one (`VectorIndex.graph_grower`): from the vectors stored by then, read a chunk
    at a time between batches, and from each batch's new vectors. Encoding and the graph
    are computation only (tokenizers, numpy and usearch let go of the interpreter's lock),
    so every read and write stays on the importing thread, in the order of its
    transactions. `finish()` waits for the rest. A batch whose encoding or write fails is
    left in `failed`, for the caller to embed again the usual way."""

    def __init__(
        self,
        model: EmbeddingModel,
        table: EmbeddingTable,
        index: VectorIndex,
        *,
        chunk: int = EMBED_CHUNK,
    ) -> None:
        self.model, self._table, self._index, self._chunk = model, table, index, chunk
        self.outcome = EmbedOutcome()
        self.failed: list[int] = []
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="import-vectors")
        self._pending: deque[tuple[list[int], Todo, Future[np.ndarray]]] = deque()
        # The graph to grow once the vectors are many (None: one is saved, or no usearch).
        self._unstarted = index.graph_grower(model)
        self.grower: GraphGrower | None = None
        self._vectors = index.stored_range(model)[0] if self._unstarted else 0
        self._stored: tuple[int, int] | None = None  # stored vectors still to add: (after, upto)

    def add(self, paper_ids: Sequence[int]) -> None:
        """These papers were written (their transaction committed): have their vectors
        made, beside what the caller does next."""
        self._write_ready()
        ids = sorted({int(i) for i in paper_ids})
        for start in range(0, len(ids), self._chunk):
            chunk = ids[start : start + self._chunk]
            outcome, todo = _to_embed(self.model, self._table, chunk, force=False)
            self.outcome.add(outcome)
            if todo:
                self._vectors += len(todo)
                self._pending.append((chunk, todo, self._pool.submit(self._encode, todo)))
                self._keep_up()
        if self._unstarted is not None and graph_worth_saving(self._vectors):
            self._start_graph()
        self._add_stored()

    def _start_graph(self) -> None:
        """From now on the helper grows the graph: every vector made so far is written
        first, so that the stored ones, read next, are all of them."""
        while self._pending:
            self._write_oldest()
        self.grower, self._unstarted = self._unstarted, None
        self._stored = (0, self._index.stored_range(self.model)[1])

    def _add_stored(self, *, all_of_them: bool = False) -> None:
        """Give the helper the next chunks of the vectors stored before the graph began,
        while it has little else waiting (all of them at the end)."""
        while self._stored is not None and (all_of_them or len(self._pending) < ALONGSIDE_BEHIND):
            after, upto = self._stored
            ids, matrix = self._index.stored_vectors(self.model, after, upto)
            if not len(ids):
                self._stored = None
                return
            self._stored = (int(ids[-1]), upto)
            self._pending.append(([], [], self._pool.submit(self._grow, ids, matrix)))
            self._keep_up()

    def behind(self) -> int:
        """Papers whose vectors are not written yet."""
        return sum(len(chunk) for chunk, _, _ in self._pending)

    def finish(self, on_progress: Callable[[int], object] = lambda done: None) -> EmbedOutcome:
        """Wait for the vectors still being made and write them (`on_progress(papers)`),
        the graph's last part on every core now the records are in; the summed outcome,
        `seconds` being this wait."""
        started = time.perf_counter()
        if self.grower is not None:
            self.grower.threads = None
        self._add_stored(all_of_them=True)
        while self._pending:
            on_progress(self._write_oldest())
        self._pool.shutdown()
        self._index.invalidate()
        self.outcome.seconds = time.perf_counter() - started
        return self.outcome

    def save_graph(self, *, hidden: bool) -> str | None:
        """After `finish`: the graph grown alongside saved, or, when one was saved before,
        brought up to date (`save_vector_graph`); the line to print, or None."""
        if self.grower is not None:
            return graph_line(self.grower.save())
        return save_vector_graph(self._index, self.model, self.outcome.embedded, hidden=hidden)

    def _encode(self, todo: Todo) -> np.ndarray:
        vectors = self.model.encode_documents([text for _, text, _ in todo])
        self._grow(np.asarray([pk for pk, _, _ in todo], dtype=np.int64), vectors)
        return vectors

    def _grow(self, ids: np.ndarray, vectors: np.ndarray) -> np.ndarray:
        if self.grower is not None:
            self.grower.add(ids, vectors)
        return vectors

    def _keep_up(self) -> None:
        while len(self._pending) > ALONGSIDE_BEHIND:
            self._write_oldest()

    def _write_ready(self) -> None:
        while self._pending and self._pending[0][2].done():
            self._write_oldest()

    def _write_oldest(self) -> int:
        chunk, todo, future = self._pending.popleft()
        try:
            vectors = future.result()
            if todo:
                _write_vectors(self.model, self._table, todo, vectors, self.outcome)
        except Exception as error:  # encoding or the database: embedded again by the caller
            logger.warning(
                "Vectors of %d imported papers not made alongside: %s", len(chunk), error
            )
            self.failed.extend(chunk)
        return len(chunk)


LATER = "the server builds it in the background, searching every vector until then"


def save_vector_graph(
    index: VectorIndex, model: EmbeddingModel, written: int, *, hidden: bool
) -> str | None:
    """What the commands that write many vectors end with, after `written` of them: the
    tier's approximate graph built on every core, or brought up to date, and saved for the
    server to load at start (`VectorIndex.prepare_saved_graph`), with a progress bar once
    there is one to build (`hidden`: --no-progress). Returns the line to print, or None
    when there was nothing to do. A failure loses nothing: the server builds it itself."""
    with ExitStack() as stack:
        bars: list[Any] = []  # the progress bar, made at the first vectors added

        def progress(done: int, total: int) -> None:
            if not bars:
                bars.append(stack.enter_context(progress_bar(
                    desc="Vector graph", unit=" vectors", total=total, hidden=hidden
                )))  # fmt: skip
            bars[0].update(done)

        try:
            prepared = index.prepare_saved_graph(model, written, progress)
        except Exception as error:  # the vectors are stored; only the head start is lost
            return f"vector graph not built ({type(error).__name__}: {error}); {LATER}"
    return graph_line(prepared)


def graph_line(prepared: PreparedGraph | None) -> str | None:
    """What a command prints of the graph it built or brought up to date (None: nothing
    done)."""
    if prepared is None:
        return None
    if prepared.changed is None:
        cores = os.cpu_count() or 1
        done = f"{prepared.vectors} vectors, built in {prepared.seconds:.1f} s on {cores} cores"
    elif prepared.changed == 0:
        return f"vector graph: {prepared.vectors} vectors, saved earlier and still current"
    else:
        done = (
            f"{prepared.vectors} vectors, {prepared.changed} changed since it was saved, "
            f"brought up to date in {prepared.seconds:.1f} s"
        )
    if not prepared.saved:
        return f"vector graph: {done}; it could not be saved (the log says why): {LATER}"
    return f"vector graph: {done}; saved, so the server loads it at start"


def _embed_chunk(
    model: EmbeddingModel, table: EmbeddingTable, ids: list[int], *, force: bool, threads: int
) -> EmbedOutcome:
    outcome, todo = _to_embed(model, table, ids, force=force)
    if todo:
        vectors = model.encode_documents([text for _, text, _ in todo], threads=threads)
        _write_vectors(model, table, todo, vectors, outcome)
    return outcome


Todo = list[tuple[int, str, str]]  # (paper id, text, its hash) of papers to encode


def _to_embed(
    model: EmbeddingModel, table: EmbeddingTable, ids: list[int], *, force: bool
) -> tuple[EmbedOutcome, Todo]:
    """The papers among `ids` whose stored vector is missing or stale (all, with `force`),
    and the outcome so far (unchanged, missing)."""
    rows = list(Paper.objects.filter(pk__in=ids).values_list("pk", "title", "abstract"))
    stored = {
        pk: (name, digest)
        for pk, name, digest in table.objects.filter(paper_id__in=ids).values_list(
            "paper_id", "model", "text_hash"
        )
    }
    todo: Todo = []
    for pk, title, abstract in rows:
        text = paper_text(title, abstract)
        digest = text_hash(text)
        if not force and stored.get(pk) == (model.name, digest):
            continue
        todo.append((pk, text, digest))
    outcome = EmbedOutcome(unchanged=len(rows) - len(todo), missing=len(ids) - len(rows))
    return outcome, todo


def _write_vectors(
    model: EmbeddingModel,
    table: EmbeddingTable,
    todo: Todo,
    vectors: np.ndarray,
    outcome: EmbedOutcome,
) -> None:
    """Store `vectors` (one a row of `todo`) in one short transaction; `outcome` counts them."""
    written = [
        (pk, model.name, model.dimensions, vector.astype("<f4").tobytes(), digest)
        for (pk, _, digest), vector in zip(todo, vectors, strict=True)
    ]
    with transaction.atomic():
        # A paper deleted since it was read would violate the foreign key: skip it. The lock
        # makes a delete running now wait for this commit (and cascade the new row) or this
        # wait for the delete (and find the paper gone); see PaperQuerySet.delete.
        alive = lock_papers(Paper.objects.filter(pk__in=[row[0] for row in written]), no_key=True)
        written = [row for row in written if row[0] in alive]
        # One prepared statement for the chunk: bulk_create compiled SQL per row, over a
        # third of the time of embedding the ACL corpus at import (cProfile).
        insert_rows(
            table,
            ["paper", "model", "dimensions", "vector", "text_hash"],
            written,
            replace_on=["paper"],
        )
    outcome.embedded += len(written)
    outcome.missing += len(todo) - len(written)

"""Storing paper vectors, for either embedding tier: `embed_with` encodes papers whose
stored vector is missing or stale (another model, or other text) and upserts them in short
transactions; semantic.py (first tier) and strong_tier.py (second tier) both use it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from typing import Any

from django.db import DatabaseError, transaction

from core.progress import progress_bar
from papers.bulk import insert_rows
from papers.models import Paper, PaperEmbedding, PaperStrongEmbedding, lock_papers
from papers.search.embedding import EmbeddingModel, paper_text, text_hash
from papers.search.vector_index import VectorIndex

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
    rows = list(Paper.objects.filter(pk__in=ids).values_list("pk", "title", "abstract"))
    stored = {
        pk: (name, digest)
        for pk, name, digest in table.objects.filter(paper_id__in=ids).values_list(
            "paper_id", "model", "text_hash"
        )
    }
    todo: list[tuple[int, str, str]] = []
    for pk, title, abstract in rows:
        text = paper_text(title, abstract)
        digest = text_hash(text)
        if not force and stored.get(pk) == (model.name, digest):
            continue
        todo.append((pk, text, digest))
    outcome = EmbedOutcome(unchanged=len(rows) - len(todo), missing=len(ids) - len(rows))
    if not todo:
        return outcome
    vectors = model.encode_documents([text for _, text, _ in todo], threads=threads)
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
    outcome.embedded = len(written)
    outcome.missing += len(todo) - len(written)
    return outcome

"""Keeping the search indexes in step with the library.

Every write path that changes what a paper's search text is made of (title, abstract,
authors, keywords, venue) calls `papers_changed` with the affected paper ids, inside its
transaction: the full-text index is updated in the same transaction, and the embeddings
are recomputed by a background task once the transaction commits.
"""

from __future__ import annotations

from collections.abc import Iterable

from papers.search import fulltext, postings, semantic


def papers_changed(paper_ids: Iterable[int]) -> None:
    ids = sorted(set(paper_ids))
    if not ids:
        return
    fulltext.index_papers(ids)
    postings.index_papers(ids)
    semantic.schedule_embedding(ids)

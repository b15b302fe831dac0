"""Ranking passages the way paper search ranks papers: BM25 by paper search's own ranker
(papers/search/lexical.py: the same analyzer, query terms, idf, statistics and top-k
strategies), over the passages' postings (PassageTerm rows, written with postings.py's
`impact`, one field of weight 1) described as a postings.PostingIndex; and cosine
similarity to the first-tier model's vectors (papers/search/embedding.py), fused with
the BM25 ranking by paper search's fusion (papers.search.semantic.fuse_rankings).

The vectors are held in memory per process, read again when passages change.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db.models import Count, Max

from papers.models import Passage, PassageTerm
from papers.search import embedding, lexical
from papers.search.postings import PostingIndex

Ranking = tuple[list[int], list[float]]

# The passages' BM25 index: postings (term_id, impact, passage_id), lengths on the passage.
PASSAGES = PostingIndex(
    name="passages",
    postings=PassageTerm._meta.db_table,
    key="passage_id",
    documents=Passage._meta.db_table,
    sorted_access=False,  # indexed on (term_id, impact) only: always one aggregate
)


def bm25_ranking(words: Sequence[str], *, paper_ids: list[int] | None, limit: int) -> Ranking:
    """Passage ids and BM25 scores for these query words, best first, by paper search's
    ranker (lexical.query_terms and lexical.rank over PASSAGES), among `paper_ids'`
    passages when given."""
    if paper_ids == []:
        return [], []
    terms = lexical.query_terms(words, index=PASSAGES)
    restrictions: list[lexical.Restriction] = []
    if paper_ids is not None:
        marks = ", ".join(["%s"] * len(paper_ids))
        restrictions.append(
            (
                f"SELECT p.id AS paper_id FROM {PASSAGES.documents} p "  # noqa: S608
                f"WHERE p.paper_id IN ({marks})",
                list(paper_ids),
            )
        )
    ranked = lexical.rank(terms, restrictions=restrictions, limit=limit)
    return ranked.ids, ranked.scores


# --- vectors ---------------------------------------------------------------------------


@dataclass
class _Matrix:
    signature: tuple[object, ...] = ()
    ids: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    papers: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))
    vectors: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), dtype=np.float32))


_matrix = _Matrix()
_matrix_lock = threading.Lock()


def _current_matrix(model_name: str) -> _Matrix:
    """Every passage vector of `model_name`, read again when passages were added or
    removed since (their count or highest id changed)."""
    global _matrix
    embedded = Passage.objects.filter(model=model_name, vector__isnull=False)
    stats = embedded.aggregate(count=Count("pk"), top=Max("pk"))
    signature = (model_name, stats["count"], stats["top"])
    with _matrix_lock:
        if _matrix.signature == signature:
            return _matrix
        rows = list(embedded.order_by("pk").values_list("pk", "paper_id", "vector"))
        data = b"".join(bytes(vector or b"") for _, _, vector in rows)
        _matrix = _Matrix(
            signature=signature,
            ids=np.array([r[0] for r in rows], dtype=np.int64),
            papers=np.array([r[1] for r in rows], dtype=np.int64),
            vectors=np.frombuffer(data, dtype=np.float32).reshape(len(rows), -1)
            if rows
            else np.zeros((0, 0), dtype=np.float32),
        )
        return _matrix


def semantic_ranking(text: str, *, paper_ids: list[int] | None, limit: int) -> Ranking:
    """Passage ids and cosine similarities to `text`, best first (none without a model)."""
    try:
        model = embedding.load_model()
    except ImportError:
        return [], []
    matrix = _current_matrix(model.name)
    if not len(matrix.ids):
        return [], []
    scores = matrix.vectors @ model.encode_query(text)
    if paper_ids is not None:
        scores = np.where(np.isin(matrix.papers, paper_ids), scores, -math.inf)
    depth = min(limit, len(scores))
    top = np.argpartition(-scores, depth - 1)[:depth]
    top = top[np.argsort(-scores[top], kind="stable")]
    top = top[np.isfinite(scores[top])]
    return matrix.ids[top].tolist(), scores[top].astype(float).tolist()

"""Ranking passages the way paper search ranks papers: BM25 with the same analyzer and
formula (papers/search/analysis.py; postings.py's query_term_ids, weigh_terms, score_sql,
and impact, with which the PassageTerm rows were written) and cosine similarity to the
first-tier model's vectors (papers/search/embedding.py).

The BM25 sum is one aggregate over the query terms' postings (no threshold algorithm:
a passage index is two orders smaller than the papers' postings at the same library
size); the vectors are held in memory per process, read again when passages change.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from django.db import connection
from django.db.models import Count, Max

from papers.models import Passage, PassageTerm
from papers.search import embedding
from papers.search.postings import query_term_ids, score_sql, weigh_terms

Ranking = tuple[list[int], list[float]]


def bm25_ranking(words: Sequence[str], *, paper_ids: list[int] | None, limit: int) -> Ranking:
    """Passage ids and BM25 scores for these query words (papers/search/postings.py's
    formula over PassageTerm), best first, among `paper_ids`' passages when given."""
    terms = query_term_ids(words)
    if not terms or paper_ids == []:
        return [], []
    table, passages = PassageTerm._meta.db_table, Passage._meta.db_table
    marks = ", ".join(["%s"] * len(terms))
    with connection.cursor() as cursor:
        cursor.execute(f"SELECT count(*) FROM {passages}")  # noqa: S608
        documents = int(cursor.fetchone()[0])
        cursor.execute(
            f"SELECT term_id, count(*) FROM {table} WHERE term_id IN ({marks}) GROUP BY term_id",  # noqa: S608
            terms,
        )
        weighted = weigh_terms(terms, dict(cursor.fetchall()), documents)
        kept = list(weighted.ids)
        if not kept:
            return [], []
        summed, params = score_sql(kept, weighted.weights, alias="t")
        where = f"t.term_id IN ({', '.join(['%s'] * len(kept))})"
        params += kept
        join = ""
        if paper_ids is not None:
            join = f" JOIN {passages} p ON p.id = t.passage_id"
            where += f" AND p.paper_id IN ({', '.join(['%s'] * len(paper_ids))})"
            params += paper_ids
        cursor.execute(
            f"SELECT t.passage_id, {summed} AS s "  # noqa: S608
            f"FROM {table} t{join} WHERE {where} "
            "GROUP BY t.passage_id ORDER BY s DESC, t.passage_id LIMIT %s",
            [*params, limit],
        )
        rows = cursor.fetchall()
    return [int(r[0]) for r in rows], [float(r[1]) for r in rows]


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

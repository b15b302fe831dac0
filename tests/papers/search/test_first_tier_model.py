"""The first tier's encoder is WordLlama's own embedding, computed without padding.

papers/search/embedding.py sums each text's token vectors as a sparse product (token
counts @ table) instead of WordLlama.embed's padded batches; the vectors must stay the
model's, or every stored vector would silently drift from the queries' vectors.
"""

from __future__ import annotations

import logging

import numpy as np
import wordllama

from papers.search.embedding import _quiet_root_logger, load_model
from tests.papers.search.builders import TEXTS


def unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.linalg.norm(rows, axis=1, keepdims=True)


def test_the_first_tier_encodes_as_wordllama_embeds() -> None:
    model = load_model()
    package = wordllama.WordLlama.load(
        config="l2_supercat",
        dim=model.dimensions,
        cache_dir=wordllama.__path__[0],
        disable_download=True,
    )
    # Texts of very different lengths in one batch (the padding the package adds), a
    # repeated word (counted twice, as the mean counts it) and non-ASCII text.
    texts = [title + ". " + abstract for title, abstract in TEXTS]
    texts += ["attention attention attention is all you need", "Über die Maschinenübersetzung"]
    texts += [" ".join(text for _, text in TEXTS) * 3]
    ours = unit(np.asarray(model.encode_documents(texts), dtype=np.float64))
    theirs = unit(np.asarray(package.embed(texts), dtype=np.float64))
    cosines = (ours * theirs).sum(axis=1)
    assert cosines.min() > 0.99999, cosines
    # A query is encoded by the same function, one text at a time.
    alone = unit(np.asarray(model.encode_documents(texts[:1]), dtype=np.float64))
    assert float((alone[0] * ours[0]).sum()) > 0.99999


def test_loading_a_model_keeps_the_root_logger_as_others_configure_it() -> None:
    """A server loads the models on a thread while Django sets logging up again on
    another (serve.py): what that thread configures stays; only what basicConfig would add
    to a root logger without handlers is kept out."""
    root = logging.getLogger()
    before = list(root.handlers)
    configured = logging.StreamHandler()
    try:
        with _quiet_root_logger():
            root.addHandler(configured)  # another thread's dictConfig, meanwhile
            logging.basicConfig(level=logging.DEBUG)  # what wordllama's import calls
        assert root.handlers == [*before, configured]
        root.handlers = []
        with _quiet_root_logger():
            logging.basicConfig(level=logging.DEBUG)
        assert root.handlers == []
    finally:
        root.handlers = before

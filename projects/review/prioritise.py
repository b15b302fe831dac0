"""Prioritised screening: the records still to screen, most likely inclusions first.

The model is ASReview's default family: TF-IDF features of title + abstract and a linear
classifier trained on the decisions so far, retrained inline on every `screen_next` call: a
review screens at most `max_results` (<= 100) candidates a round, plus any grouped version a
person splits back out, and at that size refitting costs far less than the call around it,
so there is no background job (docs/SCREENING.md, "Ranking"). Until there
is at least one inclusion and one exclusion there is nothing to learn from, and the records
keep the order the search gave them.

The screening tools (projects/review/screening.py) and the simulation on labelled data
(projects/review/simulation.py) both rank through `Ranker.order`, so what the simulation
measures is what a screener gets. The default classifier was chosen by that simulation
(docs/SCREENING.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
from scipy.sparse import csr_matrix, hstack, spmatrix, vstack

if TYPE_CHECKING:
    from sklearn.linear_model import LogisticRegression
    from sklearn.naive_bayes import MultinomialNB

    from papers.search.embedding import EmbeddingModel

NAIVE_BAYES = "naive_bayes"
LOGISTIC = "logistic"
MODELS = (NAIVE_BAYES, LOGISTIC)
DEFAULT_MODEL = LOGISTIC

# What the classifier reads: TF-IDF, the library's MiniLM sentence embeddings (the second
# tier's model, papers/search/embedding.py), or both side by side. Chosen by simulation
# (docs/SCREENING.md, "Features").
TFIDF = "tfidf"
EMBEDDINGS = "embeddings"
BOTH = "both"
FEATURES = (TFIDF, EMBEDDINGS, BOTH)
DEFAULT_FEATURES = TFIDF
EMBEDDING_MODEL = "minilm-l6-int8"

SEARCH_RANK = "search rank (no decisions yet)"
SEARCH_RANK_ONE_CLASS = "search rank (the model needs an inclusion and an exclusion)"


@dataclass(frozen=True)
class Ranked:
    """One record to screen: its index in the ranker's texts, the model's probability of
    inclusion (None while ranked by search), and why it ranks there."""

    index: int
    score: float | None
    reason: str


class Ranker:
    """Ranks the unscreened records of one collection by a model of the decisions so far.

    The TF-IDF vocabulary is fitted once on every record's text (unsupervised, as in
    ASReview); `order` fits the classifier on the screened ones each time it is called.
    With `features` embeddings or both, `vectors` are the records' embeddings (rows in
    the order of `texts`, L2-normalised); without them the texts are encoded here
    (`encode_texts`: seconds per hundred records on one core).
    """

    def __init__(
        self,
        texts: Sequence[str],
        *,
        model: str = DEFAULT_MODEL,
        features: str = DEFAULT_FEATURES,
        vectors: np.ndarray | None = None,
    ) -> None:
        if model not in MODELS:
            raise ValueError(f"Unknown model {model!r}; use one of {', '.join(MODELS)}.")
        if features not in FEATURES:
            raise ValueError(f"Unknown features {features!r}; use one of {', '.join(FEATURES)}.")
        if model == NAIVE_BAYES and features != TFIDF:
            raise ValueError("Naive Bayes needs counts: use it with --features tfidf.")
        self.model = model
        self.kind = features
        self.size = len(texts)
        # scikit-learn is imported when a model is built, not with the module: the admin
        # and the API import this module in every process, and most never screen.
        from sklearn.feature_extraction.text import TfidfVectorizer

        self.vectorizer = TfidfVectorizer(sublinear_tf=True, stop_words="english", min_df=1)
        usable = [text if text.strip() else "(empty)" for text in texts]
        self.features: spmatrix | None = None
        if not usable:
            return
        blocks = []
        if features != EMBEDDINGS:
            blocks.append(self.vectorizer.fit_transform(usable))
        if features != TFIDF:
            if vectors is None:
                vectors = encode_texts(usable)
            if vectors.shape[0] != len(usable):
                raise ValueError("One embedding per record is needed.")
            blocks.append(csr_matrix(vectors))
        self.features = csr_matrix(hstack(blocks)) if len(blocks) > 1 else csr_matrix(blocks[0])

    def order(
        self, labels: Mapping[int, bool], pending: Sequence[int], *, question: str = ""
    ) -> list[Ranked]:
        """`pending` (indices, in search-rank order) best first. `labels` maps screened
        indices to True (include) / False (exclude). A review's `question` stands in for
        the missing inclusion while there are only exclusions (the ASReview convention
        used by the simulation has no question: there, prior knowledge starts it)."""
        positives = sum(1 for value in labels.values() if value)
        if not pending:
            return []
        stand_in = positives == 0 and bool(labels) and bool(question.strip())
        if (positives == 0 and not stand_in) or positives == len(labels):
            reason = SEARCH_RANK if not labels else SEARCH_RANK_ONE_CLASS
            return [Ranked(index, None, reason) for index in pending]
        scores = self._scores(labels, pending, question if stand_in else "")
        # Stable on ties: equal scores keep the search order.
        ranking = sorted(range(len(pending)), key=lambda i: -scores[i])
        included = "the question as inclusion" if stand_in else f"{positives} incl."
        reads = "" if self.kind == TFIDF else f" on {self.kind}"
        trained = f"{self.model}{reads}, {included}/{len(labels) - positives} excl."
        return [
            Ranked(pending[i], float(scores[i]), f"model score {scores[i]:.3f} ({trained})")
            for i in ranking
        ]

    def _scores(
        self, labels: Mapping[int, bool], pending: Sequence[int], question: str
    ) -> np.ndarray:
        assert self.features is not None
        screened = list(labels)
        target = np.array([1 if labels[i] else 0 for i in screened])
        features = self.features[screened]
        if question:
            features = vstack([features, self._question_features(question)])
            target = np.append(target, 1)
        from sklearn.linear_model import LogisticRegression
        from sklearn.naive_bayes import MultinomialNB

        if self.model == NAIVE_BAYES:
            # ASReview's settings: a strong smoothing prior, and no class prior, so a
            # handful of inclusions among many exclusions still counts.
            classifier: MultinomialNB | LogisticRegression = MultinomialNB(
                alpha=3.822, fit_prior=False
            )
        else:
            classifier = LogisticRegression(class_weight="balanced", solver="liblinear")
        classifier.fit(features, target)
        return classifier.predict_proba(self.features[list(pending)])[:, 1]

    def _question_features(self, question: str) -> spmatrix:
        blocks = []
        if self.kind != EMBEDDINGS:
            blocks.append(self.vectorizer.transform([question]))
        if self.kind != TFIDF:
            blocks.append(csr_matrix(_embedding_model().encode_query(question)[None, :]))
        return csr_matrix(hstack(blocks)) if len(blocks) > 1 else blocks[0]


def encode_texts(texts: Sequence[str]) -> np.ndarray:
    """The records' MiniLM embeddings (len(texts) x 384, L2-normalised), computed now.
    Raises ImportError when the model's package is missing."""
    return _embedding_model().encode_documents(list(texts))


def _embedding_model() -> EmbeddingModel:
    # Imported on use: TF-IDF screening needs neither onnxruntime nor its start-up time.
    from papers.search.embedding import load_model

    return load_model(EMBEDDING_MODEL)

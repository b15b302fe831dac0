"""Papers in the library related to a given one (the `find_related_papers` tool).

A candidate's similarity to the paper is a weighted mean, in [0, 1], of four components:

- keywords (WEIGHTS 0.30): Jaccard overlap of the user keywords, the researcher's own
  judgement of what a paper is about;
- categories (0.15): Jaccard overlap of the source categories (arXiv `cs.CL`, ...), weighted
  low because one category is shared by a large part of a library;
- citations (0.30): the strongest of direct citation (either paper cites the other: 1.0),
  bibliographic coupling (both cite the same papers) and co-citation (both are cited by the
  same papers), the latter two as Salton's cosine: shared / sqrt(count_a x count_b);
- embedding (0.25): how much closer the two papers' embeddings are than the paper's
  average neighbour in the library: (cos - mean) / (1 - mean), clipped to [0, 1]. A static
  embedding model gives even unrelated papers a cosine of 0.1-0.35 (0.6-0.8 for the
  nearest neighbours, measured on the 95k ACL corpus), so a raw cosine would lift every
  candidate; `reasons["embedding"]` shows the raw cosine. With the second tier
  (papers/search/tiers.py): when the paper has a second-tier vector, candidates that
  have one too are compared in that tier (its own mean as baseline), the others in the
  first; the nearest candidates come from the same merged ranking as semantic search.

Only the components the paper has data for count, and the weights are renormalised over
them: a paper without keywords is not marked down for it, and the result says which
components were used (`weights`) and why others were not (`notes`).

Candidates, so that no query reads the whole library: the EMBEDDING_CANDIDATES nearest
papers in the in-process vector index, and from SQL the SQL_CANDIDATES papers sharing
most keywords, most categories (both counted over the LINK_SCAN newest papers of each
keyword or category), most references and most citing papers, and up to
DIRECT_CANDIDATES papers citing or cited by the paper. Each candidate is then scored
exactly, in a fixed number of queries. A scoped client's candidates, and the citation
links counted, are limited to the papers in its collections.

Cost on the 95k-paper ACL corpus (every paper embedded) with synthetic keywords (175k
links), categories (111k) and citations (1.4M), SQLite, measured as CPU time on a 2-core
machine shared with other work: ~85 ms median, ~150 ms p95 per call (~580 candidates);
~120 ms median for a client scoped to a 2,000-paper project, most of the difference in
the vector index's scope filter. The vector pass itself is the same as semantic search's.

One module because the four components make one score: their weights, normalisation and the
candidate set they are computed over are tuned together.
"""

from __future__ import annotations

import heapq
import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from django.conf import settings
from django.db.models import Count, QuerySet

from core.errors import InvalidInput
from papers import scoping
from papers.models import (
    Category,
    Citation,
    Keyword,
    Paper,
    PaperCategory,
    PaperKeyword,
)
from papers.search.embedding import paper_text
from papers.search.semantic import _allowed, _rank
from papers.search.tiers import QueryVectors, Tier, Tiers, current_tiers
from papers.search.vector_index import Snapshot

WEIGHTS: dict[str, float] = {
    "keywords": 0.30,
    "categories": 0.15,
    "citations": 0.30,
    "embedding": 0.25,
}
EMBEDDING_CANDIDATES = 200
SQL_CANDIDATES = 100
LINK_SCAN = 1_000
DIRECT_CANDIDATES = 500
MAX_LIMIT = 100
DECIMALS = 3
# Chosen by measurement on 20k ACL papers (benchmarks/bench_related_threshold.py,
# docs/SEARCH.md "Related papers"): 0.7 found nothing for 93% of papers; at 0.45, 73%
# get at least five related papers and the matches are still on topic.
DEFAULT_THRESHOLD = 0.45


@dataclass
class RelatedResult:
    """`results`: paper_brief records plus `similarity`, `reasons` and `components`, best
    first. `weights`: the weight each component had (summing to 1), only those used."""

    paper: dict[str, Any]
    results: list[dict[str, Any]]
    weights: dict[str, float]
    similarity_threshold: float
    candidates_scored: int
    notes: list[str] = field(default_factory=list)


def papers_related(
    *,
    paper: Paper,
    limit: int = 10,
    similarity_threshold: float = DEFAULT_THRESHOLD,
    scope: list[str] | None = None,
) -> RelatedResult:
    """The papers most related to `paper` whose similarity (see the module docstring) is at
    least `similarity_threshold`, best first, at most `limit`.

    Read-only: papers without a stored embedding are encoded on the fly, never saved.
    With `scope` only papers in those projects are candidates or count as citation links;
    the caller resolves `paper` within the same scope (paper_get). When nothing reaches
    the threshold the notes say how many papers scored lower, and how high.

    Raises InvalidInput for a limit outside 1-100 or a threshold outside 0-1.
    """
    from papers.search.fulltext import paper_briefs

    _check(limit, similarity_threshold)
    notes: list[str] = []
    visible = _visible(scope)
    profile = _Profile.of(paper, visible)
    vectors = _Vectors.for_paper(paper, visible, notes)

    available = {
        "keywords": bool(profile.keywords),
        "categories": bool(profile.categories),
        "citations": bool(profile.references or profile.citers),
        "embedding": vectors is not None,
    }
    weights = _normalised_weights(available)
    unused = [name for name, on in available.items() if not on and name != "embedding"]
    if unused:
        notes.append(f"Not used for this paper: {', '.join(_WHY_UNUSED[name] for name in unused)}.")

    candidates = _candidates(paper, profile, vectors, visible, scope) if weights else []
    scored = _score(profile, vectors, candidates, weights)
    threshold = float(similarity_threshold)
    passing = [row for row in scored if row["similarity"] >= threshold][:limit]
    records = paper_briefs([paper.pk, *(row["paper_id"] for row in passing)])
    results = [
        {**records[row["paper_id"]], **{k: row[k] for k in ("similarity", "reasons", "components")}}
        for row in passing
        if row["paper_id"] in records
    ]
    below = [row["similarity"] for row in scored if row["similarity"] < threshold]
    if below and len(results) < limit:
        low, high = f"{min(below):.2f}", f"{max(below):.2f}"
        notes.append(
            f"{len(below)} {'paper' if len(below) == 1 else 'papers'} scored "
            f"{low if low == high else f'{low}-{high}'}"
            f"{', under' if results else '; none reached'} the similarity_threshold of "
            f"{threshold:g}; lower it to see them."
        )
    if not scored and weights:
        notes.append("No paper in the library shares anything with this one.")
    return RelatedResult(
        paper=records.get(paper.pk, {"paper_id": paper.pk}),
        results=results,
        weights={name: round(w, DECIMALS) for name, w in weights.items()},
        similarity_threshold=threshold,
        candidates_scored=len(candidates),
        notes=notes,
    )


_WHY_UNUSED = {
    "keywords": "keywords (it has none)",
    "categories": "categories (it has none)",
    "citations": "citations (it cites and is cited by no paper in the library)",
}


def _check(limit: int, threshold: float) -> None:
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= MAX_LIMIT:
        raise InvalidInput(f"max_results must be between 1 and {MAX_LIMIT}.", field="max_results")
    if (
        isinstance(threshold, bool)
        or not isinstance(threshold, int | float)
        or not 0.0 <= threshold <= 1.0
    ):
        raise InvalidInput(
            "similarity_threshold must be a number from 0.0 to 1.0.", field="similarity_threshold"
        )


def _normalised_weights(available: dict[str, bool]) -> dict[str, float]:
    total = sum(WEIGHTS[name] for name, on in available.items() if on)
    return {name: WEIGHTS[name] / total for name, on in available.items() if on}


def _visible(scope: Sequence[str] | None) -> QuerySet[Any] | None:
    """The ids of the papers a scoped client sees, as a subquery; None: every paper."""
    if scope is None:
        return None
    return scoping.scope_paper_ids(scope)


def _within(
    queryset: QuerySet[Any], field_name: str, visible: QuerySet[Any] | None
) -> QuerySet[Any]:
    return queryset if visible is None else queryset.filter(**{f"{field_name}__in": visible})


# --- the paper's own keywords, categories and citation links ---------------------------------


@dataclass
class _Profile:
    keywords: set[int]
    categories: set[int]
    references: set[int]  # papers it cites (visible ones)
    citers: set[int]  # papers citing it (visible ones)
    coupled: dict[int, int]  # paper -> how many of the paper's references it cites too
    cocited: dict[int, int]  # paper -> how many of the paper's citers cite it too
    visible: QuerySet[Any] | None

    @classmethod
    def of(cls, paper: Paper, visible: QuerySet[Any] | None) -> _Profile:
        references = _within(Citation.objects.filter(citing=paper), "cited", visible)
        citers = _within(Citation.objects.filter(cited=paper), "citing", visible)
        reference_ids = set(references.values_list("cited_id", flat=True))
        citer_ids = set(citers.values_list("citing_id", flat=True))
        # One GROUP BY each over the links of the paper's references (citers): ~5 ms for
        # 25 references at 95k papers and 1.4M citations. All groups are kept, not only the
        # best: scoring needs the shared count of every candidate, however it was found.
        coupled = (
            _counts(
                _within(
                    Citation.objects.filter(cited__in=references.values("cited_id")).exclude(
                        citing=paper
                    ),
                    "citing",
                    visible,
                ),
                "citing_id",
            )
            if reference_ids
            else {}
        )
        cocited = (
            _counts(
                _within(
                    Citation.objects.filter(citing__in=citers.values("citing_id")).exclude(
                        cited=paper
                    ),
                    "cited",
                    visible,
                ),
                "cited_id",
            )
            if citer_ids
            else {}
        )
        return cls(
            keywords=set(
                PaperKeyword.objects.filter(paper=paper).values_list("keyword_id", flat=True)
            ),
            categories=set(
                PaperCategory.objects.filter(paper=paper).values_list("category_id", flat=True)
            ),
            references=reference_ids,
            citers=citer_ids,
            coupled=coupled,
            cocited=cocited,
            visible=visible,
        )


# --- embeddings ----------------------------------------------------------------------------


@dataclass
class _Vectors:
    """The paper's vectors, the tiers' indexes, and the baselines its cosines are measured
    against (one per tier used)."""

    tiers: Tiers
    query: QueryVectors
    baselines: tuple[float, float]  # mean cosine of the paper with the other papers, per tier

    @classmethod
    def for_paper(
        cls, paper: Paper, visible: QuerySet[Any] | None, notes: list[str]
    ) -> _Vectors | None:
        """None (with a note) when embeddings are off or the model cannot be loaded."""
        if not settings.EMBEDDINGS_ENABLED:
            notes.append("Embedding similarity is not used: embeddings are disabled here.")
            return None
        try:
            tiers = current_tiers()
        except (ImportError, ValueError) as error:
            notes.append(f"Embedding similarity is not used: the model is unavailable ({error}).")
            return None
        first = _own_vector(tiers.first, paper, encode=True)
        assert first is not None
        second = None if tiers.second is None else _own_vector(tiers.second, paper, encode=False)
        if second is None:
            # Only a paper with its own second-tier vector is compared in that tier:
            # encoding it here would cost a transformer pass on every call.
            tiers = Tiers(tiers.first, None)
        query = QueryVectors(first=first, second=second)
        baselines = (
            _baseline(tiers.first.snapshot, paper, first),
            0.0
            if tiers.second is None or second is None
            else _baseline(tiers.second.snapshot, paper, second),
        )
        snapshot = tiers.first.snapshot
        if visible is None:
            missing = max(0, Paper.objects.count() - snapshot.count)
        else:  # counted within the collections: a scoped client never learns more
            # Looked up in the index rather than with NOT IN (every embedding), which
            # reads all 95k embedding rows (200 ms).
            ids = set(visible.values_list("paper_id", flat=True))
            missing = sum(1 for pk in ids if pk not in snapshot.rows)
        if missing:
            notes.append(
                f"{missing} {'paper has' if missing == 1 else 'papers have'} no embedding yet "
                "and can only be found through keywords, categories and citations "
                "(`manage.py reindex_embeddings` embeds them)."
            )
        return cls(tiers=tiers, query=query, baselines=baselines)

    def nearest(self, paper: Paper, depth: int, scope: Sequence[str] | None) -> list[int]:
        """The `depth` papers nearest by cosine (within scope), the paper itself excluded."""
        # semantic._rank is the index's ranking with scope handling (probe, then fall back
        # to reading every allowed id); reusing it keeps one implementation of that.
        ids, _ = _rank(self.tiers, self.query, depth + 1, _allowed(None, scope))
        return [pk for pk in ids if pk != paper.pk][:depth]

    def similarities(self, paper_ids: list[int]) -> dict[int, tuple[float, float]]:
        """(raw cosine, score in 0..1) with each of these papers, in the strongest tier
        both have; those without a stored first-tier vector are encoded."""
        result: dict[int, tuple[float, float]] = {}
        missing: list[int] = []
        second = self.tiers.second
        for pk in paper_ids:
            if second is not None and self.query.second is not None:
                row = second.snapshot.rows.get(pk)
                if row is not None:
                    cosine = float(second.snapshot.matrix[row] @ self.query.second)
                    result[pk] = (cosine, _relative(cosine, self.baselines[1]))
                    continue
            row = self.tiers.first.snapshot.rows.get(pk)
            if row is None:
                missing.append(pk)
            else:
                cosine = float(self.tiers.first.snapshot.matrix[row] @ self.query.first)
                result[pk] = (cosine, _relative(cosine, self.baselines[0]))
        if missing:
            rows = list(Paper.objects.filter(pk__in=missing).values_list("pk", "title", "abstract"))
            model = self.tiers.first.model
            encoded = model.encode_documents([paper_text(t, a) for _, t, a in rows])
            for (pk, _, _), vector in zip(rows, encoded, strict=True):
                cosine = float(vector @ self.query.first)
                result[pk] = (cosine, _relative(cosine, self.baselines[0]))
        return result


def _own_vector(tier: Tier, paper: Paper, *, encode: bool) -> np.ndarray | None:
    """The paper's stored vector in this tier; if it has none, encoded here the way
    embedding would (without storing it) when `encode`, else None."""
    row = tier.snapshot.rows.get(paper.pk)
    if row is not None:
        return tier.snapshot.matrix[row]
    if not encode:
        return None
    # Not embedded yet (a bulk import leaves that to a later pass).
    return tier.model.encode_documents([paper_text(paper.title, paper.abstract)])[0]


def _baseline(snapshot: Snapshot, paper: Paper, vector: np.ndarray) -> float:
    """Mean cosine of the paper with every other paper of the index, in [0, 0.99]."""
    own = paper.pk in snapshot.rows
    others = snapshot.matrix.shape[0] - own
    if others <= 0:
        return 0.0
    # mean(M @ q) = mean(M) . q: one cached vector instead of a pass over the matrix.
    total = float(_column_sum(snapshot) @ vector) - (1.0 if own else 0.0)
    return min(max(total / others, 0.0), 0.99)


def _relative(cosine: float, baseline: float) -> float:
    return min(max((cosine - baseline) / (1.0 - baseline), 0.0), 1.0)


_column_sums: dict[str, tuple[Snapshot, np.ndarray]] = {}  # model -> (snapshot, column sum)


def _column_sum(snapshot: Snapshot) -> np.ndarray:
    """The sum of the index's vectors, computed once per snapshot (a refresh makes a new
    one; snapshots are never changed in place)."""
    cached = _column_sums.get(snapshot.model)
    if cached is not None and cached[0] is snapshot:
        return cached[1]
    total = snapshot.matrix.sum(axis=0, dtype=np.float64).astype(np.float32)
    _column_sums[snapshot.model] = (snapshot, total)
    return total


# --- candidates ----------------------------------------------------------------------------


def _candidates(
    paper: Paper,
    profile: _Profile,
    vectors: _Vectors | None,
    visible: QuerySet[Any] | None,
    scope: Sequence[str] | None,
) -> list[int]:
    found: dict[int, None] = {}  # ordered set
    if vectors is not None:
        found.update(dict.fromkeys(vectors.nearest(paper, EMBEDDING_CANDIDATES, scope)))
    if profile.keywords:
        found.update(
            dict.fromkeys(_sharing_most(PaperKeyword, "keyword", profile.keywords, paper, visible))
        )
    if profile.categories:
        found.update(
            dict.fromkeys(
                _sharing_most(PaperCategory, "category", profile.categories, paper, visible)
            )
        )
    found.update(dict.fromkeys(_most_shared(profile.coupled)))
    found.update(dict.fromkeys(_most_shared(profile.cocited)))
    direct = sorted(profile.references | profile.citers, reverse=True)
    if len(direct) > DIRECT_CANDIDATES and vectors is not None:
        similarities = vectors.similarities(direct)
        direct.sort(key=lambda pk: -similarities[pk][1])
    found.update(dict.fromkeys(direct[:DIRECT_CANDIDATES]))
    found.pop(paper.pk, None)
    return list(found)


def _sharing_most(
    links: type[PaperKeyword] | type[PaperCategory],
    value_field: str,
    values: set[int],
    paper: Paper,
    visible: QuerySet[Any] | None,
) -> list[int]:
    """The SQL_CANDIDATES papers sharing most of these keywords (categories), newest first
    among equals, counted over the LINK_SCAN newest papers of each value.

    One keyword or category can hold half the library (a GROUP BY over cs.CL's links:
    30 ms at 95k papers); the newest papers of each, read from the (value, paper) index,
    bound that to a few ms, and counts are exact for every value with fewer papers.
    """
    shared: Counter[int] = Counter()
    for value in sorted(values):
        rows = _within(links.objects.filter(**{value_field: value}), "paper", visible)
        shared.update(rows.order_by("-paper_id").values_list("paper_id", flat=True)[:LINK_SCAN])
    shared.pop(paper.pk, None)
    return _most_shared(shared)


def _most_shared(shared: dict[int, int]) -> list[int]:
    """The SQL_CANDIDATES papers with the highest counts, newest first among equals."""
    ranked = heapq.nlargest(SQL_CANDIDATES, shared.items(), key=lambda item: (item[1], item[0]))
    return [pk for pk, _ in ranked]


# --- scoring ---------------------------------------------------------------------------------


def _score(
    profile: _Profile,
    vectors: _Vectors | None,
    candidates: list[int],
    weights: dict[str, float],
) -> list[dict[str, Any]]:
    """Every candidate with `similarity` > 0, best first (ties: lower paper_id first)."""
    if not candidates:
        return []
    keyword_sets, category_sets = {}, {}
    if "keywords" in weights:
        keyword_sets = _link_sets(PaperKeyword.objects.all(), "keyword_id", candidates)
    if "categories" in weights:
        category_sets = _link_sets(PaperCategory.objects.all(), "category_id", candidates)
    keyword_names = _names(Keyword, profile.keywords)
    category_names = _names(Category, profile.categories)
    citations = _CitationCounts.of(profile, candidates) if "citations" in weights else None
    similarities = vectors.similarities(candidates) if vectors is not None else {}

    scored: list[dict[str, Any]] = []
    for pk in candidates:
        components: dict[str, float] = {}
        reasons: dict[str, Any] = {}
        if "keywords" in weights:
            shared = profile.keywords & keyword_sets[pk]
            components["keywords"] = _jaccard(profile.keywords, keyword_sets[pk])
            if shared:
                reasons["keywords"] = sorted(keyword_names[k] for k in shared)
        if "categories" in weights:
            shared = profile.categories & category_sets[pk]
            components["categories"] = _jaccard(profile.categories, category_sets[pk])
            if shared:
                reasons["categories"] = sorted(category_names[c] for c in shared)
        if citations is not None:
            components["citations"] = citations.score(pk, reasons)
        if vectors is not None:
            cosine, components["embedding"] = similarities[pk]
            if components["embedding"] > 0:
                reasons["embedding"] = round(cosine, DECIMALS)
        similarity = round(sum(weights[n] * s for n, s in components.items()), DECIMALS)
        if similarity > 0:
            scored.append(
                {
                    "paper_id": pk,
                    "similarity": similarity,
                    "reasons": reasons,
                    "components": {n: round(s, DECIMALS) for n, s in components.items()},
                }
            )
    scored.sort(key=lambda row: (-row["similarity"], row["paper_id"]))
    return scored


def _jaccard(a: set[int], b: set[int]) -> float:
    union = len(a | b)
    return len(a & b) / union if union else 0.0


def _link_sets(links: QuerySet[Any], value_field: str, paper_ids: list[int]) -> dict[int, set[int]]:
    sets: dict[int, set[int]] = defaultdict(set)
    # `paper__pk__in`, not `paper__in`: the same SQL, but Django prepares each of ~1000
    # ids as a plain integer instead of a possible model instance (3x faster).
    for pk, value in links.filter(paper__pk__in=paper_ids).values_list("paper_id", value_field):
        sets[pk].add(value)
    return sets


def _names(model: type[Keyword] | type[Category], ids: Iterable[int]) -> dict[int, str]:
    return dict(model.objects.filter(pk__in=list(ids)).values_list("pk", "name"))


@dataclass
class _CitationCounts:
    """Per candidate sharing references with the paper: (its visible references, how many
    the paper cites too); per candidate sharing citing papers: (the visible papers citing
    it, how many of them cite the paper too)."""

    profile: _Profile
    references: dict[int, tuple[int, int]]
    citers: dict[int, tuple[int, int]]

    @classmethod
    def of(cls, profile: _Profile, candidates: list[int]) -> _CitationCounts:
        coupled = [pk for pk in candidates if pk in profile.coupled]
        cocited = [pk for pk in candidates if pk in profile.cocited]
        # Totals only for candidates sharing links: a popular candidate (cited by
        # thousands) costs nothing unless it is co-cited. The paper's own links are
        # visible ones, so the shared counts are too; the totals are restricted the same
        # way, or a scoped score would depend on hidden papers.
        references = _counts(
            _within(Citation.objects.filter(citing__pk__in=coupled), "cited", profile.visible),
            "citing_id",
        )
        citers = _counts(
            _within(Citation.objects.filter(cited__pk__in=cocited), "citing", profile.visible),
            "cited_id",
        )
        return cls(
            profile=profile,
            references={pk: (references[pk], profile.coupled[pk]) for pk in coupled},
            citers={pk: (citers[pk], profile.cocited[pk]) for pk in cocited},
        )

    def score(self, pk: int, reasons: dict[str, Any]) -> float:
        profile = self.profile
        best = 0.0
        if pk in profile.references:
            reasons["cited_by_paper"] = True
            best = 1.0
        if pk in profile.citers:
            reasons["cites_paper"] = True
            best = 1.0
        references, shared = self.references.get(pk, (0, 0))
        if shared:
            reasons["shared_references"] = shared
            best = max(best, shared / math.sqrt(len(profile.references) * references))
        citers, cocited = self.citers.get(pk, (0, 0))
        if cocited:
            reasons["co_cited"] = cocited
            best = max(best, cocited / math.sqrt(len(profile.citers) * citers))
        return min(best, 1.0)


def _counts(links: QuerySet[Any], group_field: str) -> dict[int, int]:
    rows = links.order_by().values(group_field).annotate(n=Count("pk"))
    return {row[group_field]: row["n"] for row in rows}

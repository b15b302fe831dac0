"""papers_related on a small real library: keyword, category, citation and embedding
components, the threshold, scope, and what the result explains. Exact similarities are
checked with embeddings off (the other components are plain arithmetic); the embedding
component runs the real model on the CPU."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from core.errors import InvalidInput
from papers.models import Paper, PaperEmbedding
from papers.related import DEFAULT_THRESHOLD, RelatedResult, papers_related
from papers.search import semantic
from papers.services import citations_add
from projects.models import Project
from projects.services import project_add_papers


@pytest.fixture(autouse=True)
def fresh_index() -> Iterator[None]:
    """The vector index lives in the process; each test's database is rolled back."""
    semantic.vector_index().reset()
    semantic._lazy_checked_at = -math.inf
    yield
    semantic.vector_index().reset()


@pytest.fixture
def no_embeddings(settings: object) -> None:
    settings.EMBEDDINGS_ENABLED = False  # type: ignore[attr-defined]


Library = dict[str, Paper]


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> Library:
    """`query` cites two references; `strong` shares its keywords, category and both
    references; `weak` shares one of its two categories only; `unrelated` nothing."""
    papers = {
        "ref1": make_paper("Sequence to sequence learning", authors=["Ilya Sutskever"], year=2014),
        "ref2": make_paper("Layer normalization", authors=["Jimmy Ba"], year=2016),
        "query": make_paper(
            "Attention mechanisms for neural machine translation",
            keywords=["transformers", "attention"],
            categories=["cs.CL"],
        ),
        "strong": make_paper(
            "Sourdough fermentation and bread texture",
            authors=["Jane Baker"],
            keywords=["attention", "transformers"],
            categories=["cs.CL"],
        ),
        "weak": make_paper(
            "Neural machine translation with attention",
            authors=["Dzmitry Bahdanau"],
            categories=["cs.CL", "cs.LG"],
        ),
        "unrelated": make_paper(
            "Galaxy formation in the early universe",
            authors=["Vera Rubin"],
            keywords=["cosmology"],
            categories=["astro-ph"],
        ),
    }
    citations_add(
        pairs=[
            (papers["query"].pk, papers["ref1"].pk),
            (papers["query"].pk, papers["ref2"].pk),
            (papers["strong"].pk, papers["ref1"].pk),
            (papers["strong"].pk, papers["ref2"].pk),
        ]
    )
    return papers


def found(result: RelatedResult) -> list[tuple[int, float]]:
    return [(row["paper_id"], row["similarity"]) for row in result.results]


def test_shared_keywords_categories_and_references_outrank_a_shared_category(
    library: Library, no_embeddings: None
) -> None:
    result = papers_related(paper=library["query"], similarity_threshold=0.05)
    # keywords 0.30, categories 0.15, citations 0.30, renormalised without the embedding.
    assert result.weights == {"keywords": 0.4, "categories": 0.2, "citations": 0.4}
    assert found(result) == [
        (library["strong"].pk, 1.0),
        (library["ref1"].pk, 0.4),  # cited by the paper: citations 1.0
        (library["ref2"].pk, 0.4),
        (library["weak"].pk, 0.1),  # categories: Jaccard {cs.CL} / {cs.CL, cs.LG} = 0.5
    ]
    strong = result.results[0]
    assert strong["reasons"] == {
        "keywords": ["attention", "transformers"],
        "categories": ["cs.CL"],
        "shared_references": 2,
    }
    assert strong["components"] == {"keywords": 1.0, "categories": 1.0, "citations": 1.0}
    assert result.results[1]["reasons"] == {"cited_by_paper": True}
    assert result.results[3]["reasons"] == {"categories": ["cs.CL"]}
    # Results are the brief record plus the scores.
    assert strong["title"] == "Sourdough fermentation and bread texture"
    assert strong["authors"] == ["Jane Baker"]
    assert strong["citekey"] == library["strong"].citekey
    assert result.paper["paper_id"] == library["query"].pk
    assert any("embeddings are disabled" in note for note in result.notes)


def test_other_components_outweigh_a_closer_embedding(library: Library) -> None:
    """With the real model: `weak` has nearly the query's title, `strong` a text about
    bread, yet keywords, category and references put `strong` first."""
    semantic.embed_papers([p.pk for p in library.values()])
    result = papers_related(paper=library["query"], similarity_threshold=0.0)
    assert set(result.weights) == {"keywords", "categories", "citations", "embedding"}
    assert math.isclose(sum(result.weights.values()), 1.0, abs_tol=0.002)
    ranked = [row["paper_id"] for row in result.results]
    assert ranked[0] == library["strong"].pk
    assert ranked.index(library["strong"].pk) < ranked.index(library["weak"].pk)
    weak = next(row for row in result.results if row["paper_id"] == library["weak"].pk)
    strong = result.results[0]
    # ... although the embedding alone prefers `weak`.
    assert weak["components"]["embedding"] > strong["components"].get("embedding", 0.0)
    assert weak["reasons"]["embedding"] > 0.5


def test_the_threshold_filters_and_says_what_it_hid(library: Library, no_embeddings: None) -> None:
    result = papers_related(paper=library["query"], similarity_threshold=0.7)
    assert found(result) == [(library["strong"].pk, 1.0)]
    assert result.similarity_threshold == 0.7
    assert "3 papers scored 0.10-0.40, under the similarity_threshold of 0.7" in " ".join(
        result.notes
    )


def test_the_default_threshold_is_the_measured_one(library: Library, no_embeddings: None) -> None:
    """0.45, chosen on the ACL corpus (docs/SEARCH.md, "Related papers")."""
    result = papers_related(paper=library["query"])
    assert result.similarity_threshold == DEFAULT_THRESHOLD == 0.45
    assert all(row["similarity"] >= 0.45 for row in result.results)


def test_nothing_above_the_threshold_is_explained(library: Library, no_embeddings: None) -> None:
    # `weak` has only categories: Jaccard 0.5 with `query` and `strong`, nothing else.
    result = papers_related(paper=library["weak"], similarity_threshold=0.7)
    assert result.results == []
    assert result.weights == {"categories": 1.0}
    notes = " ".join(result.notes)
    assert "2 papers scored 0.50; none reached the similarity_threshold of 0.7" in notes
    assert "keywords (it has none)" in notes and "citations (it cites" in notes
    lowered = papers_related(paper=library["weak"], similarity_threshold=0.5)
    assert found(lowered) == [(library["query"].pk, 0.5), (library["strong"].pk, 0.5)]


def test_limit_keeps_the_best(library: Library, no_embeddings: None) -> None:
    result = papers_related(paper=library["query"], limit=2, similarity_threshold=0.05)
    assert found(result) == [(library["strong"].pk, 1.0), (library["ref1"].pk, 0.4)]
    assert not any("scored" in note for note in result.notes)  # the limit, not the threshold


def test_cited_together_and_citing_papers_are_related(
    make_paper: Callable[..., Paper], no_embeddings: None
) -> None:
    a = make_paper("Paper A", authors=["Ann Alpha"])
    b = make_paper("Paper B", authors=["Bob Beta"])
    c = make_paper("Paper C cites A and B", authors=["Cy Gamma"])
    d = make_paper("Paper D cites B", authors=["Di Delta"])
    e = make_paper("Paper E cites A", authors=["Ed Epsilon"])
    citations_add(pairs=[(c.pk, a.pk), (c.pk, b.pk), (d.pk, b.pk), (e.pk, a.pk)])
    result = papers_related(paper=a, similarity_threshold=0.0)
    assert result.weights == {"citations": 1.0}
    assert found(result) == [(c.pk, 1.0), (e.pk, 1.0), (b.pk, 0.5)]
    # co-citation: 1 shared citer / sqrt(2 citers of A x 2 citers of B)
    assert result.results[2]["reasons"] == {"co_cited": 1}
    assert result.results[0]["reasons"] == {"cites_paper": True}
    # bibliographic coupling from C's side: D shares one of C's two references.
    coupled = papers_related(paper=c, similarity_threshold=0.0)
    d_row = next(row for row in coupled.results if row["paper_id"] == d.pk)
    assert d_row["reasons"] == {"shared_references": 1}
    assert d_row["similarity"] == round(1 / math.sqrt(2 * 1), 3)


def test_scope_limits_candidates_and_citation_links(
    library: Library, make_project: Callable[..., Project], no_embeddings: None
) -> None:
    project = make_project("Translation")
    project_add_papers(project=project, paper_ids=[library["query"].pk, library["weak"].pk])
    result = papers_related(paper=library["query"], similarity_threshold=0.0, scope=[project.id])
    assert [row["paper_id"] for row in result.results] == [library["weak"].pk]
    # The references are outside the collection: citations do not count, so the weights
    # are keywords 0.30 and categories 0.15 renormalised; weak scores 0.5 x 1/3.
    assert result.weights == {"keywords": 0.667, "categories": 0.333}
    assert result.results[0]["similarity"] == 0.167
    assert any("citations (it cites" in note for note in result.notes)
    assert papers_related(paper=library["query"], similarity_threshold=0.0, scope=[]).results == []


def test_scope_limits_embedding_candidates(
    library: Library, make_project: Callable[..., Project]
) -> None:
    semantic.embed_papers([p.pk for p in library.values()])
    project = make_project("Space")
    project_add_papers(project=project, paper_ids=[library["query"].pk, library["unrelated"].pk])
    result = papers_related(paper=library["query"], similarity_threshold=0.0, scope=[project.id])
    # The nearest vectors outside the collection (`weak` has almost the same title) are
    # not candidates; only `unrelated` is.
    assert result.candidates_scored == 1
    assert {row["paper_id"] for row in result.results} <= {library["unrelated"].pk}
    unscoped = papers_related(paper=library["query"], similarity_threshold=0.0)
    assert library["weak"].pk in {row["paper_id"] for row in unscoped.results}


def test_missing_embeddings_are_counted_within_the_scope(
    library: Library, make_project: Callable[..., Project]
) -> None:
    semantic.embed_papers([p.pk for name, p in library.items() if name not in ("ref1", "ref2")])
    project = make_project("Embedded only")
    project_add_papers(project=project, paper_ids=[library["query"].pk, library["weak"].pk])
    unscoped = papers_related(paper=library["query"])
    assert any("2 papers have no embedding yet" in note for note in unscoped.notes)
    scoped = papers_related(paper=library["query"], scope=[project.id])
    assert not any("no embedding" in note for note in scoped.notes)


PROTEIN = (
    "Predicting protein folding with deep learning",
    "We predict the three-dimensional structure of proteins from their amino acid "
    "sequence; folded conformations of enzymes agree with crystallography.",
)
PROTEIN_2 = (
    "Protein structure prediction from amino acid sequences",
    "A neural network predicts how a protein folds into its three-dimensional shape, "
    "compared against crystal structures of enzymes.",
)
OTHERS = [
    (
        "Galaxy formation in the early universe",
        "Telescope observations of distant galaxies show how stars and dark matter "
        "clustered after the big bang.",
    ),
    (
        "Sourdough fermentation and bread texture",
        "Yeast and lactic acid bacteria in sourdough change the crumb, flavour and rise "
        "of baked bread.",
    ),
    (
        "Neural machine translation with attention",
        "An encoder-decoder network translates English sentences into German and French "
        "and improves BLEU scores over phrase-based systems.",
    ),
]


@pytest.fixture
def topics(make_paper: Callable[..., Paper]) -> Library:
    papers = {
        "protein2": make_paper(PROTEIN_2[0], abstract=PROTEIN_2[1], authors=["Ada Fold"]),
        **{
            f"other{i}": make_paper(title, abstract=abstract, authors=[f"Author {i}"])
            for i, (title, abstract) in enumerate(OTHERS)
        },
    }
    semantic.embed_papers([p.pk for p in papers.values()])
    return papers


def test_embedding_finds_the_paper_on_the_same_topic(
    topics: Library, make_paper: Callable[..., Paper]
) -> None:
    protein = make_paper(PROTEIN[0], abstract=PROTEIN[1], authors=["Max Perutz"])
    semantic.embed_papers([protein.pk])
    result = papers_related(paper=protein, similarity_threshold=0.0)
    assert result.weights == {"embedding": 1.0}
    best = result.results[0]
    assert best["paper_id"] == topics["protein2"].pk
    assert 0.5 < best["reasons"]["embedding"] <= 1.0  # the raw cosine
    # how much closer than the average paper: (cos - mean) / (1 - mean), in (0, 1]
    assert 0.0 < best["components"]["embedding"] <= 1.0
    assert best["similarity"] == best["components"]["embedding"]
    others = [row["similarity"] for row in result.results[1:]]
    assert all(s < best["similarity"] / 2 for s in others)


def test_a_paper_without_a_stored_embedding_is_encoded_but_not_saved(
    topics: Library, make_paper: Callable[..., Paper]
) -> None:
    protein = make_paper(PROTEIN[0], abstract=PROTEIN[1], authors=["Max Perutz"])
    stored = PaperEmbedding.objects.count()
    result = papers_related(paper=protein, similarity_threshold=0.0)
    assert result.results[0]["paper_id"] == topics["protein2"].pk
    assert PaperEmbedding.objects.count() == stored
    assert any("1 paper has no embedding yet" in note for note in result.notes)


def test_keyword_candidates_without_vectors_get_an_embedding_score(
    topics: Library, make_paper: Callable[..., Paper]
) -> None:
    """A paper found through SQL (a shared keyword) but not embedded yet is encoded too."""
    protein = make_paper(PROTEIN[0], abstract=PROTEIN[1], keywords=["folding"])
    twin = make_paper(PROTEIN_2[0] + " revisited", abstract=PROTEIN_2[1], keywords=["folding"])
    semantic.embed_papers([protein.pk])
    result = papers_related(paper=protein, similarity_threshold=0.0)
    row = next(row for row in result.results if row["paper_id"] == twin.pk)
    assert row["components"]["keywords"] == 1.0
    assert row["components"]["embedding"] > 0
    assert row["reasons"]["keywords"] == ["folding"]


def test_a_paper_with_nothing_to_compare_has_no_results(
    make_paper: Callable[..., Paper], no_embeddings: None
) -> None:
    lone = make_paper("A lonely paper")
    make_paper("Another paper", authors=["Someone Else"])
    result = papers_related(paper=lone, similarity_threshold=0.0)
    assert result.results == [] and result.weights == {} and result.candidates_scored == 0
    assert any("keywords (it has none)" in note for note in result.notes)


def test_query_count_does_not_grow_with_the_library(
    make_paper: Callable[..., Paper], no_embeddings: None
) -> None:
    def queries_for(extra: int) -> tuple[int, int]:
        paper = make_paper(f"Query {extra}", authors=["Q Person"], keywords=[f"k{extra}"])
        others = [
            make_paper(f"Other {extra}-{i}", authors=[f"P{i} Person"], keywords=[f"k{extra}"])
            for i in range(extra)
        ]
        citations_add(pairs=[(o.pk, paper.pk) for o in others])
        with CaptureQueriesContext(connection) as captured:
            result = papers_related(paper=paper, limit=100, similarity_threshold=0.0)
        return len(captured.captured_queries), len(result.results)

    small, large = queries_for(2), queries_for(25)
    assert small[1] == 2 and large[1] == 25
    assert small[0] == large[0]


@pytest.mark.parametrize(
    ("limit", "threshold"),
    [(0, 0.7), (101, 0.7), (True, 0.7), ("5", 0.7), (10, -0.1), (10, 1.5), (10, "high")],
)
def test_bad_arguments_are_invalid_input(
    library: Library, limit: object, threshold: object
) -> None:
    with pytest.raises(InvalidInput):
        papers_related(paper=library["query"], limit=limit, similarity_threshold=threshold)  # type: ignore[arg-type]

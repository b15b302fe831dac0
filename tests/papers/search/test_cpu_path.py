"""The cheaper CPU path of a library search (issue 19 part C) answers as the slower one did.

- BM25's in-process aggregate sums on arrays indexed by paper id (up to DENSE_MAX_TERMS
  terms) to the same bits, order and total as the sort it replaces, and still takes the
  sort for longer queries and sparse ids;
- the snippet highlighter stems only the words whose initial a query term has, and finds
  the same words as when it judged every word; passages split the text once and escape
  only what holds markup, with the same result as the first rendering;
- the threshold algorithm, its contenders' bounds computed once per set of lists, still
  finds the exact top k.
"""

from __future__ import annotations

import math
import random
import re
from collections.abc import Callable

import numpy as np
import pytest
from django.db import connection

from papers.models import Paper
from papers.search import analysis, lexical, postings, snippets
from papers.search import query as q
from tests.papers.search.builders import render_window

pytestmark = pytest.mark.django_db

WORDS = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda".split()


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> list[Paper]:
    """Papers holding overlapping subsets of WORDS, repeated unevenly (varied impacts)."""
    papers = []
    for n in range(40):
        chosen = [word for i, word in enumerate(WORDS) if (n >> (i % 6)) & 1 or i == n % 11]
        abstract = " ".join(word for i, word in enumerate(chosen) for _ in range(1 + (n + i) % 3))
        papers.append(make_paper(f"Paper {n} {chosen[0]}", abstract=abstract))
    return papers


def sorted_sum(lists: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
    """The sort-and-reduceat sum the dense one must equal bit for bit."""
    paper_ids = np.concatenate([papers for papers, _ in lists])
    order = np.argsort(paper_ids, kind="stable")
    paper_ids = paper_ids[order]
    starts = np.flatnonzero(np.concatenate(([True], paper_ids[1:] != paper_ids[:-1])))
    scores = np.concatenate([scores for _, scores in lists])[order]
    return paper_ids[starts], np.add.reduceat(scores, starts)


@pytest.mark.parametrize("terms", [1, 2, 3, 5, 8])
def test_dense_sum_equals_the_sorted_sum_to_the_bit(terms: int) -> None:
    rng = np.random.default_rng(terms)
    lists = []
    for _ in range(terms):
        papers = rng.choice(5_000, size=int(rng.integers(1, 3_000)), replace=False)
        lists.append((papers.astype(np.int64), rng.random(len(papers)) * rng.random() * 9))
    found, totals = lexical._sum_by_paper(lists)
    expected_found, expected_totals = sorted_sum(lists)
    assert found.tolist() == expected_found.tolist()
    assert totals.tolist() == expected_totals.tolist()  # exact: same additions, same order


def test_impacts_fit_in_the_packed_posting() -> None:
    assert postings.IMPACT_SCALE * (postings.K1 + 1) < lexical.IMPACT_MASK


@pytest.mark.parametrize(
    "query", ["alpha", "alpha beta", "gamma delta epsilon", " ".join(WORDS[:8]), " ".join(WORDS)]
)
@pytest.mark.parametrize(("limit", "offset"), [(10, 0), (3, 0), (4, 5), (100, 0), (5, 60)])
def test_dense_and_sorted_plans_rank_alike(
    library: list[Paper], monkeypatch: pytest.MonkeyPatch, query: str, limit: int, offset: int
) -> None:
    if connection.vendor != "sqlite":
        pytest.skip("the in-process aggregate serves SQLite")
    terms = lexical.query_terms(q.understand(query).words)
    with connection.cursor() as cursor:
        dense = lexical._exhaustive_in_process(cursor, terms, limit, offset)
        monkeypatch.setattr(lexical, "DENSE_MAX_TERMS", 0)  # every query takes the sort
        by_sort = lexical._exhaustive_in_process(cursor, terms, limit, offset)
    assert (dense.ids, dense.scores, dense.total) == (by_sort.ids, by_sort.scores, by_sort.total)
    holding = {p.pk for p in library if set(query.split()) & set(p.abstract.split())}
    assert dense.total == len(holding)


# Irregular forms of the English stemmer (its exception list and y/i rewrites), words of
# other scripts and digits: a stem keeps the initial of its word, which the highlighter
# relies on to stem only the words that can match.
STEMMER_CASES = (
    "dying lying tying skies skis idly gently ugly early only singly news howe atlas cosmos "
    "bias andes yelling Yves y ys studies happy agreed generously 2019 x86 naïve über straße "
    "θεωρία перевод 翻訳 ﷺ"
)


def test_a_stem_keeps_its_words_initial() -> None:
    words = [analysis.fold(word) for word in STEMMER_CASES.split()]
    stems = analysis.stem_folded(words)
    assert all(stem[:1] == word[:1] for word, stem in zip(words, stems, strict=True))


def test_the_highlighter_finds_the_words_it_found_before() -> None:
    """Each word judged alone (Highlighter.term) and in bulk (passage) agree."""
    text = STEMMER_CASES + " Studying studied translations translating _under_score Δ"
    for query, prefixes in (("study dying happy", ()), ("translation", ("stud", "ü")), ("ys", ())):
        bulk = snippets.Highlighter(query.split(), prefixes)
        alone = snippets.Highlighter(query.split(), prefixes)
        words = snippets._SPLIT_RE.split(text)[1::2]
        expected = {word: term for word in words if (term := alone.term(word)) is not None}
        assert bulk._matching(words) == expected
        assert expected  # the case tests something


def reference_passage(highlighter: snippets.Highlighter, text: str) -> str:
    """The passage as first written: every word judged alone, every piece escaped."""
    tokens = list(re.finditer(r"[^\W_]+", text))
    terms = [highlighter.term(token.group()) for token in tokens]
    matched = [(i, term) for i, term in enumerate(terms) if term]
    if not matched:
        return ""
    return render_window(text, tokens, terms, snippets._best_window(matched))


def test_passages_equal_the_reference_rendering() -> None:
    rng = random.Random(19)
    vocabulary = (
        "translation translations model modelling data the of Über naïve x86 snake_case "
        "<b> </b> * ** _ ` [link](u) \\ & … — 2024"
    ).split()
    separators = [" ", "  ", ", ", ". ", "\n", " (", ") ", "-", ""]
    for _ in range(400):
        pieces = [rng.choice(separators) if rng.random() < 0.2 else ""]
        for _ in range(rng.randint(1, 90)):
            pieces += [rng.choice(vocabulary), rng.choice(separators[:-1])]
        text = "".join(pieces)
        for query, prefixes in (("translation", ()), ("data models", ("uber",))):
            expected = reference_passage(snippets.Highlighter([query], prefixes), text)
            assert snippets.Highlighter([query], prefixes).passage(text) == expected, text


@pytest.mark.parametrize("query", ["alpha beta", "gamma delta epsilon", "alpha beta gamma"])
@pytest.mark.parametrize(("limit", "offset"), [(1, 0), (3, 0), (4, 5)])
def test_the_threshold_plan_finds_the_aggregates_top(
    library: list[Paper], monkeypatch: pytest.MonkeyPatch, query: str, limit: int, offset: int
) -> None:
    """Sorted access in blocks of 2 postings: many rounds, contenders completed, bounds."""
    if connection.vendor != "sqlite":
        pytest.skip("compared with the in-process aggregate")
    monkeypatch.setattr(lexical, "FIRST_BLOCK", 2)
    terms = lexical.query_terms(q.understand(query).words)
    with connection.cursor() as cursor:
        scored, _ = lexical._threshold(cursor, terms, offset + limit, [])
        everything = lexical._exhaustive_in_process(cursor, terms, offset + limit, 0)
    assert [paper for paper, _ in scored] == everything.ids
    pairs = zip([score for _, score in scored], everything.scores, strict=True)
    assert all(math.isclose(a, b, rel_tol=1e-12) for a, b in pairs)

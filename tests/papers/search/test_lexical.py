"""papers/search/lexical.py: a query keeps its rarest terms (postings.MAX_QUERY_TERMS)."""

from __future__ import annotations

from collections.abc import Callable

from papers.models import Paper
from papers.search import analysis, lexical, postings

WORDS = [f"zyx{chr(97 + n // 26)}{chr(97 + n % 26)}q" for n in range(postings.MAX_QUERY_TERMS + 8)]


def test_a_query_of_many_terms_keeps_the_rarest(make_paper: Callable[..., Paper]) -> None:
    # Paper i holds the first i + 1 words: the later a word, the fewer papers hold it.
    for count in range(1, len(WORDS) + 1):
        make_paper(f"Paper {count}", abstract=" ".join(WORDS[:count]), authors=["A. B"])
    terms = lexical.query_terms(WORDS)
    rarest = WORDS[-postings.MAX_QUERY_TERMS :]
    assert set(terms.ids) == {analysis.term_id(analysis.stem(word)) for word in rarest}
    assert sorted(terms.df) == list(range(1, postings.MAX_QUERY_TERMS + 1))
    few = lexical.query_terms(WORDS[:3])
    assert len(few.ids) == 3

"""The snippet's window (papers/search/snippets.py `_best_window`) is the one the plain
definition gives: the first window of SNIPPET_WORDS words with the most distinct query
terms, then the most matches."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from papers.search.snippets import SNIPPET_WORDS, Highlighter, _best_window


def _by_definition(matched: list[tuple[int, str]]) -> int:
    best, best_key = 0, (-1, -1)
    for n, (start, _) in enumerate(matched):
        window = [term for i, term in matched[n:] if i < start + SNIPPET_WORDS]
        key = (len(set(window)), len(window))
        if key > best_key:
            best, best_key = start, key
    return best


@given(
    st.lists(st.tuples(st.integers(0, 400), st.sampled_from("abcde")), max_size=80).map(
        lambda pairs: sorted(dict(pairs).items())
    )
)
def test_the_window_is_the_defined_one(matched: list[tuple[int, str]]) -> None:
    assert _best_window(matched) == _by_definition(matched)


def test_the_passage_centres_on_the_densest_window() -> None:
    filler = " ".join(f"w{i}" for i in range(60))
    text = f"translation early. {filler} neural machine translation of speech"
    passage = Highlighter(["neural", "machine", "translation"]).passage(text)
    assert passage.startswith("…") and "**neural** **machine** **translation**" in passage

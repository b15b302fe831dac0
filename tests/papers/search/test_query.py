"""papers/search/query.py: long text is plain words."""

from __future__ import annotations

from papers.search import query as q

ABSTRACT = (
    'We study "neural machine translation" (NMT) for low-resource pairs - NOT the usual '
    "high-resource setting - and show that back-translation AND self-training help. "
)


def test_a_long_text_is_plain_words_whatever_its_punctuation() -> None:
    text = ABSTRACT * (q.PLAIN_TEXT_FROM_CHARS // len(ABSTRACT) + 1)
    assert len(text) > q.PLAIN_TEXT_FROM_CHARS
    understood = q.understand(text)
    assert understood.mode == "natural" and understood.constraint is None
    assert understood.prefixes == ()
    assert {"neural", "translation", "NMT", "resource", "usual"} <= set(understood.words)
    assert understood.notes == ("long text read as plain words",)


def test_a_short_query_keeps_the_query_language() -> None:
    understood = q.understand('translation AND "self training" -speech')
    assert understood.mode == "strict" and understood.constraint is not None
    assert q.excluded_parts(understood.constraint) == [q.Term("speech")]

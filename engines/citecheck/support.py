"""Is the citing sentence supported by the cited paper? Decided on the paper's passages
(the passage index, papers/passages): a sentence that quotes is looked up with
`quote_find` in that paper; any other sentence with `passage_search` in that paper, and
its best passage compared with the claim.

The comparison is the mean of two similarities, each in 0..1: the share of the claim's
content words the passage holds (what paraphrases keep: names, numbers, technical terms)
and the cosine of the two texts' embeddings with the library's own model (what survives
rewording). Thresholds were calibrated on benchmarks/bench_citations.py (drafts built from
the fixture PDFs, docs/CITATION-CHECK.md): `unsupported` below UNSUPPORTED_BELOW,
`supported` from SUPPORTED_FROM, `uncertain` between. A quote is `supported` when found
word for word (up to line breaks, hyphenation, ligatures, quote marks), `uncertain` when
only approximately (a misquote cannot be told from a copying slip), `unsupported` when not
found.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from core.errors import InvalidInput
from papers.models import Passage
from papers.passages.selectors import passage_search, quote_find
from papers.search.embedding import load_model

SUPPORTED = "supported"
UNSUPPORTED = "unsupported"
UNCERTAIN = "uncertain"
NO_PDF = "no_pdf"
NOT_CHECKED = "not_checked"
NOT_INDEXED = "not_indexed"

SUPPORTED_FROM = 0.55
UNSUPPORTED_BELOW = 0.45
PASSAGES_COMPARED = 5
MAX_QUERY_CHARS = 500
_WORD = re.compile(r"[^\W_]+(?:[-'][^\W_]+)*")
_STOP = frozenset(
    "a an the and or but of to in on at by for with from as is are was were be been being "
    "this that these those it its we our they their he she his her which who whom whose "
    "than then there here such can could may might must shall should will would do does "
    "did not no nor so very also into over under more most less least all any each both "
    "few other some own same only just about between through during before after above "
    "below up down out off again further once has have had having i you your us them what "
    "when where why how show shows showed shown use used using based paper work study "
    "et al".split()
)


_NEGATIONS = frozenset(
    "not no never cannot neither nor none nothing nobody without fail fails failed".split()
)


@dataclass(frozen=True)
class Support:
    verdict: str  # supported | unsupported | uncertain | no_pdf | not_indexed | not_checked
    similarity: float | None = None
    page: int | None = None
    passage: str = ""
    how: str = ""  # quote | passage
    quote: str = ""  # quote_find's status for a quoting sentence: found | approximate | not_found


def content_words(text: str) -> list[str]:
    return [w for w in (m.lower() for m in _WORD.findall(text)) if w not in _STOP and len(w) > 1]


def claim_similarity(claim: str, passage: str) -> float:
    """Mean of the claim's content-word coverage by the passage and the embeddings'
    cosine (clipped at 0)."""
    words = content_words(claim)
    if not words:
        return 0.0
    held = set(content_words(passage))
    coverage = sum(1 for word in words if word in held) / len(words)
    model = load_model()
    vectors = model.encode_documents([claim, passage])
    cosine = float(np.dot(vectors[0], vectors[1]))
    return round((coverage + max(0.0, cosine)) / 2, 3)


def verdict_of(similarity: float) -> str:
    if similarity >= SUPPORTED_FROM:
        return SUPPORTED
    if similarity < UNSUPPORTED_BELOW:
        return UNSUPPORTED
    return UNCERTAIN


def support_check(*, claim: str, quote: str, paper_id: int | None, has_pdf: bool) -> Support:
    """The verdict for one sentence and one cited paper (read-only)."""
    if paper_id is None or not has_pdf:
        return Support(NO_PDF)
    try:
        hits = passage_search(
            query=(quote or claim)[:MAX_QUERY_CHARS], paper_ids=[paper_id], limit=PASSAGES_COMPARED
        )
    except InvalidInput:  # no word to search for
        return Support(NOT_CHECKED)
    if not hits and not Passage.objects.filter(paper_id=paper_id).exists():
        return Support(NOT_INDEXED)  # attached but not indexed yet (reindex_passages)
    if not hits:
        return Support(UNSUPPORTED, 0.0, None, "", "passage")
    if quote:
        match = quote_find(text=quote, paper_ids=[paper_id])
        if match.status == "found":
            passage = match.matched_text or quote
            return Support(SUPPORTED, 1.0, match.page, passage, "quote", match.status)
        similarity = round(float(match.similarity or 0.0), 3)
        if match.status == "approximate":
            # A few words differ: a misquote ("not" added, a number changed) looks the
            # same as a copying slip, so it is for the writer to look at the page.
            passage = match.closest_text or ""
            return Support(UNCERTAIN, similarity, match.page, passage, "quote", match.status)
        return Support(UNSUPPORTED, similarity, None, "", "quote", match.status)
    if len(content_words(claim)) < 2:
        return Support(NOT_CHECKED)
    scored = [(claim_similarity(claim, hit.text), hit) for hit in hits]
    similarity, best = max(scored, key=lambda item: item[0])
    verdict = verdict_of(similarity)
    if verdict == SUPPORTED and negated(claim) != negated(closest_sentence(claim, best.text)):
        # The paper's words with the opposite sense ("... is not ..."): the similarities
        # cannot see it, the negation words of the closest sentence can.
        verdict = UNCERTAIN
    return Support(verdict, similarity, best.page, best.text, "passage")


def closest_sentence(claim: str, passage: str) -> str:
    """The passage's sentence that holds most of the claim's content words."""
    wanted = set(content_words(claim))
    sentences = re.split(r"(?<=[.!?])\s+", passage)
    return max(sentences, key=lambda sentence: len(wanted & set(content_words(sentence))))


def negated(text: str) -> bool:
    """Whether the text holds an explicit negation word."""
    return any(word in _NEGATIONS for word in _WORD.findall(text.lower().replace("n't", " not")))

"""Search-test builders: a reference snippet window, a small corpus, a fake strong tier
(embedding model) with fresh in-process indexes, and `library`, six papers in two projects
for the filter and listing tests."""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import pytest

from core.markdown import escape_markdown
from papers.models import Paper
from papers.search import (
    embedding,
    semantic,
    snippets,
    strong_tier,
    tiers,
)
from papers.search.vector_index import strong_vector_index
from projects.services import project_add_papers


def render_window(
    text: str, tokens: list[re.Match[str]], terms: list[str | None], best: int
) -> str:
    """The SNIPPET_WORDS words from three before word `best`, matched words (a term) in
    bold, every piece between words escaped, ellipses where the text goes on."""
    first = max(0, best - 3)
    last = min(len(tokens), first + snippets.SNIPPET_WORDS)
    out = [snippets.ELLIPSIS] if first else []
    position = tokens[first].start() if first else 0
    for token, term in zip(tokens[first:last], terms[first:last], strict=True):
        out.append(escape_markdown(text[position : token.start()]))
        out.append(f"**{token.group()}**" if term else token.group())
        position = token.end()
    if last < len(tokens):
        out.append(snippets.ELLIPSIS)
    else:
        out.append(escape_markdown(text[position:]))
    return " ".join("".join(out).split())


TEXTS = [
    ("Neural machine translation with attention", "Attention lets a translation model align."),
    ("Statistical machine translation", "Phrase tables for machine translation of news."),
    ("Machine reading comprehension", "Reading passages and answering questions."),
    ("Speech translation", "Translating speech; a machine listens, then translates."),
    ("Language models", "Large language models and their evaluation on translation."),
    ("Protein folding", "Predicting the structure of proteins from sequences."),
    ("Galaxy formation", "Telescopes observe distant galaxies."),
]


FAKE = "fake-strong"


PERVERSE_TOPIC = "galax"


def _fake_documents(texts: list[str]) -> np.ndarray:
    """A deliberately perverse model: every query is about galaxies (see _fake_queries),
    so a search ranked by this tier puts the galaxy paper first whatever is asked."""
    return np.asarray(
        [[1.0, 0.0, 0.1] if PERVERSE_TOPIC in t.lower() else [0.0, 1.0, 0.1] for t in texts],
        dtype=np.float32,
    )


def _fake_queries(texts: list[str]) -> np.ndarray:
    return np.asarray([[1.0, 0.0, 0.0] for _ in texts], dtype=np.float32)


@pytest.fixture(autouse=True)
def fresh_indexes() -> Iterator[None]:
    semantic.vector_index().reset()
    strong_vector_index().reset()
    semantic._lazy_checked_at = -math.inf
    strong_tier._nudged_at = -math.inf
    yield
    semantic.vector_index().reset()
    strong_vector_index().reset()


@pytest.fixture
def fake_strong(monkeypatch: pytest.MonkeyPatch, settings: Any) -> str:
    """The fake model as EMBEDDING_MODEL_STRONG (loaded fresh for the test)."""
    monkeypatch.setitem(embedding.LOADERS, FAKE, lambda: ("fake-strong-1/3", 3, _fake_documents))
    monkeypatch.setitem(embedding._QUERY_ENCODERS, FAKE, lambda: _fake_queries)
    monkeypatch.delitem(embedding._loaded, FAKE, raising=False)
    monkeypatch.setattr(tiers, "CALIBRATION_MIN", 2)
    settings.EMBEDDING_MODEL_STRONG = FAKE
    return FAKE


@pytest.fixture
def library(make_paper: Callable[..., Paper], make_project: Callable[..., Any]) -> dict[str, Any]:
    papers = {
        "findings": make_paper(
            "Prompting in the Wild",
            authors=[
                {"name": "Ana García", "affiliation": "University of Edinburgh"},
                {"name": "Bo Li", "affiliation": "Tsinghua University"},
            ],
            year=2023,
            venue="Findings of the Association for Computational Linguistics: ACL 2023",
            source="acl",
            source_url="https://aclanthology.org/2023.findings-acl.1",
            pdf_url="https://aclanthology.org/2023.findings-acl.1.pdf",
            doi="10.18653/v1/2023.findings-acl.1",
            keywords=["Prompting", "LLM evaluation"],
        ),
        "main": make_paper(
            "Parsing With 50% Less Data_v2",
            authors=["Bo Li", "Carla Rossi"],
            year=2023,
            venue="Proceedings of ACL 2023",
            source="acl",
            source_url="https://aclanthology.org/2023.acl-long.7",
            keywords=["parsing"],
            categories=["cs.CL"],
        ),
        "arxiv": make_paper(
            "Vision Transformers at Scale",
            authors=["Dana Smith"],
            year=2021,
            venue="arXiv",
            source="arxiv",
            source_url="https://arxiv.org/abs/2101.00001",
            pdf_url="https://arxiv.org/pdf/2101.00001",
            categories=["cs.CV", "cs.LG"],
            keywords=["transformer"],
        ),
        "old": make_paper(
            "Statistical Machine Translation",
            authors=["Eve Stone"],
            year=2003,
            keywords=["Transformers history"],
        ),
    }
    nlp = make_project("NLP Reading")
    vision = make_project("Vision")
    project_add_papers(project=nlp, paper_ids=[papers["findings"].pk, papers["main"].pk])
    project_add_papers(project=vision, paper_ids=[papers["arxiv"].pk])
    return {"papers": papers, "nlp": nlp, "vision": vision}

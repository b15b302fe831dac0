"""Whether a citing sentence is supported by the cited paper's PDF (engines/citecheck/
support.py), through citations_check on the library alone: a reworded sentence is
supported by the right paper and unsupported by another, a negated one is uncertain, an
invented one unsupported, a slightly changed quote uncertain; a paper without a PDF or
without indexed passages says so."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from engines.citecheck.selectors import citations_check
from engines.citecheck.support import SUPPORTED_FROM, UNSUPPORTED_BELOW
from papers.models import Paper, Passage
from papers.pdf import services as pdf_services
from tests.papers.passages.builders import ACL
from tests.papers.pdf.builders import EXPOSITORY, WRAPPED

# WRAPPED (2304.02623v1.pdf, page 1) reworded by hand, and turned around.
REWORDED = (
    "As recent work shows, this new technology can transform writing in scenarios like "
    "ideation in creative writing, editing support and summarization"
)
NEGATED = (
    "Recent work has shown that this new technology cannot transform writing in scenarios "
    "such as ideation during creative writing, editing support, and summarization"
)
INVENTED = "Honeybees navigate by the polarisation of moonlight over frozen lakes"


@pytest.fixture
def attach(
    settings: Any,
    tmp_path: Path,
    make_paper: Callable[..., Paper],
    django_capture_on_commit_callbacks: Any,
) -> Callable[[Path], Paper]:
    """A paper with this PDF attached and its passages indexed (the task run here)."""
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.ASSETS_DIR = tmp_path / "assets"
    settings.CELERY_TASK_ALWAYS_EAGER = True

    def make(path: Path) -> Paper:
        paper = make_paper(title=f"Paper {path.stem}", authors=["A. Writer"])
        with django_capture_on_commit_callbacks(execute=True):
            pdf_services.pdf_attach_file(paper_id=paper.pk, path=path)
        return paper

    return make


def verdicts(text: str) -> list[dict[str, Any]]:
    return citations_check(text=text, engine_ids=("local",))["citations"]


def test_a_reworded_sentence_is_supported_by_its_paper_only(
    attach: Callable[[Path], Paper],
) -> None:
    right, wrong = attach(EXPOSITORY), attach(ACL)
    supported, unsupported = verdicts(
        f"{REWORDED} \\cite{{{right.citekey}}}. {REWORDED} \\cite{{{wrong.citekey}}}."
    )
    assert (supported["support"], supported["page"]) == ("supported", 1)
    assert supported["similarity"] >= SUPPORTED_FROM
    assert unsupported["support"] == "unsupported"
    assert unsupported["similarity"] < UNSUPPORTED_BELOW


def test_a_negated_sentence_is_uncertain_and_an_invented_one_unsupported(
    attach: Callable[[Path], Paper],
) -> None:
    paper = attach(EXPOSITORY)
    key = paper.citekey
    negated, invented = verdicts(f"{NEGATED} \\cite{{{key}}}. {INVENTED} \\cite{{{key}}}.")
    assert negated["support"] == "uncertain"
    assert invented["support"] == "unsupported"


def test_a_quote_with_a_changed_word_is_uncertain_and_the_exact_quote_supported(
    attach: Callable[[Path], Paper],
) -> None:
    key = attach(EXPOSITORY).citekey
    changed = WRAPPED.replace("many scenarios", "several scenarios")
    exact, misquoted = verdicts(
        f"They write that \u201c{WRAPPED}\u201d \\cite{{{key}}}. "
        f"They write that \u201c{changed}\u201d \\cite{{{key}}}."
    )
    assert (exact["support"], exact["quote"], exact["similarity"]) == ("supported", "found", 1.0)
    assert (misquoted["support"], misquoted["quote"]) == ("uncertain", "approximate")
    assert misquoted["page"] == 1


def test_no_pdf_and_passages_not_indexed_are_said_not_guessed(
    attach: Callable[[Path], Paper], make_paper: Callable[..., Paper]
) -> None:
    without = make_paper(title="A paper with no PDF", authors=["N. Pdf"], year=2020)
    unindexed = attach(EXPOSITORY)
    Passage.objects.filter(paper=unindexed).delete()
    no_pdf, not_indexed = verdicts(
        f"{REWORDED} \\cite{{{without.citekey}}}. {REWORDED} \\cite{{{unindexed.citekey}}}."
    )
    assert (no_pdf["status"], no_pdf["support"]) == ("exists", "no_pdf")
    assert (not_indexed["status"], not_indexed["support"]) == ("exists", "not_indexed")

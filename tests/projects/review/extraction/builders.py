"""What the extraction tests share: the fixture PDFs and quotes from them, the form they
use, and a review whose included studies are given papers."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from papers.models import Paper
from projects.models import ReviewCandidate, ReviewSession

FIXTURES = Path(__file__).resolve().parents[3] / "fixtures" / "pdfs"
ACL = FIXTURES / "N18-3011.pdf"  # Ammar et al. 2018, two columns, 8 pages
QUANTUM = FIXTURES / "1111.2011v2.pdf"  # Murray et al., 8 pages

# Page 3 of N18-3011, printed 'To ﬁll' (a ligature) and 'Sci-' / 'enceParse' over a line end.
ACL_QUOTE = (
    "To fill in this gap, we built the ScienceParse system to predict structured data from "
    "the raw PDFs using recurrent neural networks"
)
ACL_QUOTE_PAGE = 3
# The same with two words changed: only a close text is on the page.
ACL_QUOTE_CHANGED = (
    "To fill in this gap, we built the ScienceParse system to predict structured metadata "
    "from the raw PDFs using convolutional neural networks"
)
NOT_IN_ANY = "The cohort comprised 412 patients recruited from three hospitals in Norway."

FIELDS: list[dict[str, Any]] = [
    {"key": "task", "label": "Task", "type": "text", "description": "What the system does."},
    {"key": "papers", "type": "number", "unit": "million papers", "tolerance": 0.5},
    {"key": "pages", "type": "integer", "quote_required": False},
    {"key": "graph_kind", "type": "choice", "choices": ["property graph", "RDF graph", "other"]},
    {"key": "open_source", "type": "yes_no_unclear"},
    {"key": "years", "type": "range"},
]


def review_with_included(papers: list[Paper], excluded: Sequence[Paper] = ()) -> ReviewSession:
    """A review waiting at its screen checkpoint whose included candidates are `papers`."""
    session = ReviewSession.objects.create(
        query="literature graphs", domain="general", max_results=10, stage="screen",
        status="waiting",
    )  # fmt: skip
    for rank, paper in enumerate([*papers, *excluded], start=1):
        ReviewCandidate.objects.create(
            session=session, paper=paper, source="search", round=1, rank=rank,
            status="included" if paper in papers else "excluded",
        )  # fmt: skip
    return session


# One extractor's values of FIELDS for the ACL paper, each quote on the page given.
ACL_VALUES: dict[str, Any] = {
    "task": {
        "value": "Organising the scientific literature into a graph",
        "quote": "We describe a deployed scalable system for organizing published scientific "
        "literature into a heterogeneous graph",
        "page": 1,
    },
    "papers": {
        "value": "37 million papers",
        "quote": "resulting in 37M unique paper nodes",
        "page": 2,
    },
    "pages": {"value": 8},
    "graph_kind": {
        "value": "Property graph",
        "quote": "The literature graph is a property graph with directed edges",
        "page": 2,
    },
}

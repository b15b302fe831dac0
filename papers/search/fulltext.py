"""Ranked full-text search (being written for issue 4)."""

from __future__ import annotations

from collections.abc import Sequence


def index_papers(paper_ids: Sequence[int]) -> None:
    """Bring the full-text index up to date for these papers (placeholder until issue 4)."""

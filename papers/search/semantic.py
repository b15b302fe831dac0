"""Semantic search (being written for issue 4)."""

from __future__ import annotations

from collections.abc import Sequence


def schedule_embedding(paper_ids: Sequence[int]) -> None:
    """Embed these papers in the background (placeholder until issue 4)."""

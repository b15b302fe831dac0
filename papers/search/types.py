"""Shapes shared by the search modes, the MCP tools and the REST endpoints."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from core.paging import next_offset


@dataclass(frozen=True)
class SearchFilters:
    """Metadata filters; every field is optional and they combine with AND.

    Text values may hold `*` and `?` glob patterns (`venue="Findings*"`); without a pattern
    a value matches case-insensitively and exactly.
    """

    year: int | None = None
    year_from: int | None = None
    year_to: int | None = None
    venue: str | None = None
    author: str | None = None
    institution: str | None = None
    source: str | None = None
    keyword: str | None = None
    category: str | None = None
    project: str | None = None
    doi: str | None = None
    has_pdf: bool | None = None  # a PDF stored in the library
    has_pdf_url: bool | None = None  # a link to download one from
    url: str | None = None


@dataclass
class SearchHit:
    """One result: the paper's brief record (papers.selectors.paper_brief) plus scoring."""

    record: dict[str, Any]
    score: float
    snippet_markdown: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {**self.record, "score": self.score, "snippet_markdown": self.snippet_markdown}


@dataclass
class SearchPage:
    hits: list[SearchHit]
    total: int
    limit: int
    offset: int
    mode: str = "fulltext"  # fulltext | fuzzy | keyword | payload | semantic | hybrid
    notes: list[str] = field(default_factory=list)  # e.g. "no exact match; fuzzy results"

    @property
    def has_more(self) -> bool:
        return self.next_offset is not None

    @property
    def next_offset(self) -> int | None:
        return next_offset(self.offset, len(self.hits), self.total)

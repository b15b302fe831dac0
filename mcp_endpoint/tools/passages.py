"""Tool set `pdf`, evidence from the library's PDFs: `search_passages`,
`find_quote` and `verify_quote`, and the resource `paper://{paper_id}/passages{?page}`.

Thin adapters over papers/passages/selectors.py (docs/EVIDENCE.md). The project filter
and the client's collection scope are resolved here into paper ids, since papers sits
below projects. `highlight: true` creates the highlight through the annotation service
(papers.pdf.services), as create_highlight does; in read-only mode it creates nothing
and says so.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Annotated, Any, Literal

from mcp_types import ToolAnnotations
from pydantic import BaseModel, Field

from core.errors import InvalidInput
from mcp_endpoint.registry import READ_ONLY, Registry, mcp_resource, mcp_tool, serving_read_only
from mcp_endpoint.scope import current_scope
from mcp_endpoint.tools.library import PaperRef
from papers.models import Paper
from papers.passages import selectors
from papers.passages.marking import quote_locate
from papers.passages.services import passages_ensure
from papers.pdf.selectors import paper_pdf_get
from papers.scoping import papers_in_project, papers_in_scope
from papers.selectors import paper_get
from projects.selectors import project_get

# Reads, and with highlight: true adds one annotation (and redraws the annotated copy).
READ_AND_MARK = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=False, open_world_hint=False
)

PaperIds = Annotated[
    list[Annotated[int, Field(ge=1)]] | None,
    Field(max_length=1000, description="Only these (integer paper_ids)."),
]
QuoteText = Annotated[str, Field(min_length=1, max_length=4_000)]
Highlight = Annotated[bool, Field(description="Also highlight the found (or closest) text.")]


class PaperLine(BaseModel):
    paper_id: int
    id: str = Field(description="Human id.")
    title: str
    year: int | None = None


class PassageResult(BaseModel):
    paper: PaperLine
    page: int
    position: list[float] = Field(description="Box around the passage: [x1, y1, x2, y2].")
    score: float
    snippet: str = Field(description="Quotable as create_highlight's text on this page.")


class PassageResults(BaseModel):
    hits: list[PassageResult]


class QuoteAnswer(BaseModel):
    status: Literal["found", "approximate", "not_found"]
    paper: PaperLine | None = None
    page: int | None = None
    rects: list[list[float]] | None = None
    matched_text: str | None = None
    closest_text: str | None = None
    similarity: float
    highlight: dict[str, Any] | None = Field(
        default=None, description="annotation_id, or error when it could not be made."
    )


def _papers(ids: set[int]) -> dict[int, PaperLine]:
    rows = Paper.objects.filter(pk__in=ids).values_list("pk", "human_id", "title", "year")
    return {
        pk: PaperLine(paper_id=pk, id=hid, title=title, year=year) for pk, hid, title, year in rows
    }


def _box(rects: Sequence[Sequence[float]]) -> list[float]:
    if not rects:
        return []
    return [
        min(r[0] for r in rects),
        min(r[1] for r in rects),
        max(r[2] for r in rects),
        max(r[3] for r in rects),
    ]


def allowed_paper_ids(
    paper_ids: Sequence[int] | None, project_id: str | None = None
) -> list[int] | None:
    """The papers a passage tool may look in: `paper_ids`, narrowed to a project and to
    the client's collection scope (None: the whole library)."""
    scope = current_scope()
    ids: set[int] | None = set(paper_ids) if paper_ids is not None else None
    narrowing = []
    if project_id is not None:
        project = project_get(ref=project_id, scope=scope)
        narrowing.append(papers_in_project(project))
    if scope is not None:
        narrowing.append(papers_in_scope(scope))
    for queryset in narrowing:
        members = queryset.values_list("pk", flat=True)
        if ids is not None:
            members = members.filter(pk__in=ids)
        ids = set(members)
    return sorted(ids) if ids is not None else None


def passages_search(
    *, query: str, paper_ids: Sequence[int] | None, project_id: str | None, limit: int
) -> PassageResults:
    """search_passages' answer (benchmarks call this, as the tool does)."""
    hits = selectors.passage_search(
        query=query, paper_ids=allowed_paper_ids(paper_ids, project_id), limit=limit
    )
    papers = _papers({hit.paper_id for hit in hits})
    return PassageResults(
        hits=[
            PassageResult(
                paper=papers[hit.paper_id],
                page=hit.page,
                position=_box(hit.rects),
                score=hit.score,
                snippet=hit.snippet,
            )
            for hit in hits
        ]
    )


def quote_answer(
    *,
    text: str,
    paper_ids: Sequence[int] | None,
    page: int | None = None,
    highlight: bool = False,
    read_only: bool = False,
) -> QuoteAnswer:
    """find_quote's and verify_quote's answer (benchmarks call this, as the tools do)."""
    outcome = quote_locate(
        text=text, paper_ids=paper_ids, page=page, highlight=highlight, read_only=read_only
    )
    match = outcome.match
    answer = QuoteAnswer(
        status=match.status,  # type: ignore[arg-type]
        paper=_papers({match.paper_id}).get(match.paper_id) if match.paper_id else None,
        page=match.page,
        rects=match.rects or None,
        matched_text=match.matched_text,
        closest_text=match.closest_text,
        similarity=match.similarity,
    )
    if outcome.highlight is not None:
        answer.highlight = outcome.highlight
    return answer


@mcp_tool(
    name="search_passages",
    title="Search PDF passages",
    description=(
        "Where the stored PDFs say something: ranked passages for a question or keywords, "
        "with paper, page and a snippet (matches in bold) that create_highlight takes."
    ),
    annotations=READ_ONLY,
)
def search_passages(
    query: Annotated[str, Field(min_length=1, max_length=selectors.MAX_QUERY_CHARS)],
    paper_ids: PaperIds = None,
    project_id: Annotated[str | None, Field(max_length=200)] = None,
    limit: Annotated[int, Field(ge=1, le=selectors.MAX_LIMIT)] = 10,
) -> PassageResults:
    return passages_search(query=query, paper_ids=paper_ids, project_id=project_id, limit=limit)


@mcp_tool(
    name="find_quote",
    title="Find a quote",
    description=(
        "Where a quote is in the stored PDFs: found (line breaks, hyphens, ligatures, "
        "quotes do not matter), approximate (a few words differ: closest_text, "
        "similarity) or not_found; with paper, page and rects."
    ),
    annotations=READ_AND_MARK,
    saves_results=True,
)
def find_quote(
    text: QuoteText, paper_ids: PaperIds = None, highlight: Highlight = False
) -> QuoteAnswer:
    return quote_answer(
        text=text,
        paper_ids=allowed_paper_ids(paper_ids),
        highlight=highlight,
        read_only=serving_read_only(),
    )


@mcp_tool(
    name="verify_quote",
    title="Verify a quote",
    description=(
        "find_quote in one paper's PDF, page tried first (a quote on another page is "
        "still found). Refused when the paper has no PDF."
    ),
    annotations=READ_AND_MARK,
    saves_results=True,
)
def verify_quote(
    paper_id: PaperRef,
    text: QuoteText,
    page: Annotated[int | None, Field(ge=1, le=100_000)] = None,
    highlight: Highlight = False,
) -> QuoteAnswer:
    paper = paper_get(ref=paper_id, scope=current_scope())
    paper_pdf_get(paper=paper)  # PdfNotAvailable, saying how to attach one
    return quote_answer(
        text=text,
        paper_ids=[paper.pk],
        page=page,
        highlight=highlight,
        read_only=serving_read_only(),
    )


@mcp_resource(
    "paper://{paper_id}/passages{?page}",
    name="paper_passages",
    title="Passages of a page of a paper's PDF",
    description=(
        "A page's passages in reading order (default page 1) with one box per line, "
        "[x1, y1, x2, y2] PDF points, origin bottom-left; as JSON."
    ),
    mime_type="application/json",
)
def paper_passages_resource(paper_id: str, page: str | None = None) -> str:
    paper = paper_get(ref=paper_id, scope=current_scope())
    record = paper_pdf_get(paper=paper)
    number = _page_number(page, record.page_count)
    passages_ensure(paper_ids=[paper.pk])
    passages = selectors.page_passages(paper_id=paper.pk, page=number)
    body = {
        "paper_id": paper.pk,
        "page": number,
        "total_pages": record.page_count,
        "passages": [{"order": p.order, "text": p.text, "rects": p.rects} for p in passages],
    }
    return json.dumps(body, ensure_ascii=False, separators=(",", ":"))


def register(registry: Registry) -> None:
    registry.add_tools(search_passages, find_quote, verify_quote)
    registry.add_resources(paper_passages_resource)


def _page_number(page: str | None, total: int) -> int:
    if page is None or page == "":
        return 1
    if not page.isdigit() or not 1 <= int(page) <= total:
        raise InvalidInput(f"page must be 1-{total}: the PDF has {total} page(s).", field="page")
    return int(page)


__all__ = ["allowed_paper_ids", "passages_search", "quote_answer", "register"]

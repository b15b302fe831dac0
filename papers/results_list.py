"""The admin's Paper list when it is searched: a results list for reading (issue 36).

Each row is one paper as a reader scans it: the full title linking to the reading page,
the first authors, the short venue and year, PDF and retraction markers, and the passage
where the query's words meet, highlighted. The order is the search's (search_papers'
ranking, papers.search.admin_search); the passages come from the same service that gives
search_papers its `snippet_markdown` (fulltext.search_hits), one statement per page.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from papers.models import Paper
from papers.search import fulltext
from papers.search.snippets import passage_html
from papers.trends import venue_short_label

AUTHORS_SHOWN = 3
# The attribute a searched page's papers carry their search record under (set by
# attach_passages, read by result_row).
FOUND = "search_found"


def authors_line(authors: list[str]) -> str:
    """The first AUTHORS_SHOWN authors, then "et al." when there are more."""
    if len(authors) <= AUTHORS_SHOWN:
        return ", ".join(authors)
    return ", ".join(authors[:AUTHORS_SHOWN]) + " et al."


def venue_line(paper: Paper) -> str:
    """The venue's short name (as trends and citations show it), else its name."""
    venue = paper.venue
    if venue is None:
        return ""
    short = venue.short_name.strip()
    return venue_short_label(short) if short else venue.name


def attach_passages(papers: Iterable[Paper], query: str) -> None:
    """Give each paper of a page its search record and highlighted passage for `query`
    (the respelled query when the search corrected a typo), as search_papers shows them:
    one statement for the page, whatever its length."""
    papers = list(papers)
    ids = [paper.pk for paper in papers]
    hits = fulltext.search_hits(ids, [0.0] * len(ids), query)
    found = {hit.record["paper_id"]: hit for hit in hits}
    for paper in papers:
        hit = found.get(paper.pk)
        if hit is not None:
            setattr(paper, FOUND, {**hit.record, "passage": hit.snippet_markdown})


def result_row(paper: Paper) -> SafeString:
    """One result: title (to the reading page), byline, markers, passage, edit link."""
    found: dict[str, Any] = getattr(paper, FOUND, None) or {}
    read = reverse("admin:papers_paper_read", args=[paper.pk])
    edit = reverse("admin:papers_paper_change", args=[paper.pk])
    byline = [part for part in (authors_line(found.get("authors", [])), venue_line(paper)) if part]
    if paper.year:
        byline.append(str(paper.year))
    markers = []
    if found.get("has_pdf"):
        markers.append(format_html('<span class="result-marker result-pdf">{}</span>', "PDF"))
    if paper.retraction_status:
        markers.append(
            format_html(
                '<span class="result-marker result-retraction">{}</span>',
                paper.get_retraction_status_display(),  # type: ignore[attr-defined]
            )
        )
    passage = found.get("passage") or ""
    return format_html(
        '<div class="result"><a class="result-title" href="{}">{}</a>'
        '<div class="result-byline">{}{}</div>{}'
        '<div class="result-tools"><a class="result-edit" href="{}">edit</a></div></div>',
        read,
        paper.title,
        " · ".join(byline),
        format_html_join("", " {}", ((marker,) for marker in markers)),
        format_html('<p class="result-passage">{}</p>', passage_html(passage)) if passage else "",
        edit,
    )

"""The admin's Paper list as a results list for reading, searched or not.

Each row is one paper as a reader scans it: the full title linking to the reading page,
the first authors, the short venue and year, PDF and retraction markers, and, when the
list is searched, the passage where the query's words meet, highlighted. A searched list
is in the search's order (search_papers' ranking, papers.search.admin_search) unless
another sort is chosen; the list without a query is sorted by one of SORTS. The records
come from the loader search_papers uses (fulltext.search_hits for a search, with its
`snippet_markdown`; fulltext.paper_briefs without), one statement per page.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import F, OrderBy
from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from papers.models import Paper
from papers.search import fulltext
from papers.search.snippets import passage_html
from papers.trends import venue_short_label

AUTHORS_SHOWN = 3
# The attribute a page's papers carry their search record under (set by attach_records,
# read by result_row).
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


# --- the order of the list -------------------------------------------------------------

# The query-string parameter naming the chosen sort (kept by filter and page links).
SORT_VAR = "sort"
# A searched list's own order; not a choice without a query.
RELEVANCE = "relevance"


@dataclass(frozen=True)
class Sort:
    label: str
    ordering: tuple[str | OrderBy, ...]


SORTS = {
    # paper_id grows as papers are added: the primary key's order, no sort step.
    "added": Sort("Recently added", ("-paper_id",)),
    # paper_year_idx; papers without a year last.
    "newest": Sort("Newest", (F("year").desc(nulls_last=True), "-paper_id")),
    # title_key is the case- and accent-folded title (paper_title_year_idx).
    "title": Sort("Title", ("title_key", "paper_id")),
}
UNSEARCHED_DEFAULT = "added"  # PaperAdmin.ordering


def chosen_sort(params: dict[str, Any], *, searched: bool) -> str:
    """The sort a list shows: the one asked for if it is one, else the list's default
    (relevance for a search, recently added without)."""
    asked = params.get(SORT_VAR, "")
    if asked in SORTS or (searched and asked == RELEVANCE):
        return asked
    return RELEVANCE if searched else UNSEARCHED_DEFAULT


def sort_choices(*, searched: bool) -> list[tuple[str, str]]:
    """(key, label) of each sort a list offers, its default first."""
    choices = [(key, sort.label) for key, sort in SORTS.items()]
    return [(RELEVANCE, "Relevance"), *choices] if searched else choices


# --- the rows ------------------------------------------------------------------------------


def attach_records(papers: Iterable[Paper], query: str = "") -> None:
    """Give each paper of a page its record as search_papers shows it and, for a `query`
    (the respelled one when the search corrected a typo), its highlighted passage: one
    statement for the page, whatever its length."""
    papers = list(papers)
    ids = [paper.pk for paper in papers]
    if query:
        hits = fulltext.search_hits(ids, [0.0] * len(ids), query)
        found = {hit.record["paper_id"]: {**hit.record, "passage": hit.snippet_markdown}
                 for hit in hits}  # fmt: skip
    else:
        found = fulltext.paper_briefs(ids)
    for paper in papers:
        record = found.get(paper.pk)
        if record is not None:
            setattr(paper, FOUND, record)


def result_row(paper: Paper) -> SafeString:
    """One result: title (to the reading page), byline, markers, passage (searched), edit
    link and keywords."""
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
    keywords = found.get("keywords") or []
    return format_html(
        '<div class="result"><a class="result-title" href="{}">{}</a>'
        '<div class="result-byline">{}{}</div>{}'
        '<div class="result-tools"><a class="result-edit" href="{}">edit</a>{}</div></div>',
        read,
        paper.title,
        " · ".join(byline),
        format_html_join("", " {}", ((marker,) for marker in markers)),
        format_html('<p class="result-passage">{}</p>', passage_html(passage)) if passage else "",
        edit,
        format_html(' <span class="result-keywords">{}</span>', ", ".join(keywords))
        if keywords
        else "",
    )

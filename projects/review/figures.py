"""The figures of a review's page in the admin (projects/review/admin.py): the PRISMA 2020
flow diagram (projects/review/prisma.py), the recall curve of its screening
(projects/review/recall_plot.py) and its PRISMA-style counts as tables. They are drawn
into the page and sent again with each screening decision (screening_views.py), so they
follow the screening without a reload. Reads only.
"""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from projects.models import ReviewCandidate, ReviewSession
from projects.review.prisma import prisma_svg
from projects.review.recall_plot import recall_curve_svg
from projects.review.screening import SEARCH
from projects.review.selectors import review_counts, review_prisma
from projects.review.stopping import stopping_assess


def review_figures(session: ReviewSession) -> dict[str, Any]:
    """The review page's figures: the PRISMA 2020 diagram and the counts as tables once the
    search has run, and the recall curve once a record was included record by record (None
    where not yet)."""
    prisma = None
    searched = (session.identification or {}).get("search") is not None
    if searched:
        # Inline, so its boxes' cut text shows its full wording on hover: the SVG is
        # built from escaped text only (projects/review/prisma.py).
        svg = prisma_svg(review_prisma(session=session), title=session.query)
        prisma = mark_safe(svg.split("?>", 1)[-1].strip())  # noqa: S308 - escaped above
    return {
        "prisma": prisma,
        "prisma_url": reverse("admin:projects_reviewsession_prisma", args=[session.pk]),
        "recall": recall_curve(session),
        "counts": counts_html(session) if searched else None,
    }


def recall_curve(session: ReviewSession) -> SafeString | None:
    """The review's recall curve (projects/review/recall_plot.py): its records in the order
    they were screened against the inclusions found, beside random and perfect screening
    to the same count, with where the stopping rule first said it was safe to stop. None
    before the first inclusion (there is no curve to draw)."""
    statuses = (
        session.candidates.filter(source=SEARCH, screened_order__isnull=False)
        .order_by("screened_order")
        .values_list("status", flat=True)
    )
    labels = [status == ReviewCandidate.Status.INCLUDED for status in statuses]
    if not any(labels):
        return None
    total = session.candidates.filter(source=SEARCH).count()
    stopped_at = next(
        (
            count
            for count in range(1, len(labels) + 1)
            if stopping_assess(labels[:count], total, estimate=False).safe_to_stop
        ),
        None,
    )
    svg = recall_curve_svg(
        labels, total=total, stopped_at=stopped_at, title="Inclusions found as records are screened"
    )
    return mark_safe(svg)  # noqa: S308 - numbers and an escaped title only


def counts_html(session: ReviewSession) -> SafeString:
    """The PRISMA-style counts as tables: records per step for the search (and the
    citation search), then each source's outcome. A source never reached is said
    first and plainly: it found nothing only because it was never asked, which a 0
    would hide."""
    counts = review_counts(session=session)
    blocks = [("search", counts)]
    if "citation_search" in counts:
        blocks.append(("citation search", counts["citation_search"]))
    not_reached = [
        (f"{engine}: {outcome.replace('_', ' ')}", _failure_text(counts, engine))
        for _, block in blocks
        for engine, outcome in block.get("not_reached", {}).items()
    ]
    warning = (
        format_html(
            "<p><strong>Sources not reached</strong> (their records are not counted):</p>"
            "<ul>{}</ul>",
            format_html_join("", "<li>{} {}</li>", not_reached),
        )
        if not_reached
        else ""
    )
    return format_html(
        "{}{}<p>Included in all: <strong>{}</strong></p>{}",
        warning, _counts_table(blocks), counts["included_total"], _sources_table(counts),
    )  # fmt: skip


COUNT_ROWS = [
    ("identified_total", "Records identified"),
    ("duplicates_removed", "Duplicates removed"),
    ("outside_date_range", "Outside the date range"),
    ("over_limit", "Over the result limit"),
    ("screened", "Records screened"),
    ("pending", "awaiting a decision"),
    ("excluded", "excluded"),
    ("included", "included"),
]


def _counts_table(blocks: list[tuple[str, dict[str, Any]]]) -> SafeString:
    """One column per search (the search, the citation search), one row per count: per
    source identified, then the PRISMA steps, the exclusion reasons under "excluded"."""
    head = format_html_join("", "<th scope='col'>{}</th>", ((name,) for name, _ in blocks))

    def values(key: str) -> list[Any]:
        return [block.get(key, 0) for _, block in blocks]

    rows: list[tuple[str, str, list[Any]]] = [
        ("Records identified", "", values("identified_total"))
    ]
    engines = sorted({engine for _, block in blocks for engine in block.get("identified", {})})
    for engine in engines:
        found = [block.get("identified", {}).get(engine, "") for _, block in blocks]
        rows.append((f"from {engine}", "sub", found))
    for key, label in COUNT_ROWS[1:]:
        rows.append(
            (label, "sub" if key in ("pending", "excluded", "included") else "", values(key))
        )
        if key == "excluded":
            reasons = sorted({r for _, block in blocks for r in block.get("excluded_reasons", {})})
            for reason in reasons:
                given = [block.get("excluded_reasons", {}).get(reason, "") for _, block in blocks]
                rows.append((f"because: {reason}", "subsub", given))
    body = format_html_join(
        "",
        "<tr class='{}'><th scope='row'>{}</th>{}</tr>",
        (
            (kind, label, format_html_join("", "<td>{}</td>", ((value,) for value in values)))
            for label, kind, values in rows
        ),
    )
    return format_html(
        "<table class='review-counts'><thead><tr><th scope='col'>records</th>{}</tr></thead>"
        "<tbody>{}</tbody></table>",
        head,
        body,
    )


def _sources_table(counts: dict[str, Any]) -> SafeString | str:
    """Each source's outcome, searches and failures (the citation search's marked so)."""
    blocks = [("", counts), (" (citation search)", counts.get("citation_search") or {})]
    rows = [
        (
            engine + suffix,
            str(source.get("outcome", "")).replace("_", " "),
            source.get("searches", ""),
            source.get("failed", ""),
            (source.get("last_failure") or {}).get("message", ""),
        )
        for suffix, block in blocks
        for engine, source in sorted(block.get("sources", {}).items())
    ]
    if not rows:
        return ""
    return format_html(
        "<table class='review-sources'><caption>Sources searched</caption><thead><tr>"
        "<th scope='col'>source</th><th scope='col'>outcome</th><th scope='col'>searches</th>"
        "<th scope='col'>failed</th><th scope='col'>last failure</th></tr></thead>"
        "<tbody>{}</tbody></table>",
        format_html_join("", "<tr><th scope='row'>{}</th>" + "<td>{}</td>" * 4 + "</tr>", rows),
    )


def _failure_text(counts: dict[str, Any], engine: str) -> str:
    failure = counts.get("sources", {}).get(engine, {}).get("last_failure", {})
    return f"({failure['message']})" if failure.get("message") else ""

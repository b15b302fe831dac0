"""Bar charts as inline SVG, drawn on the server: the admin's trends pages need no
JavaScript library and nothing from a CDN, and the charts print and save like the page.

Every bar carries a `<title>` ("2019: 12 papers"), which browsers show on hover and screen
readers read; axis labels are real `<text>`, so the values can be read (and tested) from
the markup. Labels are escaped here; callers pass plain text.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

BAR_COLOUR = "#417690"  # the admin's own blue, so the charts sit well on its pages
ZERO_COLOUR = "#d0d7de"
TEXT_COLOUR = "#333"
FONT = "font-family:system-ui,sans-serif;font-size:11px"
# Vertical charts label at most this many bars on the axis; every bar keeps its <title>.
MAX_AXIS_LABELS = 30
MAX_LABEL_CHARS = 40


@dataclass(frozen=True)
class Bar:
    """One bar: its axis `label`, its `value`, the `name` shown on hover (the label when
    empty: a venue's full name behind its short one) and `href`, where a click leads (the
    paper list filtered to the bar's papers)."""

    label: str
    value: int
    name: str = ""
    href: str = ""

    def hover(self) -> str:
        return f"{escape(self.name or self.label)}: {_papers(self.value)}"

    def linked(self, markup: str) -> str:
        return f'<a href="{escape(self.href)}">{markup}</a>' if self.href else markup


def _shorten(text: str, limit: int = MAX_LABEL_CHARS) -> str:
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _papers(value: int) -> str:
    return f"{value} paper{'' if value == 1 else 's'}"


def _svg(width: int, height: int, title: str, body: list[str], css_class: str) -> SafeString:
    # An image hides what it holds from assistive technology, links included (axe-core's
    # nested-interactive): a chart whose bars are links is a group of named links instead.
    role = "group" if any(part.startswith("<a ") for part in body) else "img"
    head = (
        f'<svg xmlns="http://www.w3.org/2000/svg" class="chart {css_class}" role="{role}" '
        f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        f'aria-label="{escape(title)}" style="{FONT};max-width:100%;height:auto">'
        f"<title>{escape(title)}</title>"
    )
    return mark_safe(head + "".join(body) + "</svg>")  # noqa: S308 - every part escaped above


def column_chart(
    bars: Sequence[Bar], *, title: str, width: int = 760, height: int = 240
) -> SafeString:
    """Vertical bars in the given order (a timeline: one bar per year). With more than
    MAX_AXIS_LABELS bars only every n-th is labelled on the axis, always the first and
    the last."""
    if not bars:
        return _svg(width, 40, title, [_empty(width)], "column-chart")
    left, right, top, bottom = 40, 10, 16, 40
    plot_w, plot_h = width - left - right, height - top - bottom
    top_value = max(bar.value for bar in bars) or 1
    step = plot_w / len(bars)
    gap = min(4.0, step * 0.2)
    every = max(1, math.ceil(len(bars) / MAX_AXIS_LABELS))
    body = [_value_axis(left, top, plot_w, plot_h, top_value)]
    for index, bar in enumerate(bars):
        x = left + index * step + gap / 2
        bar_h = plot_h * bar.value / top_value
        y = top + plot_h - bar_h
        colour = BAR_COLOUR if bar.value else ZERO_COLOUR
        # The whole column is the link's target, not just its bar: short bars stay clickable.
        body.append(
            bar.linked(
                f'<rect class="bar-target" x="{x:.1f}" y="{top}" width="{max(step - gap, 1):.1f}" '
                f'height="{plot_h}" fill="transparent"><title>{bar.hover()}</title></rect>'
                f'<rect class="bar" x="{x:.1f}" y="{y:.1f}" width="{max(step - gap, 1):.1f}" '
                f'height="{max(bar_h, 1):.1f}" fill="{colour}"><title>{bar.hover()}</title></rect>'
            )
        )
        if index % every == 0 or index == len(bars) - 1:
            cx, cy = x + (step - gap) / 2, top + plot_h + 14
            rotate = f' transform="rotate(-45 {cx:.1f} {cy:.1f})"' if len(bars) > 12 else ""
            anchor = "end" if rotate else "middle"
            body.append(
                f'<text class="axis-label" x="{cx:.1f}" y="{cy:.1f}" text-anchor="{anchor}" '
                f'fill="{TEXT_COLOUR}"{rotate}>{escape(_shorten(bar.label, 12))}</text>'
            )
    return _svg(width, height, title, body, "column-chart")


def bar_chart(bars: Sequence[Bar], *, title: str, width: int = 760) -> SafeString:
    """Horizontal bars, one row each in the given order (top authors, venues, keywords),
    the label on the left and the count at the end of the bar."""
    if not bars:
        return _svg(width, 40, title, [_empty(width)], "bar-chart")
    row, label_w, right = 20, 260, 50
    height = row * len(bars) + 8
    plot_w = width - label_w - right
    top_value = max(bar.value for bar in bars) or 1
    body = []
    for index, bar in enumerate(bars):
        y = 4 + index * row
        bar_w = max(plot_w * bar.value / top_value, 1)
        body.append(
            bar.linked(
                f'<text class="bar-label" x="{label_w - 6}" y="{y + 13}" text-anchor="end" '
                f'fill="{TEXT_COLOUR}"><title>{bar.hover()}</title>'
                f"{escape(_shorten(bar.label))}</text>"
                f'<rect class="bar" x="{label_w}" y="{y + 2}" width="{bar_w:.1f}" '
                f'height="{row - 6}" fill="{BAR_COLOUR}"><title>{bar.hover()}</title></rect>'
                f'<text class="bar-value" x="{label_w + bar_w + 4:.1f}" y="{y + 13}" '
                f'fill="{TEXT_COLOUR}">{bar.value}</text>'
            )
        )
    return _svg(width, height, title, body, "bar-chart")


def fold_timeline(
    years: Sequence[tuple[int, int]], *, tail_share: float = 0.01, max_bars: int = 60
) -> list[tuple[str, int, int, int]]:
    """Per-year counts (every year from the first to the last, zeros included) as chart
    columns that can be read: the sparse early tail (a paper from 1805 in a library of
    2000s papers) folded into one "before YEAR" column holding at most `tail_share` of the
    papers, and older years folded further until at most `max_bars` columns remain.
    Returns (label, count, first year, last year) per column, oldest first."""
    if not years:
        return []
    total = sum(count for _, count in years)
    # The tail: the years before the cumulative count first passes tail_share of the papers.
    start, cumulative = 0, 0
    while start < len(years) - 1 and cumulative + years[start][1] <= total * tail_share:
        cumulative += years[start][1]
        start += 1
    start = max(start, len(years) - (max_bars - 1))
    # Empty years just after the fold would be columns with nothing to read.
    while 0 < start < len(years) - 1 and years[start][1] == 0:
        start += 1
    folded = sum(count for _, count in years[:start])
    columns = [(str(year), count, year, year) for year, count in years[start:]]
    if start:
        first, boundary = years[0][0], years[start][0]
        columns.insert(0, (f"before {boundary}", folded, first, boundary - 1))
    return columns


def _value_axis(left: int, top: int, plot_w: int, plot_h: int, top_value: int) -> str:
    """The baseline and a gridline at the top value, labelled."""
    base = top + plot_h
    return (
        f'<line x1="{left}" y1="{base}" x2="{left + plot_w}" y2="{base}" stroke="#999"/>'
        f'<line x1="{left}" y1="{top}" x2="{left + plot_w}" y2="{top}" stroke="#eee"/>'
        f'<text x="{left - 6}" y="{top + 4}" text-anchor="end" fill="{TEXT_COLOUR}">'
        f"{top_value}</text>"
        f'<text x="{left - 6}" y="{base + 4}" text-anchor="end" fill="{TEXT_COLOUR}">0</text>'
    )


def _empty(width: int) -> str:
    return f'<text x="{width // 2}" y="24" text-anchor="middle" fill="#666">No data</text>'

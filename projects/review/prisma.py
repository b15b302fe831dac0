"""PRISMA 2020 flow counts of a review and its flow diagram as SVG (docs/REVIEW.md).

The counts come from the review's PRISMA-style `counts` (selectors.review_counts) and its
grouped records (ReviewDuplicate), arranged as the PRISMA 2020 flow diagram for new
systematic reviews (Page et al. 2021, BMJ 372:n71): identification via databases (the
search's engines) and via other methods (the citation search), records removed before
screening, records screened and excluded (with the reasons given), reports sought for
retrieval and not retrieved, studies included and their reports.

The workflow screens titles and abstracts and has no separate full-text stage: the
records included at screening are the reports sought for retrieval; a report counts as
not retrieved while its paper has no PDF in the library, and stays included (it was
included on its abstract). Studies are the included candidates (one per work); reports
are those plus the other versions grouped with them (a preprint and its publication are
two reports of one study). These always hold (`prisma_problems` checks them):

- identified_total = sum(identified) = duplicates_removed + outside_date_range +
  over_limit + screened, in each column;
- screened = pending + excluded + sought; excluded = sum(excluded_reasons);
  not_retrieved <= sought; versions_grouped <= duplicates_removed;
- included = sum of sought over the columns; reports = included + versions of included.

With the `extract` stage (the plan's `extract`), that stage assesses the reports: in each
column, `assessed` (reports assessed for eligibility) counts the studies included at
screening with anything extracted (a value or an adjudication, under any version of the
review's form: the report was read for it), and `not_assessed` the others (nothing
extracted). The studies included in review are then the assessed ones, and their reports
those studies plus their versions. Then also:

- sought = assessed + not_assessed, in each column;
- included = sum of assessed over the columns (instead of sought).
"""

from __future__ import annotations

import unicodedata
from collections import Counter
from typing import Any
from xml.sax.saxutils import escape

from django.db.models import Count, Q

from projects.models import (
    ExtractionAdjudication,
    ExtractionValue,
    ReviewCandidate,
    ReviewSession,
)

SOURCES = {"search": "databases", "citation": "other_methods"}


def grouped_tally(session: ReviewSession) -> tuple[Counter[str], Counter[str]]:
    """Per source (search, citation): the live grouped records, and those split out."""
    live: Counter[str] = Counter()
    split: Counter[str] = Counter()
    rows = session.duplicates.values("source").annotate(
        live=Count("pk", filter=Q(split_at__isnull=True)),
        split=Count("pk", filter=Q(split_at__isnull=False)),
    )
    for row in rows.order_by():
        live[row["source"]] += row["live"]
        split[row["source"]] += row["split"]
    return live, split


def prisma_counts(*, session: ReviewSession, counts: dict[str, Any]) -> dict[str, Any]:
    """The PRISMA 2020 flow numbers of a review from its `counts` (review_counts), with
    the reports assessed at the extract stage when the plan has one."""
    live, _ = grouped_tally(session)
    included = session.candidates.filter(status=ReviewCandidate.Status.INCLUDED)
    extracting = bool((session.plan or {}).get("extract"))
    assessed = included.filter(_extracted(session)) if extracting else None
    missing = Counter(
        dict(
            included.filter(paper__pdf__isnull=True)
            .values_list("source")
            .annotate(n=Count("pk"))
            .order_by()
        )
    )
    versions_of_included = session.duplicates.filter(
        split_at__isnull=True, candidate__status=ReviewCandidate.Status.INCLUDED
    ).count()
    flow: dict[str, Any] = {}
    blocks = {"search": counts, "citation": counts.get("citation_search")}
    for source, block in blocks.items():
        if block is None:
            continue
        flow[SOURCES[source]] = {
            "identified": dict(block["identified"]),
            "identified_total": block["identified_total"],
            "duplicates_removed": block["duplicates_removed"],
            "versions_grouped": live[source],
            "outside_date_range": block["outside_date_range"],
            "over_limit": block["over_limit"],
            "screened": block["screened"],
            "pending": block["pending"],
            "excluded": block["excluded"],
            "excluded_reasons": dict(block["excluded_reasons"]),
            "sought": block["included"],
            "not_retrieved": missing[source],
        }
    if assessed is None:
        flow["included"] = counts["included_total"]
        flow["reports"] = counts["included_total"] + versions_of_included
    else:
        per_source = Counter(
            dict(assessed.values_list("source").annotate(n=Count("pk")).order_by())
        )
        for source, name in SOURCES.items():
            if name in flow:
                column = flow[name]
                column["assessed"] = per_source[source]
                column["not_assessed"] = column["sought"] - per_source[source]
        flow["included"] = sum(per_source.values())
        flow["reports"] = (
            flow["included"]
            + session.duplicates.filter(split_at__isnull=True, candidate__in=assessed).count()
        )
    flow["diagram"] = f"review://{session.pk}/prisma.svg"
    return flow


def _extracted(session: ReviewSession) -> Q:
    """Candidates whose paper anything was extracted from in this review (a value or an
    adjudication, under any version of its form)."""
    values = ExtractionValue.objects.filter(form__session=session).values("paper_id")
    adjudications = ExtractionAdjudication.objects.filter(form__session=session)
    return Q(paper_id__in=values) | Q(paper_id__in=adjudications.values("paper_id"))


def prisma_problems(flow: dict[str, Any]) -> list[str]:
    """The invariants of the module docstring that `flow` breaks (none, always)."""
    problems = []
    through = 0  # the studies that reach "included": sought, or assessed at extract
    assessing = any("assessed" in flow.get(name, {}) for name in SOURCES.values())
    for name in SOURCES.values():
        column = flow.get(name)
        if column is None:
            continue
        through += column.get("assessed", 0) if assessing else column["sought"]
        removed = column["duplicates_removed"] + column["outside_date_range"] + column["over_limit"]
        checks = {
            "identified_total = sum(identified)": column["identified_total"]
            == sum(column["identified"].values()),
            "identified_total = removed + screened": column["identified_total"]
            == removed + column["screened"],
            "screened = pending + excluded + sought": column["screened"]
            == column["pending"] + column["excluded"] + column["sought"],
            "excluded = sum(reasons)": column["excluded"]
            == sum(column["excluded_reasons"].values()),
            "not_retrieved <= sought": 0 <= column["not_retrieved"] <= column["sought"],
            "versions_grouped <= duplicates_removed": 0
            <= column["versions_grouped"]
            <= column["duplicates_removed"],
            "no negative count": min(
                removed, column["duplicates_removed"], column["pending"], column["excluded"]
            )
            >= 0,
        }
        if assessing:
            assessed, rest = column.get("assessed", -1), column.get("not_assessed", -1)
            checks["sought = assessed + not_assessed"] = (
                min(assessed, rest) >= 0 and column["sought"] == assessed + rest
            )
        problems += [f"{name}: {check}" for check, holds in checks.items() if not holds]
    if flow["included"] != through:
        problems.append("included = sum(assessed)" if assessing else "included = sum(sought)")
    if flow["reports"] < flow["included"]:
        problems.append("reports >= included")
    return problems


# --- the diagram ----------------------------------------------------------------------------

LINE = 15  # px between text lines
PAD = 10
MAIN_W = 290
SIDE_W = 290
GAP = 40
LEFT = 50  # after the phase bars
TOP = 50  # after the column headings
ROW_GAP = 30
FONT_SIZE = 12
MAX_WRAPPED = 3  # lines one engine name or reason may take before it is cut (full text: title)
MAX_REASONS = 6
# Advance widths of Helvetica (and of the metric-compatible Arial and Liberation Sans that
# browsers substitute for it), in 1/1000 em, for printable ASCII from the space on: text is
# wrapped on them, so a long reason stays inside its box.
HELVETICA = [
    278, 278, 355, 556, 556, 889, 667, 191, 333, 333, 389, 584, 278, 333, 278, 278,
    556, 556, 556, 556, 556, 556, 556, 556, 556, 556, 278, 278, 584, 584, 584, 556,
    1015, 667, 667, 722, 722, 667, 611, 778, 722, 278, 500, 667, 556, 833, 722, 778,
    667, 778, 722, 667, 611, 722, 667, 944, 667, 667, 611, 278, 278, 278, 469, 556,
    333, 556, 556, 500, 556, 556, 278, 556, 556, 222, 222, 500, 222, 833, 556, 556,
    556, 556, 333, 500, 278, 556, 500, 722, 500, 500, 500, 334, 260, 334, 584,
]  # fmt: skip
BOLD = 1.1  # Helvetica Bold is at most about a tenth wider


def _n(value: int) -> str:
    return f"(n = {value})"


def _width(text: str, *, bold: bool = False) -> float:
    """The drawn width of `text` in px at FONT_SIZE: Helvetica's widths for ASCII, an em
    for wide (East Asian) characters and 0.6 em for any other."""
    units = 0
    for char in text:
        code = ord(char)
        if 32 <= code < 127:
            units += HELVETICA[code - 32]
        else:
            units += 1000 if unicodedata.east_asian_width(char) in "WF" else 600
    return units * FONT_SIZE / 1000 * (BOLD if bold else 1)


def _wrap(text: str, width: float, *, bold: bool = False) -> list[str]:
    """`text` broken at spaces into lines at most `width` px wide (a word wider than that
    is broken inside); a line's leading spaces (an indent) are kept on the first line."""
    indent = text[: len(text) - len(text.lstrip(" "))]
    lines: list[str] = []
    line = indent
    for word in text.split():
        candidate = f"{line} {word}" if line.strip() else line + word
        if _width(candidate, bold=bold) <= width:
            line = candidate
            continue
        if line.strip():
            lines.append(line)
        line = indent
        for char in word:  # start the word on a line of its own, broken if it must be
            if line.strip() and _width(line + char, bold=bold) > width:
                lines.append(line)
                line = indent
            line += char
    if line.strip() or not lines:
        lines.append(line)
    return lines


def _fitted(text: str, width: float, *, bold: bool = False) -> list[tuple[str, str]]:
    """`text` as at most MAX_WRAPPED lines that fit `width`, each with the title (tooltip)
    it needs: the full text on a last line cut with an ellipsis, else none."""
    text = text.rstrip()
    lines = _wrap(text, width, bold=bold)
    if len(lines) <= MAX_WRAPPED:
        return [(line, "") for line in lines]
    kept = lines[:MAX_WRAPPED]
    last = kept[-1].rstrip()
    while last and _width(last + "\u2026", bold=bold) > width:
        last = last[:-1].rstrip()
    kept[-1] = last + "\u2026"
    full = " ".join(text.split())
    return [(line, "") for line in kept[:-1]] + [(kept[-1], full)]


def _labelled(label: str, value: int) -> str:
    return f"{' '.join(str(label).split())} {_n(value)}"


def _column_boxes(column: dict[str, Any], other: bool) -> list[tuple[list[str], list[str]]]:
    """Rows of (main box lines, side box lines) for one column."""
    found = [
        _labelled(engine, n)
        for engine, n in sorted(column["identified"].items(), key=lambda kv: (-kv[1], kv[0]))
    ]
    what = "Citation searching via:" if other else "Databases:"
    identified = ["Records identified from", what, *(found or ["(no source answered)"])]
    if len(found) > 1 or not found:
        identified.append(f"Total {_n(column['identified_total'])}")
    removed = [
        "Records removed before screening:",
        f"Duplicate records removed {_n(column['duplicates_removed'])}",
        f"  of which other versions grouped {_n(column['versions_grouped'])}",
        f"Outside the date range {_n(column['outside_date_range'])}",
        f"Over the result limit {_n(column['over_limit'])}",
    ]
    screened = [f"Records screened {_n(column['screened'])}"]
    if column["pending"]:
        screened.append(f"Awaiting a decision {_n(column['pending'])}")
    reasons = sorted(column["excluded_reasons"].items(), key=lambda kv: (-kv[1], kv[0]))
    excluded = [f"Records excluded {_n(column['excluded'])}"]
    excluded += [_labelled(reason, n) for reason, n in reasons[:MAX_REASONS]]
    if len(reasons) > MAX_REASONS:
        rest = sum(n for _, n in reasons[MAX_REASONS:])
        excluded.append(f"Other reasons {_n(rest)}")
    sought = [f"Reports sought for retrieval {_n(column['sought'])}"]
    missing = [f"Reports not retrieved {_n(column['not_retrieved'])}", "(no PDF in the library)"]
    rows = [(identified, removed), (screened, excluded), (sought, missing)]
    if "assessed" in column:  # the extract stage
        assessed = [
            f"Reports assessed for eligibility {_n(column['assessed'])}",
            "(data extracted)",
        ]
        rest = [f"Reports not assessed {_n(column['not_assessed'])}", "(nothing extracted)"]
        rows.append((assessed, rest))
    return rows


def _drawn(lines: list[str], width: int) -> list[tuple[str, str]]:
    """A box's lines as drawn in a box `width` wide: each wrapped to fit, with its title."""
    return [part for line in lines for part in _fitted(line, width - 2 * PAD)]


def _box(x: int, y: int, width: int, lines: list[str], *, fill: str = "#ffffff") -> str:
    drawn = _drawn(lines, width)
    parts = [
        f'<rect x="{x}" y="{y}" width="{width}" height="{_height(lines, width)}" '
        f'fill="{fill}" stroke="#000000" stroke-width="1"/>'
    ]
    for index, (line, full) in enumerate(drawn):
        title = f"<title>{escape(full)}</title>" if full else ""
        parts.append(
            f'<text x="{x + PAD}" y="{y + PAD + LINE * (index + 1) - 3}" '
            f'xml:space="preserve">{escape(line)}{title}</text>'
        )
    return "\n".join(parts)


def _height(lines: list[str], width: int) -> int:
    return PAD * 2 + LINE * len(_drawn(lines, width))


def _arrow(x1: int, y1: int, x2: int, y2: int) -> str:
    return (
        f'<line x1="{x1}" y1="{y1}" x2="{x2}" y2="{y2}" stroke="#000000" '
        'stroke-width="1.2" marker-end="url(#arrow)"/>'
    )


def prisma_svg(flow: dict[str, Any], *, title: str = "") -> str:
    """The PRISMA 2020 flow diagram of `flow` (prisma_counts) as a standalone SVG."""
    columns = [(flow[name], name == "other_methods") for name in SOURCES.values() if name in flow]
    rows = [_column_boxes(column, other) for column, other in columns]
    last = min(len(column_rows) for column_rows in rows) - 1
    heights = [
        max(
            max(_height(main, MAIN_W), _height(side, SIDE_W))
            for column_rows in rows
            for main, side in [column_rows[row]]
        )
        for row in range(last + 1)
    ]
    column_w = MAIN_W + GAP + SIDE_W + GAP
    width = LEFT + column_w * len(columns) + 10
    # The question, in bold above the diagram, wrapped to its width.
    question = _fitted(title, width - LEFT - 10, bold=True) if title.strip() else []
    ys = []
    y = TOP + (LINE * (len(question) + 1) if question else 0)
    for height in heights:
        ys.append(y)
        y += height + ROW_GAP
    included = [
        f"Studies included in review {_n(flow['included'])}",
        f"Reports of included studies {_n(flow['reports'])}",
        "(a study's versions are its reports)",
    ]
    included_y = y
    included_h = _height(included, MAIN_W)
    total_h = included_y + included_h + 20
    out = [
        '<?xml version="1.0" encoding="UTF-8"?>',
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{total_h}" '
        f'viewBox="0 0 {width} {total_h}" font-family="Helvetica, Arial, sans-serif" '
        'font-size="12" role="img" aria-label="PRISMA 2020 flow diagram">',
        "<title>PRISMA 2020 flow diagram</title>",
        '<defs><marker id="arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" '
        'markerHeight="7" orient="auto-start-reverse"><path d="M 0 0 L 10 5 L 0 10 z" '
        'fill="#000000"/></marker></defs>',
        f'<rect x="0" y="0" width="{width}" height="{total_h}" fill="#ffffff"/>',
    ]
    for index, (line, full) in enumerate(question):
        tooltip = f"<title>{escape(full)}</title>" if full else ""
        out.append(
            f'<text x="{LEFT}" y="{TOP - 22 + LINE * index}" font-weight="bold">'
            f"{escape(line)}{tooltip}</text>"
        )
    top = ys[0]
    headings = {
        False: "Identification of studies via databases and registers",
        True: "Identification of studies via other methods",
    }
    for index, (_, other) in enumerate(columns):
        x = LEFT + index * column_w
        out.append(
            f'<rect x="{x}" y="{top - 36}" width="{MAIN_W + GAP + SIDE_W}" height="26" '
            f'fill="{"#e8e8e8" if other else "#fff2cc"}" stroke="#000000"/>'
        )
        heading = escape(headings[other])
        out.append(f'<text x="{x + PAD}" y="{top - 18}" font-weight="bold">{heading}</text>')
    phases = [
        ("Identification", ys[0], ys[0] + heights[0]),
        ("Screening", ys[1], ys[last] + heights[last]),
        ("Included", included_y, included_y + included_h),
    ]
    for name, y1, y2 in phases:
        middle = (y1 + y2) // 2
        out.append(
            f'<rect x="8" y="{y1}" width="26" height="{y2 - y1}" rx="4" fill="#9dc3e6" '
            'stroke="#000000"/>'
        )
        out.append(
            f'<text x="21" y="{middle}" text-anchor="middle" font-weight="bold" '
            f'transform="rotate(-90 21 {middle})">{escape(name)}</text>'
        )
    for index, column_rows in enumerate(rows):
        x = LEFT + index * column_w
        side_x = x + MAIN_W + GAP
        for row, (main, side) in enumerate(column_rows):
            y = ys[row]
            out.append(_box(x, y, MAIN_W, main))
            out.append(_box(side_x, y, SIDE_W, side))
            main_h = _height(main, MAIN_W)
            middle = y + min(main_h, _height(side, SIDE_W)) // 2
            out.append(_arrow(x + MAIN_W, middle, side_x, middle))
            centre = x + MAIN_W // 2
            if row < last or index == 0:
                below = ys[row + 1] if row < last else included_y
                out.append(_arrow(centre, y + main_h, centre, below))
            else:  # other methods: down beside the included box, then into it
                level = included_y + included_h // 2
                out.append(
                    f'<line x1="{centre}" y1="{y + main_h}" x2="{centre}" y2="{level}" '
                    'stroke="#000000" stroke-width="1.2"/>'
                )
                out.append(_arrow(centre, level, LEFT + MAIN_W, level))
    out.append(_box(LEFT, included_y, MAIN_W, included, fill="#f2f2f2"))
    out.append("</svg>")
    return "\n".join(out) + "\n"

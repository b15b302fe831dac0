"""The recall curve of one screening run as an SVG, like asreview-insights' plot: records
screened (x) against relevant records found (y), beside random screening (the diagonal)
and perfect screening (every inclusion first), with the point where the stopping rule
fired (docs/SCREENING.md).

The curves are drawn in a group whose transform maps data to the page, so each polyline's
points are the data itself ((records screened, relevant found) pairs): a test or a reader
can check them without undoing a scale. Strokes do not scale with it
(`vector-effect: non-scaling-stroke`). SVG only: a PNG would need a rendering library the
project does not carry (PyMuPDF renders SVG but ignores non-scaling strokes).
"""

from __future__ import annotations

from collections.abc import Sequence
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 640, 420
LEFT, RIGHT, TOP, BOTTOM = 64, 24, 40, 56
TICKS = 5
COLOURS = {"model": "#1f77b4", "random": "#7f7f7f", "perfect": "#2ca02c", "stop": "#d62728"}


def recall_curve_points(
    labels: Sequence[bool], *, total: int, relevant: int | None = None
) -> list[tuple[int, int]]:
    """The curve's corners: (records screened, relevant found) at the start, at each
    inclusion (a step: the point before it and the point of it) and at `total` records,
    the records never screened counted as exclusions at the end."""
    relevant = sum(labels) if relevant is None else relevant
    points = [(0, 0)]
    found = 0
    for position, label in enumerate(labels, start=1):
        if label:
            if points[-1] != (position - 1, found):
                points.append((position - 1, found))
            found += 1
            points.append((position, found))
    if points[-1][0] != total:
        points.append((total, found))
    return points


def recall_curve_svg(
    labels: Sequence[bool],
    *,
    total: int,
    stopped_at: int | None = None,
    relevant: int | None = None,
    title: str = "",
) -> str:
    """An SVG document of the run whose screening order gave `labels` (True = included)
    out of `total` records, the stopping rule having fired after `stopped_at` records
    (None: it did not). `relevant`: the inclusions among the `total` (default: those in
    `labels`). ValueError if `labels` is longer than `total` or finds none."""
    if len(labels) > total:
        raise ValueError("More records screened than there are.")
    relevant = sum(labels) if relevant is None else relevant
    if relevant < 1:
        raise ValueError("A recall curve needs at least one relevant record.")
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    sx, sy = plot_w / max(total, 1), plot_h / relevant
    transform = f"translate({LEFT} {TOP + plot_h}) scale({sx:.6g} {-sy:.6g})"

    def line(points: Sequence[tuple[float, float]], kind: str, dash: str = "") -> str:
        coords = " ".join(f"{x:g},{y:g}" for x, y in points)
        dashes = f' stroke-dasharray="{dash}"' if dash else ""
        return (
            f'<polyline id="{kind}" points="{coords}" fill="none" stroke="{COLOURS[kind]}" '
            f'stroke-width="2" vector-effect="non-scaling-stroke"{dashes}/>'
        )

    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
        f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="12">',
        f"<title>{escape(title or 'Recall curve')}</title>",
        '<rect width="100%" height="100%" fill="white"/>',
        f'<text x="{LEFT}" y="{TOP - 16}" font-size="14">{escape(title)}</text>',
        *_axes(total, relevant, plot_w, plot_h),
        f'<g transform="{transform}">',
        line([(0, 0), (total, relevant)], "random", "6 4"),
        line([(0, 0), (relevant, relevant), (total, relevant)], "perfect", "2 3"),
        line(recall_curve_points(labels, total=total, relevant=relevant), "model"),
    ]
    found_at_stop = None
    if stopped_at is not None:
        found_at_stop = sum(labels[:stopped_at])
        parts.append(
            f'<line id="stop" x1="{stopped_at}" y1="0" x2="{stopped_at}" y2="{relevant}" '
            f'stroke="{COLOURS["stop"]}" stroke-width="1.5" stroke-dasharray="4 3" '
            'vector-effect="non-scaling-stroke"/>'
        )
    parts.append("</g>")
    if stopped_at is not None and found_at_stop is not None:
        x, y = LEFT + stopped_at * sx, TOP + plot_h - found_at_stop * sy
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="4" fill="{COLOURS["stop"]}"/>')
        anchor = "end" if x > LEFT + plot_w * 0.6 else "start"
        shift = -6 if anchor == "end" else 6
        parts.append(
            f'<text x="{x + shift:.1f}" y="{y + 16:.1f}" text-anchor="{anchor}" '
            f'fill="{COLOURS["stop"]}">stopping rule: {stopped_at} screened, recall '
            f"{found_at_stop / relevant:.2f}</text>"
        )
    parts += [*_legend(plot_w, plot_h), "</svg>"]
    return "\n".join(parts) + "\n"


def _axes(total: int, relevant: int, plot_w: float, plot_h: float) -> list[str]:
    bottom, right = TOP + plot_h, LEFT + plot_w
    parts = [
        f'<line x1="{LEFT}" y1="{bottom}" x2="{right}" y2="{bottom}" stroke="black"/>',
        f'<line x1="{LEFT}" y1="{TOP}" x2="{LEFT}" y2="{bottom}" stroke="black"/>',
        f'<text x="{LEFT + plot_w / 2}" y="{HEIGHT - 14}" text-anchor="middle">'
        "records screened</text>",
        f'<text transform="translate(16 {TOP + plot_h / 2}) rotate(-90)" '
        'text-anchor="middle">relevant records found</text>',
    ]
    # Whole numbers of records at the ticks (placed where they fall).
    xs = sorted({round(total * step / TICKS) for step in range(TICKS + 1)})
    ys = sorted({round(relevant * step / TICKS) for step in range(TICKS + 1)})
    for value in xs:
        x = LEFT + plot_w * value / max(total, 1)
        parts += [
            f'<line x1="{x:.1f}" y1="{bottom}" x2="{x:.1f}" y2="{bottom + 4}" stroke="black"/>',
            f'<text x="{x:.1f}" y="{bottom + 18}" text-anchor="middle">{value}</text>',
        ]
    for value in ys:
        y = bottom - plot_h * value / relevant
        parts += [
            f'<line x1="{LEFT - 4}" y1="{y:.1f}" x2="{LEFT}" y2="{y:.1f}" stroke="black"/>',
            f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end">{value}</text>',
        ]
    return parts


def _legend(plot_w: float, plot_h: float) -> list[str]:
    # Bottom right: a prioritised curve rises early, leaving that corner empty.
    entries = [("model", "prioritised"), ("perfect", "perfect"), ("random", "random")]
    parts = []
    for row, (kind, label) in enumerate(entries):
        x, y = LEFT + plot_w - 120, TOP + plot_h - 60 + row * 18
        parts += [
            f'<line x1="{x}" y1="{y - 4}" x2="{x + 24}" y2="{y - 4}" '
            f'stroke="{COLOURS[kind]}" stroke-width="2"/>',
            f'<text x="{x + 30}" y="{y}">{label}</text>',
        ]
    return parts

"""The evidence table as a file to publish: CSV, XLSX, Markdown or JSON (docs/EXTRACTION.md,
"Exporting the evidence table"), rendered from evidence.evidence_rows, so it shows exactly
the values that stand and is scoped as they are (NotFound outside the client's
collections).

One row per study, in the table's order, with its citation in a CSL style (the library's
citation formatting, papers/citations/csl.py, default as format_citations: apa). Per field:

- CSV and XLSX: three columns, `<key>` (the value as text, unit included), `<key> quote`
  (the quote and where it stands: "... (p. 4)", "(p. 4, approximate)", "(abstract)",
  "(not found in the paper)") and `<key> status` (the anchor's status, or `disagreement`
  with each extractor's value); a `flagged` column names the row's fields to check;
- Markdown: a table of the field labels whose cells hold the value and its quote with
  its page, each flagged cell marked ⚠, and the references below it;
- JSON: evidence_rows' structured cells (values as stored, anchors, highlights), with each
  study's citation.

A value that is flagged (approximate, not found, abstract only, or extractors that
disagree) is marked as such in every format: a researcher must not publish it unknowingly.
Spreadsheet cells never run as formulas: CSV cells starting with = + - @ get a leading
quote (papers/exports.spreadsheet_safe), and XLSX cells are written as strings.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import xlsxwriter

from core.errors import InvalidInput
from core.markdown import escape_markdown
from papers.citations import csl, styles
from papers.exports import spreadsheet_safe
from papers.models import Paper
from papers.selectors import with_relations
from projects.models import AnchorStatus
from projects.review.extraction.evidence import evidence_rows

EVIDENCE_FORMATS = ("csv", "xlsx", "markdown", "json")


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


_EXTENSIONS = {"csv": "csv", "xlsx": "xlsx", "markdown": "md", "json": "json"}
_MEDIA_TYPES = {
    "csv": "text/csv; charset=utf-8",
    "xlsx": "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
    "markdown": "text/markdown; charset=utf-8",
    "json": "application/json",
}
STUDY_COLUMNS = ("id", "citekey", "citation", "reference", "flagged")
FLAG = "⚠"
DISAGREEMENT = "disagreement"


@dataclass(frozen=True)
class EvidenceExport:
    """An exported evidence table: `content` is text, bytes for xlsx; `studies` rows and
    `fields` form fields (each a value, quote and status column in csv and xlsx)."""

    format: str
    media_type: str
    filename: str
    content: str | bytes
    studies: int
    fields: int


@dataclass(frozen=True)
class _Citations:
    style: str
    style_title: str
    in_text: dict[int, str]  # paper_id -> "(Ammar et al., 2018)"
    references: dict[int, str]  # paper_id -> the reference-list entry
    order: list[int]  # paper ids in the style's bibliography order


def export_evidence_table(
    *,
    session_id: Any = None,
    project_id: Any = None,
    format: str = "csv",
    style: str | None = None,
) -> EvidenceExport:
    """The evidence table of a review (its included studies) or a project (its papers) in
    `format` (EVIDENCE_FORMATS), each study cited in the CSL `style` (an id such as apa,
    ieee, vancouver, or a CSL document; default apa). Reads only.

    Raises InvalidInput (unknown format, listing the formats; unknown style, naming it with
    close ids; both or neither owner), NotFound (owner unknown or outside the client's
    collections, or without a form)."""
    name = (format or "").strip().lower()
    if name not in EVIDENCE_FORMATS:
        raise InvalidInput(
            f"Unknown format {format!r}; use one of {', '.join(EVIDENCE_FORMATS)}.",
            field="format",
        )
    table = evidence_rows(session_id=session_id, project_id=project_id)
    cited = _citations(table["rows"], style)
    renderers: dict[str, Callable[[dict[str, Any], _Citations], str | bytes]] = {
        "csv": _csv, "xlsx": _xlsx, "markdown": _markdown, "json": _json,
    }  # fmt: skip
    render = renderers[name]
    return EvidenceExport(
        format=name,
        media_type=_MEDIA_TYPES[name],
        filename=_filename(table, name),
        content=render(table, cited),
        studies=len(table["rows"]),
        fields=len(table["columns"]),
    )


def _citations(rows: list[dict[str, Any]], style: str | None) -> _Citations:
    chosen = style if style is not None else styles.DEFAULT_STYLE
    source = styles.style_resolve(chosen)  # an unknown style is refused even with no rows
    ids = [row["paper_id"] for row in rows]
    if not ids:
        return _Citations(source.id, "", {}, {}, [])
    papers = {p.pk: p for p in with_relations(Paper.objects.filter(pk__in=ids))}
    result = csl.citations_format(
        papers=[papers[pk] for pk in ids], style=chosen, locale=None, output="text"
    )
    return _Citations(
        style=result.style,
        style_title=result.style_title,
        in_text={e.paper_id: e.in_text for e in result.entries},
        references={e.paper_id: e.reference for e in result.entries},
        order=[e.paper_id for e in result.entries],
    )


def _filename(table: dict[str, Any], name: str) -> str:
    if "session_id" in table:
        owner = f"review-{table['session_id']}"
    else:
        slug = re.sub(r"[^a-z0-9]+", "-", str(table["project_id"]).lower()).strip("-")
        owner = f"project-{slug[:80] or 'project'}"
    return f"evidence-{owner}.{_EXTENSIONS[name]}"


# --- a cell as text ---------------------------------------------------------------------------


def _number(value: Any) -> str:
    if isinstance(value, float) and value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return str(value)


def value_text(value: Any) -> str:
    """A stored value as a person reads it: '37 million papers', '18–65 years', 'yes';
    'not reported' for null."""
    if value is None:
        return "not reported"
    if isinstance(value, dict) and "low" in value:
        unit = f" {value['unit']}" if value.get("unit") else ""
        return f"{_number(value['low'])}–{_number(value['high'])}{unit}"
    if isinstance(value, dict) and "value" in value:
        unit = f" {value['unit']}" if value.get("unit") else ""
        return f"{_number(value['value'])}{unit}"
    if isinstance(value, float | int) and not isinstance(value, bool):
        return _number(value)
    return str(value)


def _where(cell: dict[str, Any]) -> str:
    """Where a cell's quote stands, as its quote column says it."""
    anchor, page = cell.get("anchor"), cell.get("page")
    if anchor == AnchorStatus.NOT_FOUND:
        return "not found in the paper"
    if anchor == AnchorStatus.ABSTRACT_ONLY:
        return "abstract"
    shown = f"p. {page}" if page else "page unknown"
    return f"{shown}, approximate" if anchor == AnchorStatus.APPROXIMATE else shown


def quote_text(cell: dict[str, Any] | None) -> str:
    """'the quote (p. 4)'; '' without a quote."""
    if not cell or not cell.get("quote"):
        return ""
    return f"{cell['quote']} ({_where(cell)})"


def _status(cell: dict[str, Any]) -> str:
    return DISAGREEMENT if cell["source"] == DISAGREEMENT else str(cell["anchor"])


def status_text(cell: dict[str, Any] | None) -> str:
    """The anchor's status; 'disagreement: agent:a: x; agent:b: y' until adjudicated; ''
    for a field nobody extracted."""
    if not cell:
        return ""
    if cell["source"] == DISAGREEMENT:
        answers = "; ".join(f"{who}: {value_text(v)}" for who, v in cell["values"].items())
        return f"{DISAGREEMENT}: {answers}"
    return _status(cell)


def _flagged(row: dict[str, Any], columns: list[str]) -> list[str]:
    return [key for key in columns if row["cells"][key] and row["cells"][key]["flagged"]]


def _flag_text(row: dict[str, Any], columns: list[str]) -> str:
    """The row's fields to check: 'papers (approximate); graph_kind (disagreement)'."""
    cells = row["cells"]
    return "; ".join(f"{key} ({_status(cells[key])})" for key in _flagged(row, columns))


def _header(columns: list[str]) -> list[str]:
    return [
        *STUDY_COLUMNS,
        *(f"{key}{part}" for key in columns for part in ("", " quote", " status")),
    ]


def _cells(row: dict[str, Any], columns: list[str], cited: _Citations) -> list[str]:
    """A study's row of text cells, in _header's order."""
    out = [
        str(row["id"]),
        row["citekey"] or "",
        cited.in_text.get(row["paper_id"], ""),
        cited.references.get(row["paper_id"], ""),
        _flag_text(row, columns),
    ]
    for key in columns:
        cell = row["cells"][key]
        shown = value_text(cell["value"]) if cell and cell["source"] != DISAGREEMENT else ""
        out += [shown, quote_text(cell), status_text(cell)]
    return out


# --- formats ----------------------------------------------------------------------------------


def _csv(table: dict[str, Any], cited: _Citations) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(_header(table["columns"]))
    for row in table["rows"]:
        writer.writerow(spreadsheet_safe(text) for text in _cells(row, table["columns"], cited))
    return buffer.getvalue()


def _xlsx(table: dict[str, Any], cited: _Citations) -> bytes:
    columns: list[str] = table["columns"]
    buffer = io.BytesIO()
    # Every cell goes through write_string; these options keep any other write from turning
    # text into a formula, a number or a link as well.
    book = xlsxwriter.Workbook(
        buffer,
        {
            "in_memory": True,
            "strings_to_formulas": False,
            "strings_to_numbers": False,
            "strings_to_urls": False,
        },
    )
    bold = book.add_format({"bold": True, "bg_color": "#eeeeee", "text_wrap": True})
    wrap = book.add_format({"text_wrap": True, "valign": "top"})
    flagged = book.add_format({"text_wrap": True, "valign": "top", "bg_color": "#ffd8a8"})
    sheet = book.add_worksheet("Evidence")
    for number, title in enumerate(_header(columns)):
        sheet.write_string(0, number, title, bold)
    for line, row in enumerate(table["rows"], start=1):
        # The `flagged` column and the three columns of each flagged field are filled.
        marked = {STUDY_COLUMNS.index("flagged")} if _flagged(row, columns) else set()
        for key in _flagged(row, columns):
            first = len(STUDY_COLUMNS) + 3 * columns.index(key)
            marked.update(range(first, first + 3))
        for number, text in enumerate(_cells(row, columns, cited)):
            sheet.write_string(line, number, text, flagged if number in marked else wrap)
    sheet.freeze_panes(1, 1)
    sheet.autofilter(0, 0, len(table["rows"]), len(_header(columns)) - 1)
    sheet.set_column(0, 1, 14)
    sheet.set_column(2, 2, 24)
    sheet.set_column(3, 3, 60)
    sheet.set_column(4, 4, 24)
    for index in range(len(columns)):
        first = len(STUDY_COLUMNS) + 3 * index
        sheet.set_column(first, first, 20)
        sheet.set_column(first + 1, first + 1, 50)
        sheet.set_column(first + 2, first + 2, 14)
    _form_sheet(book, table["form"], bold, wrap)
    book.close()
    return buffer.getvalue()


def _form_sheet(book: Any, form: dict[str, Any], bold: Any, wrap: Any) -> None:
    """The form the values answer: one line per field, in the table's order."""
    sheet = book.add_worksheet("Form")
    titles = ("key", "label", "type", "unit", "choices", "quote required", "description")
    for number, title in enumerate(titles):
        sheet.write_string(0, number, title, bold)
    for line, spec in enumerate(form["fields"], start=1):
        texts = (
            spec["key"],
            spec["label"],
            spec["type"],
            spec.get("unit", ""),
            "; ".join(spec.get("choices", [])),
            "yes" if spec["quote_required"] else "no",
            spec.get("description", ""),
        )
        for number, text in enumerate(texts):
            sheet.write_string(line, number, text, wrap)
    sheet.write_string(len(form["fields"]) + 2, 0, f"{form['name']}, version {form['version']}")
    sheet.set_column(0, 5, 16)
    sheet.set_column(6, 6, 60)


def _md(text: str) -> str:
    """Text inside a markdown table cell: shows those words, one line, no column break."""
    return escape_markdown(" ".join(text.split())).replace("|", "\\|")


def _md_cell(cell: dict[str, Any] | None) -> str:
    if not cell:
        return "—"
    if cell["source"] == DISAGREEMENT:
        return f"{FLAG} " + _md(status_text(cell))
    shown = _md(value_text(cell["value"]))
    if cell.get("quote"):
        shown += f" · “{_md(cell['quote'])}” ({_md(_where(cell))})"
    return f"{FLAG} {shown}" if cell["flagged"] else shown


def _markdown(table: dict[str, Any], cited: _Citations) -> str:
    form, columns, rows = table["form"], table["columns"], table["rows"]
    labels = {spec["key"]: spec["label"] for spec in form["fields"]}
    owner = (
        f"review {table['session_id']}"
        if "session_id" in table
        else f"project {table['project_id']}"
    )
    flagged = sum(len(_flagged(row, columns)) for row in rows)
    lines = [
        f"# Evidence table: {_md(form['name'])} (form version {form['version']})",
        "",
        f"{_md(owner)}: {_count(len(rows), 'study', 'studies')}, "
        f"{_count(len(columns), 'field', 'fields')}; citations: "
        f"{_md(cited.style_title or cited.style)}.",
        "",
        f"{FLAG} marks a value to check before publishing ({flagged} here): its quote was "
        "found only approximately, not found in the paper, or found in the abstract only "
        "(no PDF text), or its extractors disagree.",
        "",
        "| Study | " + " | ".join(_md(labels[key]) for key in columns) + " |",
        "|" + " --- |" * (len(columns) + 1),
    ]
    studies = [cited.in_text.get(row["paper_id"]) or str(row["id"]) for row in rows]
    for row, study in zip(rows, studies, strict=True):
        # citeproc-py adds no 2017a/2017b (docs/CITATIONS.md): the same citation for two
        # studies is told apart by their titles.
        shown = _md(study)
        if studies.count(study) > 1:
            shown += f", “{_md(row['title'])}”"
        cells = [_md_cell(row["cells"][key]) for key in columns]
        lines.append(f"| {shown} | " + " | ".join(cells) + " |")
    if cited.order:
        lines += ["", "## References", ""]
        lines += [f"- {_md(cited.references[pk])}" for pk in cited.order if cited.references[pk]]
    return "\n".join(lines) + "\n"


def _json(table: dict[str, Any], cited: _Citations) -> str:
    columns = table["columns"]
    studies = [
        {
            "paper_id": row["paper_id"],
            "id": row["id"],
            "citekey": row["citekey"],
            "title": row["title"],
            "year": row["year"],
            "citation": cited.in_text.get(row["paper_id"], ""),
            "reference": cited.references.get(row["paper_id"], ""),
            "flagged": _flagged(row, columns),
            "cells": row["cells"],
        }
        for row in table["rows"]
    ]
    owner: dict[str, Any] = {k: table[k] for k in ("session_id", "project_id") if k in table}
    document = {
        **owner,
        "form": table["form"],
        "style": cited.style,
        "columns": columns,
        "studies": studies,
    }
    return json.dumps(document, ensure_ascii=False, indent=2) + "\n"

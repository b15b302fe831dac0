"""The evidence table's data: one row per study, one column per field of the current form,
each cell the value that stands with its quote, page and anchor status
(docs/EXTRACTION.md, "Evidence table"). The exports (CSV, XLSX, Markdown, JSON) render
these rows.

A cell's value is, in this order: the adjudication; else the extractors' value when they
all agree ("agreed", or "single" with one extractor), its quote taken from an extractor
whose quote is verified if any; else no value ("disagreement", with each extractor's).
"""

from __future__ import annotations

from typing import Any

from projects.models import AnchorStatus, ExtractionValue
from projects.review.extraction.agreement import values_agree
from projects.review.extraction.anchoring import FLAGGED
from projects.review.extraction.selectors import (
    Cell,
    cells_current,
    extraction_owner,
    form_describe,
    form_get,
)

_ANCHOR_RANK = {
    AnchorStatus.VERIFIED: 0,
    AnchorStatus.ABSTRACT_ONLY: 1,
    AnchorStatus.APPROXIMATE: 2,
    AnchorStatus.NO_QUOTE: 3,
    AnchorStatus.NOT_FOUND: 4,
}


def _anchored(row: Any, source: str) -> dict[str, Any]:
    return {
        "value": row.value,
        "quote": row.quote or None,
        "page": row.anchor_page or row.page,
        "anchor": row.anchor_status,
        "flagged": row.anchor_status in FLAGGED,
        "source": source,
        "version": row.form.version,
        "highlight": row.highlight_id,
    }


def evidence_cell(cell: Cell) -> dict[str, Any]:
    """The cell that stands for one field of one study (the module's rule)."""
    extractors = sorted(cell.values)
    if cell.adjudication is not None:
        shown = _anchored(cell.adjudication, "adjudicated")
        return {**shown, "decided_by": cell.adjudication.decided_by, "extractors": extractors}
    answers: list[ExtractionValue] = [cell.values[name] for name in extractors]
    first = answers[0]
    if all(values_agree(cell.spec, first.value, other.value) for other in answers[1:]):
        best = min(answers, key=lambda v: _ANCHOR_RANK.get(v.anchor_status, 9))  # type: ignore[call-overload]
        source = "agreed" if len(answers) > 1 else "single"
        return {**_anchored(best, source), "extractors": extractors}
    return {
        "value": None,
        "quote": None,
        "page": None,
        "anchor": None,
        "flagged": True,
        "source": "disagreement",
        "values": {name: cell.values[name].value for name in extractors},
        "extractors": extractors,
    }


def evidence_rows(*, session_id: Any = None, project_id: Any = None) -> dict[str, Any]:
    """The evidence table of a review (its included studies) or a project (its papers):
    the current form, its column keys, and a row per study in citation order (the paper's
    human id), with a cell per field (None where nobody extracted it).

    Raises NotFound (owner outside the client's collections, or no form yet),
    InvalidInput (both or neither owner named)."""
    owner = extraction_owner(session_id=session_id, project_id=project_id)
    form = form_get(owner)
    described = form_describe(form)
    columns = [f["key"] for f in described["fields"]]
    papers = list(
        owner.papers()
        .order_by("human_id")
        .only("pk", "human_id", "citekey", "title", "year")
    )  # fmt: skip
    cells = cells_current(owner, form, paper_ids=[p.pk for p in papers])
    rows = []
    for paper in papers:
        found = cells.get(paper.pk, {})
        rows.append(
            {
                "paper_id": paper.pk,
                "id": paper.human_id,
                "citekey": paper.citekey,
                "title": paper.title,
                "year": paper.year,
                "cells": {
                    key: evidence_cell(found[key]) if key in found else None for key in columns
                },
            }
        )
    return {**owner.as_dict(), "form": described, "columns": columns, "rows": rows}

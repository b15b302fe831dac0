"""Agreement between two extractors who extracted the same studies independently
(docs/EXTRACTION.md, "Agreement").

Two values of a field agree when:
- choice, yes_no_unclear, integer: they are equal;
- number: same unit and |a - b| <= the field's tolerance (absolute, in its unit; equal up
  to floating-point rounding when the form sets none); range: both ends so;
- text: equal once normalised (Unicode NFKC, case folded, punctuation and spacing
  ignored: "p < 0.05" and "P<0.05" agree);
- both "not reported" (null); a null beside a value disagrees.

Per field: the pairs both extractors answered, how many agree, the share, and Cohen's
kappa for the categorical types (choice, yes_no_unclear). Overall: the same over every
field. Disagreements are listed with both values and whether they were adjudicated.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from collections.abc import Sequence
from typing import Any

from core.errors import InvalidInput
from projects.review.agreement import cohen_kappa
from projects.review.extraction.forms import FieldSpec
from projects.review.extraction.selectors import Owner, cells_current, form_get

CATEGORICAL = ("choice", "yes_no_unclear")
# Floating-point rounding: "0.1 + 0.2" and "0.3" are the same number to a reader.
_REL_EPSILON = 1e-9
_WORD_RE = re.compile(r"[^\W_]+", re.UNICODE)


def text_normalised(text: str) -> str:
    """'P < 0.05,  two-sided' -> 'p 0 05 two sided'."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " ".join(_WORD_RE.findall(folded))


def _close(a: float, b: float, tolerance: float | None) -> bool:
    if math.isclose(a, b, rel_tol=_REL_EPSILON, abs_tol=1e-12):
        return True
    return tolerance is not None and abs(a - b) <= tolerance * (1 + _REL_EPSILON)


def values_agree(spec: FieldSpec, a: Any, b: Any) -> bool:
    """Whether two stored values of `spec` agree (the module's rules)."""
    if a is None or b is None:
        return a is None and b is None
    if spec.type == "text":
        return text_normalised(str(a)) == text_normalised(str(b))
    if spec.type == "number":
        return _unit(a) == _unit(b) and _close(a["value"], b["value"], spec.tolerance)
    if spec.type == "range":
        return (
            _unit(a) == _unit(b)
            and _close(a["low"], b["low"], spec.tolerance)
            and _close(a["high"], b["high"], spec.tolerance)
        )
    return bool(a == b)


def _unit(value: dict[str, Any]) -> str:
    return " ".join(str(value.get("unit") or "").split()).casefold()


def _share(agreed: int, compared: int) -> float | None:
    return None if compared == 0 else round(agreed / compared, 3)


def extraction_agreement(
    *, owner: Owner, extractors: Sequence[str] | None = None, shown: int = 20
) -> dict[str, Any]:
    """Agreement between two extractors over the owner's current form: `extractors` (two
    labels) or else the two with the most values. Per field and overall: compared,
    agreed, share (and kappa for categorical fields); the disagreements (up to `shown`
    unresolved, paper by paper) and how many are adjudicated. With fewer than two
    extractors: the extractors and nothing compared."""
    form = form_get(owner)
    cells = cells_current(owner, form)
    counts = Counter(name for row in cells.values() for c in row.values() for name in c.values)
    busiest = sorted(counts.items(), key=lambda item: (-item[1], item[0]))  # ties: by name
    if extractors is None:
        pair = [name for name, _ in busiest[:2]]
    else:
        pair = list(dict.fromkeys(extractors))
        if len(pair) != 2:
            raise InvalidInput("Name two different extractors to compare.", field="extractors")
    answer: dict[str, Any] = {
        **owner.as_dict(),
        "form_version": form.version,
        "extractors": dict(busiest),
        "compared": pair,
    }
    if len(pair) < 2:
        return {**answer, "fields": {}, "overall": None, "disagreements": []}
    a, b = pair
    per_field: dict[str, dict[str, Any]] = {}
    categories: dict[str, tuple[list[Any], list[Any]]] = {}
    disagreements: list[dict[str, Any]] = []
    keys = [row.key for row in form.fields.order_by("order")]
    for key in keys:
        per_field[key] = {"compared": 0, "agreed": 0}
    titles = dict(owner.papers().filter(pk__in=list(cells)).values_list("pk", "title"))
    for paper_id in sorted(cells):
        for key in keys:
            cell = cells[paper_id].get(key)
            if cell is None or a not in cell.values or b not in cell.values:
                continue
            first, second = cell.values[a].value, cell.values[b].value
            tally = per_field[key]
            tally["compared"] += 1
            if cell.spec.type in CATEGORICAL:
                pairs = categories.setdefault(key, ([], []))
                pairs[0].append(first)
                pairs[1].append(second)
            if values_agree(cell.spec, first, second):
                tally["agreed"] += 1
                continue
            disagreements.append(
                {
                    "paper_id": paper_id,
                    "title": titles.get(paper_id, ""),
                    "field": key,
                    "values": {a: first, b: second},
                    "adjudicated": cell.adjudication is not None,
                }
            )
    for key, tally in per_field.items():
        tally["share"] = _share(tally["agreed"], tally["compared"])
        if key in categories:
            kappa = cohen_kappa(*categories[key])
            tally["kappa"] = None if kappa is None else round(kappa, 3)
    compared = sum(t["compared"] for t in per_field.values())
    agreed = sum(t["agreed"] for t in per_field.values())
    unresolved = [d for d in disagreements if not d["adjudicated"]]
    return {
        **answer,
        "fields": per_field,
        "overall": {"compared": compared, "agreed": agreed, "share": _share(agreed, compared)},
        "disagreements_total": len(disagreements),
        "unresolved": len(unresolved),
        "disagreements": unresolved[:shown],
    }

"""Extraction form fields and the values they accept (docs/EXTRACTION.md): checking a
form's field definitions and cleaning each extracted value into its stored form. No
database here: services.py saves what these functions accept.

A value is stored as JSON, by type:

| type | accepted | stored |
|---|---|---|
| text | text | "..." (whitespace collapsed) |
| number | 12.5, "12.5", "12.5 ms", {"value": 12.5, "unit": "ms"} | {"value": 12.5, "unit": "ms"} |
| integer | 120, "120", "1,200", 120.0 | 120 |
| choice | one of the field's choices (any case) | the choice as the form spells it |
| yes_no_unclear | "yes" / "no" / "unclear" (any case), true / false | "yes" / "no" / "unclear" |
| range | [lo, hi], "lo-hi", {"low", "high", "unit"} with lo <= hi | {"low", "high", "unit"} |

`null` is "not reported": any field takes it, and it needs no quote (absence cannot be
quoted). A number's unit must be the field's when the field names one.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from core.errors import InvalidInput

TYPES = ("text", "number", "integer", "choice", "yes_no_unclear", "range")
YES_NO_UNCLEAR = ("yes", "no", "unclear")
MAX_FIELDS = 50
MAX_CHOICES = 50
MAX_LABEL = 200
MAX_NAME = 200
MAX_UNIT = 30
MAX_CHOICE = 200
MAX_DESCRIPTION = 2_000
MAX_TEXT_VALUE = 2_000
KEY_RE = re.compile(r"^[a-z][a-z0-9_]{0,49}$")
# "12.5", "-3", "1e-3", "1,200.5" then an optional unit.
_NUMBER_RE = re.compile(r"^\s*([-+]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:[eE][-+]?\d+)?)\s*(.*)$")
_RANGE_RE = re.compile(
    r"^\s*([-+]?\d+(?:\.\d+)?)\s*(?:-|–|—|to)\s*([-+]?\d+(?:\.\d+)?)\s*(.*)$", re.IGNORECASE
)


@dataclass(frozen=True)
class FieldSpec:
    """A checked field definition: what ExtractionField rows are made from."""

    key: str
    label: str
    type: str
    unit: str = ""
    choices: tuple[str, ...] = ()
    tolerance: float | None = None
    description: str = ""
    quote_required: bool = True

    def signature(self) -> tuple[str, str, tuple[str, ...]]:
        """What a value's meaning depends on: values answered under another version of the
        form count for this one when their field has the same key and signature."""
        return (self.type, self.unit, self.choices)

    def as_dict(self) -> dict[str, Any]:
        shown: dict[str, Any] = {"key": self.key, "label": self.label, "type": self.type}
        if self.unit:
            shown["unit"] = self.unit
        if self.choices:
            shown["choices"] = list(self.choices)
        if self.tolerance is not None:
            shown["tolerance"] = self.tolerance
        if self.description:
            shown["description"] = self.description
        shown["quote_required"] = self.quote_required
        return shown


@dataclass
class _Problems:
    """Every problem of a form definition, reported at once."""

    found: list[str] = field(default_factory=list)
    first_field: str = ""

    def add(self, where: str, message: str) -> None:
        self.found.append(f"{where}: {message}")
        self.first_field = self.first_field or where

    def raise_any(self) -> None:
        if self.found:
            shown = "; ".join(self.found[:20])
            raise InvalidInput(f"The form is not valid: {shown}.", field=self.first_field)


def form_name_clean(name: Any) -> str:
    if not isinstance(name, str) or not " ".join(name.split()):
        raise InvalidInput("name must be non-empty text.", field="name")
    text = " ".join(name.split())
    if len(text) > MAX_NAME:
        raise InvalidInput(f"name is over {MAX_NAME} characters.", field="name")
    return text


def fields_parse(entries: Any) -> list[FieldSpec]:
    """Field definitions (a list of {"key", "label", "type", "unit", "choices",
    "tolerance", "description", "quote_required"} or FieldSpec) checked all at once.

    Raises InvalidInput naming every field in error ("fields[2].choices: ...") with the
    first one as `field`: an empty or oversized list, a key that is not a lower-case
    identifier or is repeated, an unknown type, a unit or tolerance on a type that has
    none, a choice field without 2-50 distinct choices, text over its limit."""
    if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
        raise InvalidInput("fields must be a list of field definitions.", field="fields")
    if not 1 <= len(entries) <= MAX_FIELDS:
        raise InvalidInput(f"A form has 1-{MAX_FIELDS} fields.", field="fields")
    problems = _Problems()
    specs: list[FieldSpec] = []
    seen: set[str] = set()
    for index, entry in enumerate(entries):
        where = f"fields[{index}]"
        if isinstance(entry, FieldSpec):
            entry = {**entry.as_dict(), "choices": list(entry.choices)}
        if not isinstance(entry, Mapping):
            problems.add(where, "must be an object with key, label and type")
            continue
        unknown = set(entry) - {
            "key", "label", "type", "unit", "choices", "tolerance", "description",
            "quote_required",
        }  # fmt: skip
        if unknown:
            problems.add(where, f"unknown properties {sorted(unknown)}")
        spec = _field_parse(entry, where, problems)
        if spec is None:
            continue
        if spec.key in seen:
            problems.add(f"{where}.key", f"{spec.key!r} is used twice")
        seen.add(spec.key)
        specs.append(spec)
    problems.raise_any()
    return specs


def _field_parse(entry: Mapping[str, Any], where: str, problems: _Problems) -> FieldSpec | None:
    before = len(problems.found)
    key = entry.get("key")
    if not isinstance(key, str) or not KEY_RE.match(key):
        problems.add(
            f"{where}.key",
            "must be a lower-case identifier of 1-50 letters, digits and _ (e.g. sample_size)",
        )
        key = ""
    kind = entry.get("type")
    if kind not in TYPES:
        problems.add(f"{where}.type", f"must be one of {', '.join(TYPES)}, not {kind!r}")
    label = entry.get("label", key.replace("_", " ").capitalize())
    if not isinstance(label, str) or not label.strip() or len(label.strip()) > MAX_LABEL:
        problems.add(f"{where}.label", f"must be text of 1-{MAX_LABEL} characters")
        label = ""
    description = entry.get("description") or ""
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION:
        problems.add(
            f"{where}.description", f"must be text of at most {MAX_DESCRIPTION} characters"
        )
        description = ""
    quote_required = entry.get("quote_required", True)
    if not isinstance(quote_required, bool):
        problems.add(f"{where}.quote_required", "must be true or false")
    unit = entry.get("unit") or ""
    if unit and kind not in ("number", "range"):
        problems.add(f"{where}.unit", "only number and range fields have a unit")
    elif not isinstance(unit, str) or len(unit.strip()) > MAX_UNIT:
        problems.add(f"{where}.unit", f"must be text of at most {MAX_UNIT} characters")
        unit = ""
    tolerance = entry.get("tolerance")
    if tolerance is not None:
        if kind not in ("number", "range"):
            problems.add(f"{where}.tolerance", "only number and range fields have a tolerance")
        elif not _is_number(tolerance) or tolerance < 0 or not math.isfinite(tolerance):
            problems.add(f"{where}.tolerance", "must be a number >= 0 (in the field's unit)")
    choices = _choices_parse(entry.get("choices"), kind, f"{where}.choices", problems)
    if len(problems.found) > before:
        return None
    return FieldSpec(
        key=key,
        label=" ".join(label.split()),
        type=str(kind),
        unit=unit.strip(),
        choices=choices,
        tolerance=None if tolerance is None else float(tolerance),
        description=description.strip(),
        quote_required=bool(quote_required),
    )


def _choices_parse(raw: Any, kind: Any, where: str, problems: _Problems) -> tuple[str, ...]:
    if kind != "choice":
        if raw:
            problems.add(where, "only choice fields have choices")
        return ()
    if isinstance(raw, str | bytes) or not isinstance(raw, Sequence):
        problems.add(where, f"a choice field needs a list of 2-{MAX_CHOICES} choices")
        return ()
    choices = []
    for choice in raw:
        text = " ".join(choice.split()) if isinstance(choice, str) else ""
        if not text or len(text) > MAX_CHOICE:
            problems.add(where, f"each choice must be text of 1-{MAX_CHOICE} characters")
            return ()
        choices.append(text)
    if not 2 <= len(choices) <= MAX_CHOICES:
        problems.add(where, f"a choice field needs 2-{MAX_CHOICES} choices")
    elif len({c.casefold() for c in choices}) < len(choices):
        problems.add(where, "choices must differ (ignoring case)")
    return tuple(choices)


# --- values ---------------------------------------------------------------------------------


def value_clean(spec: FieldSpec, raw: Any) -> Any:
    """The stored form of `raw` as a value of `spec` (see the module's table); None for
    None (not reported). Raises InvalidInput naming the field's key and what it takes."""
    if raw is None:
        return None
    cleaner = _CLEANERS[spec.type]
    return cleaner(spec, raw)


def _refuse(spec: FieldSpec, wanted: str, raw: Any) -> InvalidInput:
    shown = repr(raw)
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return InvalidInput(f"{spec.key}: {wanted}, not {shown}.", field=f"values.{spec.key}")


def _is_number(raw: Any) -> bool:
    return isinstance(raw, int | float) and not isinstance(raw, bool)


def _text(spec: FieldSpec, raw: Any) -> str:
    text = " ".join(raw.split()) if isinstance(raw, str) else ""
    if not text or len(text) > MAX_TEXT_VALUE:
        raise _refuse(spec, f"expects text of 1-{MAX_TEXT_VALUE} characters", raw)
    return text


def _finite(spec: FieldSpec, raw: Any, wanted: str) -> float:
    if _is_number(raw) and math.isfinite(raw):
        return float(raw)
    raise _refuse(spec, wanted, raw)


def _unit_checked(spec: FieldSpec, unit: Any, raw: Any) -> str:
    if not isinstance(unit, str):
        raise _refuse(spec, "a unit must be text", raw)
    given = " ".join(unit.split())
    if spec.unit and given and given != spec.unit:
        raise _refuse(spec, f"expects a value in {spec.unit} (convert it)", raw)
    if len(given) > MAX_UNIT:
        raise _refuse(spec, f"a unit has at most {MAX_UNIT} characters", raw)
    return given or spec.unit


def _number(spec: FieldSpec, raw: Any) -> dict[str, Any]:
    wanted = f"expects a number{f' in {spec.unit}' if spec.unit else ''}"
    if isinstance(raw, Mapping):
        if set(raw) - {"value", "unit"}:
            raise _refuse(spec, 'expects {"value": number, "unit": text}', raw)
        value = _finite(spec, raw.get("value"), wanted)
        return {"value": value, "unit": _unit_checked(spec, raw.get("unit") or "", raw)}
    if isinstance(raw, str):
        matched = _NUMBER_RE.match(raw)
        if matched is None:
            raise _refuse(spec, wanted, raw)
        value = float(matched.group(1).replace(",", ""))
        return {"value": value, "unit": _unit_checked(spec, matched.group(2), raw)}
    return {"value": _finite(spec, raw, wanted), "unit": spec.unit}


def _integer(spec: FieldSpec, raw: Any) -> int:
    if isinstance(raw, str):
        text = raw.strip()
        if re.fullmatch(r"[-+]?(?:\d{1,3}(?:,\d{3})+|\d+)", text):
            return int(text.replace(",", ""))
        raise _refuse(spec, "expects a whole number", raw)
    if isinstance(raw, int) and not isinstance(raw, bool):
        return raw
    if isinstance(raw, float) and math.isfinite(raw) and raw.is_integer():
        return int(raw)
    raise _refuse(spec, "expects a whole number", raw)


def _choice(spec: FieldSpec, raw: Any) -> str:
    if isinstance(raw, str):
        given = " ".join(raw.split()).casefold()
        for choice in spec.choices:
            if choice.casefold() == given:
                return choice
    raise _refuse(spec, f"expects one of {list(spec.choices)}", raw)


def _yes_no_unclear(spec: FieldSpec, raw: Any) -> str:
    if isinstance(raw, bool):
        return "yes" if raw else "no"
    if isinstance(raw, str) and raw.strip().casefold() in YES_NO_UNCLEAR:
        return raw.strip().casefold()
    raise _refuse(spec, "expects yes, no or unclear", raw)


def _range(spec: FieldSpec, raw: Any) -> dict[str, Any]:
    wanted = 'expects [low, high], "low-high" or {"low", "high", "unit"}'
    unit: Any = ""
    if isinstance(raw, Mapping):
        if set(raw) - {"low", "high", "unit"}:
            raise _refuse(spec, wanted, raw)
        low, high, unit = raw.get("low"), raw.get("high"), raw.get("unit") or ""
    elif isinstance(raw, list | tuple) and len(raw) == 2:
        low, high = raw
    elif isinstance(raw, str) and (matched := _RANGE_RE.match(raw)):
        low, high, unit = float(matched.group(1)), float(matched.group(2)), matched.group(3)
    else:
        raise _refuse(spec, wanted, raw)
    low_value = _finite(spec, low, wanted)
    high_value = _finite(spec, high, wanted)
    if low_value > high_value:
        raise _refuse(spec, "expects low <= high", raw)
    return {"low": low_value, "high": high_value, "unit": _unit_checked(spec, unit, raw)}


_CLEANERS = {
    "text": _text,
    "number": _number,
    "integer": _integer,
    "choice": _choice,
    "yes_no_unclear": _yes_no_unclear,
    "range": _range,
}

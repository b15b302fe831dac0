"""Extraction form fields and the values each type accepts (projects/review/extraction/
forms.py): every problem of a form named per field; values cleaned into their stored form
or refused with the field's key."""

from __future__ import annotations

from typing import Any

import pytest

from core.errors import InvalidInput
from projects.review.extraction.forms import FieldSpec, fields_parse, value_clean


def spec(kind: str, **values: Any) -> FieldSpec:
    [parsed] = fields_parse([{"key": "f", "type": kind, **values}])
    return parsed


def test_a_valid_form_keeps_its_fields_in_order_with_defaults() -> None:
    specs = fields_parse(
        [
            {"key": "sample_size", "type": "integer"},
            {"key": "effect", "type": "number", "unit": "%", "tolerance": 0.1},
            {"key": "design", "type": "choice", "choices": ["RCT", " cohort "]},
        ]
    )
    assert [s.key for s in specs] == ["sample_size", "effect", "design"]
    assert specs[0].label == "Sample size" and specs[0].quote_required is True
    assert specs[1].unit == "%" and specs[1].tolerance == 0.1
    assert specs[2].choices == ("RCT", "cohort")


@pytest.mark.parametrize(
    ("fields", "where", "says"),
    [
        ([{"key": "Sample Size", "type": "integer"}], "fields[0].key", "lower-case identifier"),
        ([{"key": "n", "type": "float"}], "fields[0].type", "must be one of"),
        ([{"key": "n", "type": "text", "unit": "ms"}], "fields[0].unit", "only number and range"),
        ([{"key": "n", "type": "choice"}], "fields[0].choices", "2-50 choices"),
        ([{"key": "n", "type": "choice", "choices": ["a"]}], "fields[0].choices", "2-50"),
        ([{"key": "n", "type": "choice", "choices": ["A", "a"]}], "fields[0].choices", "differ"),
        ([{"key": "n", "type": "text", "choices": ["a", "b"]}], "fields[0].choices", "only choice"),
        ([{"key": "n", "type": "number", "tolerance": -1}], "fields[0].tolerance", ">= 0"),
        ([{"key": "n", "type": "integer", "quote_required": "yes"}], "fields[0].quote_required", "true or false"),  # noqa: E501
        ([{"key": "n", "type": "text", "colour": "red"}], "fields[0]", "unknown properties"),
        ([{"key": "n", "type": "text"}, {"key": "n", "type": "integer"}], "fields[1].key", "used twice"),  # noqa: E501
        (["n"], "fields[0]", "must be an object"),
    ],
)  # fmt: skip
def test_a_bad_field_definition_is_refused_naming_the_field(
    fields: list[Any], where: str, says: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        fields_parse(fields)
    assert raised.value.details["field"] == where
    assert says in raised.value.message


def test_every_problem_of_a_form_is_reported_at_once() -> None:
    with pytest.raises(InvalidInput) as raised:
        fields_parse([{"key": "1x", "type": "text"}, {"key": "ok", "type": "nope"}])
    assert "fields[0].key" in raised.value.message and "fields[1].type" in raised.value.message


@pytest.mark.parametrize(
    "fields", [[], "text", None, [{"key": f"k{i}", "type": "text"} for i in range(51)]]
)
def test_a_form_has_one_to_fifty_fields(fields: Any) -> None:
    with pytest.raises(InvalidInput):
        fields_parse(fields)


@pytest.mark.parametrize(
    ("kind", "options", "raw", "stored"),
    [
        ("text", {}, "  two-stage   design ", "two-stage design"),
        ("number", {"unit": "ms"}, 12.5, {"value": 12.5, "unit": "ms"}),
        ("number", {"unit": "ms"}, "1,200.5 ms", {"value": 1200.5, "unit": "ms"}),
        ("number", {"unit": "ms"}, {"value": 3, "unit": "ms"}, {"value": 3.0, "unit": "ms"}),
        ("number", {}, "92.3 %", {"value": 92.3, "unit": "%"}),
        ("integer", {}, 120, 120),
        ("integer", {}, "1,204", 1204),
        ("integer", {}, 37.0, 37),
        ("choice", {"choices": ["RCT", "cohort"]}, "rct", "RCT"),
        ("yes_no_unclear", {}, " Unclear ", "unclear"),
        ("yes_no_unclear", {}, True, "yes"),
        ("range", {}, [18, 65], {"low": 18.0, "high": 65.0, "unit": ""}),
        ("range", {"unit": "years"}, "18-65 years", {"low": 18.0, "high": 65.0, "unit": "years"}),
        ("range", {}, {"low": 1, "high": 1}, {"low": 1.0, "high": 1.0, "unit": ""}),
        ("integer", {}, None, None),
    ],
)
def test_values_are_stored_in_their_types_form(
    kind: str, options: dict[str, Any], raw: Any, stored: Any
) -> None:
    assert value_clean(spec(kind, **options), raw) == stored


@pytest.mark.parametrize(
    ("kind", "options", "raw", "says"),
    [
        ("text", {}, "   ", "expects text"),
        ("text", {}, 42, "expects text"),
        ("number", {"unit": "ms"}, "12 s", "in ms (convert it)"),
        ("number", {}, "about twelve", "expects a number"),
        ("number", {}, float("nan"), "expects a number"),
        ("number", {}, True, "expects a number"),
        ("integer", {}, 12.5, "whole number"),
        ("integer", {}, "twelve", "whole number"),
        ("integer", {}, False, "whole number"),
        ("choice", {"choices": ["RCT", "cohort"]}, "case series", "expects one of"),
        ("yes_no_unclear", {}, "maybe", "yes, no or unclear"),
        ("range", {}, [65, 18], "low <= high"),
        ("range", {}, [1, 2, 3], "expects [low, high]"),
        ("range", {}, {"low": 1, "top": 2}, "expects [low, high]"),
    ],
)
def test_a_value_of_the_wrong_kind_is_refused_naming_the_field(
    kind: str, options: dict[str, Any], raw: Any, says: str
) -> None:
    with pytest.raises(InvalidInput) as raised:
        value_clean(spec(kind, **options), raw)
    assert raised.value.details["field"] == "values.f"
    assert says in raised.value.message and raised.value.message.startswith("f: ")


def test_the_signature_changes_with_type_unit_or_choices_only() -> None:
    base = spec("number", unit="ms", description="Latency")
    assert base.signature() == spec("number", unit="ms", label="Other", tolerance=2).signature()
    assert base.signature() != spec("number", unit="s").signature()
    assert base.signature() != spec("integer").signature()

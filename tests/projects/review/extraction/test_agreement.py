"""Agreement between two extractors (projects/review/extraction/agreement.py): the rule of
each type, Cohen's kappa over categories, and the per-field and overall figures of a
project's extraction with its disagreements."""

from __future__ import annotations

from typing import Any

import pytest

from core.errors import InvalidInput
from papers.models import Paper
from projects.models import Project
from projects.review.agreement import cohen_kappa
from projects.review.extraction.agreement import (
    extraction_agreement,
    text_normalised,
    values_agree,
)
from projects.review.extraction.forms import FieldSpec, fields_parse, value_clean
from projects.review.extraction.selectors import extraction_owner
from projects.review.extraction.services import extract_record


def spec(kind: str, **values: Any) -> FieldSpec:
    [parsed] = fields_parse([{"key": "f", "type": kind, **values}])
    return parsed


def agree(field: FieldSpec, a: Any, b: Any) -> bool:
    return values_agree(field, value_clean(field, a), value_clean(field, b))


@pytest.mark.parametrize(
    ("kind", "options", "a", "b", "agreed"),
    [
        ("integer", {}, 120, "120", True),
        ("integer", {}, 120, 121, False),
        ("choice", {"choices": ["RCT", "cohort"]}, "rct", "RCT", True),
        ("choice", {"choices": ["RCT", "cohort"]}, "RCT", "cohort", False),
        ("yes_no_unclear", {}, "yes", True, True),
        ("yes_no_unclear", {}, "yes", "unclear", False),
        ("number", {}, 0.3, 0.1 + 0.2, True),  # floating-point rounding only
        ("number", {}, 92.3, 92.31, False),  # no tolerance: equal numbers only
        ("number", {"tolerance": 0.05}, 92.3, 92.34, True),
        ("number", {"tolerance": 0.05}, 92.3, 92.4, False),
        ("number", {}, "12 ms", "12 s", False),  # different units never agree
        ("number", {}, "12 ms", "12 MS", True),
        ("range", {"tolerance": 1}, [18, 65], [18.5, 64], True),
        ("range", {"tolerance": 1}, [18, 65], [18, 67], False),
        ("text", {}, "P < 0.05,  two-sided", "p<0.05 two sided", True),
        ("text", {}, "ﬁne-tuned BERT", "Fine tuned bert", True),
        ("text", {}, "BERT", "RoBERTa", False),
        ("integer", {}, None, None, True),  # both: not reported
        ("integer", {}, None, 0, False),
    ],
)
def test_values_agree_by_the_rule_of_their_type(
    kind: str, options: dict[str, Any], a: Any, b: Any, agreed: bool
) -> None:
    field = spec(kind, **options)
    assert agree(field, a, b) is agreed
    assert agree(field, b, a) is agreed


def test_text_is_compared_case_punctuation_and_spacing_apart() -> None:
    assert text_normalised("  P < 0.05, two-sided ") == "p 0 05 two sided"


def test_cohen_kappa_over_categories() -> None:
    # 10 items, 3 categories; observed 0.7, chance (4*3 + 3*4 + 3*3) / 100 = 0.33.
    first = ["a", "a", "a", "a", "b", "b", "b", "c", "c", "c"]
    second = ["a", "a", "a", "b", "b", "b", "a", "c", "c", "b"]
    observed, chance = 0.7, (4 * 4 + 3 * 4 + 3 * 2) / 100
    assert cohen_kappa(first, second) == pytest.approx((observed - chance) / (1 - chance))
    assert cohen_kappa(["a", "b"], ["a", "b"]) == 1.0
    assert cohen_kappa([], []) is None
    assert cohen_kappa(["a", "a"], ["a", "a"]) is None  # chance agreement 1
    with pytest.raises(ValueError):
        cohen_kappa(["a"], [])


def test_agreement_per_field_and_overall_lists_the_disagreements(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl, quantum = studies["acl"], studies["quantum"]
    for agent, pages, kind, papers in (("a", 8, "property graph", 37), ("b", 8, "other", 37.2)):
        extract_record(
            project_id=project.pk, paper=acl.pk, agent=agent,
            values={"pages": {"value": pages}, "graph_kind": {"value": kind},
                    "papers": {"value": papers}},
        )  # fmt: skip
    for agent, pages, kind in (("a", 8, "other"), ("b", 9, "other")):
        extract_record(
            project_id=project.pk, paper=quantum.pk, agent=agent,
            values={"pages": {"value": pages}, "graph_kind": {"value": kind}},
        )  # fmt: skip
    extract_record(
        project_id=project.pk, paper=quantum.pk, agent="c", values={"pages": {"value": 1}}
    )
    answer = extraction_agreement(owner=extraction_owner(project_id=project.pk))
    assert answer["compared"] == ["agent:a", "agent:b"]
    assert answer["extractors"] == {"agent:a": 5, "agent:b": 5, "agent:c": 1}
    fields = answer["fields"]
    assert fields["pages"] == {"compared": 2, "agreed": 1, "share": 0.5}
    assert fields["graph_kind"]["compared"] == 2 and fields["graph_kind"]["agreed"] == 1
    # kappa: a = [property, other], b = [other, other]: observed 0.5, chance 0.5 -> 0.
    assert fields["graph_kind"]["kappa"] == 0.0
    # 37 and 37.2 million papers: the field's tolerance is 0.5.
    assert fields["papers"] == {"compared": 1, "agreed": 1, "share": 1.0}
    assert fields["task"] == {"compared": 0, "agreed": 0, "share": None}
    assert answer["overall"] == {"compared": 5, "agreed": 3, "share": 0.6}
    assert answer["unresolved"] == answer["disagreements_total"] == 2
    shown = {(d["paper_id"], d["field"]): d["values"] for d in answer["disagreements"]}
    assert shown == {
        (acl.pk, "graph_kind"): {"agent:a": "property graph", "agent:b": "other"},
        (quantum.pk, "pages"): {"agent:a": 8, "agent:b": 9},
    }
    # Another pair on request.
    chosen = extraction_agreement(
        owner=extraction_owner(project_id=project.pk), extractors=["agent:a", "agent:c"]
    )
    assert chosen["fields"]["pages"] == {"compared": 1, "agreed": 0, "share": 0.0}
    with pytest.raises(InvalidInput):
        extraction_agreement(owner=extraction_owner(project_id=project.pk), extractors=["x", "x"])


def test_with_one_extractor_nothing_is_compared(
    project: Project, studies: dict[str, Paper]
) -> None:
    extract_record(project_id=project.pk, paper=studies["acl"].pk, agent="a",
                   values={"pages": {"value": 8}})  # fmt: skip
    answer = extraction_agreement(owner=extraction_owner(project_id=project.pk))
    assert answer["overall"] is None and answer["compared"] == ["agent:a"]

"""The review's decision rules (projects/review/workflow.py) one by one: which decisions are
accepted, what each does to the pending candidates, and the stage it leads to. The tool
path is tests/projects/review/test_workflow.py and test_workflow_properties.py; these pin
each rule with its error message, so a change to one shows here."""

from __future__ import annotations

from typing import Any

import pytest

from projects.review.workflow import (
    CITATIONS_REJECTED,
    MAX_NOTE,
    MAX_REASON,
    NO_REASON,
    NOT_SELECTED,
    Decision,
    DecisionAction,
    InvalidAction,
    InvalidDecision,
    decision_parse,
    next_stage,
    screening_apply,
)

PENDING = [11, 12, 13, 14]
NEEDS_A_LIST = (
    'A screening edit needs "include" or "exclude" (lists of papers); to keep them all, approve.'
)
CITEKEYS = {"vaswani2017attention": 11, "beltagy2020longformer": 12}


def resolve(ref: Any) -> int | None:
    """As the services resolve a reference: a pending paper_id (int or digits) or citekey."""
    if isinstance(ref, int):
        return ref if ref in PENDING else None
    if ref.isdigit():
        return int(ref) if int(ref) in PENDING else None
    return CITEKEYS.get(ref)


def edit(**data: Any) -> Decision:
    return decision_parse(action="edit", data=data)


def screen(decision: Decision) -> tuple[list[int], dict[int, str]]:
    result = screening_apply(decision, PENDING, resolve)
    return result.included, result.excluded


# --- decision_parse ---------------------------------------------------------------------------


@pytest.mark.parametrize("action", ["approve", " APPROVE ", "Edit", "reject"])
def test_actions_are_read_without_case_or_spaces(action: str) -> None:
    data = {"queries": ["x"]} if action.strip().lower() == "edit" else None
    parsed = decision_parse(action=action, data=data)
    assert parsed.action == DecisionAction(action.strip().lower())
    assert parsed.decided_by == "agent"


@pytest.mark.parametrize("action", ["maybe", "", "approved", None])
def test_an_unknown_action_is_invalid_action_naming_the_choices(action: Any) -> None:
    with pytest.raises(InvalidAction) as error:
        decision_parse(action=action)
    assert error.value.code == "invalid_action"
    assert "use one of approve, edit, reject" in error.value.message
    assert repr(action) in error.value.message


@pytest.mark.parametrize("action", ["approve", "reject"])
def test_approve_and_reject_take_no_data(action: str) -> None:
    with pytest.raises(InvalidDecision) as error:
        decision_parse(action=action, data={"exclude": [11]})
    assert error.value.message == f"data is for action=edit; {action} takes none."
    assert decision_parse(action=action, data={}).data == {}
    assert decision_parse(action=action).data == {}


@pytest.mark.parametrize("data", [[], "x", 3, ["queries"]])
def test_data_must_be_an_object(data: Any) -> None:
    with pytest.raises(InvalidDecision) as error:
        decision_parse(action="edit", data=data)
    assert error.value.message == "data must be an object (or omitted)."


@pytest.mark.parametrize(
    "data",
    [
        {"queries": ["a\x00b"]},
        {"a\x00": 1},
        {"reasons": {"11": "why\x00"}},
        {"queries": [["deep", "x\x00"]]},
    ],
)
def test_nul_anywhere_in_the_data_is_refused(data: dict[str, Any]) -> None:
    with pytest.raises(InvalidDecision) as error:
        decision_parse(action="edit", data=data)
    assert error.value.message == "data contains NUL characters."


def test_data_without_nul_is_kept_as_given() -> None:
    data = {"queries": ["a", ["b"]], "snowball": True, "n": 3, "reasons": {"11": "c"}}
    assert decision_parse(action="edit", data=data).data == data


def test_notes_are_one_line_of_printable_text_within_the_limit() -> None:
    parsed = decision_parse(
        action="reject", note="  too\tnarrow \n\n a plan\x07 ", decided_by="ann"
    )
    assert parsed.note == "too narrow a plan"
    assert parsed.decided_by == "ann"
    assert decision_parse(action="approve", note=None).note == ""
    assert decision_parse(action="approve", note="x" * MAX_NOTE).note == "x" * MAX_NOTE
    with pytest.raises(InvalidDecision) as error:
        decision_parse(action="approve", note="x" * (MAX_NOTE + 1))
    assert error.value.message == f"note is over {MAX_NOTE} characters."


# --- next_stage -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("kind", "action", "snowball", "stage"),
    [
        ("plan", "approve", False, "search"),
        ("plan", "edit", True, "search"),
        ("plan", "reject", True, "plan"),
        ("screen", "approve", True, "expand"),
        ("screen", "edit", True, "expand"),
        ("screen", "approve", False, "complete"),
        ("screen", "edit", False, "complete"),
        ("screen", "reject", True, "plan"),
        ("expand", "approve", True, "complete"),
        ("expand", "edit", True, "complete"),
        ("expand", "reject", True, "complete"),
    ],
)
def test_each_decision_leads_to_its_stage(
    kind: str, action: str, snowball: bool, stage: str
) -> None:
    assert next_stage(kind, DecisionAction(action), snowball=snowball) == stage


# --- screening_apply --------------------------------------------------------------------------


def test_approve_includes_every_pending_paper_in_order() -> None:
    assert screen(decision_parse(action="approve")) == (PENDING, {})


def test_reject_excludes_every_paper_with_the_note_or_a_default_reason() -> None:
    assert screen(decision_parse(action="reject", note="off topic")) == (
        [],
        dict.fromkeys(PENDING, "off topic"),
    )
    assert screen(decision_parse(action="reject")) == (
        [],
        dict.fromkeys(PENDING, CITATIONS_REJECTED),
    )


def test_include_keeps_only_the_listed_papers() -> None:
    included, excluded = screen(edit(include=[13, "vaswani2017attention", "13"]))
    assert included == [11, 13]
    assert excluded == {12: NOT_SELECTED, 14: NOT_SELECTED}


def test_exclude_drops_the_listed_papers_and_keeps_the_rest() -> None:
    included, excluded = screen(edit(exclude=["12"], reasons={"12": "  a   survey "}))
    assert included == [11, 13, 14]
    assert excluded == {12: "a survey"}
    assert screen(edit(exclude=[14])) == ([11, 12, 13], {14: NO_REASON})


def test_include_and_exclude_together() -> None:
    included, excluded = screen(edit(include=[11], exclude=[12], reasons={"13": "late"}))
    assert included == [11]
    assert excluded == {12: NO_REASON, 13: "late", 14: NOT_SELECTED}


def test_an_empty_include_excludes_everything_and_an_empty_exclude_keeps_everything() -> None:
    assert screen(edit(include=[])) == ([], dict.fromkeys(PENDING, NOT_SELECTED))
    assert screen(edit(exclude=[])) == (PENDING, {})


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({}, NEEDS_A_LIST),
        ({"reasons": {}}, NEEDS_A_LIST),
        (
            {"exclude": [], "queries": ["x"], "all": 1},
            "Unknown key(s) all, queries: a screening edit takes include, exclude and reasons.",
        ),
        ({"include": 11}, "include must be a list of papers"),
        ({"exclude": "11"}, "exclude must be a list of papers"),
        ({"exclude": [99]}, "Not among the candidates waiting for this decision: [99]"),
        ({"exclude": [True]}, "Not among the candidates waiting for this decision: [True]"),
        ({"exclude": [1.5]}, "Not among the candidates waiting for this decision: [1.5]"),
        ({"include": [11], "exclude": ["11"]}, "Papers both included and excluded: [11]"),
        ({"exclude": [12], "reasons": ["12"]}, "reasons must map papers to text."),
        ({"exclude": [12], "reasons": {"99": "x"}}, "Not among the candidates"),
        ({"exclude": [12], "reasons": {"12": ""}}, f"must be 1-{MAX_REASON} characters"),
        ({"exclude": [12], "reasons": {"12": "  "}}, f"must be 1-{MAX_REASON} characters"),
        ({"exclude": [12], "reasons": {"12": 5}}, f"must be 1-{MAX_REASON} characters"),
        ({"exclude": [12], "reasons": {"12": "x" * 501}}, "The reason for '12' must be"),
        ({"include": [11], "reasons": {"11": "why"}}, "'11' is kept: a reason is for excluded"),
        ({"exclude": [12], "reasons": {"13": "why"}}, "'13' is kept: a reason is for excluded"),
    ],
)
def test_a_screening_edit_that_does_not_fit_is_refused_saying_why(
    data: dict[str, Any], message: str
) -> None:
    with pytest.raises(InvalidDecision) as error:
        screen(Decision(DecisionAction.EDIT, data))
    assert error.value.code == "invalid_decision"
    assert message in error.value.message
    if message.endswith("."):  # the whole message
        assert error.value.message.endswith(message)


def test_unknown_papers_are_listed_in_the_error() -> None:
    with pytest.raises(InvalidDecision) as error:
        screen(edit(exclude=[99, "nope", 11, *range(100, 130)]))
    papers = error.value.details["papers"]
    assert papers[:2] == ["99", "nope"] and len(papers) == 20
    listed = [99, "nope", *range(100, 118)]  # the first 20 only, in the message too
    assert error.value.message == f"Not among the candidates waiting for this decision: {listed}."
    with pytest.raises(InvalidDecision) as both:
        screen(edit(include=[11, 12], exclude=[12, 11]))
    assert both.value.details["papers"] == [11, 12]


def test_a_reason_of_the_longest_length_is_kept() -> None:
    reason = "x" * MAX_REASON
    assert screen(edit(exclude=[12], reasons={"12": reason}))[1] == {12: reason}

"""Seed 002's properties PROP-6 to PROP-10, checked with hypothesis through the review tools
(start_review is the seed's search_papers), on whichever backend the suite runs: steps
in-process on the embedded default, on the real Celery worker on PostgreSQL + Redis.

Every decision's outcome is predicted from the state before it (`expected_error`): a
decision that should be refused must be refused with that error code and change nothing,
and one that should go through must. How many examples run is the Hypothesis profile's
(tests/conftest.py: `ci` by default, HYPOTHESIS_PROFILE=thorough for a longer run)."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp import MCPError

from projects.models import ReviewCandidate, ReviewCheckpoint, ReviewDecision
from projects.review.planning import EDITABLE, key_terms
from projects.review.workflow import DecisionAction
from tests.projects.review.builders import (
    LONG_DOCS,
    ToolError,
    Tools,
    assert_counts_add_up,
    build_library,
)

pytestmark = pytest.mark.django_db(transaction=True)

# max_examples comes from the loaded profile (tests/conftest.py).
PROPERTY = settings(
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
DOMAINS = ["general", "cs", "bio/med", "bio", "med", "physics", "math", "social"]
QUESTIONS = [
    LONG_DOCS,
    "Sparse attention for long sequences",
    "Graph convolutional networks for node classification since 2016",
    "information theory of noisy channels",
]
SCREEN_KEYS = {"include", "exclude", "reasons"}
STATE_KEYS = {
    "session_id", "query", "state", "stage", "is_complete", "has_pending_checkpoint",
    "current_checkpoint_kind", "iteration", "error", "counts", "checkpoint", "result", "next",
}  # fmt: skip

questions = st.one_of(
    st.sampled_from(QUESTIONS),
    st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=60).filter(
        lambda text: bool(key_terms(text))
    ),
)
# A decision: the action (or a bogus one), what data to send (data that fits the pending
# checkpoint, none, nonsense, or a screening edit that gives a reason for a paper it keeps),
# and whether to add a note.
DATA_KINDS = ["fit", "none", "junk", "kept_reason", "unlisted_reason"]
decisions = st.tuples(
    st.sampled_from([*(a.value for a in DecisionAction), "maybe"]),
    st.sampled_from(DATA_KINDS),
    st.booleans(),
)
EDIT_KEYS = {"plan": set(EDITABLE), "screen": SCREEN_KEYS, "expand": SCREEN_KEYS}


@pytest.fixture(autouse=True)
def _quick(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False


@pytest.fixture
def library(transactional_db: None) -> dict[str, int]:
    return build_library()


def assert_valid_state(state: dict[str, Any]) -> None:
    # Null fields are left out of answers (docs/MCP.md "Responses").
    nullable = {"result", "error", "checkpoint", "current_checkpoint_kind"}
    assert STATE_KEYS - nullable <= set(state)
    assert state["state"] in ("running", "waiting", "complete", "failed")
    assert state["is_complete"] == (state["state"] == "complete")
    assert state["has_pending_checkpoint"] == (state["state"] == "waiting")
    pending = state["checkpoint"]
    assert (pending is not None) == state["has_pending_checkpoint"]
    if pending:
        assert state["current_checkpoint_kind"] == pending["kind"]
        assert set(pending["actions"]) == {"approve", "edit", "reject"}
    assert isinstance(state["iteration"], int) and state["iteration"] >= 0
    assert state.get("error") is None or state["state"] == "failed"
    assert (state["result"] is not None) == state["is_complete"]
    assert_counts_add_up(state["counts"])


def fitting_data(state: dict[str, Any], snowball: bool) -> dict[str, Any]:
    """Edit data that suits the pending checkpoint."""
    pending = state["checkpoint"]
    if pending is None or pending["kind"] == "plan":
        return {"queries": ["sparse attention", "transformer"], "snowball": snowball}
    items = pending["candidates"]["items"]
    if not items:
        return {"exclude": []}
    first = items[0]["paper_id"]
    return {"exclude": [first], "reasons": {str(first): "off topic"}}


def kept_reason_data(state: dict[str, Any], data_kind: str) -> dict[str, Any] | None:
    """A screening edit giving a reason for a paper it keeps (listed in include, or not
    listed in exclude), or None where there is no candidate to name."""
    pending = state["checkpoint"]
    if pending is None or pending["kind"] == "plan" or not pending["candidates"]["items"]:
        return None
    first = pending["candidates"]["items"][0]["paper_id"]
    kept = {"include": [first]} if data_kind == "kept_reason" else {"exclude": []}
    return {**kept, "reasons": {str(first): "kept, yet a reason"}}


def step_data(
    state: dict[str, Any], action: str, data_kind: str, snowball: bool
) -> dict[str, Any] | None:
    if data_kind == "junk":
        return {"bogus": 1}
    if action != "edit" or data_kind == "none":
        return None
    if data_kind in ("kept_reason", "unlisted_reason"):
        return kept_reason_data(state, data_kind) or fitting_data(state, snowball)
    return fitting_data(state, snowball)


def expected_error(state: dict[str, Any], action: str, data: dict[str, Any] | None) -> str | None:
    """The error code deciding (action, data) on `state` must give, or None if it must be
    accepted (projects/review/services.py review_decide, workflow.py decision_parse)."""
    if state["is_complete"]:
        return "session_complete"
    if action not in {a.value for a in DecisionAction}:
        return "invalid_action"
    if data and action != "edit":
        return "invalid_decision"  # data is for edit only
    if not state["has_pending_checkpoint"]:
        return "no_pending_checkpoint"
    if action != "edit":
        return None
    if not data or set(data) - EDIT_KEYS[state["current_checkpoint_kind"]]:
        return "invalid_decision"
    include, exclude = data.get("include"), data.get("exclude", [])
    for paper in data.get("reasons", {}):
        kept = int(paper) in include if include is not None else int(paper) not in exclude
        if kept:
            return "invalid_decision"  # a reason is for excluded papers
    return None


def decide(
    tools: Tools, state: dict[str, Any], step: tuple[str, str, bool], snowball: bool = True
) -> dict[str, Any]:
    """One decide call, checked: refused with the predicted error code and nothing changed,
    or accepted and one iteration further. Returns the state after it."""
    action, data_kind, with_note = step
    before = tools.get(state)
    data = step_data(before, action, data_kind, snowball)
    note = "from the property test" if with_note else None
    expected = expected_error(before, action, data)
    try:
        after = tools.decide(before, action, data=data, note=note)
    except ToolError as error:
        assert error.code == expected, (step, data, error.body)
        assert tools.get(state) == before  # a refused decision changes nothing
        return before
    assert expected is None, (step, data, "accepted; expected", expected)
    assert after["iteration"] == before["iteration"] + 1
    assert after["state"] in ("waiting", "complete")
    assert_valid_state(after)
    return after


# --- PROP-6: session lifecycle ----------------------------------------------------------------


@PROPERTY
@given(query=questions, domain=st.sampled_from(DOMAINS), max_results=st.integers(1, 100))
def test_prop6_a_started_session_has_a_valid_state(
    library: dict[str, int], query: str, domain: str, max_results: int
) -> None:
    tools = Tools()
    started = tools.start(query, domain=domain, max_results=max_results)
    state = tools.get(started)
    assert state["session_id"] == started["session_id"]
    assert_valid_state(state)
    assert state["is_complete"] is False
    assert state["query"] == " ".join(query.split())
    assert state["current_checkpoint_kind"] == "plan" and state["iteration"] == 0


# --- PROP-7: decision mapping completeness ----------------------------------------------------


def drive_to(tools: Tools, kind: str) -> dict[str, Any]:
    state = tools.start(max_results=10)
    if kind == "plan":
        return state
    edit = {"queries": ["sparse attention"], "snowball": kind == "expand"}
    state = tools.decide(state, "edit", data=edit)
    if kind == "screen":
        return state
    return tools.decide(state, "approve")


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.text(max_size=12)),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=2)
    ),
    max_leaves=6,
)
edit_keys = st.sampled_from(
    ["queries", "engines", "date_from", "snowball", "include", "exclude", "reasons", "other"]
)


@PROPERTY
@given(
    kind=st.sampled_from(["plan", "screen", "expand"]),
    action=st.sampled_from(list(DecisionAction)),
    data=st.one_of(st.none(), st.dictionaries(edit_keys, json_values, max_size=3)),
    note=st.one_of(st.none(), st.text(max_size=40)),
)
def test_prop7_every_action_gets_a_valid_response_at_every_checkpoint(
    library: dict[str, int],
    kind: str,
    action: DecisionAction,
    data: dict[str, Any] | None,
    note: str | None,
) -> None:
    tools = Tools()
    state = drive_to(tools, kind)
    assert state["current_checkpoint_kind"] == kind
    # Data is for edit alone; an edit needs data, and only keys its checkpoint knows.
    must_refuse = bool(data) != (action is DecisionAction.EDIT) or bool(
        data and set(data) - EDIT_KEYS[kind]
    )
    try:
        after = tools.decide(state, action.value, data=data, note=note)
    except ToolError as error:  # a structured, actionable error: never a crash
        assert error.code == "invalid_decision", error.body
        assert tools.get(state) == state
    else:
        assert not must_refuse, (action, data)
        assert_valid_state(after)
        assert after["iteration"] == state["iteration"] + 1


# --- PROP-8: session isolation ------------------------------------------------------------------


@PROPERTY
@given(
    queries=st.lists(st.sampled_from(QUESTIONS), min_size=2, max_size=2, unique=True),
    steps=st.lists(decisions, min_size=1, max_size=4),
)
def test_prop8_advancing_one_session_leaves_another_unchanged(
    library: dict[str, int], queries: list[str], steps: list[tuple[str, str, bool]]
) -> None:
    tools = Tools()
    advanced, bystander = (tools.start(query, max_results=10) for query in queries)
    before = tools.get(bystander)
    state = advanced
    for step in steps:
        state = decide(tools, state, step)
    assert tools.get(bystander) == before
    assert tools.get(advanced)["session_id"] != before["session_id"]


# --- PROP-9: monotonic workflow progress -------------------------------------------------------


@PROPERTY
@given(steps=st.lists(decisions, min_size=1, max_size=7), snowball=st.booleans())
def test_prop9_each_decide_advances_the_iteration_or_changes_nothing(
    library: dict[str, int], steps: list[tuple[str, str, bool]], snowball: bool
) -> None:
    tools = Tools()
    state = tools.start(max_results=10)
    for step in steps:
        state = decide(tools, state, step, snowball=snowball)
    decided = ReviewDecision.objects.filter(checkpoint__session_id=state["session_id"])
    assert list(decided.order_by("iteration").values_list("iteration", flat=True)) == list(
        range(1, tools.get(state)["iteration"] + 1)
    )


# --- PROP-10: cleanup safety ---------------------------------------------------------------------


@PROPERTY
@given(steps=st.lists(decisions, max_size=3))
def test_prop10_after_cleanup_the_session_is_not_found(
    library: dict[str, int], steps: list[tuple[str, str, bool]]
) -> None:
    tools = Tools()
    state = tools.start(max_results=10)
    for step in steps:
        state = decide(tools, state, step)
    tools("cleanup_review", session_id=state["session_id"])
    for name, arguments in (
        ("get_session", {}),
        ("decide", {"action": "approve"}),
        ("export_results", {"format": "json"}),
        ("cleanup_review", {}),
    ):
        with pytest.raises(ToolError) as error:
            tools(name, session_id=state["session_id"], **arguments)
        assert error.value.code == "not_found"
    session_id = state["session_id"]
    assert not ReviewCheckpoint.objects.filter(session_id=session_id).exists()
    assert not ReviewCandidate.objects.filter(session_id=session_id).exists()


def test_bad_page_arguments_are_invalid_params(library: dict[str, int]) -> None:
    tools = Tools()
    state = tools.start()
    with pytest.raises(MCPError) as error:
        tools.get(state, limit=0)
    assert error.value.error.code == -32602

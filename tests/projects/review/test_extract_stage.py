"""The review's optional `extract` stage (projects/review/extract_stage.py, docs/REVIEW.md):
chosen in the plan, reached after screening (and after the citation search with
snowball), its checkpoint showing how far extraction is, approve refused without a form or
with a disagreement nobody adjudicated, edit and reject refused; PRISMA 2020's "reports
assessed" and "studies included" from it; the admin's page at that stage.

Through the review tools and the extraction services on a real database; on PostgreSQL +
Redis the steps run on the real Celery worker (scripts/with-celery-worker.sh), hence
transactional tests.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from mcp_endpoint.tools.review import review_prisma_resource
from papers.models import Paper
from projects.models import ReviewCheckpoint, ReviewSession
from projects.review.extraction.services import adjudicate, extract_record, form_create
from projects.review.planning import Plan, plan_edit
from projects.review.prisma import prisma_problems, prisma_svg
from projects.review.workflow import DecisionAction, next_stage
from tests.projects.review.builders import CORPUS, ToolError, Tools, build_library

pytestmark = pytest.mark.django_db(transaction=True)

FIELDS: list[dict[str, Any]] = [
    {"key": "method", "label": "Method", "type": "text", "description": "The model proposed."},
    {"key": "attention", "type": "choice", "choices": ["sparse", "full", "hashing"]},
]
LONGFORMER_QUOTE = CORPUS["longformer"]["abstract"]
BIGBIRD_QUOTE = CORPUS["bigbird"]["abstract"]


@pytest.fixture(autouse=True)
def _quick(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False
    settings.EXTRACTION_STRICT = False


@pytest.fixture
def library(transactional_db: None) -> dict[str, int]:
    return build_library()


@pytest.fixture
def tools() -> Tools:
    return Tools()


def refused(call: Any, *args: Any, **kwargs: Any) -> ToolError:
    with pytest.raises(ToolError) as error:
        call(*args, **kwargs)
    return error.value


def at_extract(tools: Tools, library: dict[str, int]) -> dict[str, Any]:
    """A review with extraction planned, three studies included at screening, waiting at
    its extract checkpoint."""
    state = tools.start(max_results=10)
    assert state["checkpoint"]["payload"]["plan"]["extract"] is False  # off unless chosen
    state = tools.decide(state, "edit", data={"extract": True}, checkpoint=1)
    assert state["current_checkpoint_kind"] == "screen"
    assert state["plan"]["extract"] is True  # shown past the plan checkpoint
    included = [library["longformer"], library["bigbird"], library["reformer"]]
    state = tools.decide(state, "edit", data={"include": included}, checkpoint=2)
    assert state["state"] == "waiting" and state["stage"] == "extract", state
    assert state["current_checkpoint_kind"] == "extract"
    return state


# --- the workflow ------------------------------------------------------------------------------


def test_the_extract_checkpoint_holds_the_review_until_disagreements_are_adjudicated(
    tools: Tools, library: dict[str, int]
) -> None:
    state = at_extract(tools, library)
    session_id = state["session_id"]
    checkpoint = state["checkpoint"]
    assert checkpoint["sequence"] == 3
    # Null fields are left out of answers: no form, no agreement yet.
    assert checkpoint["payload"] == {
        "create_form": checkpoint["payload"]["create_form"],
        "studies": {"included": 3, "complete": 0, "partly": 0, "not_started": 3},
        "flagged": 0,
        "disagreements_unresolved": 0,
    }
    assert "extraction_form" in checkpoint["payload"]["create_form"]
    assert "extraction_form" in state["next"] and "extract_record" in state["next"]
    assert set(checkpoint["actions"]) == {"approve", "edit", "reject"}

    # No form: approve is refused and changes nothing; edit and reject never go through.
    error = refused(tools.decide, state, "approve", checkpoint=3)
    assert error.code == "invalid_decision" and "No extraction form" in error.body["message"]
    assert tools.get(state) == state
    for action, extra in (("reject", {"note": "wrong studies"}), ("edit", {"data": {"a": 1}})):
        error = refused(tools.decide, state, action, checkpoint=3, **extra)
        assert error.code == "invalid_decision", error.body
        assert "approve only" in error.body["message"]
    assert tools.get(state) == state

    # Two extractors: one study complete (they disagree on one field), one partly, one not.
    form_create(session_id=session_id, name="Study data", fields=FIELDS)
    longformer, bigbird = library["longformer"], library["bigbird"]
    for agent, attention in (("claude", "sparse"), ("gpt", "full")):
        extract_record(
            session_id=session_id, paper=longformer, agent=agent,
            values={
                "method": {"value": "Longformer", "quote": LONGFORMER_QUOTE},
                "attention": {"value": attention, "quote": LONGFORMER_QUOTE},
            },
        )  # fmt: skip
    extract_record(
        session_id=session_id, paper=bigbird, agent="claude",
        values={"method": {"value": "Big Bird", "quote": BIGBIRD_QUOTE}},
    )  # fmt: skip
    state = tools.get(state)
    payload = state["checkpoint"]["payload"]
    assert payload["form"] == {
        "name": "Study data",
        "version": 1,
        "fields": ["method", "attention"],
    }
    assert "create_form" not in payload and "extraction_form" not in state["next"]
    assert payload["studies"] == {"included": 3, "complete": 1, "partly": 1, "not_started": 1}
    # Quotes found in the abstract only (no PDF) are flagged: the agreed method of
    # Longformer and Big Bird's; the disagreement is counted as such, not as flagged.
    assert payload["flagged"] == 2
    assert payload["disagreements_unresolved"] == 1
    assert payload["agreement"] == {
        "extractors": ["agent:claude", "agent:gpt"], "compared": 2, "agreed": 1, "share": 0.5,
    }  # fmt: skip
    stored = ReviewCheckpoint.objects.get(session_id=session_id, sequence=3).payload
    assert stored["form"] is None  # the payload as raised; get_session shows it as it is now

    error = refused(tools.decide, state, "approve", checkpoint=3)
    assert error.code == "invalid_decision" and error.body["disagreements"] == 1
    assert "adjudicate" in error.body["message"]
    assert tools.get(state) == state

    adjudicate(
        session_id=session_id, paper=longformer, field="attention", value="sparse",
        reason="The abstract says sparse attention.", agent="lead",
    )  # fmt: skip
    state = tools.get(state)
    assert state["checkpoint"]["payload"]["disagreements_unresolved"] == 0
    done = tools.decide(state, "approve", checkpoint=3)
    assert done["is_complete"] and done["stage"] == "complete"
    assert [d["kind"] for d in done["decisions"]] == ["plan", "screen", "extract"]
    papers = Paper.objects.filter(project_links__project_id=done["project_id"])
    assert set(papers.values_list("pk", flat=True)) == {longformer, bigbird, library["reformer"]}

    # PRISMA: the reports assessed are the studies with data extracted.
    flow = done["prisma"]
    assert prisma_problems(flow) == []
    databases = flow["databases"]
    assert databases["sought"] == 3
    assert databases["assessed"] == 2 and databases["not_assessed"] == 1
    assert flow["included"] == 2 and flow["reports"] == 2
    texts = svg_texts(review_prisma_resource(done["session_id"]))
    assert "Reports assessed for eligibility (n = 2)" in texts
    assert "Reports not assessed (n = 1)" in texts
    assert "Studies included in review (n = 2)" in texts


def test_without_extraction_screening_completes_the_review_as_before(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start(max_results=10)
    state = tools.decide(state, "approve")
    assert state["plan"]["extract"] is False
    state = tools.decide(state, "approve")
    assert state["is_complete"] and [d["kind"] for d in state["decisions"]] == ["plan", "screen"]
    flow = state["prisma"]
    assert "assessed" not in flow["databases"] and prisma_problems(flow) == []
    assert flow["included"] == flow["databases"]["sought"] == state["counts"]["included_total"]
    texts = svg_texts(review_prisma_resource(state["session_id"]))
    assert not any(text.startswith("Reports assessed") for text in texts)


def test_with_snowball_the_extract_stage_follows_the_citation_search(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start(max_results=10)
    edit = {"queries": ["sparse attention"], "snowball": True, "extract": True}
    state = tools.decide(state, "edit", data=edit)
    state = tools.decide(state, "approve")
    assert state["current_checkpoint_kind"] == "expand"
    state = tools.decide(state, "approve")
    assert state["current_checkpoint_kind"] == "extract"
    # The studies included at screening and by the citation search (Zebra, Coral).
    counts = state["counts"]
    assert counts["citation_search"]["included"] == 2
    assert state["checkpoint"]["payload"]["studies"]["included"] == counts["included_total"]
    flow = state["prisma"]
    assert flow["other_methods"]["assessed"] == 0 and flow["other_methods"]["not_assessed"] == 2
    assert flow["included"] == 0 and prisma_problems(flow) == []


def test_a_citation_search_finding_nothing_goes_straight_to_extract(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start(max_results=10)
    edit = {"queries": ['"locality-sensitive hashing"'], "snowball": True, "extract": True}
    state = tools.decide(state, "edit", data=edit)
    state = tools.decide(state, "approve")  # the expand step finds no paper citing Reformer
    assert state["current_checkpoint_kind"] == "extract", state
    assert state["checkpoint"]["payload"]["studies"]["included"] == 1


def test_with_no_study_included_there_is_nothing_to_extract(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start(max_results=10)
    state = tools.decide(state, "edit", data={"extract": True})
    state = tools.decide(state, "edit", data={"include": []})
    assert state["is_complete"] and state["counts"]["included_total"] == 0
    assert state["prisma"]["included"] == 0 and prisma_problems(state["prisma"]) == []


# --- the plan ---------------------------------------------------------------------------------


def test_the_plan_edit_turns_extraction_on_and_off() -> None:
    plan = Plan(queries=["q"], engines=["local"], date_from=None, date_to=None, criteria=[])
    assert plan.extract is False
    on = plan_edit(plan, {"extract": True}, engines_allowed=["local"])
    assert on.extract is True and on.queries == ["q"]
    assert plan_edit(on, {"extract": False}, engines_allowed=["local"]).extract is False
    for bad in ("yes", 1, None):
        with pytest.raises(ValueError, match="extract must be true or false"):
            plan_edit(plan, {"extract": bad}, engines_allowed=["local"])
    # A plan stored before the option existed reads as without extraction.
    stored = plan.as_dict()
    del stored["extract"]
    assert Plan.from_dict(stored).extract is False


def test_a_bad_extract_value_at_the_plan_checkpoint_is_refused(
    tools: Tools, library: dict[str, int]
) -> None:
    state = tools.start(max_results=10)
    assert "extract" in state["checkpoint"]["payload"]["editable"]
    assert "extract" in state["checkpoint"]["actions"]["edit"]
    error = refused(tools.decide, state, "edit", data={"extract": "yes"})
    assert (
        error.code == "invalid_decision"
        and "extract must be true or false" in error.body["message"]
    )
    assert tools.get(state) == state


@pytest.mark.parametrize(
    ("kind", "action", "snowball", "stage"),
    [
        ("screen", "approve", False, "extract"),
        ("screen", "edit", False, "extract"),
        ("screen", "approve", True, "expand"),
        ("screen", "reject", False, "plan"),
        ("expand", "approve", True, "extract"),
        ("expand", "reject", True, "extract"),
        ("extract", "approve", False, "complete"),
        ("plan", "approve", False, "search"),
    ],
)
def test_with_extraction_screening_leads_to_extract(
    kind: str, action: str, snowball: bool, stage: str
) -> None:
    assert next_stage(kind, DecisionAction(action), snowball=snowball, extract=True) == stage


# --- PRISMA -------------------------------------------------------------------------------------

COLUMN: dict[str, Any] = {
    "identified": {"arxiv": 40}, "identified_total": 40, "duplicates_removed": 10,
    "versions_grouped": 2, "outside_date_range": 5, "over_limit": 3, "screened": 22,
    "pending": 2, "excluded": 10, "excluded_reasons": {"off topic": 10}, "sought": 10,
    "not_retrieved": 3,
}  # fmt: skip
OTHER: dict[str, Any] = {
    **COLUMN, "identified": {"openalex": 12}, "identified_total": 12, "duplicates_removed": 2,
    "outside_date_range": 0, "over_limit": 0, "screened": 10, "pending": 0, "excluded": 7,
    "excluded_reasons": {"off topic": 7}, "sought": 3, "not_retrieved": 1,
}  # fmt: skip
FLOW: dict[str, Any] = {
    "databases": COLUMN, "other_methods": OTHER, "included": 13, "reports": 15,
    "diagram": "review://x/prisma.svg",
}  # fmt: skip


def svg_texts(svg: str) -> list[str]:
    root = ET.fromstring(svg.encode())  # noqa: S314 - our own SVG
    return [text.text or "" for text in root.iter("{http://www.w3.org/2000/svg}text")]


def extracted_flow() -> dict[str, Any]:
    return {
        **FLOW,
        "databases": {**FLOW["databases"], "assessed": 8, "not_assessed": 2},
        "other_methods": {**FLOW["other_methods"], "assessed": 3, "not_assessed": 0},
        "included": 11,
        "reports": 12,
    }


def test_the_assessed_counts_are_checked_and_drawn() -> None:
    flow = extracted_flow()
    assert prisma_problems(flow) == []
    assert prisma_problems({**flow, "included": 10}) == ["included = sum(assessed)"]
    bad = {**flow, "databases": {**flow["databases"], "not_assessed": 1}}
    assert prisma_problems(bad) == ["databases: sought = assessed + not_assessed"]
    assert "databases: sought = assessed + not_assessed" in prisma_problems(
        {**flow, "databases": {**flow["databases"], "assessed": -1, "not_assessed": 11}}
    )
    # Without the extract stage, included is the reports sought.
    plain = {**FLOW, "included": 13, "reports": 15}
    assert prisma_problems(plain) == []
    texts = svg_texts(prisma_svg(flow))
    for line in (
        "Reports sought for retrieval (n = 10)", "Reports not retrieved (n = 3)",
        "Reports assessed for eligibility (n = 8)", "Reports not assessed (n = 2)",
        "Reports assessed for eligibility (n = 3)", "Reports not assessed (n = 0)",
        "Studies included in review (n = 11)", "Reports of included studies (n = 12)",
    ):  # fmt: skip
        assert line in texts, line


# --- the admin ----------------------------------------------------------------------------------


def test_the_admin_shows_the_extract_stage_and_decides_through_the_same_rules(
    admin_client: Client, tools: Tools, library: dict[str, int]
) -> None:
    state = at_extract(tools, library)
    session = ReviewSession.objects.get(pk=state["session_id"])
    listed = admin_client.get(reverse("admin:projects_reviewsession_changelist"))
    assert listed.status_code == 200 and "#3 extract" in listed.content.decode()
    url = reverse("admin:projects_reviewsession_change", args=[session.pk])
    page = admin_client.get(url).content.decode()
    assert '<div class="readonly">Extract</div>' in page  # the stage's label
    assert "No extraction form yet" in page
    assert "0 complete, 0 partly extracted, 3 not started" in page
    assert 'name="action"' in page and 'name="edit_data"' not in page

    response = admin_client.post(url, {"action": "approve", "checkpoint": 3}, follow=True)
    assert "No extraction form" in response.content.decode()
    session.refresh_from_db()
    assert session.stage == "extract" and session.status == "waiting"

    form_create(session_id=session.pk, name="Study data", fields=FIELDS)
    page = admin_client.get(url).content.decode()
    assert "Study data (version 1): method, attention" in page
    response = admin_client.post(url, {"action": "approve", "checkpoint": 3})
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.status == "complete" and session.stage == "complete"
    decision = session.checkpoints.get(sequence=3).decision
    assert decision.action == "approve" and decision.decided_by == "admin:admin"

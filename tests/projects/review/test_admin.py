"""Reviews in the admin: listed with state and checkpoints, decided on the review's page
through the same service as MCP's `decide`, removed through cleanup."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from projects.models import ReviewDecision, ReviewSession
from projects.review import services
from tests.projects.review.builders import LONG_DOCS, build_library

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _quick(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False


@pytest.fixture
def library(transactional_db: None) -> dict[str, int]:
    return build_library()


def started(**arguments: Any) -> ReviewSession:
    session = services.review_start(query=LONG_DOCS, max_results=10, **arguments)
    return waited(session)


def waited(session: ReviewSession) -> ReviewSession:
    services.review_wait(session_id=str(session.pk), timeout=20)
    session.refresh_from_db()
    return session


def change_url(session: ReviewSession) -> str:
    return reverse("admin:projects_reviewsession_change", args=[session.pk])


def test_reviews_are_listed_with_state_and_pending_checkpoint(
    admin_client: Client, library: dict[str, int]
) -> None:
    started()
    response = admin_client.get(reverse("admin:projects_reviewsession_changelist"))
    assert response.status_code == 200
    text = response.content.decode()
    assert LONG_DOCS in text and "#1 plan" in text and "waiting" in text


def test_a_person_decides_in_the_browser(admin_client: Client, library: dict[str, int]) -> None:
    session = started()
    page = admin_client.get(change_url(session)).content.decode()
    assert "transformers handle long documents" in page  # the proposed plan
    assert 'name="action"' in page and 'name="exclude"' not in page

    response = admin_client.post(change_url(session), {"action": "approve", "checkpoint": 1})
    assert response.status_code == 302
    session = waited(session)
    assert session.stage == "screen" and session.status == "waiting"
    page = admin_client.get(change_url(session)).content.decode()
    assert "Longformer: The Long-Document Transformer" in page and 'name="exclude"' in page

    reformer = library["reformer"]
    response = admin_client.post(
        change_url(session),
        {"action": "edit", "exclude": [str(reformer)], "exclude_reason": "about efficiency",
         "note": "done here", "checkpoint": 2},
    )  # fmt: skip
    assert response.status_code == 302
    session.refresh_from_db()
    assert session.status == "complete" and session.project_id
    decision = ReviewDecision.objects.get(checkpoint__session=session, checkpoint__sequence=2)
    assert decision.decided_by == "admin:admin" and decision.note == "done here"
    assert decision.data == {"exclude": [reformer], "reasons": {str(reformer): "about efficiency"}}
    candidate = session.candidates.get(paper_id=reformer)
    assert candidate.status == "excluded" and candidate.reason == "about efficiency"
    page = admin_client.get(change_url(session)).content.decode()
    assert "done here" in page and 'name="action"' not in page


def test_a_stale_page_does_not_answer_the_next_checkpoint(
    admin_client: Client, library: dict[str, int]
) -> None:
    session = started()
    services.review_decide(session_id=str(session.pk), action="approve")  # the agent was faster
    session = waited(session)
    response = admin_client.post(
        change_url(session), {"action": "approve", "checkpoint": 1}, follow=True
    )
    assert "no longer waiting" in response.content.decode()
    session.refresh_from_db()
    assert session.stage == "screen" and session.iteration == 1


def test_remove_action_cleans_up_reviews(admin_client: Client, library: dict[str, int]) -> None:
    session = started()
    response = admin_client.post(
        reverse("admin:projects_reviewsession_changelist"),
        {"action": "remove_reviews", "_selected_action": [str(session.pk)]},
    )
    assert response.status_code == 302
    assert not ReviewSession.objects.exists()


def test_sources_not_reached_are_shown_as_such_not_as_zero(
    admin_client: Client, library: dict[str, int]
) -> None:
    session = started()
    failure = {"outcome": "unreachable", "reason": "dns", "message": "arXiv: no network"}
    session.identification = {
        "search": {
            "identified": {"local": 3},
            "not_reached": {"arxiv": "unreachable"},
            "sources": {
                "local": {"outcome": "ok", "searches": 2, "failed": 0},
                "arxiv": {
                    "outcome": "unreachable", "searches": 2, "failed": 2, "last_failure": failure
                },
            },
            "identified_total": 3,
        }
    }  # fmt: skip
    session.save(update_fields=["identification"])
    page = admin_client.get(change_url(session)).content.decode()
    assert "Sources not reached" in page
    assert "arxiv: unreachable (arXiv: no network)" in page


# --- starting a review from the form, and the plan as fields ---------------------------------

START = "admin:projects_reviewsession_add"


def plan_fields(session: ReviewSession, **changes: Any) -> dict[str, Any]:
    """The plan form as the page shows it (the stored plan), with `changes`."""
    plan = session.plan
    fields = {
        "queries": "\r\n".join(plan["queries"]),
        "engines": plan["engines"],
        "date_from": plan["date_from"] or "",
        "date_to": plan["date_to"] or "",
        "criteria": "\r\n".join(plan["criteria"]),
        "snowball_direction": plan["snowball_direction"],
        "plan_form": "1",
        "checkpoint": 1,
        **{flag: "on" for flag in ("snowball", "extract") if plan[flag]},
    }
    return {**fields, **changes}


def test_a_review_is_started_from_the_form_with_the_plan_choices_carried(
    admin_client: Client, library: dict[str, int]
) -> None:
    listing = admin_client.get(reverse("admin:projects_reviewsession_changelist"))
    assert "Start a review" in listing.content.decode()
    page = admin_client.get(reverse(START)).content.decode()
    assert 'name="query"' in page and 'value="local"' in page and 'name="extract"' in page
    response = admin_client.post(reverse(START), {
        "query": LONG_DOCS, "domain": "cs", "engines": ["local"], "max_results": 10,
        "criteria": "About long documents\r\n\r\nIn English ", "extract": "on",
    })  # fmt: skip
    assert response.status_code == 302
    session = ReviewSession.objects.get()
    assert (session.query, session.domain, session.max_results) == (LONG_DOCS, "cs", 10)
    assert response["Location"] == (
        change_url(session) + "?engines=local&criteria=About+long+documents%0AIn+English&extract=on"
    )
    session = waited(session)
    assert session.plan["extract"] is False  # nothing is decided before the person sees it

    page = admin_client.get(response["Location"]).content.decode()
    assert "Filled in from your start form: sources, criteria, extract" in page
    assert 'id="id_criteria">\nAbout long documents\nIn English</textarea>' in page
    assert re.search(r'<input type="checkbox" name="extract"[^>]* checked>', page)
    shown = plan_fields(session, engines=["local"], extract="on",
                        criteria="About long documents\r\nIn English")  # fmt: skip
    admin_client.post(response["Location"], {**shown, "action": "approve"})
    decision = ReviewDecision.objects.get(checkpoint__session=session)
    assert decision.action == "edit" and decision.decided_by == "admin:admin"
    assert decision.data["criteria"] == ["About long documents", "In English"]
    assert decision.data["extract"] is True and "queries" not in decision.data
    session.refresh_from_db()
    assert session.plan["extract"] is True and session.plan["engines"] == ["local"]


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"query": ""}, "This field is required."),
        ({"query": "?? !!"}, "The question has no words to search for."),
        ({"max_results": 101}, "less than or equal to 100"),
        ({"engines": ["nope"]}, "Select a valid choice."),
    ],
)
def test_the_start_form_says_what_is_wrong(
    admin_client: Client, library: dict[str, int], fields: dict[str, Any], error: str
) -> None:
    data = {"query": LONG_DOCS, "domain": "general", "max_results": 10, **fields}
    response = admin_client.post(reverse(START), data)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert not ReviewSession.objects.exists()


def test_the_plan_is_approved_as_proposed_or_edited_as_fields(
    admin_client: Client, library: dict[str, int]
) -> None:
    session = started()
    page = admin_client.get(change_url(session)).content.decode()
    assert "Decide: the plan" in page and 'name="edit_data"' not in page
    assert 'name="queries"' in page and 'type="checkbox" name="engines" value="local"' in page
    admin_client.post(change_url(session), {**plan_fields(session), "action": "approve"})
    decision = ReviewDecision.objects.get(checkpoint__session=session)
    assert decision.action == "approve" and not decision.data

    session = started()
    edited = plan_fields(session, queries='"long documents"\r\ntransformers', date_from="2019",
                         snowball="on", note="narrower")  # fmt: skip
    response = admin_client.post(change_url(session), {**edited, "action": "approve"}, follow=True)
    assert "Decision recorded: edit (queries, date_from, snowball)." in response.content.decode()
    decision = ReviewDecision.objects.get(checkpoint__session=session)
    assert (decision.action, decision.note) == ("edit", "narrower")
    assert decision.data == {
        "queries": ['"long documents"', "transformers"], "date_from": "2019", "snowball": True,
    }  # fmt: skip
    session.refresh_from_db()
    assert session.plan["queries"] == ['"long documents"', "transformers"]


@pytest.mark.parametrize(
    ("changes", "error"),
    [
        ({"queries": "long AND"}, "AND needs a term after it."),
        ({"queries": ""}, "queries needs at least one query."),
        ({"engines": []}, "engines needs at least one engine."),
        ({"date_from": "19"}, "date_from must be YYYY, YYYY-MM or YYYY-MM-DD"),
        ({"date_from": "2020", "date_to": "2019"}, "date_from is after date_to."),
    ],
)
def test_a_bad_plan_is_shown_with_its_error_and_nothing_is_decided(
    admin_client: Client, library: dict[str, int], changes: dict[str, Any], error: str
) -> None:
    session = started()
    response = admin_client.post(
        change_url(session), {**plan_fields(session, **changes), "action": "approve"}
    )
    assert response.status_code == 200  # the form again, with what was typed
    page = response.content.decode()
    assert error in page and "errornote" in page
    assert not ReviewDecision.objects.exists()


def test_rejecting_the_plan_plans_again_with_the_note(
    admin_client: Client, library: dict[str, int]
) -> None:
    session = started()
    fields = plan_fields(session, note='only "sparse attention"')
    admin_client.post(change_url(session), {**fields, "action": "reject"})
    session = waited(session)
    assert session.round == 2 and session.stage == "plan"
    assert '"sparse attention"' in session.plan["queries"]

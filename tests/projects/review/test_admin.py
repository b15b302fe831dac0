"""Reviews in the admin: listed with state and checkpoints, decided on the review's page
through the same service as MCP's `decide`, removed through cleanup."""

from __future__ import annotations

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

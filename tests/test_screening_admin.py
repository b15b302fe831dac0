"""The review admin's "next to screen" (issue 23): the order screen_next gives, with the
stopping rule's estimated recall, on the page of a review waiting at its screen checkpoint."""

from __future__ import annotations

from typing import Any

import pytest
from django.test import Client
from django.urls import reverse

from projects.models import ReviewSession
from projects.review import services
from projects.review.screening import screening_decide
from tests.test_review_workflow import LONG_DOCS, build_library

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _quick(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False


def test_the_review_page_shows_the_next_records_and_the_stopping_rule(
    admin_client: Client, transactional_db: None
) -> None:
    ids = build_library()
    session = services.review_start(query=LONG_DOCS, max_results=10)
    services.review_wait(session_id=str(session.pk), timeout=20)
    url = reverse("admin:projects_reviewsession_change", args=[session.pk])
    assert "Next to screen" not in admin_client.get(url).content.decode()  # at plan

    services.review_decide(session_id=str(session.pk), action="approve")
    services.review_wait(session_id=str(session.pk), timeout=20)
    page = admin_client.get(url).content.decode()
    assert "Next to screen" in page and "search rank (no decisions yet)" in page
    assert "safe to stop: no" in page

    screening_decide(session_id=session.pk, decided_by="admin:ann", decisions=[
        {"paper": ids["longformer"], "decision": "include"},
        {"paper": ids["shannon"], "decision": "exclude"},
    ])  # fmt: skip
    page = admin_client.get(url).content.decode()
    assert "model score" in page and "estimated recall at least" in page
    assert ReviewSession.objects.get(pk=session.pk).status == "waiting"

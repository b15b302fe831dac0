"""Who decided what, in the admin (issue 39 item 4): a review's page names each
checkpoint decision's person and client, and lists the screeners with the people behind
them and Cohen's kappa between them."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.urls import reverse

from core.identity import Principal, acting_as
from projects.models import ReviewCandidate, ReviewDecision
from projects.review import services
from projects.review.screening import screening_decide
from tests.projects.review.builders import LONG_DOCS, build_library


@pytest.fixture(autouse=True)
def _quick(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False


def token(user: User) -> Any:
    return acting_as(Principal.for_user(user, "api-token", client=f"API token {user}-laptop"))


def test_the_review_page_names_people_and_clients(transactional_db: None) -> None:
    build_library()
    alice = User.objects.create_user("alice")
    bob = User.objects.create_user("bob")
    with token(alice):
        session = services.review_start(query=LONG_DOCS, max_results=10)
        services.review_wait(session_id=str(session.pk), timeout=20)
        services.review_decide(session_id=str(session.pk), action="approve")
    services.review_wait(session_id=str(session.pk), timeout=20)
    session.refresh_from_db()
    assert session.stage == "screen"
    papers = list(
        ReviewCandidate.objects.filter(session=session, source="search")
        .order_by("rank")
        .values_list("paper_id", flat=True)[:4]
    )
    with token(alice):
        screening_decide(session_id=session.pk, decisions=[
            {"paper": p, "decision": "include"} for p in papers])  # fmt: skip
    with token(bob):
        answer = screening_decide(session_id=session.pk, decisions=[
            {"paper": p, "decision": "include" if n % 2 else "exclude", "reason": "off"}
            for n, p in enumerate(papers)])  # fmt: skip
    # Two screeners with as many votes each: their order is the database's (JSON keys).
    assert sorted(answer["agreement"]["compared"]) == ["user:alice", "user:bob"]

    decision = ReviewDecision.objects.get(checkpoint__session=session)
    assert (decision.decided_by, decision.user, decision.client) == (
        "user:alice",
        alice,
        "API token alice-laptop",
    )
    first = ReviewCandidate.objects.get(session=session, paper_id=papers[0])
    assert first.screened_by_user == alice and first.screened_by == "user:alice"
    assert first.voters["user:bob"]["client"] == "API token bob-laptop"

    admin = User.objects.create_superuser("root", "root@example.org", "pw")
    client = Client()
    client.force_login(admin)
    page = client.get(reverse("admin:projects_reviewsession_change", args=[session.pk]))
    text = page.content.decode()
    assert "user:alice (alice, API token alice-laptop)" in text
    assert "<td>user:bob</td><td>bob</td><td>API token bob-laptop</td>" in text
    assert any(
        f"kappa {a} vs {b}: 0.0 over 4 records both screened" in text
        for a, b in (("user:alice", "user:bob"), ("user:bob", "user:alice"))
    )

"""The review admin's "next to screen" (issue 23): the order screen_next gives, with the
stopping rule's estimated recall, on the page of a review waiting at its screen checkpoint;
a person includes or excludes each record with a button (CSRF-protected, the change
permission required, refused in read-only mode) and resolves the screeners' disagreements."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from projects.models import ReviewCandidate, ReviewSession
from projects.review import services
from projects.review.screening import screening_decide
from tests.projects.review.builders import LONG_DOCS, build_library

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


@pytest.fixture
def review_at_screen(transactional_db: None) -> tuple[ReviewSession, dict[str, int]]:
    ids = build_library()
    session = services.review_start(query=LONG_DOCS, max_results=10)
    services.review_wait(session_id=str(session.pk), timeout=20)
    services.review_decide(session_id=str(session.pk), action="approve")
    services.review_wait(session_id=str(session.pk), timeout=20)
    session.refresh_from_db()
    assert session.stage == "screen" and session.status == "waiting"
    return session, ids


def csrf_token(page: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert found, page[:300]
    return found.group(1)


def candidate(session: ReviewSession, paper_id: int) -> ReviewCandidate:
    return ReviewCandidate.objects.get(session=session, paper_id=paper_id)


def test_a_person_includes_and_excludes_records_one_by_one_with_buttons(
    admin_user: User, review_at_screen: tuple[ReviewSession, dict[str, int]]
) -> None:
    session, ids = review_at_screen
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    url = reverse("admin:projects_reviewsession_change", args=[session.pk])
    screen = reverse("admin:projects_reviewsession_screen", args=[session.pk])
    page = browser.get(url).content.decode()
    # Each shown record has its buttons, in a form of their own posting to the screen view.
    assert f'value="include:{ids["longformer"]}"' in page
    assert f'value="exclude:{ids["shannon"]}"' in page
    assert f'<form id="screening-form" method="post" action="{screen}">' in page
    assert page.index("Next to screen") < page.index('name="action"')  # before "Decide"

    # Without the CSRF token the post is refused and nothing is recorded.
    refused = browser.post(screen, {"screen": f"include:{ids['longformer']}"})
    assert refused.status_code == 403
    assert candidate(session, ids["longformer"]).status == "pending"

    token = csrf_token(page)
    answer = browser.post(screen, {"csrfmiddlewaretoken": token,
                                   "screen": f"include:{ids['longformer']}"})  # fmt: skip
    assert answer.status_code == 302 and answer["Location"] == url
    answer = browser.post(screen, {"csrfmiddlewaretoken": token,
                                   "screen": f"exclude:{ids['shannon']}",
                                   f"reason-{ids['shannon']}": "  information theory, 1948 "},
                          follow=True)  # fmt: skip
    assert "Recorded: exclude" in answer.content.decode()
    included, excluded = candidate(session, ids["longformer"]), candidate(session, ids["shannon"])
    assert (included.status, included.screened_by, included.screened_order) == (
        "included",
        "admin:admin",
        1,
    )
    assert (excluded.status, excluded.reason, excluded.votes) == (
        "excluded",
        "information theory, 1948",
        {"admin:admin": "exclude"},
    )
    page = answer.content.decode()
    assert "model score" in page and f'value="include:{ids["shannon"]}"' not in page

    # Twice on one record, or no record at all: a message, nothing recorded.
    again = browser.post(screen, {"csrfmiddlewaretoken": token,
                                  "screen": f"include:{ids['shannon']}"}, follow=True)  # fmt: skip
    assert "already screened by admin:admin" in again.content.decode()
    assert candidate(session, ids["shannon"]).status == "excluded"
    bad = browser.post(screen, {"csrfmiddlewaretoken": token, "screen": "maybe:x"}, follow=True)
    assert "Choose include or exclude" in bad.content.decode()
    assert browser.get(screen).status_code == 405
    assert ReviewSession.objects.get(pk=session.pk).iteration == 1  # no checkpoint decided


def test_deciding_needs_the_change_permission_and_a_writable_server(
    review_at_screen: tuple[ReviewSession, dict[str, int]], settings: Any
) -> None:
    session, ids = review_at_screen
    viewer = User.objects.create_user("vera", password="x", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_reviewsession"))
    browser = Client()
    browser.force_login(viewer)
    url = reverse("admin:projects_reviewsession_change", args=[session.pk])
    screen = reverse("admin:projects_reviewsession_screen", args=[session.pk])
    page = browser.get(url).content.decode()
    assert "Next to screen" in page and "not decide" in page
    assert "include:" not in page and "screening-form" not in page
    assert browser.post(screen, {"screen": f"include:{ids['longformer']}"}).status_code == 403
    assert candidate(session, ids["longformer"]).status == "pending"

    settings.MCP_READ_ONLY = True
    admin_browser = Client()
    admin_browser.force_login(User.objects.create_superuser("root", password="x"))
    page = admin_browser.get(url).content.decode()
    assert "read-only" in page and "include:" not in page
    answer = admin_browser.post(screen, {"screen": f"include:{ids['longformer']}"}, follow=True)
    assert "This server is read-only." in answer.content.decode()
    assert candidate(session, ids["longformer"]).status == "pending"


def test_disagreements_are_listed_and_resolved_in_the_admin(
    admin_client: Client, review_at_screen: tuple[ReviewSession, dict[str, int]]
) -> None:
    session, ids = review_at_screen
    paper = ids["reformer"]
    screening_decide(session_id=session.pk, decided_by="agent",
                     decisions=[{"paper": paper, "decision": "include"}])  # fmt: skip
    exclude = {"paper": paper, "decision": "exclude", "reason": "hashing"}
    screening_decide(session_id=session.pk, decided_by="admin:ann", decisions=[exclude])
    url = reverse("admin:projects_reviewsession_change", args=[session.pk])
    screen = reverse("admin:projects_reviewsession_screen", args=[session.pk])
    page = admin_client.get(url).content.decode()
    assert "Disagreements: 1, unresolved: 1" in page
    # One record, one include and one exclude: observed 0, chance 1 * 0 + 0 * 1; kappa 0.
    assert "Both screened 1, agreed on 0; Cohen's kappa 0.0." in page
    assert "agent: include; admin:ann: exclude" in page
    assert f'name="resolve" value="exclude:{paper}"' in page
    # Closing the checkpoint is refused with the reason while it is unresolved.
    refused = admin_client.post(url, {"action": "approve", "checkpoint": 2}, follow=True)
    assert "1 screening disagreements are unresolved" in refused.content.decode()
    assert ReviewSession.objects.get(pk=session.pk).status == "waiting"

    no_reason = admin_client.post(screen, {"resolve": f"exclude:{paper}"}, follow=True)
    assert "needs a reason" in no_reason.content.decode()
    assert candidate(session, paper).status == "included"  # the first decision, for now
    done = admin_client.post(screen, {"resolve": f"exclude:{paper}",
                                      f"resolve-reason-{paper}": "hashing, not sparse attention"},
                             follow=True)  # fmt: skip
    page = done.content.decode()
    assert "Resolved: exclude" in page and "unresolved: 0" in page
    assert "hashing, not sparse attention" in page  # the resolutions table: who and why
    resolved = candidate(session, paper)
    assert (resolved.status, resolved.reason) == ("excluded", "hashing, not sparse attention")
    assert resolved.votes["_resolution"]["by"] == "admin:admin"
    services.review_decide(session_id=str(session.pk), action="approve", expected_sequence=2)
    assert ReviewSession.objects.get(pk=session.pk).status == "complete"

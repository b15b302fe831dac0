"""The screening panel on a review's page (projects/review/screening_views.py): one record at
a time in the order screen_next gives, with progress and the stopping rule's estimate; its
plain form (no JavaScript) records a decision by the paper's title, CSRF-protected, with the
change permission, refused in read-only mode; the screeners' disagreements side by side,
each resolved with a reason. The JSON endpoint is tested in test_screening_views.py."""

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
from tests.projects.review.builders import CORPUS, LONG_DOCS, build_library

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture(autouse=True)
def _quick(settings: Any) -> None:
    settings.EMBEDDINGS_ENABLED = False


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


def change_url(session: ReviewSession) -> str:
    return reverse("admin:projects_reviewsession_change", args=[session.pk])


def screen_url(session: ReviewSession) -> str:
    return reverse("admin:projects_reviewsession_screen", args=[session.pk])


def csrf_token(page: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert found, page[:300]
    return found.group(1)


def shown_paper(page: str) -> int:
    found = re.search(r'id="screening-record" class="screening-record" data-paper="(\d+)"', page)
    assert found, "no record shown"
    return int(found.group(1))


def candidate(session: ReviewSession, paper_id: int) -> ReviewCandidate:
    return ReviewCandidate.objects.get(session=session, paper_id=paper_id)


def test_the_panel_shows_one_record_with_progress_and_the_stopping_rule(
    admin_client: Client, transactional_db: None
) -> None:
    ids = build_library()
    session = services.review_start(query=LONG_DOCS, max_results=10)
    services.review_wait(session_id=str(session.pk), timeout=20)
    assert "screening-panel" not in admin_client.get(change_url(session)).content.decode()

    services.review_decide(session_id=str(session.pk), action="approve")
    services.review_wait(session_id=str(session.pk), timeout=20)
    page = admin_client.get(change_url(session)).content.decode()
    total = session.candidates.count()
    assert f"Screened 0 of {total}" in page and "search rank (no decisions yet)" in page
    assert "safe to stop: <strong>no</strong>" in page
    first = shown_paper(page)
    assert page.count('name="screen" value="include:') == 1  # one record, not a list
    by_id = {paper_id: name for name, paper_id in ids.items()}
    record: dict[str, Any] = CORPUS[by_id[first]]
    for shown in (record["title"], record["authors"][0], str(record["year"]), record["abstract"]):
        assert shown in page
    # The record panel comes before the decision and the figures.
    assert page.index('id="screening-record"') < page.index('name="action"')
    assert page.index('id="screening-record"') < page.index('id="review-figures"')

    screening_decide(session_id=session.pk, decided_by="admin:ann", decisions=[
        {"paper": ids["longformer"], "decision": "include"},
        {"paper": ids["shannon"], "decision": "exclude"},
    ])  # fmt: skip
    page = admin_client.get(change_url(session)).content.decode()
    assert f"Screened 2 of {total}" in page and "1 included, 1 excluded" in page
    assert "estimated recall at least" in page
    assert "Finish screening: keep the 2 decisions" in page
    assert ReviewSession.objects.get(pk=session.pk).status == "waiting"


def test_the_plain_form_records_a_decision_named_by_its_title(
    admin_user: User, review_at_screen: tuple[ReviewSession, dict[str, int]]
) -> None:
    session, ids = review_at_screen
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    page = browser.get(change_url(session)).content.decode()
    assert f'<form id="screening-form" method="post" action="{screen_url(session)}">' in page
    first = shown_paper(page)

    # Without the CSRF token the post is refused and nothing is recorded.
    refused = browser.post(screen_url(session), {"screen": f"include:{first}"})
    assert refused.status_code == 403
    assert candidate(session, first).status == "pending"

    token = csrf_token(page)
    answer = browser.post(screen_url(session), {"csrfmiddlewaretoken": token,
                                                "screen": f"include:{first}"})  # fmt: skip
    assert answer.status_code == 302
    assert answer["Location"] == change_url(session) + "#screening-panel"
    shannon = ids["shannon"]
    answer = browser.post(screen_url(session), {"csrfmiddlewaretoken": token,
                                                "screen": f"exclude:{shannon}",
                                                f"reason-{shannon}": "  information theory "},
                          follow=True)  # fmt: skip
    page = answer.content.decode()
    title = CORPUS["shannon"]["title"]
    assert f"Excluded: {title} (reason: information theory)" in page
    included, excluded = candidate(session, first), candidate(session, shannon)
    assert (included.status, included.screened_by, included.screened_order) == (
        "included",
        "admin:admin",
        1,
    )
    assert (excluded.status, excluded.reason, excluded.votes) == (
        "excluded",
        "information theory",
        {"admin:admin": "exclude"},
    )
    assert "model score" in page and shown_paper(page) not in (first, shannon)

    # Twice on one record, or no record at all: a message, nothing recorded.
    again = browser.post(screen_url(session), {"csrfmiddlewaretoken": token,
                                               "screen": f"include:{shannon}"},
                         follow=True)  # fmt: skip
    assert "already screened by admin:admin" in again.content.decode()
    assert candidate(session, shannon).status == "excluded"
    bad = browser.post(
        screen_url(session), {"csrfmiddlewaretoken": token, "screen": "perhaps:x"}, follow=True
    )
    assert "Choose include, exclude or maybe" in bad.content.decode()
    assert browser.get(screen_url(session)).status_code == 405
    assert ReviewSession.objects.get(pk=session.pk).iteration == 1  # no checkpoint decided


def test_deciding_needs_the_change_permission_and_a_writable_server(
    review_at_screen: tuple[ReviewSession, dict[str, int]], settings: Any
) -> None:
    session, ids = review_at_screen
    viewer = User.objects.create_user("vera", password="x", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_reviewsession"))
    browser = Client()
    browser.force_login(viewer)
    page = browser.get(change_url(session)).content.decode()
    assert "Screening, one record at a time" in page and "not decide" in page
    assert "include:" not in page and "screening-form" not in page
    assert 'name="action"' not in page  # nor the checkpoint's decision
    response = browser.post(screen_url(session), {"screen": f"include:{ids['longformer']}"})
    assert response.status_code == 403
    assert candidate(session, ids["longformer"]).status == "pending"

    settings.MCP_READ_ONLY = True
    admin_browser = Client()
    admin_browser.force_login(User.objects.create_superuser("root", password="x"))
    page = admin_browser.get(change_url(session)).content.decode()
    assert "read-only" in page and "include:" not in page
    answer = admin_browser.post(
        screen_url(session), {"screen": f"include:{ids['longformer']}"}, follow=True
    )
    assert "This server is read-only." in answer.content.decode()
    assert candidate(session, ids["longformer"]).status == "pending"


def test_disagreements_are_shown_side_by_side_and_resolved(
    admin_client: Client, review_at_screen: tuple[ReviewSession, dict[str, int]]
) -> None:
    session, ids = review_at_screen
    paper = ids["reformer"]
    screening_decide(session_id=session.pk, decided_by="agent",
                     decisions=[{"paper": paper, "decision": "include"}])  # fmt: skip
    exclude = {"paper": paper, "decision": "exclude", "reason": "hashing"}
    screening_decide(session_id=session.pk, decided_by="admin:ann", decisions=[exclude])
    page = admin_client.get(change_url(session)).content.decode()
    assert "Disagreements: 1, unresolved: 1" in page
    # One record, one include and one exclude: observed 0, chance 1 * 0 + 0 * 1; kappa 0.
    assert "Both screened 1, agreed on 0; Cohen's kappa 0.0." in page
    # A column per screener, the votes side by side.
    head = re.search(r'<table id="screening-disagreements">.*?</thead>', page, re.S)
    assert head and re.findall(r'<th scope="col">([^<]+)</th>', head.group(0)) == [
        "paper", "agent", "admin:ann", "resolve",
    ]  # fmt: skip
    row = re.search(rf'<tr data-paper="{paper}">.*?</tr>', page, re.S)
    assert row and re.findall(r'<td class="vote[^"]*">([^<]+)</td>', row.group(0)) == [
        "include", "exclude",
    ]  # fmt: skip
    assert f'name="resolve" value="exclude:{paper}"' in page
    # Closing the checkpoint is refused with the reason while it is unresolved.
    refused = admin_client.post(change_url(session), {"action": "approve", "checkpoint": 2},
                                follow=True)  # fmt: skip
    assert "1 screening disagreements are unresolved" in refused.content.decode()
    assert ReviewSession.objects.get(pk=session.pk).status == "waiting"

    no_reason = admin_client.post(screen_url(session), {"resolve": f"exclude:{paper}"}, follow=True)
    assert "needs a reason" in no_reason.content.decode()
    assert candidate(session, paper).status == "included"  # the first decision, for now
    resolution = {"resolve": f"exclude:{paper}", f"resolve-reason-{paper}": "hashing, not sparse"}
    done = admin_client.post(screen_url(session), resolution, follow=True)
    page = done.content.decode()
    assert f"Resolved as exclude: {CORPUS['reformer']['title']}" in page
    assert "unresolved: 0" in page and "hashing, not sparse" in page  # who and why
    resolved = candidate(session, paper)
    assert (resolved.status, resolved.reason) == ("excluded", "hashing, not sparse")
    assert resolved.votes["_resolution"]["by"] == "admin:admin"
    services.review_decide(session_id=str(session.pk), action="approve", expected_sequence=2)
    assert ReviewSession.objects.get(pk=session.pk).status == "complete"

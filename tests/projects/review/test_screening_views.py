"""The screening panel's JSON endpoint (projects/review/screening_views.py,
`<review>/screening/`): the record to screen next with its details, progress and the
stopping rule; one decision posted as JSON, recorded by screening_decide as admin:<user>
and confirmed by the paper's title; staff and the change permission required, CSRF
checked, refused on a read-only server, bad input a 400 saying what is wrong. Also the
review's PRISMA diagram file and its state, polled while a step works."""

from __future__ import annotations

import json
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
def library(transactional_db: None) -> dict[str, int]:
    return build_library()


def at_plan() -> ReviewSession:
    session = services.review_start(query=LONG_DOCS, max_results=10)
    services.review_wait(session_id=str(session.pk), timeout=20)
    session.refresh_from_db()
    return session


@pytest.fixture
def review(library: dict[str, int]) -> ReviewSession:
    session = at_plan()
    services.review_decide(session_id=str(session.pk), action="approve")
    services.review_wait(session_id=str(session.pk), timeout=20)
    session.refresh_from_db()
    assert session.stage == "screen" and session.status == "waiting"
    return session


def url(session: ReviewSession | str, name: str = "screening") -> str:
    key = session.pk if isinstance(session, ReviewSession) else session
    return reverse(f"admin:projects_reviewsession_{name}", args=[key])


def post(client: Client, session: ReviewSession, body: Any, **headers: str) -> Any:
    content = body if isinstance(body, str | bytes) else json.dumps(body)
    return client.post(url(session), content, content_type="application/json", headers=headers)


def title_of(library: dict[str, int], paper_id: int) -> str:
    name = next(name for name, pk in library.items() if pk == paper_id)
    return str(CORPUS[name]["title"])


def test_the_panel_comes_as_json_with_the_record_and_the_stopping_rule(
    admin_client: Client, review: ReviewSession, library: dict[str, int]
) -> None:
    answer = admin_client.get(url(review))
    assert answer.status_code == 200
    data = answer.json()
    record = data["record"]
    paper: dict[str, Any] = CORPUS[next(n for n, pk in library.items() if pk == record["paper_id"])]
    assert record["title"] == paper["title"] and record["year"] == paper["year"]
    assert record["authors"] == paper["authors"][0] and record["abstract"] == paper["abstract"]
    assert record["rank_reason"] == "search rank (no decisions yet)"
    assert record["url"] == reverse("admin:papers_paper_read", args=[record["paper_id"]])
    total = review.candidates.count()
    assert data["progress"] == {
        "screened": 0, "total": total, "pending": total, "maybe": 0, "to_go": total,
        "included": 0, "excluded": 0,
    }  # fmt: skip
    assert data["stopping"]["safe_to_stop"] is False and data["checkpoint"] == 2
    assert f'data-paper="{record["paper_id"]}"' in data["html"]
    assert f"Screened 0 of {total}" in data["html"]
    assert 'id="review-figures"' in data["figures_html"]
    assert data["finish_label"] == f"Include all {total} candidates"


def test_a_decision_is_recorded_and_the_next_record_comes_back(
    admin_client: Client, review: ReviewSession, library: dict[str, int]
) -> None:
    first = admin_client.get(url(review)).json()
    paper = first["record"]["paper_id"]
    answer = post(admin_client, review, {"paper": paper, "decision": "include"})
    assert answer.status_code == 200, answer.content
    data = answer.json()
    assert data["recorded"]["message"] == f"Included: {title_of(library, paper)}"
    assert data["progress"]["screened"] == 1 and data["progress"]["included"] == 1
    assert data["record"]["paper_id"] != paper
    assert (
        data["record"]["rank_reason"]
        == "search rank (the model needs an inclusion and an exclusion)"
    )
    assert "Finish screening: keep the 1 decisions" in data["finish_label"]
    candidate = ReviewCandidate.objects.get(session=review, paper_id=paper)
    assert (candidate.status, candidate.screened_by) == ("included", "admin:admin")

    # An exclusion with its reason, the paper given as text; the stopping report moves.
    shannon = library["shannon"]
    answer = post(
        admin_client,
        review,
        {"paper": str(shannon), "decision": "exclude", "reason": " 1948,  information theory "},
    )
    data = answer.json()
    title = CORPUS["shannon"]["title"]
    assert data["recorded"]["message"] == f"Excluded: {title} (reason: 1948, information theory)"
    assert data["stopping"] != first["stopping"]
    assert data["stopping"]["consecutive_exclusions"] == 1
    assert data["record"]["rank_reason"].startswith("model score")  # retrained
    assert ReviewCandidate.objects.get(session=review, paper_id=shannon).reason == (
        "1948, information theory"
    )
    assert ReviewSession.objects.get(pk=review.pk).iteration == 1  # no checkpoint decided


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("not json", "Send the decision as JSON."),
        ([1, 2], "Send a JSON object"),
        ({"decision": "include"}, "paper must be a paper_id"),
        ({"paper": True, "decision": "include"}, "paper must be a paper_id"),
        ({"paper": "{paper}", "decision": "perhaps"}, "decision must be include, exclude or"),
        ({"paper": "{paper}", "decision": "maybe", "resolve": True, "reason": "x"}, "not maybe"),
        ({"paper": "{paper}", "decision": "exclude", "reason": 3}, "reason must be text."),
        ({"paper": "{paper}", "decision": "include", "resolve": "yes"}, "resolve must be true"),
        ({"paper": "{paper}", "decision": "exclude", "reason": "x" * 501}, "at most 500"),
        ({"paper": 999999, "decision": "include"}, "not candidates of this review"),
        ({"paper": "{paper}", "decision": "include", "resolve": True}, "needs a reason"),
        (
            {"paper": "{paper}", "decision": "include", "resolve": True, "reason": "why"},
            "not in disagreement",
        ),
    ],
)
def test_bad_input_is_a_400_that_says_what_is_wrong(
    admin_client: Client,
    review: ReviewSession,
    library: dict[str, int],
    body: Any,
    message: str,
) -> None:
    if isinstance(body, dict) and body.get("paper") == "{paper}":
        body = {**body, "paper": library["longformer"]}
    answer = post(admin_client, review, body)
    assert answer.status_code == 400, answer.content
    assert message in answer.json()["error"]["message"]
    assert not review.candidates.exclude(status="pending").exists()


def test_a_maybe_is_kept_and_the_record_comes_back_after_the_others(
    admin_client: Client, review: ReviewSession, library: dict[str, int]
) -> None:
    first = admin_client.get(url(review)).json()["record"]["paper_id"]
    body = {"paper": first, "decision": "maybe", "reason": "read the  methods"}
    answer = post(admin_client, review, body).json()
    assert answer["recorded"]["message"].startswith("Maybe (back later): ")
    assert answer["recorded"]["message"].endswith("(reason: read the methods)")
    total = review.candidates.count()
    assert answer["progress"]["maybe"] == 1 and answer["progress"]["to_go"] == total - 1
    assert answer["progress"]["screened"] == 0 and answer["record"]["paper_id"] != first
    assert "1 maybe" in answer["html"] and 'data-key="m"' in answer["html"]
    assert review.candidates.get(paper_id=first).status == "pending"


def test_a_record_screened_twice_is_refused(
    admin_client: Client, review: ReviewSession, library: dict[str, int]
) -> None:
    body = {"paper": library["longformer"], "decision": "include"}
    assert post(admin_client, review, body).status_code == 200
    again = post(admin_client, review, {**body, "decision": "exclude"})
    assert again.status_code == 400
    assert again.json()["error"] == {
        "code": "invalid_decision",
        "message": f"Papers already screened by admin:admin: [{library['longformer']}]; "
        "nothing was recorded.",
    }
    assert ReviewCandidate.objects.get(session=review, paper_id=library["longformer"]).status == (
        "included"
    )


def test_csrf_is_checked(admin_user: User, review: ReviewSession, library: dict[str, int]) -> None:
    browser = Client(enforce_csrf_checks=True)
    browser.force_login(admin_user)
    page = browser.get(reverse("admin:projects_reviewsession_change", args=[review.pk]))
    body = {"paper": library["longformer"], "decision": "include"}
    assert post(browser, review, body).status_code == 403
    assert not review.candidates.exclude(status="pending").exists()
    token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page.content.decode())
    assert token
    assert post(browser, review, body, X_CSRFToken=token.group(1)).status_code == 200


def test_staff_with_the_change_permission_decide_and_others_do_not(
    review: ReviewSession, library: dict[str, int]
) -> None:
    body: dict[str, Any] = {"paper": library["longformer"], "decision": "include"}
    outsider = Client()
    outsider.force_login(User.objects.create_user("otto", password="x"))  # not staff
    assert outsider.get(url(review)).status_code == 302  # to the login page
    assert post(outsider, review, body).status_code == 302

    staff = User.objects.create_user("sam", password="x", is_staff=True)
    nobody = Client()
    nobody.force_login(staff)
    assert nobody.get(url(review)).status_code == 403  # no permission on reviews

    staff.user_permissions.add(Permission.objects.get(codename="view_reviewsession"))
    viewer = Client()
    viewer.force_login(User.objects.get(pk=staff.pk))
    seen = viewer.get(url(review))
    assert seen.status_code == 200 and "not decide" in seen.json()["html"]
    assert 'name="screen"' not in seen.json()["html"]
    refused = post(viewer, review, body)
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "forbidden"

    staff.user_permissions.add(Permission.objects.get(codename="change_reviewsession"))
    screener = Client()
    screener.force_login(User.objects.get(pk=staff.pk))
    assert post(screener, review, body).status_code == 200
    assert ReviewCandidate.objects.get(session=review, paper_id=body["paper"]).screened_by == (
        "admin:sam"
    )


def test_a_read_only_server_refuses_decisions(
    admin_client: Client, review: ReviewSession, library: dict[str, int], settings: Any
) -> None:
    settings.MCP_READ_ONLY = True
    assert admin_client.get(url(review)).status_code == 200
    answer = post(admin_client, review, {"paper": library["longformer"], "decision": "include"})
    assert answer.status_code == 403
    assert answer.json()["error"]["code"] == "read_only"
    assert "read-only" in answer.json()["error"]["message"]
    assert not review.candidates.exclude(status="pending").exists()


def test_away_from_the_screen_checkpoint_and_for_no_review(
    admin_client: Client, library: dict[str, int]
) -> None:
    session = at_plan()
    answer = admin_client.get(url(session))
    assert answer.status_code == 409
    assert answer.json()["error"]["code"] == "no_pending_checkpoint"
    refused = post(admin_client, session, {"paper": library["longformer"], "decision": "include"})
    assert refused.status_code == 409
    assert "not waiting at its screen checkpoint" in refused.json()["error"]["message"]
    missing = "9c1b2f0e-0000-4000-8000-000000000000"
    assert admin_client.get(url(missing)).status_code == 404
    assert admin_client.get(url("not-a-review")).status_code == 404
    assert admin_client.put(url(session)).status_code == 405


def test_disagreements_come_side_by_side_and_are_resolved(
    admin_client: Client, review: ReviewSession, library: dict[str, int]
) -> None:
    paper = library["reformer"]
    screening_decide(session_id=review.pk, decided_by="agent",
                     decisions=[{"paper": paper, "decision": "include"}])  # fmt: skip
    screening_decide(session_id=review.pk, decided_by="admin:ann",
                     decisions=[{"paper": paper, "decision": "exclude"}])  # fmt: skip
    agreement = admin_client.get(url(review)).json()["agreement"]
    assert agreement["columns"] == ["agent", "admin:ann"]
    assert [row["columns"] for row in agreement["rows"]] == [["include", "exclude"]]
    answer = post(
        admin_client,
        review,
        {"paper": paper, "decision": "exclude", "reason": "hashing", "resolve": True},
    )
    assert answer.status_code == 200, answer.content
    data = answer.json()
    assert data["recorded"]["message"] == f"Resolved as exclude: {CORPUS['reformer']['title']}"
    assert data["agreement"]["rows"] == [] and data["agreement"]["unresolved"] == 0
    assert "screening-resolutions" in data["html"]


def test_the_prisma_diagram_file_and_the_state(admin_client: Client, review: ReviewSession) -> None:
    diagram = admin_client.get(url(review, "prisma"))
    assert diagram.status_code == 200
    assert diagram["Content-Type"] == "image/svg+xml; charset=utf-8"
    assert f"Records screened (n = {review.candidates.count()})" in diagram.content.decode()
    state = admin_client.get(url(review, "state"))
    assert state.json() == {"status": "waiting", "stage": "screen"}
    assert admin_client.post(url(review, "state")).status_code == 405

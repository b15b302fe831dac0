"""Guessing an admin password or an API token: refused after AUTH_FAILURE_LIMIT failures,
the right secret included, until the window has passed (core.throttle)."""

from __future__ import annotations

from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from research_site.tokens import api_token_create

pytestmark = pytest.mark.django_db

LIMIT = 5


@pytest.fixture(autouse=True)
def _small_limit(settings: Any) -> None:
    settings.AUTH_FAILURE_LIMIT = LIMIT
    settings.AUTH_FAILURE_WINDOW_SECONDS = 600


@pytest.fixture
def staff() -> User:
    return User.objects.create_user("curator", password="right-password", is_staff=True)


def sign_in(client: Client, password: str, username: str = "curator") -> Any:
    return client.post("/admin/login/?next=/admin/", {"username": username, "password": password})


def test_admin_sign_in_is_refused_after_too_many_wrong_passwords(staff: User) -> None:
    client = Client()
    for _ in range(LIMIT):
        assert sign_in(client, "wrong").status_code == 200  # the form again, with an error
    refused = sign_in(client, "right-password")
    assert refused.status_code == 200
    assert "Too many failed attempts: try again in 10 minutes." in refused.content.decode()
    assert "_auth_user_id" not in client.session


def test_a_stranger_cannot_lock_the_owner_out(staff: User) -> None:
    """Wrong passwords for the owner's name lock out the address they came from, never
    the name everywhere: anyone who reaches the sign-in page could otherwise lock the
    admin out."""
    stranger = Client(REMOTE_ADDR="10.0.0.1")
    for _ in range(LIMIT):
        sign_in(stranger, "wrong")
    assert "Too many failed attempts" in sign_in(stranger, "right-password").content.decode()
    owner = Client(REMOTE_ADDR="10.0.0.2")
    assert sign_in(owner, "right-password").status_code == 302
    assert owner.session["_auth_user_id"] == str(staff.pk)


def test_one_address_guessing_many_user_names_is_locked_out(staff: User) -> None:
    guesser = Client(REMOTE_ADDR="10.0.0.3")
    for attempt in range(LIMIT):
        sign_in(guesser, "wrong", username=f"someone-{attempt}")
    assert "Too many failed attempts" in sign_in(guesser, "right-password").content.decode()


def test_a_few_wrong_passwords_then_the_right_one_signs_in(staff: User) -> None:
    client = Client()
    for _ in range(LIMIT - 1):
        sign_in(client, "wrong")
    assert sign_in(client, "right-password").status_code == 302
    assert client.session["_auth_user_id"] == str(staff.pk)


def test_api_token_guesses_get_429_with_retry_after(staff: User) -> None:
    _token, secret = api_token_create(user=staff, name="scripts")
    client = Client()
    for attempt in range(LIMIT):
        guess = client.get("/api/projects", headers={"Authorization": f"Bearer rmcp_{attempt}"})
        assert guess.status_code == 401
    refused = client.get("/api/projects", headers={"Authorization": f"Bearer {secret}"})
    assert refused.status_code == 429
    assert 0 < int(refused["Retry-After"]) <= 600
    assert refused.json()["error"]["code"] == "too_many_attempts"
    # Another address is not affected.
    other = Client(REMOTE_ADDR="10.0.0.9")
    assert (
        other.get("/api/projects", headers={"Authorization": f"Bearer {secret}"}).status_code == 200
    )


@pytest.mark.parametrize("method", ["post", "put", "patch", "delete"])
def test_unknown_api_path_is_a_json_404_for_every_method(method: str) -> None:
    client = Client(enforce_csrf_checks=True)
    response = getattr(client, method)(
        "/api/no/such/endpoint", "{}", content_type="application/json"
    )
    assert response.status_code == 404
    assert response["Content-Type"].startswith("application/json")
    assert response.json()["error"]["code"] == "not_found"

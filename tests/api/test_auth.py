"""Who may call the REST API: bearer tokens (scopes, revocation, expiry), the Readers group,
read-only mode and the staff session."""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from projects.models import Project
from research_site.models import ApiToken
from research_site.tokens import api_token_revoke
from tests.api.conftest import Api, Library, error

pytestmark = pytest.mark.django_db

NEW_PROJECT = {"name": "Surveys"}


def test_request_without_credentials_is_401_with_bearer_challenge(anonymous: Api) -> None:
    response = anonymous.get("/api/projects")
    body = error(response, 401)
    assert body["code"] == "unauthorized"
    assert "Authorization: Bearer" in body["message"]
    assert response["WWW-Authenticate"].startswith("Bearer realm=")


def test_write_without_credentials_is_401_not_a_csrf_error(anonymous: Api) -> None:
    assert error(anonymous.post("/api/projects", NEW_PROJECT), 401)["code"] == "unauthorized"


@pytest.mark.parametrize(
    "header",
    ["Bearer rmcp_not-a-real-token", "Bearer ", "Bearer x" + "y" * 300, "Token abc", "Basic Zm9v"],
)
def test_unknown_or_malformed_credentials_are_401(client: Client, header: str) -> None:
    response = client.get("/api/projects", headers={"Authorization": header})
    assert error(response, 401)["code"] in ("invalid_token", "unauthorized")
    assert response["WWW-Authenticate"].startswith("Bearer")


def test_wrong_token_says_invalid_token_in_the_challenge(anonymous: Api) -> None:
    response = anonymous.get("/api/projects", token="rmcp_wrong")
    body = error(response, 401)
    assert (body["code"], body["message"]) == ("invalid_token", "The token is not valid.")
    assert 'error="invalid_token"' in response["WWW-Authenticate"]


def test_write_token_reads_and_writes(api: Api) -> None:
    assert api.get("/api/projects").status_code == 200
    assert api.post("/api/projects", NEW_PROJECT).status_code == 201


def test_read_token_reads_but_every_write_is_403_insufficient_scope(
    api: Api, read_token: str, library: Library
) -> None:
    assert api.get("/api/projects", token=read_token).status_code == 200
    assert api.get(f"/api/papers/{library.attention.pk}", token=read_token).status_code == 200
    writes = [
        api.post("/api/projects", NEW_PROJECT, token=read_token),
        api.put(f"/api/papers/{library.attention.pk}/keywords", {"keywords": []}, read_token),
        api.delete(f"/api/projects/transformers/papers/{library.bert.pk}", token=read_token),
    ]
    for response in writes:
        body = error(response, 403)
        assert body["code"] == "insufficient_scope"
        assert "scope 'read'" in body["message"]
        assert body["message"].endswith(
            "requests. Create a token with scope 'write' to change the library."
        )
        assert 'error="insufficient_scope"' in response["WWW-Authenticate"]
    assert list(library.project.papers.order_by("pk")) == [library.attention, library.bert]
    assert sorted(k.name for k in library.attention.keywords.all()) == ["attention", "transformers"]


def test_readers_group_cannot_write_even_with_a_write_token(
    api: Api, make_user: Callable[..., User], make_token: Callable[..., str]
) -> None:
    reader = make_user("rita", reader=True)
    token = make_token(reader, ApiToken.Scope.WRITE)
    assert api.get("/api/projects", token=token).status_code == 200
    body = error(api.post("/api/projects", NEW_PROJECT, token=token), 403)
    assert body["code"] == "forbidden"
    assert "Readers" in body["message"]


def test_revoked_token_is_401_at_once(api: Api, write_token: str) -> None:
    assert api.get("/api/projects").status_code == 200
    api_token_revoke(token=write_token[:12])
    body = error(api.get("/api/projects"), 401)
    assert body["code"] == "invalid_token"
    assert "revoked" in body["message"]


def test_expired_token_is_401(api: Api, writer: User, make_token: Callable[..., str]) -> None:
    token = make_token(writer, name="short", expires_at=timezone.now() + timedelta(hours=1))
    assert api.get("/api/projects", token=token).status_code == 200
    ApiToken.objects.filter(name="short").update(expires_at=timezone.now() - timedelta(seconds=1))
    body = error(api.get("/api/projects", token=token), 401)
    assert body["code"] == "invalid_token"
    assert "expired" in body["message"]


def test_token_of_a_disabled_user_is_401(api: Api, writer: User) -> None:
    writer.is_active = False
    writer.save()
    assert error(api.get("/api/projects"), 401)["code"] == "invalid_token"


def test_last_used_at_is_recorded_at_most_once_a_minute(api: Api, write_token: str) -> None:
    token = ApiToken.objects.get(prefix=write_token[:12])
    assert token.last_used_at is None
    api.get("/api/projects")
    first = ApiToken.objects.get(pk=token.pk).last_used_at
    assert first is not None
    api.get("/api/projects")
    assert ApiToken.objects.get(pk=token.pk).last_used_at == first
    ApiToken.objects.filter(pk=token.pk).update(last_used_at=first - timedelta(minutes=5))
    api.get("/api/projects")
    assert ApiToken.objects.get(pk=token.pk).last_used_at > first  # type: ignore[operator]


def test_read_only_mode_refuses_every_write_with_403_read_only(
    api: Api, library: Library, settings: object
) -> None:
    settings.MCP_READ_ONLY = True  # type: ignore[attr-defined]
    assert api.get("/api/projects").status_code == 200
    assert api.get("/api/search", {"query": "attention"}).status_code == 200
    writes = [
        api.post("/api/projects", NEW_PROJECT),
        api.post("/api/papers/keywords", {"paper_ids": [1], "action": "add", "keywords": ["x"]}),
        api.put(f"/api/papers/{library.attention.pk}/summaries/brief", {"content": {"a": 1}}),
        api.post("/api/papers/export", {"paper_ids": [library.attention.pk], "format": "csv"}),
    ]
    for response in writes:
        body = error(response, 403)
        assert body["code"] == "read_only"
        assert "MCP_READ_ONLY" in body["message"]


def staff_browser(make_user: Callable[..., User]) -> tuple[Client, str]:
    """A staff user's browser signed in to the admin, and the CSRF token its forms send."""
    make_user("sam", is_staff=True)
    browser = Client(enforce_csrf_checks=True)
    assert browser.login(username="sam", password="pw-sam")
    page = browser.get("/api/docs")  # the docs page hands the CSRF token to Swagger UI
    return browser, page.content.decode().split('data-csrf-token="')[1].split('"')[0]


def test_read_only_mode_refuses_writes_made_with_the_admin_session_too(
    make_user: Callable[..., User], library: Library, settings: object
) -> None:
    browser, csrf = staff_browser(make_user)
    settings.MCP_READ_ONLY = True  # type: ignore[attr-defined]
    assert browser.get("/api/projects").status_code == 200
    projects, keywords = Project.objects.count(), library.attention.keywords.count()
    for method, path, body in (
        ("post", "/api/projects", NEW_PROJECT),
        ("post", "/api/papers/keywords", {"paper_ids": [1], "action": "add", "keywords": ["x"]}),
        ("put", f"/api/papers/{library.attention.pk}/summaries/brief", {"content": {"a": 1}}),
    ):
        response = getattr(browser, method)(
            path, json.dumps(body), content_type="application/json", headers={"X-CSRFToken": csrf}
        )
        refused = error(response, 403)
        assert refused["code"] == "read_only", (path, refused)
        assert "MCP_READ_ONLY" in refused["message"]
    assert Project.objects.count() == projects
    assert library.attention.keywords.count() == keywords


def test_read_only_mode_does_not_record_token_use(api: Api, settings: object) -> None:
    # The database is opened read-only in this mode: an UPDATE would fail the request.
    settings.MCP_READ_ONLY = True  # type: ignore[attr-defined]
    assert api.get("/api/projects").status_code == 200
    assert ApiToken.objects.get().last_used_at is None


def test_staff_session_reads_and_writes_with_csrf(
    make_user: Callable[..., User], library: Library
) -> None:
    make_user("sam", is_staff=True)
    browser = Client(enforce_csrf_checks=True)
    assert browser.login(username="sam", password="pw-sam")
    assert browser.get("/api/projects").status_code == 200
    refused = browser.post("/api/projects", NEW_PROJECT, content_type="application/json")
    body = error(refused, 403)
    assert body["code"] == "csrf_failed"
    assert body["message"].startswith("CSRF check failed: send the csrftoken cookie's value")
    page = browser.get("/api/docs")  # the docs page hands the CSRF token to Swagger UI
    csrf = page.content.decode().split('data-csrf-token="')[1].split('"')[0]
    assert csrf
    created = browser.post(
        "/api/projects", NEW_PROJECT, content_type="application/json", headers={"X-CSRFToken": csrf}
    )
    assert created.status_code == 201, created.content


def test_session_of_a_non_staff_user_is_401(make_user: Callable[..., User]) -> None:
    make_user("nina")
    browser = Client()
    assert browser.login(username="nina", password="pw-nina")
    assert error(browser.get("/api/projects"), 401)["code"] == "unauthorized"


def test_bad_bearer_token_is_refused_even_with_a_staff_session(
    make_user: Callable[..., User],
) -> None:
    make_user("sam", is_staff=True)
    browser = Client()
    assert browser.login(username="sam", password="pw-sam")
    response = browser.get("/api/projects", headers={"Authorization": "Bearer rmcp_nope"})
    assert error(response, 401)["code"] == "invalid_token"


def test_docs_and_schema_need_no_credentials(anonymous: Api) -> None:
    assert anonymous.get("/api/openapi.json").status_code == 200
    assert anonymous.get("/api/docs").status_code == 200
    assert anonymous.get("/api/").json()["openapi"] == "/api/openapi.json"

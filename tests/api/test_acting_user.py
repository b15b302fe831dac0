"""The REST API, the admin and stdio set the acting user (core.identity) that services read;
/mcp's own cases run against a real server in tests/mcp/test_oauth.py."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from core import identity
from projects import selectors as project_selectors
from research_site.models import ApiToken
from tests.api.conftest import Api

pytestmark = pytest.mark.django_db


@pytest.fixture
def seen(monkeypatch: pytest.MonkeyPatch) -> list[identity.Principal | None]:
    """What a selector behind GET /api/projects sees as the acting principal."""
    principals: list[identity.Principal | None] = []
    original = project_selectors.project_list

    def spy(*args: Any, **kwargs: Any) -> Any:
        principals.append(identity.current_principal())
        return original(*args, **kwargs)

    monkeypatch.setattr(project_selectors, "project_list", spy)
    return principals


def test_rest_call_with_a_token_acts_as_its_user_with_its_scope(
    client: Client, writer: User, make_token: Callable[..., str], seen: list[Any]
) -> None:
    read = make_token(writer, ApiToken.Scope.READ)
    assert Api(client, read).get("/api/projects").status_code == 200
    principal = seen[-1]
    assert principal is not None
    assert (principal.kind, principal.user, principal.can_write) == ("api-token", writer, False)
    assert Api(client).get("/api/projects").status_code == 401
    # Nothing outlives the request.
    assert identity.current_principal() is None


def test_admin_session_acts_as_the_signed_in_user(client: Client, seen: list[Any]) -> None:
    staff = User.objects.create_user("carol", password="pw-123456789", is_staff=True)
    client.force_login(staff)
    assert client.get("/api/projects").status_code == 200
    assert seen[-1] is not None
    assert (seen[-1].kind, seen[-1].user) == ("session", staff)


def test_local_owner_and_service_user() -> None:
    assert identity.local_owner() is None
    first = User.objects.create_superuser("owner", password="pw-123456789")
    User.objects.create_superuser("second", password="pw-123456789")
    assert identity.local_owner() == first
    assert identity.local_owner_principal("stdio").user == first
    service = identity.service_principal().user
    assert service.username == "mcp-service" and not service.has_usable_password()
    assert identity.service_principal().user == service  # created once


def test_local_owner_by_name(settings: Any) -> None:
    User.objects.create_superuser("first", password="pw-123456789")
    named = User.objects.create_user("lab-owner", password="pw-123456789")
    settings.LOCAL_OWNER_USERNAME = "lab-owner"
    assert identity.local_owner() == named


def test_acting_as_nests_and_restores() -> None:
    outer = identity.Principal(kind="service")
    inner = identity.Principal(kind="oauth", can_write=False)
    with identity.acting_as(outer):
        with identity.acting_as(inner):
            assert identity.current_principal() is inner
            assert not identity.current_can_write()
        assert identity.current_principal() is outer
    assert identity.current_principal() is None
    assert identity.current_can_write()

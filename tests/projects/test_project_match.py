"""The project picker's matches (`/admin/projects/project/match/?q=`, ProjectAdmin.match_view
over projects.selectors.project_match): any part of a name or id, case-insensitive, only for
a user who may see projects, and narrowed to an MCP client's collections."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from core.errors import InvalidInput
from core.scope import client_scope
from projects.models import Project
from projects.selectors import MATCH_LIMIT, project_match

pytestmark = pytest.mark.django_db

MATCH = "admin:projects_project_match"


@pytest.fixture
def projects(make_project: Callable[..., Project]) -> dict[str, Project]:
    return {
        name: make_project(name)
        for name in ("Neural machine translation", "Recurrent nets", "Transformers survey")
    }


def staff(*permissions: str) -> Client:
    name = "curator-" + "-".join(permissions)
    user = User.objects.create_user(name, password="x", is_staff=True)
    for codename in permissions:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = Client()
    client.force_login(user)
    return client


def names(client: Client, **query: str) -> list[str]:
    response = client.get(reverse(MATCH), query)
    assert response.status_code == 200, response.content
    return [p["name"] for p in response.json()["projects"]]


def test_any_part_of_a_name_matches_whatever_its_case(
    admin_client: Client, projects: dict[str, Project]
) -> None:
    assert names(admin_client, q="RECUR") == ["Recurrent nets"]
    assert names(admin_client, q="ans") == ["Neural machine translation", "Transformers survey"]
    answer = admin_client.get(reverse(MATCH), {"q": "survey"}).json()["projects"][0]
    assert answer == {"id": projects["Transformers survey"].pk, "name": "Transformers survey",
                      "paper_count": 0}  # fmt: skip


def test_names_starting_with_the_text_come_first(
    admin_client: Client, projects: dict[str, Project], make_project: Callable[..., Project]
) -> None:
    make_project("Attention for translation")
    assert names(admin_client, q="trans") == [
        "Transformers survey", "Attention for translation", "Neural machine translation",
    ]  # fmt: skip


def test_a_user_who_may_not_see_projects_is_shown_none(projects: dict[str, Project]) -> None:
    assert names(staff(), q="") == []
    assert names(staff("view_project"), q="recur") == ["Recurrent nets"]
    assert names(staff("change_project"), q="recur") == ["Recurrent nets"]


def test_an_mcp_clients_collections_narrow_the_matches(projects: dict[str, Project]) -> None:
    with client_scope(("Recurrent nets",)):
        assert [p.name for p in project_match(text="")] == ["Recurrent nets"]
        assert project_match(text="trans") == []


def test_bad_input_is_refused_with_a_message(admin_client: Client) -> None:
    too_long = admin_client.get(reverse(MATCH), {"q": "x" * 201})
    assert too_long.status_code == 400
    assert too_long.json() == {"error": "At most 200 characters."}
    assert admin_client.get(reverse(MATCH), {"limit": "many"}).status_code == 400
    with pytest.raises(InvalidInput, match="limit"):
        project_match(text="", limit=MATCH_LIMIT + 1)


def test_signed_out_the_matches_are_not_served(client: Client) -> None:
    response = client.get(reverse(MATCH), {"q": "recur"})
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_a_projects_papers_page_moves_and_copies_with_the_picker(
    admin_client: Client, projects: dict[str, Project]
) -> None:
    project = projects["Recurrent nets"]
    page = admin_client.get(reverse("admin:projects_project_papers", args=[project.pk]))
    assert page.status_code == 200
    text = page.content.decode()
    assert 'class="project-picker"' in text and 'role="combobox"' in text
    assert f'data-source="{reverse(MATCH)}"' in text

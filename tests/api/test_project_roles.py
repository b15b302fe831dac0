"""Project roles on the REST API, every endpoint that touches a project generated from the
OpenAPI document (a new one without a rule fails), called with each role's own API token;
members and invite links through projects.members (the REST endpoints, the admin's project
page and the invite page); and what roles leave unchanged (docs/AUTH.md)."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client

from core.identity import Principal, acting_as
from papers.models import Paper
from projects import members, permissions
from projects.models import Project, ProjectInvitation, ProjectMember, ReviewSession, SavedSearch
from projects.services import project_add_papers, project_create
from research_site.api import api as rest_api
from tests.api.conftest import Api, Library, error

ROLES = ("viewer", "screener", "editor", "owner")
LEAST = {"read": "viewer", "screen": "screener", "edit": "editor", "manage": "owner"}
FORM = {"name": "f", "fields": [{"key": "n", "type": "text"}]}

# "METHOD path" -> (least action, request): every operation that names a project or a
# review. {ref} is the private project, {session_id} its review, {paper} a paper in it.
REST_RULES: dict[str, tuple[str, dict[str, Any]]] = {
    "GET /api/projects/{ref}": ("read", {}),
    "DELETE /api/projects/{ref}": ("manage", {"query": "?confirm_name=wrong"}),
    "GET /api/projects/{ref}/papers": ("read", {}),
    "POST /api/projects/{ref}/papers": ("edit", {"body": {"paper_ids": ["{paper}"]}}),
    "POST /api/projects/{ref}/papers/remove": ("edit", {"body": {"paper_ids": ["{paper}"]}}),
    "DELETE /api/projects/{ref}/papers/{paper_ref}": ("edit", {}),
    "GET /api/projects/{ref}/members": ("read", {}),
    "PUT /api/projects/{ref}/members/{username}": ("manage", {"body": {"role": "viewer"}}),
    "DELETE /api/projects/{ref}/members/{username}": ("manage", {}),
    "POST /api/projects/{ref}/invitations": ("manage", {"body": {"role": "viewer"}}),
    "GET /api/projects/reviews/{session_id}/prisma": ("read", {}),
    "GET /api/projects/reviews/{session_id}/prisma.svg": ("read", {}),
    "GET /api/projects/reviews/{session_id}/extraction/form": ("read", {}),
    "PUT /api/projects/reviews/{session_id}/extraction/form": ("edit", {"body": FORM}),
    "POST /api/projects/reviews/{session_id}/extraction/values": (
        "screen",
        {"body": {"paper": "{paper}", "values": {"n": {"value": "x"}}}},
    ),
    "POST /api/projects/reviews/{session_id}/extraction/adjudications": (
        "edit",
        {"body": {"paper": "{paper}", "field": "n", "value": "x", "reason": "r"}},
    ),
    "GET /api/projects/reviews/{session_id}/extraction/agreement": ("read", {}),
    "GET /api/projects/reviews/{session_id}/extraction/evidence": ("read", {}),
    "GET /api/projects/reviews/{session_id}/extraction/evidence/export": (
        "read",
        {"query": "?format=csv"},
    ),
    "GET /api/projects/{ref}/extraction/form": ("read", {}),
    "PUT /api/projects/{ref}/extraction/form": ("edit", {"body": FORM}),
    "POST /api/projects/{ref}/extraction/values": (
        "screen",
        {"body": {"paper": "{paper}", "values": {"n": {"value": "x"}}}},
    ),
    "POST /api/projects/{ref}/extraction/adjudications": (
        "edit",
        {"body": {"paper": "{paper}", "field": "n", "value": "x", "reason": "r"}},
    ),
    "GET /api/projects/{ref}/extraction/agreement": ("read", {}),
    "GET /api/projects/{ref}/extraction/evidence": ("read", {}),
    "GET /api/projects/{ref}/extraction/evidence/export": ("read", {"query": "?format=csv"}),
    # a project named in the query or the body
    "GET /api/papers/export": ("read", {"query": "?format=json&project_id={ref}"}),
    "POST /api/papers/export": ("read", {"body": {"format": "json", "project_id": "{ref}"}}),
    "GET /api/search": ("read", {"query": "?query=attention&project_id={ref}"}),
    "POST /api/engines/search": (
        "edit",
        {"body": {"query": "attention", "engines": ["local"], "project_id": "{ref}"}},
    ),
    "POST /api/engines/search/author": (
        "edit",
        {"body": {"author_name": "Vaswani", "engines": ["local"], "project_id": "{ref}"}},
    ),
    "POST /api/engines/add-paper": (
        "edit",
        {"body": {"identifier": "10.1/x", "project_id": "{ref}"}},
    ),
    "POST /api/engines/citing": (
        "edit",
        {"body": {"paper_id": "{paper}", "engines": ["local"], "project_id": "{ref}"}},
    ),
}


def project_operations() -> set[str]:
    """Every REST operation that names a project or a review: a path under
    /api/projects/ with a parameter, or a `project_id` query parameter or body field."""
    schema = rest_api.get_openapi_schema()
    components = schema["components"]["schemas"]
    found = set()
    for path, operations in schema["paths"].items():
        for method, operation in operations.items():
            params = {p["name"] for p in operation.get("parameters", [])}
            body = operation.get("requestBody", {}).get("content", {})
            ref = body.get("application/json", {}).get("schema", {}).get("$ref", "")
            fields = set(components.get(ref.rsplit("/", 1)[-1], {}).get("properties", {}))
            if (
                (path.startswith("/api/projects/") and "{" in path)
                or "project_id" in params
                or "project_id" in fields
            ):
                found.add(f"{method.upper()} {path}")
    return found


@pytest.fixture
def private(
    library: Library, make_user: Callable[..., User], make_token: Callable[..., str]
) -> dict[str, Any]:
    """ "Private", owned by olga, with a member of each role, bob outside, and a review."""
    users = {"owner": "olga", "editor": "eddie", "screener": "sam", "viewer": "vera", None: "bob"}
    made = {role: make_user(name) for role, name in users.items()}
    with acting_as(Principal.for_user(made["owner"], "api-token")):
        project = project_create(name="Private")
    for role in ("editor", "screener", "viewer"):
        ProjectMember.objects.create(project=project, user=made[role], role=role)
    project_add_papers(project=project, paper_ids=[library.attention.pk])
    review = ReviewSession.objects.create(
        query="private question", domain="general", max_results=10, project=project
    )
    return {
        "project": project,
        "review": review,
        "users": made,
        "tokens": {role: make_token(user) for role, user in made.items()},
        "paper": library.attention,
    }


def _outcome(response: Any) -> str:
    if response.status_code == 403 and response.json()["error"]["code"] == "forbidden":
        return "forbidden"
    if response.status_code == 404 and re.match(
        r"No (project|review session)", response.json()["error"]["message"]
    ):
        return "hidden"
    return "allowed"


def test_every_project_endpoint_follows_the_role_rules(api: Api, private: dict[str, Any]) -> None:
    assert set(REST_RULES) == project_operations(), (
        "REST operations touching a project without a rule: "
        f"{sorted(project_operations() - set(REST_RULES))}; rules of none: "
        f"{sorted(set(REST_RULES) - project_operations())}"
    )
    paper: Paper = private["paper"]
    values = {
        "ref": private["project"].pk,
        "session_id": str(private["review"].pk),
        "paper": str(paper.pk),
        "paper_ref": str(paper.pk),
        "username": "nobody-at-all",
    }
    problems = []
    for role in (None, *ROLES):
        for key, (action, request) in REST_RULES.items():
            method, template = key.split(" ", 1)
            path = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], template)
            query = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], request.get("query", ""))
            body = request.get("body")
            if body is not None:
                body = _filled(body, values)
            response = api.send(method, path + query, body, token=private["tokens"][role])
            got = _outcome(response)
            want = (
                "hidden"
                if role is None
                else "allowed"
                if ROLES.index(role) >= ROLES.index(LEAST[action])
                else "forbidden"
            )
            if got != want:
                problems.append(
                    f"{role} {key}: {got} ({response.status_code}), not {want}: "
                    f"{response.content[:200]!r}"
                )
    assert not problems, "\n".join(problems)


def _filled(value: Any, values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], value)
    if isinstance(value, dict):
        return {k: _filled(v, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_filled(v, values) for v in value]
    return value


def test_lists_show_members_their_projects_and_open_ones(api: Api, private: dict[str, Any]) -> None:
    listed = {
        p["project_id"] for p in api.get("/api/projects", token=private["tokens"][None]).json()
    }
    assert private["project"].pk not in listed
    assert "transformers" in listed  # open: no members (made outside any request)
    for role in ROLES:
        mine = api.get("/api/projects", token=private["tokens"][role]).json()
        assert private["project"].pk in {p["project_id"] for p in mine}
    # The paper is the shared library's: bob reads it, without the private project in it.
    record = api.get(f"/api/papers/{private['paper'].pk}", token=private["tokens"][None]).json()
    assert record["projects"] == ["transformers"]


def test_owner_manages_members_by_user_name(
    api: Api, private: dict[str, Any], make_user: Callable[..., User]
) -> None:
    ref = private["project"].pk
    owner, editor = private["tokens"]["owner"], private["tokens"]["editor"]
    make_user("newcomer")
    added = api.put(f"/api/projects/{ref}/members/newcomer", {"role": "editor"}, token=owner)
    assert added.status_code == 200 and added.json()["role"] == "editor"
    refused = error(
        api.put(f"/api/projects/{ref}/members/bob", {"role": "owner"}, token=editor), 403
    )
    assert refused["code"] == "forbidden" and refused["required_role"] == "owner"
    assert "editor" in refused["message"]
    assert error(
        api.put(f"/api/projects/{ref}/members/ghost", {"role": "viewer"}, token=owner), 404
    )
    last = error(api.delete(f"/api/projects/{ref}/members/olga", token=owner), 409)
    assert "last owner" in last["message"]
    listed = api.get(f"/api/projects/{ref}/members", token=private["tokens"]["viewer"]).json()
    assert listed[0]["username"] == "olga"
    assert {m["username"]: m["role"] for m in listed}["newcomer"] == "editor"
    removed = api.delete(f"/api/projects/{ref}/members/newcomer", token=owner)
    assert removed.status_code == 200
    assert not ProjectMember.objects.filter(project_id=ref, user__username="newcomer").exists()


def test_invite_link_makes_a_signed_in_user_a_member_once(
    api: Api, private: dict[str, Any], client: Client, make_user: Callable[..., User]
) -> None:
    ref = private["project"].pk
    made = api.post(
        f"/api/projects/{ref}/invitations", {"role": "screener", "days": 3},
        token=private["tokens"]["owner"],
    )  # fmt: skip
    assert made.status_code == 201, made.content
    url = made.json()["url"]
    assert "token" not in made.json()
    path = url.split("testserver", 1)[1]
    # Only its hash is kept.
    token = path.rstrip("/").rsplit("/", 1)[-1]
    assert ProjectInvitation.objects.get().token_hash == members.token_hash(token) != token
    signed_out = client.get(path)
    assert signed_out.status_code == 302 and "/admin/login/" in signed_out["Location"]
    newcomer = make_user("newcomer", is_staff=True)
    client.force_login(newcomer)
    page = client.get(path)
    assert page.status_code == 200 and b"Private" in page.content and b"screener" in page.content
    joined = client.post(path)
    assert joined.status_code == 302
    assert ProjectMember.objects.get(project_id=ref, user=newcomer).role == "screener"
    again = client.post(path)  # used up
    assert again.status_code == 404
    assert (
        error(
            api.post(
                f"/api/projects/{ref}/invitations",
                {"role": "viewer"},
                token=private["tokens"]["editor"],
            ),
            403,
        )["required_role"]
        == "owner"
    )


def test_expired_or_unknown_invite_links_say_so_alike(
    private: dict[str, Any], client: Client, make_user: Callable[..., User]
) -> None:
    from datetime import timedelta

    from django.utils import timezone

    with acting_as(Principal.for_user(private["users"]["owner"], "api-token")):
        made = members.invitation_create(project=private["project"], role="viewer", days=1)
    ProjectInvitation.objects.update(expires_at=timezone.now() - timedelta(seconds=1))
    client.force_login(make_user("late", is_staff=True))
    expired = client.get(made["path"])
    unknown = client.get("/invite/not-a-token/")
    assert expired.status_code == unknown.status_code == 404
    assert b"unknown, used or expired" in expired.content
    assert client.post(made["path"]).status_code == 404
    assert not ProjectMember.objects.filter(user__username="late").exists()


def test_the_admin_project_page_manages_members_through_the_service(
    private: dict[str, Any], client: Client, make_user: Callable[..., User]
) -> None:
    project: Project = private["project"]
    olga = private["users"]["owner"]
    olga.is_staff = True
    olga.save()
    from django.contrib.auth.models import Permission

    olga.user_permissions.add(*Permission.objects.filter(content_type__app_label="projects"))
    client.force_login(olga)
    page = client.get(f"/admin/projects/project/{project.pk}/change/")
    assert page.status_code == 200 and b"memberships-TOTAL_FORMS" in page.content
    # bob (staff, may change projects) does not see it at all.
    bob = private["users"][None]
    bob.is_staff = True
    bob.save()
    bob.user_permissions.add(*Permission.objects.filter(content_type__app_label="projects"))
    client.force_login(bob)
    assert client.get(f"/admin/projects/project/{project.pk}/change/").status_code in (302, 404)
    listed = client.get("/admin/projects/project/")
    assert b"Private" not in listed.content and b"Transformers" in listed.content
    home = client.get("/")
    assert b"Transformers" in home.content and b"Private" not in home.content
    SavedSearch.objects.create(name="private-watch", query="q", project=project)
    for model in ("reviewsession", "savedsearch"):
        assert client.get(f"/admin/projects/{model}/").status_code == 200
    assert b"private question" not in client.get("/admin/projects/reviewsession/").content
    assert b"private-watch" not in client.get("/admin/projects/savedsearch/").content
    assert client.get(f"/admin/projects/project/{project.pk}/papers/").status_code == 404
    client.force_login(olga)
    assert b"Private" in client.get("/").content
    assert b"private question" in client.get("/admin/projects/reviewsession/").content
    assert b"private-watch" in client.get("/admin/projects/savedsearch/").content


def test_unrestricted_principals_and_open_projects_keep_working(private: dict[str, Any]) -> None:
    project = private["project"]
    assert permissions.role_of(project.pk) == "owner"  # no principal: the library itself
    service = Principal.loaded_by(lambda: None, "service")
    with acting_as(service):
        assert permissions.role_of(project.pk) == "owner"
    superuser = User.objects.create_superuser("root", password="pw-root-0123456789")
    with acting_as(Principal.for_user(superuser, "api-token")):
        assert permissions.role_of(project.pk) == "owner"
        created = project_create(name="Root's")
    assert ProjectMember.objects.filter(project=created, user=superuser, role="owner").exists()
    with acting_as(Principal.for_user(private["users"][None], "api-token")):
        assert permissions.role_of("transformers") == "owner"  # open
        assert permissions.role_of(project.pk) is None
    # A saved search filed nowhere is its maker's.
    with acting_as(Principal.for_user(private["users"]["viewer"], "api-token")):
        from projects.watch.services import saved_search_save, saved_searches_in_scope

        mine, _ = saved_search_save(
            name="vera's", query="attention", engines=["local"], schedule="manual"
        )
        assert mine.owner == private["users"]["viewer"]
    with acting_as(Principal.for_user(private["users"][None], "api-token")):
        assert not saved_searches_in_scope().filter(pk=mine.pk).exists()
    assert SavedSearch.objects.filter(pk=mine.pk).exists()

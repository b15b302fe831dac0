"""The admin in read-only mode (issue 18): a person can log in and browse the library on a
real `manage.py serve` process whose database is opened read-only (MCP_READ_ONLY=true:
SQLite `mode=ro`, PostgreSQL read-only transactions). Login used to answer HTTP 500: the
session and the login time were written to the database."""

from __future__ import annotations

import json
import re
import subprocess
from collections.abc import Iterator
from typing import Any

import httpx2
import pytest

from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    base_env,
    running_server,
    server_database,
)

pytestmark = pytest.mark.server

PASSWORD = "read-only-admin-pw-7d1c"
SEED = f"""
from django.contrib.auth.models import User
from core.bootstrap import prepare_knowledge_base
from papers.schemas import PaperRecord
from papers.services import paper_upsert
prepare_knowledge_base()
User.objects.create_superuser("curator", "curator@example.org", {PASSWORD!r})
paper = paper_upsert(record=PaperRecord.build(title="A Snapshot Paper On Read-Only Libraries",
                                              authors=["Rita Reader"], year=2024,
                                              keywords=["snapshots"]))[0]
from projects.services import project_add_papers, project_create
from projects.watch.services import saved_search_save
from research_site.tokens import api_token_create
project_create(name="Frozen Project")
project_add_papers(project="frozen-project", paper_ids=[paper.pk])
saved_search_save(name="frozen-watch", query="read-only libraries", engines=["local"],
                  project="frozen-project")
api_token_create(user=User.objects.get(username="curator"), name="frozen", scope="read")
"""
STATE = """
from django.contrib.auth.models import User
from django.contrib.sessions.models import Session
print(User.objects.get(username="curator").last_login, Session.objects.count())
"""


def manage(env: dict[str, str], *args: str) -> str:
    done = subprocess.run(
        [PYTHON, "manage.py", *args], env=env, cwd=ROOT, capture_output=True, text=True,
        timeout=180, check=False,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()[-1] if done.stdout.strip() else ""


@pytest.fixture(scope="module")
def snapshot(tmp_path_factory: pytest.TempPathFactory) -> Iterator[KnowledgeBase]:
    directory = tmp_path_factory.mktemp("read-only-admin")
    with server_database("roadmin") as database_url:
        env = base_env(directory, database_url)
        manage(env, "shell", "-c", SEED)
        yield KnowledgeBase(directory, env)


def csrf_token(page: str) -> str:
    found = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page)
    assert found, page[:500]
    return found.group(1)


def test_admin_login_and_paper_list_work_in_read_only_mode(snapshot: KnowledgeBase) -> None:
    before = manage(snapshot.env, "shell", "-c", STATE)
    with (
        running_server(snapshot, env={"MCP_READ_ONLY": "true"}) as server,
        httpx2.Client(base_url=server.base_url, timeout=30) as browser,
    ):
        login = browser.get("/admin/login/?next=/admin/")
        assert login.status_code == 200
        answer = browser.post(
            "/admin/login/?next=/admin/",
            data={
                "username": "curator",
                "password": PASSWORD,
                "csrfmiddlewaretoken": csrf_token(login.text),
                "next": "/admin/",
            },
        )
        assert answer.status_code == 302, (answer.status_code, server.log()[-3000:])
        assert answer.headers["location"] == "/admin/"
        papers = browser.get("/admin/papers/paper/")
        assert papers.status_code == 200, server.log()[-3000:]
        assert "A Snapshot Paper On Read-Only Libraries" in papers.text
        # The session is a signed cookie, not a database row.
        assert "sessionid" in browser.cookies
        logout = browser.post("/admin/logout/", data={"csrfmiddlewaretoken": csrf(browser)})
        assert logout.status_code == 200
        assert browser.get("/admin/papers/paper/").status_code == 302  # logged out
        assert "Traceback" not in server.log()
    # Nothing was written: no login time, no session row.
    assert manage(snapshot.env, "shell", "-c", STATE) == before == "None 0"


def test_a_wrong_password_is_refused_in_read_only_mode(snapshot: KnowledgeBase) -> None:
    with (
        running_server(snapshot, env={"MCP_READ_ONLY": "true"}) as server,
        httpx2.Client(base_url=server.base_url, timeout=30) as browser,
    ):
        login = browser.get("/admin/login/")
        answer = browser.post(
            "/admin/login/",
            data={
                "username": "curator",
                "password": "wrong",
                "csrfmiddlewaretoken": csrf_token(login.text),
            },
        )
        assert answer.status_code == 200 and "correct username and password" in answer.text
        assert browser.get("/admin/papers/paper/").status_code == 302


def csrf(browser: Any) -> str:
    return str(browser.cookies.get("csrftoken", ""))


# Every registered admin (Django's users and groups included), its first object, every
# action a superuser sees on a writable server, and the admin's own extra URLs.
INVENTORY = """
import json, re
from django.contrib import admin
from django.contrib.auth.models import User
from django.test import RequestFactory
request = RequestFactory().get("/admin/")
request.user = User.objects.get(username="curator")
standard = ("changelist", "add", "history", "delete", "change")
found = []
for model, model_admin in admin.site._registry.items():
    first = model._default_manager.order_by("pk").values_list("pk", flat=True).first()
    routes = [str(p.pattern) for p in model_admin.get_urls()
              if getattr(p, "name", None) and not p.name.endswith(standard)]
    found.append({"app": model._meta.app_label, "model": model._meta.model_name,
                  "pk": None if first is None else str(first),
                  "actions": sorted(model_admin.get_actions(request)), "routes": routes})
print(json.dumps(found))
"""
COUNTS = """
from django.apps import apps
print(sum(m._default_manager.count() for m in apps.get_models()))
"""


def fill(route: str, pk: str) -> str:
    return re.sub(r"<(?:\w+:)?\w+>", pk, route)


def test_every_admin_write_is_hidden_or_refused_with_403_in_read_only_mode(
    snapshot: KnowledgeBase,
) -> None:
    inventory = json.loads(manage(snapshot.env, "shell", "-c", INVENTORY))
    rows_before = manage(snapshot.env, "shell", "-c", COUNTS)
    assert {"project", "savedsearch", "apitoken", "user", "keyword"} <= {
        entry["model"] for entry in inventory
    }
    refused: list[str] = []
    with (
        running_server(snapshot, env={"MCP_READ_ONLY": "true"}) as server,
        httpx2.Client(base_url=server.base_url, timeout=30) as browser,
    ):
        sign_in(browser)
        token = csrf(browser)

        def post(url: str, **data: Any) -> httpx2.Response:
            return browser.post(url, data={"csrfmiddlewaretoken": token, **data},
                                headers={"Referer": server.base_url + url})  # fmt: skip

        def expect_refused(answer: httpx2.Response, what: str) -> None:
            assert answer.status_code == 403, (what, answer.status_code, answer.text[:300])
            assert "read-only" in answer.text, (what, answer.text[:300])
            refused.append(what)

        for entry in inventory:
            base = f"/admin/{entry['app']}/{entry['model']}/"
            listing = browser.get(base)
            assert listing.status_code == 200, (base, listing.status_code)
            assert 'class="addlink"' not in listing.text, base  # no Add button
            expect_refused(browser.get(base + "add/"), f"GET {base}add/")
            expect_refused(post(base + "add/"), f"POST {base}add/")
            pk = entry["pk"]
            if pk is not None:
                change = browser.get(f"{base}{pk}/change/")
                assert change.status_code == 200, (base, change.status_code)
                assert 'name="_save"' not in change.text, base  # view-only form
                expect_refused(post(f"{base}{pk}/change/", _save="Save"), f"POST {base}change")
                expect_refused(browser.get(f"{base}{pk}/delete/"), f"GET {base}delete")
                expect_refused(post(f"{base}{pk}/delete/", post="yes"), f"POST {base}delete")
            for action in entry["actions"]:
                answer = post(base, action=action, index="0", _selected_action=pk or "1")
                if action.startswith("export_"):  # reads only: still served
                    assert answer.status_code == 200, (base, action, answer.status_code)
                    assert action not in refused
                else:
                    expect_refused(answer, f"action {base} {action}")
                    assert f'value="{action}"' not in listing.text, (base, action)  # hidden
            for route in entry["routes"]:
                expect_refused(post(base + fill(route, pk or "1")), f"POST {base}{route}")
        expect_refused(post("/alerts/read"), "POST /alerts/read")
        expect_refused(post("/admin/password_change/"), "POST password_change")
        log = server.log()
        # (Django logs a refused add page's PermissionDenied with its traceback: not a 500.)
        assert "Internal Server Error" not in log and "readonly database" not in log, log[-3000:]
    assert manage(snapshot.env, "shell", "-c", COUNTS) == rows_before
    # The six the probe found, among everything refused above.
    for what in ("POST /admin/projects/project/add/", "POST /admin/research_site/apitoken/add/",
                 "POST /admin/auth/user/add/", "action /admin/papers/paper/ add_keywords",
                 "action /admin/projects/savedsearch/ run_now"):  # fmt: skip
        assert what in refused, sorted(refused)


def sign_in(browser: httpx2.Client) -> None:
    login = browser.get("/admin/login/")
    answer = browser.post(
        "/admin/login/",
        data={"username": "curator", "password": PASSWORD,
              "csrfmiddlewaretoken": csrf_token(login.text), "next": "/admin/"},
    )  # fmt: skip
    assert answer.status_code == 302, answer.text[:500]

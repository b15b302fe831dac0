"""The admin in read-only mode (issue 18): a person can log in and browse the library on a
real `manage.py serve` process whose database is opened read-only (MCP_READ_ONLY=true:
SQLite `mode=ro`, PostgreSQL read-only transactions). Login used to answer HTTP 500: the
session and the login time were written to the database."""

from __future__ import annotations

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
paper_upsert(record=PaperRecord.build(title="A Snapshot Paper On Read-Only Libraries",
                                      authors=["Rita Reader"], year=2024))
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

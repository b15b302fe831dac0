"""Browser-test steps shared by the browser suites: serving a knowledge base its own seed
script prepared, logging in to the admin and reading a change list's titles."""

from __future__ import annotations

import contextlib
import json
import secrets
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from tests.browser.conftest import PLAYWRIGHT_MISSING, CurationSite
from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    base_env,
    running_server,
    server_database,
)

if TYPE_CHECKING:
    from playwright.sync_api import Page

expect = pytest.importorskip("playwright.sync_api", reason=PLAYWRIGHT_MISSING).expect


def log_in(page: Page, site: CurationSite) -> None:
    page.goto(site.url("/admin/login/?next=/admin/"))
    page.fill("#id_username", site.username)
    page.fill("#id_password", site.password)
    page.click("input[type=submit]")
    expect(page.locator("#user-tools")).to_contain_text(site.username)


def listed_titles(page: Page) -> list[str]:
    """The titles of a paper list, as a table's column or (searched) as results."""
    titles = "#result_list tbody .result-title"
    return page.locator(titles).all_inner_texts()


@contextlib.contextmanager
def seeded_site(
    directory: Path, label: str, seed: str, env: dict[str, str] | None = None
) -> Iterator[CurationSite]:
    """A served knowledge base in `directory` (with a PostgreSQL database of its own when
    DATABASE_URL is set) that the Python code `seed` prepared through `manage.py shell`;
    the seed makes the superuser "lead" with the password in BROWSER_USER_PASSWORD and
    prints its JSON (the site's `data`) last. Background work runs in the server process
    (no broker), nothing is searched by meaning; `env` adds to the server's environment."""
    password = secrets.token_urlsafe(16)
    with server_database(label) as database_url:
        served = base_env(directory, database_url)
        for name in ("REDIS_URL", "CELERY_BROKER_URL"):
            served.pop(name, None)  # a PDF's index task runs in the seeding process
        served["EMBEDDINGS_ENABLED"] = "false"
        served.update(env or {})
        seeded = subprocess.run(
            [PYTHON, "manage.py", "shell", "-c", seed], cwd=ROOT, capture_output=True,
            text=True, timeout=180, check=False,
            env={**served, "BROWSER_USER_PASSWORD": password},
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        data: dict[str, Any] = json.loads(seeded.stdout.strip().splitlines()[-1])
        with running_server(KnowledgeBase(directory, served)) as server:
            yield CurationSite(server, "lead", password, data, served)

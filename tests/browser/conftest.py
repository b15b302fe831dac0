"""Fixtures for the browser tests: a real `manage.py serve` on a private knowledge base,
and Debian's Chromium driven by Playwright.

Chromium is the system's (`apt-get install chromium`), started with `executable_path`:
`playwright install` downloads browsers, which this project's machines cannot. Without
/usr/bin/chromium or the playwright package the tests are skipped, saying which is missing,
except in CI (CI=true, set by .ci/run): there a missing browser fails every browser test,
so a CI run cannot pass without having run them.
Screenshots go to test-artifacts/browser/ (git-ignored), one folder per test.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import secrets
import shutil
import sqlite3
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

from tests.mcp.conftest import (
    PYTHON,
    ROOT,
    KnowledgeBase,
    LiveServer,
    base_env,
    copy_sqlite_database,
    running_server,
    server_database,
)

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--no-first-run",
]  # fmt: skip
ARTIFACTS = ROOT / "test-artifacts" / "browser"
SEED_SCRIPT = Path(__file__).with_name("seed_curation.py")
TIMEOUT_MS = 15_000
PLAYWRIGHT_MISSING = "the playwright package is not installed (pip install -r requirements-dev.txt)"

try:
    from playwright.sync_api import Browser, Page, expect, sync_playwright
except ImportError:  # pragma: no cover - requirements-dev.txt installs it
    sync_playwright = None  # type: ignore[assignment]
else:
    # An `expect` waits 5 s by default, whatever the page's timeout says: under CI's two
    # suites side by side, drawing a PDF page once took longer (a page jump's "page 7 in
    # view" failed there, and passes alone). Assertions wait as long as actions do.
    expect.set_options(timeout=TIMEOUT_MS)


def _missing() -> str | None:
    if sync_playwright is None:
        return PLAYWRIGHT_MISSING
    if not CHROMIUM.exists():
        return f"{CHROMIUM} is missing: install Debian's Chromium (apt-get install -y chromium)"
    return None


def running_in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() in ("true", "1", "yes")


@pytest.fixture(scope="session", autouse=True)
def _browser_available() -> None:
    """Skip the browser tests where the browser is missing; in CI, fail them instead.
    Session-scoped, so it runs before the module's served knowledge base is built."""
    reason = _missing()
    if reason is None:
        return
    if running_in_ci():
        pytest.fail(f"browser tests cannot run in CI: {reason}", pytrace=False)
    pytest.skip(f"browser tests skipped: {reason}")


@dataclass
class CurationSite:
    server: LiveServer
    username: str
    password: str
    data: dict[str, Any]
    env: dict[str, str] = field(default_factory=dict)  # the server's environment

    def url(self, path: str) -> str:
        return self.server.base_url + path


@dataclass
class SeededCuration:
    """seed_curation.py's knowledge base, seeded once for the package (not served): each
    module serves a copy of its own, so no module sees what another one changed."""

    directory: Path
    database_url: str | None
    password: str
    data: dict[str, Any]


@pytest.fixture(scope="package")
def seeded_curation(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SeededCuration]:
    directory = tmp_path_factory.mktemp("browser-kb-seeded")
    password = secrets.token_urlsafe(16)
    with server_database("browserseed") as database_url:
        env = base_env(directory, database_url)
        for name in ("REDIS_URL", "CELERY_BROKER_URL"):
            env.pop(name, None)
        env["EMBEDDINGS_ENABLED"] = "false"
        seeded = subprocess.run(
            [PYTHON, str(SEED_SCRIPT)], cwd=ROOT, capture_output=True, text=True, timeout=120,
            check=False, env={**env, "BROWSER_USER_PASSWORD": password},
        )  # fmt: skip
        assert seeded.returncode == 0, seeded.stderr
        data = json.loads(seeded.stdout.strip().splitlines()[-1])
        yield SeededCuration(directory, database_url, password, data)


@contextlib.contextmanager
def served_curation_copy(
    seeded: SeededCuration,
    directory: Path,
    env: dict[str, str] | None = None,
    superuser: bool = False,
) -> Iterator[CurationSite]:
    """A copy of `seeded` in `directory` (and a PostgreSQL database of its own), served;
    `env` adds to the server's environment; `superuser` makes the seeded user one."""
    shutil.copytree(
        seeded.directory, directory, dirs_exist_ok=True,
        ignore=shutil.ignore_patterns("research.db*", "server-*.log"),
    )  # fmt: skip
    if seeded.database_url is None:
        copy_sqlite_database(seeded.directory / "research.db", directory / "research.db")
    with server_database("browser", copy_of=seeded.database_url) as database_url:
        served = base_env(directory, database_url)
        for name in ("REDIS_URL", "CELERY_BROKER_URL"):
            served.pop(name, None)
        served["EMBEDDINGS_ENABLED"] = "false"  # nothing here searches by meaning
        served.update(env or {})
        if superuser:
            _make_superuser(directory, database_url, seeded.data["user"])
        with running_server(KnowledgeBase(directory, served)) as server:
            yield CurationSite(server, seeded.data["user"], seeded.password, seeded.data, served)


def _make_superuser(directory: Path, database_url: str | None, username: str) -> None:
    update = "UPDATE auth_user SET is_superuser = %s WHERE username = %s"
    if database_url is None:
        with contextlib.closing(sqlite3.connect(directory / "research.db")) as conn, conn:
            changed = conn.execute(update.replace("%s", "?"), (True, username)).rowcount
    else:
        import psycopg

        with psycopg.connect(database_url, autocommit=True) as pg_conn:
            changed = pg_conn.execute(update, (True, username)).rowcount
    assert changed == 1, username


@pytest.fixture(scope="module")
def curation_site(
    tmp_path_factory: pytest.TempPathFactory, seeded_curation: SeededCuration
) -> Iterator[CurationSite]:
    """A served knowledge base with five papers and a staff user in the Curators group:
    a fresh copy of `seeded_curation` for each module. Background work runs in the server
    process (no broker), on its own database."""
    directory = tmp_path_factory.mktemp("browser-kb")
    with served_curation_copy(seeded_curation, directory) as site:
        yield site


@pytest.fixture(scope="package")
def browser() -> Iterator[Browser]:
    """One Chromium for the whole package: each test still gets a context of its own."""
    assert sync_playwright is not None
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(
            executable_path=str(CHROMIUM), args=CHROMIUM_ARGS, headless=True
        )
        try:
            yield chromium
        finally:
            chromium.close()


class Shots:
    """Numbered full-page screenshots of one test, kept as artifacts."""

    def __init__(self, folder: Path, page: Page) -> None:
        self.folder, self.page, self.count = folder, page, 0

    def take(self, name: str) -> Path:
        self.count += 1
        path = self.folder / f"{self.count:02d}-{name}.png"
        self.page.screenshot(path=str(path), full_page=True)
        return path


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(accept_downloads=True, viewport={"width": 1280, "height": 900})
    context.set_default_timeout(TIMEOUT_MS)
    try:
        yield context.new_page()
    finally:
        context.close()


@pytest.fixture
def shots(page: Page, request: pytest.FixtureRequest) -> Shots:
    folder = ARTIFACTS / re.sub(r"[^\w.-]+", "_", request.node.name)
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    return Shots(folder, page)


def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> None:
    """A failing browser test leaves a screenshot of where it stopped."""
    if call.when != "call" or call.excinfo is None:
        return
    page = getattr(item, "funcargs", {}).get("page")
    if page is not None and not page.is_closed():
        ARTIFACTS.mkdir(parents=True, exist_ok=True)
        name = re.sub(r"[^\w.-]+", "_", item.name)
        page.screenshot(path=str(ARTIFACTS / f"FAILED-{name}.png"), full_page=True)

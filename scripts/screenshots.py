"""Screenshots of the pages people use, at 1366 px and 768 px, into docs/screenshots/.

    make screenshots          # or: .venv/bin/python scripts/screenshots.py [--out DIR]

Serves a throwaway knowledge base (the browser tests' five papers, a project made over MCP,
a PDF uploaded and highlighted on a reading page) with `manage.py serve` on SQLite, and
drives Debian's Chromium with Playwright as the browser tests do (tests/browser/). Each page
is taken as a user reaches it, signed in as a curator. README.md links the files.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
os.environ.setdefault("DJANGO_SETTINGS_MODULE", "research_site.settings")

from playwright.sync_api import Page, sync_playwright  # noqa: E402

from tests.browser.conftest import CHROMIUM, CHROMIUM_ARGS, SEED_SCRIPT  # noqa: E402
from tests.mcp.conftest import (  # noqa: E402
    PYTHON,
    KnowledgeBase,
    base_env,
    mcp_client,
    running_server,
)

PDF = ROOT / "tests" / "fixtures" / "pdfs" / "2304.02623v1.pdf"
WIDTHS = (1366, 768)


async def make_project(url: str, paper_ids: list[int]) -> None:
    async with mcp_client(url) as client:
        await client.call_tool("create_project", {"name": "Sequence models"})
        await client.call_tool(
            "add_papers_to_project", {"project_id": "sequence-models", "paper_ids": paper_ids}
        )


def log_in(page: Page, base: str, user: str, password: str) -> None:
    page.goto(f"{base}/admin/login/?next=/")
    page.fill("#id_username", user)
    page.fill("#id_password", password)
    page.click("input[type=submit]")
    page.wait_for_url(f"{base}/")


def highlight_on_the_reading_page(page: Page, base: str, paper_id: int) -> None:
    page.goto(f"{base}/admin/papers/paper/{paper_id}/read/")
    page.set_input_files("input[name=pdf]", str(PDF))
    page.click(".upload-pdf button[type=submit]")
    page.wait_for_selector("body[data-reader-ready=true]")
    page.wait_for_selector("#page-1[data-rendered=true] .textLayer span")
    page.evaluate(
        """() => {
          const span = [...document.querySelectorAll('#page-1 .textLayer span')]
            .find((s) => s.textContent.includes('Large language models have introduced'));
          const range = document.createRange();
          range.selectNodeContents(span);
          getSelection().removeAllRanges();
          getSelection().addRange(range);
          document.dispatchEvent(new Event('selectionchange'));
        }"""
    )
    page.fill("#highlight-comment", "The paper's premise")
    page.click("#highlight-button")
    page.wait_for_selector("#annotation-list li a")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=str(ROOT / "docs" / "screenshots"))
    out = Path(parser.parse_args().out)
    out.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(16)
    with tempfile.TemporaryDirectory(prefix="screenshots-") as folder:
        env = base_env(Path(folder), None)
        for name in ("REDIS_URL", "CELERY_BROKER_URL", "DATABASE_URL"):
            env.pop(name, None)
        env["EMBEDDINGS_ENABLED"] = "false"
        seeded = subprocess.run(
            [PYTHON, str(SEED_SCRIPT)], cwd=ROOT, capture_output=True, text=True, check=True,
            env={**env, "BROWSER_USER_PASSWORD": password},
        )  # fmt: skip
        data = json.loads(seeded.stdout.strip().splitlines()[-1])
        ids = {name: paper["paper_id"] for name, paper in data["papers"].items()}
        with running_server(KnowledgeBase(Path(folder), env)) as server:
            base = server.base_url
            asyncio.run(make_project(f"{base}/mcp", list(ids.values())))
            take(base, out, data["user"], password, ids)


def take(base: str, out: Path, user: str, password: str, ids: dict[str, int]) -> None:
    """Sign in, make a highlight on a reading page, then take every page at each width."""
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        page = browser.new_page(viewport={"width": 1366, "height": 900})
        log_in(page, base, user, password)
        highlight_on_the_reading_page(page, base, ids["lstm"])
        pages = {
            "home": "/",
            "paper-list": "/admin/papers/paper/?q=transformer",
            "reading-page": f"/admin/papers/paper/{ids['lstm']}/read/",
            "project-papers": "/admin/projects/project/sequence-models/papers/",
            "project-trends": "/admin/projects/project/sequence-models/trends/",
            "saved-search-form": "/admin/projects/savedsearch/add/",
        }
        for width in WIDTHS:
            page.set_viewport_size({"width": width, "height": 900})
            for name, path in pages.items():
                page.goto(base + path)
                if name == "reading-page":
                    page.wait_for_selector("body[data-reader-ready=true]")
                    page.wait_for_selector("#page-1[data-rendered=true]")
                target = out / f"{name}-{width}.png"
                page.screenshot(path=str(target))
                print(target.relative_to(ROOT) if target.is_relative_to(ROOT) else target)
        browser.close()


if __name__ == "__main__":
    main()

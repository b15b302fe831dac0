"""The home page at `/` (issue 21, item 1): what a signed-in researcher sees first, and what
anyone else is told about the server. The admin's "View site" link leads here."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from html import unescape
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

from engines import breaker
from engines.base import EngineUnreachable
from mcp_endpoint.registry import build_registry
from papers.models import Annotation, Paper
from projects.models import Project, ReviewSession, SavedSearch, SavedSearchRun
from projects.services import project_add_papers
from projects.watch.services import saved_search_save

pytestmark = pytest.mark.django_db


@pytest.fixture
def library(make_paper: Callable[..., Paper], make_project: Callable[..., Project]) -> Paper:
    paper = make_paper("Attention <script>alert(1)</script> Is All You Need")
    make_paper("Deep Residual Learning for Image Recognition", authors=["Kaiming He"], year=2016)
    project_add_papers(project=make_project("Transformers"), paper_ids=[paper.pk])
    Annotation.objects.create(
        paper=paper, page=3, kind="highlight", rects=[[1, 1, 2, 2]], color="#ffd400",
        text="Scaled dot-product attention",
    )  # fmt: skip
    ReviewSession.objects.create(
        query="Which attention variants scale to long documents?", domain="cs",
        max_results=20, status=ReviewSession.Status.WAITING, stage=ReviewSession.Stage.SCREEN,
    )  # fmt: skip
    ReviewSession.objects.create(
        query="A review still running", domain="cs", max_results=5,
        status=ReviewSession.Status.RUNNING, stage=ReviewSession.Stage.SEARCH,
    )  # fmt: skip
    return paper


def test_signed_out_visitors_learn_what_the_server_is_and_how_to_connect(
    client: Client, library: Paper
) -> None:
    response = client.get("/", HTTP_HOST="localhost:8000")
    assert response.status_code == 200
    page = response.content.decode()
    assert 'href="/admin/"' in page and "/api/docs" in page
    config = json.loads(
        page.split('<pre class="mcp-config" id="mcp-config">')[1].split("</pre>")[0]
        .replace("&quot;", '"')
    )  # fmt: skip
    assert config == {"mcpServers": {"research-mcp": {"url": "http://localhost:8000/mcp"}}}
    # Nothing of the library is shown to someone who has not signed in.
    assert "Transformers" not in page and "Scaled dot-product" not in page


def test_the_client_configuration_says_a_token_is_needed_when_one_is(
    client: Client, settings: Any
) -> None:
    settings.MCP_AUTH_TOKEN = "s3cret-token-value"
    page = client.get("/").content.decode()
    assert "Bearer &lt;MCP_AUTH_TOKEN&gt;" in page
    assert "s3cret-token-value" not in page


def test_signed_in_researchers_see_their_library_at_a_glance(
    admin_client: Client, library: Paper
) -> None:
    page = admin_client.get("/").content.decode()
    counts = page.split('class="home-counts"')[1].split("</ul>")[0]
    assert "<strong>2</strong>" in counts and "<strong>1</strong>" in counts
    reviews = page.split('id="home-reviews"')[1].split("</section>")[0]
    assert "Which attention variants scale to long documents?" in reviews
    assert "A review still running" not in reviews
    assert "Transformers</a>: 1 paper" in page
    assert "Scaled dot-product attention" in page and "p. 3" in page
    assert "Deep Residual Learning for Image Recognition" in page
    engines = page.split('id="home-engines"')[1].split("</section>")[0]
    assert "available" in engines
    # Titles are text, never markup.
    assert "<script>alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert 'action="/admin/papers/paper/"' in page  # the quick search opens the paper list


def test_an_empty_library_says_what_to_do_next(admin_client: Client) -> None:
    page = admin_client.get("/").content.decode()
    assert "The library is empty." in page and "No project yet." in page


def test_a_signed_in_user_without_admin_access_gets_the_public_page(
    client: Client, library: Paper
) -> None:
    user = User.objects.create_user("reader", password="a-long-password-1")
    client.force_login(user)
    page = client.get("/").content.decode()
    assert "Sign in to the library" in page and "Transformers" not in page


def test_the_home_page_only_answers_reads(admin_client: Client) -> None:
    assert admin_client.post("/").status_code == 405
    assert admin_client.head("/").status_code == 200


def test_the_admins_view_site_link_leads_to_the_home_page(admin_client: Client) -> None:
    admin_page = admin_client.get("/admin/").content.decode()
    assert '<a href="/">View site</a>' in admin_page
    assert admin_client.get("/").status_code == 200


def test_the_home_page_costs_the_same_queries_whatever_the_library_size(
    admin_client: Client, make_paper: Callable[..., Paper]
) -> None:
    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert admin_client.get("/").status_code == 200
        return len(captured)

    make_paper("One")
    few = queries()
    for number in range(30):
        make_paper(f"Paper number {number}", authors=[f"Author {number}"])
    assert queries() == few


# --- engines from their breakers, the saved-searches panel (issue 36, item 5) ----------------


def engines_section(client: Client) -> str:
    page = client.get("/").content.decode()
    return unescape(page.split('id="home-engines"')[1].split("</section>")[0])


def mcp_engine_status(engine_id: str) -> str:
    """list_search_engines as /mcp runs it: the engine's `status`."""
    result = build_registry(toolsets=None, read_only=False).tools["list_search_engines"].fn()
    listing = json.loads(result.content[0].text)
    return next(entry for entry in listing["engines"] if entry["id"] == engine_id)["status"]


def test_an_open_breaker_is_shown_as_failing_as_list_search_engines_says(
    admin_client: Client, settings: Any
) -> None:
    settings.ENGINES_ENABLED = ["crossref"]
    assert "Crossref: available" in engines_section(admin_client)

    breaker.failure_record("crossref", EngineUnreachable("name resolution failed"))
    breaker.breaker("crossref").open()
    engines = engines_section(admin_client)
    status = mcp_engine_status("crossref")  # last: the tool call closes this thread's database
    assert status.startswith("failing since ") and "(name resolution failed)" in status
    assert "next try in" in status
    # The same words; only the countdown may have moved on by a second between the two.
    failing = status.split("; next try in")[0]
    assert f'Crossref: <span class="engine-off">{failing}; next try in ' in engines
    assert "Crossref: available" not in engines


def test_an_engine_without_its_key_is_not_configured(admin_client: Client, settings: Any) -> None:
    settings.ENGINES_ENABLED = ["google_scholar"]
    settings.SERP_API_KEY = ""
    engines = engines_section(admin_client)
    status = mcp_engine_status("google_scholar")
    assert status == "not configured: SERP_API_KEY is not set"
    assert f'Google Scholar: <span class="engine-off">{status}</span>' in engines


def test_the_saved_searches_panel_shows_each_search_with_its_last_run(
    admin_client: Client,
) -> None:
    empty = admin_client.get("/").content.decode().split('id="home-saved-searches"')[1]
    assert "None yet." in empty.split("</section>")[0]
    weekly, _ = saved_search_save(name="LLM evaluation", query="llm evaluation")
    failing, _ = saved_search_save(name="Parsing", query="parsing", schedule="manual")
    never, _ = saved_search_save(name="Unrun", query="something", schedule="manual")
    SavedSearchRun.objects.create(
        search=weekly, trigger="schedule", status="ok", found=9, new=4, finished_at=timezone.now()
    )
    SavedSearchRun.objects.create(
        search=failing, trigger="manual", status="failed", finished_at=timezone.now()
    )
    SavedSearch.objects.filter(pk__in=[weekly.pk, failing.pk]).update(last_run_at=timezone.now())

    page = admin_client.get("/").content.decode()
    panel = page.split('id="home-saved-searches"')[1].split("</section>")[0]
    rows = {
        re.search(r">([^<]+)</a>", row).group(1): row  # type: ignore[union-attr]
        for row in panel.split("<li>")[1:]
    }
    assert set(rows) == {"LLM evaluation", "Parsing", "Unrun"}
    assert f'href="/admin/projects/savedsearch/{weekly.pk}/change/"' in rows["LLM evaluation"]
    assert "ok," in rows["LLM evaluation"] and "4 new" in rows["LLM evaluation"]
    assert "last run" in rows["LLM evaluation"]
    assert '<span class="engine-off">failed</span>' in rows["Parsing"]
    assert "not run yet" in rows["Unrun"]
    assert f'href="/admin/projects/savedsearch/{never.pk}/change/"' in rows["Unrun"]

"""The home page at `/` (issue 21, item 1): what a signed-in researcher sees first, and what
anyone else is told about the server. The admin's "View site" link leads here."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from papers.models import Annotation, Paper
from projects.models import Project, ReviewSession
from projects.services import project_add_papers

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

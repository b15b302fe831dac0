"""The site's small furniture (issue 36, item 7): an icon every page links (no favicon 404 in
the browser console), breadcrumbs that do not repeat themselves, plural names spelt right."""

from __future__ import annotations

import pytest
from django.apps import apps
from django.test import Client

pytestmark = pytest.mark.django_db


def test_admin_pages_link_an_icon_that_is_served(admin_client: Client) -> None:
    page = admin_client.get("/admin/").content.decode()
    href = page.split('<link rel="icon" href="')[1].split('"')[0]
    icon = admin_client.get(href)
    assert icon.status_code == 200
    assert icon["Content-Type"].startswith("image/svg+xml")
    assert b"<svg" in b"".join(icon.streaming_content)  # type: ignore[attr-defined]


def test_favicon_ico_leads_to_the_icon(client: Client) -> None:
    response = client.get("/favicon.ico", follow=True)
    assert response.status_code == 200
    assert response.redirect_chain[-1][0].endswith("research_site/favicon.svg")


def test_the_home_page_links_the_icon(admin_client: Client) -> None:
    assert 'rel="icon"' in admin_client.get("/").content.decode()


def test_saved_searches_are_called_saved_searches(admin_client: Client) -> None:
    model = apps.get_model("projects", "SavedSearch")
    assert model._meta.verbose_name_plural == "saved searches"
    index = admin_client.get("/admin/").content.decode()
    assert "Saved searches" in index and "Saved searchs" not in index


def test_project_breadcrumbs_do_not_say_projects_twice(admin_client: Client) -> None:
    page = admin_client.get("/admin/projects/project/").content.decode()
    crumbs = page.split('class="breadcrumbs"')[1].split("</div>")[0]
    assert "Research" in crumbs
    assert "Projects &rsaquo; Projects" not in crumbs and "Projects › Projects" not in crumbs

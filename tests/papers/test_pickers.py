"""Autocomplete for projects, keywords and authors in the admin (issue 21): the admin's own
endpoint (what `autocomplete_fields` and papers.pickers use) answers with the matching
items, and the action bar's autocomplete boxes submit what the actions read."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import Group, User
from django.test import Client
from django.urls import reverse

from papers.models import Keyword, Paper
from projects.models import Project, ProjectPaper
from projects.services import project_create

pytestmark = pytest.mark.django_db


def staff_client(username: str, group: str) -> Client:
    user = User.objects.create_user(username, password="pw", is_staff=True)
    user.groups.add(Group.objects.get(name=group))
    client = Client()
    client.force_login(user)
    return client


@pytest.fixture
def curator() -> Client:
    return staff_client("curator", "Curators")


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> dict[str, Any]:
    papers = {
        "attention": make_paper("Attention Is All You Need",
                                authors=["Ashish Vaswani", "Noam Shazeer"],
                                keywords=["transformers", "attention"]),
        "bert": make_paper("BERT: Pre-training of Deep Bidirectional Transformers",
                           authors=["Jacob Devlin"], year=2019, keywords=["pre-training"]),
        "resnet": make_paper("Deep Residual Learning for Image Recognition",
                             authors=["Kaiming He"], year=2016, keywords=["vision"]),
    }  # fmt: skip
    projects = [project_create(name=name) for name in ("Transformer survey", "Vision", "Trans")]
    return {"papers": papers, "projects": projects}


def suggestions(client: Client, source: str, field: str, term: str) -> list[dict[str, str]]:
    app_label, model_name = source.split(".")
    response = client.get(
        reverse("admin:autocomplete"),
        {"app_label": app_label, "model_name": model_name, "field_name": field, "term": term},
    )
    assert response.status_code == 200, response.content
    return response.json()["results"]


def test_projects_are_suggested_by_name(curator: Client, library: dict[str, Any]) -> None:
    found = suggestions(curator, "projects.projectpaper", "project", "trans")
    assert sorted(item["text"] for item in found) == ["Trans", "Transformer survey"]
    # The id is what the project box submits and the actions resolve.
    expected = Project.objects.filter(name__in=["Trans", "Transformer survey"])
    assert {item["id"] for item in found} == set(expected.values_list("pk", flat=True))


def test_keywords_are_suggested_by_name(curator: Client, library: dict[str, Any]) -> None:
    assert len(suggestions(curator, "papers.paperkeyword", "keyword", "tra")) == 2
    found = suggestions(curator, "papers.paperkeyword", "keyword", "transf")
    assert [item["text"] for item in found] == ["transformers"]
    assert found[0]["id"] == str(Keyword.objects.get(name="transformers").pk)


def test_authors_are_suggested_by_name(curator: Client, library: dict[str, Any]) -> None:
    found = suggestions(curator, "papers.paperauthor", "author", "vaswani")
    assert [item["text"] for item in found] == ["Ashish Vaswani"]
    assert suggestions(curator, "papers.paperauthor", "author", "nobody") == []


def test_the_endpoint_needs_a_signed_in_staff_user(client: Client, library: dict) -> None:
    response = client.get(
        reverse("admin:autocomplete"),
        {"app_label": "papers", "model_name": "paperkeyword", "field_name": "keyword"},
    )
    assert response.status_code == 302  # to the login page
    assert "results" not in response.content.decode()


def test_the_action_bar_offers_autocomplete_boxes(curator: Client, library: dict) -> None:
    page = curator.get(reverse("admin:papers_paper_changelist")).content.decode()
    assert 'class="project-picker"' in page and 'role="combobox"' in page
    assert f'data-source="{reverse("admin:projects_project_match")}"' in page
    assert "papers/project-picker.mjs" in page
    assert 'class="keyword-autocomplete"' in page and 'data-field-name="keyword"' in page
    assert "admin/js/vendor/select2/select2.full" in page
    assert "papers/keyword-picker.js" in page


def test_the_add_by_identifier_form_has_a_project_box(curator: Client, library: dict) -> None:
    page = curator.get(reverse("admin:papers_paper_add_by_identifier")).content.decode()
    assert 'class="project-picker"' in page and 'name="project"' in page
    assert "papers/project-picker.mjs" in page


def test_actions_read_what_the_boxes_submit(curator: Client, library: dict[str, Any]) -> None:
    """The project box sends the project id; the keywords box one value per keyword."""
    papers = library["papers"]
    selected = [papers["bert"].pk, papers["resnet"].pk]
    url = reverse("admin:papers_paper_changelist")
    curator.post(url, {"action": "add_to_project", "_selected_action": selected,
                       "project": library["projects"][1].pk})  # fmt: skip
    assert set(
        ProjectPaper.objects.filter(project=library["projects"][1]).values_list(
            "paper_id", flat=True
        )
    ) == set(selected)
    curator.post(url, {"action": "add_keywords", "_selected_action": selected,
                       "keywords": ["attention", "new keyword, another"]})  # fmt: skip
    for pk in selected:
        names = set(Paper.objects.get(pk=pk).keywords.values_list("name", flat=True))
        assert {"attention", "new keyword", "another"} <= names

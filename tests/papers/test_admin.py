"""The admin as a curation UI: lists, filters, search and actions through the services."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from django.test import Client
from django.urls import reverse

from papers.models import Paper
from projects.models import Project, ProjectPaper

pytestmark = pytest.mark.django_db

CHANGELIST = "admin:papers_paper_changelist"


@pytest.fixture
def library(make_paper: Callable[..., Paper]) -> list[Paper]:
    return [
        make_paper("Attention Is All You Need", authors=["Ashish Vaswani"], year=2017,
                   venue="NeurIPS"),
        make_paper("BERT", authors=["Jacob Devlin"], year=2019, venue="NAACL",
                   doi="10.18653/v1/N19-1423"),
        make_paper("GPT-3", authors=["Tom Brown"], year=2020, venue="NeurIPS"),
    ]  # fmt: skip


def titles(response: object) -> set[str]:
    return {p.title for p in response.context["cl"].result_list}  # type: ignore[attr-defined]


def test_admin_needs_login(client: Client) -> None:
    response = client.get(reverse(CHANGELIST))
    assert response.status_code == 302
    assert "/admin/login/" in response["Location"]


def test_changelist_filters_by_year_range_and_venue(
    admin_client: Client, library: list[Paper]
) -> None:
    response = admin_client.get(reverse(CHANGELIST), {"year": "2018-2020"})
    assert response.status_code == 200
    assert titles(response) == {"BERT", "GPT-3"}
    response = admin_client.get(reverse(CHANGELIST), {"venue": "neurips"})
    assert titles(response) == {"Attention Is All You Need", "GPT-3"}


def test_bad_year_filter_warns_instead_of_failing(
    admin_client: Client, library: list[Paper]
) -> None:
    response = admin_client.get(reverse(CHANGELIST), {"year": "last year"})
    assert response.status_code == 200
    assert len(titles(response)) == 3


def test_search_finds_by_title_author_doi_and_citekey(
    admin_client: Client, library: list[Paper]
) -> None:
    for term, expected in [
        ("attention", {"Attention Is All You Need"}),
        ("devlin", {"BERT"}),
        ("10.18653/V1/N19-1423", {"BERT"}),
        (library[2].citekey, {"GPT-3"}),
    ]:
        response = admin_client.get(reverse(CHANGELIST), {"q": term})
        assert titles(response) == expected, term


def test_add_to_project_action(admin_client: Client, library: list[Paper]) -> None:
    Project.objects.create(id="llms", name="LLMs")
    response = admin_client.post(
        reverse(CHANGELIST),
        {"action": "add_to_project", "_selected_action": [library[1].pk, library[2].pk],
         "project": "LLMs"},
        follow=True,
    )  # fmt: skip
    assert response.status_code == 200
    assert set(ProjectPaper.objects.values_list("paper_id", flat=True)) == {
        library[1].pk,
        library[2].pk,
    }


def test_keyword_actions_validate_through_the_service(
    admin_client: Client, library: list[Paper]
) -> None:
    url = reverse(CHANGELIST)
    admin_client.post(url, {"action": "add_keywords", "_selected_action": [library[0].pk],
                            "keywords": "transformers, attention"})  # fmt: skip
    assert sorted(library[0].keywords.values_list("name", flat=True)) == [
        "attention",
        "transformers",
    ]
    response = admin_client.post(
        url,
        {"action": "set_keywords", "_selected_action": [library[0].pk], "keywords": "x" * 101},
        follow=True,
    )
    assert "limit is 100" in response.content.decode()
    assert library[0].keywords.count() == 2  # unchanged


def test_export_bibtex_action_downloads_entries(admin_client: Client, library: list[Paper]) -> None:
    response = admin_client.post(
        reverse(CHANGELIST),
        {"action": "export_bibtex", "_selected_action": [p.pk for p in library]},
    )
    assert response.status_code == 200
    assert response["Content-Type"] == "application/x-bibtex; charset=utf-8"
    body = response.content.decode()
    assert body.count("@") == 3
    assert library[1].citekey in body


def test_project_admin_creates_slug_and_deletes_without_papers(
    admin_client: Client, library: list[Paper]
) -> None:
    response = admin_client.post(
        reverse("admin:projects_project_add"), {"name": "Efficient Transformers", "description": ""}
    )
    assert response.status_code == 302, response.content.decode()[:2000]
    project = Project.objects.get(name="Efficient Transformers")
    assert project.id == "efficient-transformers"
    ProjectPaper.objects.create(project=project, paper=library[0])
    admin_client.post(
        reverse("admin:projects_project_changelist"),
        {"action": "delete_keeping_papers", "_selected_action": [project.pk]},
    )
    assert not Project.objects.exists()
    assert not ProjectPaper.objects.exists()
    assert Paper.objects.count() == 3


def test_search_uses_the_full_text_index(admin_client: Client, library: list[Paper]) -> None:
    # stemmed ('attentions' finds 'Attention'), and the query language works
    response = admin_client.get(reverse(CHANGELIST), {"q": "attentions"})
    assert titles(response) == {"Attention Is All You Need"}
    response = admin_client.get(reverse(CHANGELIST), {"q": "BERT OR GPT*"})
    assert titles(response) == {"BERT", "GPT-3"}


def test_search_lists_the_best_match_first_whatever_column_is_asked(
    admin_client: Client, make_paper: Callable[..., Paper]
) -> None:
    best = make_paper("Neural Machine Translation by Jointly Learning to Align", year=2015,
                      authors=["Dzmitry Bahdanau"])  # fmt: skip
    for n in range(3):  # newer papers sharing one word of the question
        make_paper(f"Translation study {n}", authors=[f"Author {n}"], year=2020 + n)
    response = admin_client.get(
        reverse(CHANGELIST), {"q": "how does neural machine translation learn to align"}
    )
    listed = [p.title for p in response.context["cl"].result_list]
    assert listed[0] == best.title
    assert len(listed) == 4  # any word may match: the studies follow
    # The searched list is ordered by relevance: it has no column to sort by.
    asked = admin_client.get(reverse(CHANGELIST), {"q": "translation", "o": "3"})
    plain = admin_client.get(reverse(CHANGELIST), {"q": "translation"})
    assert [p.pk for p in asked.context["cl"].result_list] == [
        p.pk for p in plain.context["cl"].result_list
    ]
    assert b"sortable" not in plain.content


def test_search_box_never_errors_on_bad_query_syntax(
    admin_client: Client, library: list[Paper]
) -> None:
    response = admin_client.get(reverse(CHANGELIST), {"q": '"Attention Is'})
    assert response.status_code == 200
    assert titles(response) == {"Attention Is All You Need"}

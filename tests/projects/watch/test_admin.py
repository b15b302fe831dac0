"""The saved-search admin form (issue 36, item 5): engines as checkboxes named as the
registry names them, the filters as fields, checked by the service save_search uses (so an
error reads as the tool's does), and nothing typed lost when something is refused."""

from __future__ import annotations

import re
from html import unescape
from typing import Any

import pytest
from django.test import Client

from engines.registry import registry
from projects.models import Project, SavedSearch
from projects.watch.services import saved_search_save

pytestmark = pytest.mark.django_db

ADD = "/admin/projects/savedsearch/add/"


@pytest.fixture(autouse=True)
def two_engines(settings: Any) -> None:
    settings.ENGINES_ENABLED = ["arxiv", "crossref"]


def form_data(**changes: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": "Long-context evaluation", "query": "long context evaluation",
        "schedule": "weekly", "max_results": "20", "enabled": "on", "add_to_project": "on",
        "filter_year_from": "", "filter_year_to": "", "filter_has_pdf": "unknown",
        "filter_has_pdf_url": "unknown",
    }  # fmt: skip
    data.update(changes)
    return {key: value for key, value in data.items() if value is not None}


def errors_of(page: str) -> list[str]:
    return [
        unescape(text)
        for text in re.findall(r'<ul class="errorlist[^"]*"[^>]*><li>(.*?)</li>', page)
    ]


def test_the_form_offers_each_engine_by_name_and_no_json(admin_client: Client) -> None:
    page = admin_client.get(ADD).content.decode()
    boxes = dict(
        re.findall(r'<input type="checkbox" name="engines" value="(\w+)"[^>]*>\s*([^<\n]+)', page)
    )
    names = {engine_id: engine.name for engine_id, engine in registry.engines().items()}
    assert boxes == {"local": "Local library", **names}
    assert boxes["arxiv"] == "arXiv"
    assert "<textarea" not in page.split('name="query"')[1]  # no JSON box after the query
    for field in ("filter_year_from", "filter_year_to", "filter_venue", "filter_author",
                  "filter_keyword", "filter_category", "filter_has_pdf"):  # fmt: skip
        assert f'name="{field}"' in page


def test_ticked_engines_and_filled_filters_are_saved_as_the_tool_saves_them(
    admin_client: Client, make_project: Any
) -> None:
    project: Project = make_project("Evaluation")
    response = admin_client.post(ADD, form_data(
        engines=["local", "arxiv"], filter_year_from="2020", filter_year_to="2024",
        filter_venue="acl", filter_has_pdf="true", project=project.pk,
    ))  # fmt: skip
    assert response.status_code == 302, errors_of(response.content.decode())
    search = SavedSearch.objects.get()
    assert search.engines == ["local", "arxiv"]
    assert search.filters == {"year_from": 2020, "year_to": 2024, "venue": "acl", "has_pdf": True}
    assert search.project_id == project.pk and search.schedule == "weekly"
    assert search.next_run_at is not None  # scheduled: due at once, as the tool makes it

    # Opened again, the form shows what was saved; saved unchanged, nothing changes.
    change = f"/admin/projects/savedsearch/{search.pk}/change/"
    page = admin_client.get(change).content.decode()
    assert re.search(r'value="arxiv"[^>]*checked', page)
    assert not re.search(r'value="crossref"[^>]*checked', page)
    assert 'name="filter_year_from" value="2020"' in page and 'value="acl"' in page
    again = admin_client.post(change, form_data(
        engines=["local", "arxiv"], filter_year_from="2020", filter_year_to="2024",
        filter_venue="acl", filter_has_pdf="true", project=project.pk,
    ))  # fmt: skip
    assert again.status_code == 302
    search.refresh_from_db()
    assert search.engines == ["local", "arxiv"] and search.filters["venue"] == "acl"


def test_no_engine_ticked_means_every_available_engine(admin_client: Client) -> None:
    assert admin_client.post(ADD, form_data()).status_code == 302
    assert SavedSearch.objects.get().engines == []


def test_a_refused_range_shows_the_services_words_and_keeps_what_was_typed(
    admin_client: Client,
) -> None:
    response = admin_client.post(ADD, form_data(
        engines=["crossref"], filter_year_from="2024", filter_year_to="2019",
        filter_author="Ada Lovelace", query="sparse attention for long documents",
    ))  # fmt: skip
    assert response.status_code == 200
    page = response.content.decode()
    assert errors_of(page) == ["year_from (2024) is after year_to (2019)."]
    # The same words as the service (and so the save_search tool) gives.
    with pytest.raises(Exception, match=re.escape("year_from (2024) is after year_to (2019).")):
        saved_search_save(name="x", query="y", filters={"year_from": 2024, "year_to": 2019})
    assert 'name="filter_year_from" value="2024"' in page
    assert 'value="Ada Lovelace"' in page and "sparse attention for long documents" in page
    assert re.search(r'value="crossref"[^>]*checked', page)
    assert not SavedSearch.objects.exists()


def test_a_taken_name_and_a_bad_interval_are_refused_under_their_fields(
    admin_client: Client,
) -> None:
    saved_search_save(name="Taken", query="anything")
    taken = admin_client.post(ADD, form_data(name="taken", filter_venue="emnlp"))
    page = taken.content.decode()
    assert errors_of(page) == ["A saved search named 'taken' exists."]
    assert 'value="emnlp"' in page and 'value="taken"' in page
    short = admin_client.post(ADD, form_data(interval_seconds="5"))
    assert errors_of(short.content.decode()) == ["interval_seconds must be at least 60."]
    assert SavedSearch.objects.count() == 1


def test_renaming_a_search_keeps_its_record(admin_client: Client) -> None:
    search, _ = saved_search_save(name="Old name", query="parsing", schedule="manual")
    change = f"/admin/projects/savedsearch/{search.pk}/change/"
    response = admin_client.post(change, form_data(name="New name", schedule="manual"))
    assert response.status_code == 302
    assert list(SavedSearch.objects.values_list("pk", "name")) == [(search.pk, "New name")]


def test_the_project_is_chosen_with_the_one_picker_and_an_unknown_one_is_refused_and_kept(
    admin_client: Client, make_project: Any
) -> None:
    project: Project = make_project("Long-context evaluation")
    page = admin_client.get(ADD).content.decode()
    assert re.search(r'<input type="text" name="project"[^>]*role="combobox"', page)
    assert "papers/project-picker.mjs" in page

    # Without the script the typed text is sent: a name in any case is the project.
    response = admin_client.post(ADD, form_data(project="long-context EVALUATION"))
    assert response.status_code == 302, errors_of(response.content.decode())
    assert SavedSearch.objects.get().project_id == project.pk
    shown = admin_client.get(f"/admin/projects/savedsearch/{SavedSearch.objects.get().pk}/change/")
    assert 'value="Long-context evaluation"' in shown.content.decode()

    refused = admin_client.post(ADD, form_data(name="Other", project="No such project"))
    assert refused.status_code == 200
    text = refused.content.decode()
    assert any("No such project" in error for error in errors_of(text)), errors_of(text)
    assert 'value="No such project"' in text
    assert SavedSearch.objects.count() == 1

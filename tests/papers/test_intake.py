"""Adding papers from the admin: by DOI / arXiv id / URL through the add_paper service, and by
BibTeX with a preview of duplicates before anything is saved."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from papers import intake
from papers.duplicates import records_duplicates
from papers.models import Paper
from papers.schemas import PaperRecord
from projects.models import Project
from projects.services import project_create
from tests.engines.builders import PLOS_DOI, crossref_work, sources  # noqa: F401
from tests.engines.replay import ReplayServer

pytestmark = pytest.mark.django_db

BY_IDENTIFIER = "admin:papers_paper_add_by_identifier"
IMPORT = "admin:papers_paper_import_bibtex"

BIBTEX = r"""
@inproceedings{vaswani2017,
  title = {Attention Is All You Need},
  author = {Vaswani, Ashish and Shazeer, Noam},
  year = {2017},
  booktitle = {NeurIPS}
}
@article{devlin2019,
  title = {{BERT}: Pre-training of Deep Bidirectional Transformers},
  author = {Devlin, Jacob},
  year = {2019},
  doi = {10.18653/v1/N19-1423}
}
@article{devlin2019again,
  title = {BERT: Pre-training of Deep Bidirectional Transformers},
  author = {Devlin, Jacob},
  year = {2019},
  doi = {https://doi.org/10.18653/v1/N19-1423}
}
@article{brown2020,
  title = {Language Models are Few-Shot Learners},
  author = {Brown, Tom},
  year = {2020}
}
@article{broken,
  author = {Nobody},
  year = {2021}
}
"""


@pytest.fixture
def attention(make_paper: Callable[..., Paper]) -> Paper:
    return make_paper("Attention Is All You Need", authors=["Ashish Vaswani"], year=2017,
                      doi="10.5555/3295222.3295349")  # fmt: skip


def messages_of(response: Any) -> list[str]:
    return [str(m) for m in response.context["messages"]]


# --- by identifier ---------------------------------------------------------------------------


def test_an_identifier_already_in_the_library_is_not_fetched_and_joins_the_project(
    admin_client: Client, attention: Paper, make_project: Callable[..., Project]
) -> None:
    project = make_project("Reading")
    response = admin_client.post(
        reverse(BY_IDENTIFIER),
        {"identifiers": "https://doi.org/10.5555/3295222.3295349", "project": "Reading"},
    )
    assert response.status_code == 200
    outcome = response.context["outcomes"][0]
    assert outcome.paper == attention and outcome.created is False
    assert "already in the library" in response.content.decode()
    assert list(attention.projects.all()) == [project]
    assert Paper.objects.count() == 1


@pytest.mark.django_db(transaction=True)
def test_a_new_doi_is_fetched_from_the_engines(
    admin_client: Client,
    sources: ReplayServer,  # noqa: F811 - the fixture imported above
) -> None:
    sources.add(f"/crossref/works/{PLOS_DOI.replace('/', '%2F')}", crossref_work())
    response = admin_client.post(
        reverse(BY_IDENTIFIER), {"identifiers": f"{PLOS_DOI}\n\n10.9999/does-not-exist\n"}
    )
    added, unknown = response.context["outcomes"]
    assert added.created is True and added.paper.doi == PLOS_DOI
    assert "No engine knows" in unknown.error
    assert "1 added, 0 already in the library, 1 failed." in messages_of(response)
    assert Paper.objects.count() == 1


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({"identifiers": ""}, "This field is required"),
        ({"identifiers": "\n".join(f"10.1/{n}" for n in range(21))}, "at most 20"),
        ({"identifiers": "10.1/x", "project": "nowhere"}, "No project"),
    ],
)
def test_bad_identifier_forms_are_refused(
    admin_client: Client, data: dict[str, str], error: str
) -> None:
    response = admin_client.post(reverse(BY_IDENTIFIER), data)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert not response.context["outcomes"]


def test_an_unrecognised_identifier_says_what_is_accepted(admin_client: Client) -> None:
    response = admin_client.post(reverse(BY_IDENTIFIER), {"identifiers": "attention is all"})
    assert "give a DOI" in response.context["outcomes"][0].error
    assert not Paper.objects.exists()


# --- BibTeX --------------------------------------------------------------------------------


def preview(client: Client, **data: Any) -> Any:
    return client.post(reverse(IMPORT), {"_preview": "1", **data})


def test_preview_marks_new_duplicate_repeated_and_unreadable_entries_and_saves_nothing(
    admin_client: Client, attention: Paper
) -> None:
    response = preview(admin_client, text=BIBTEX)
    assert response.status_code == 200
    statuses = [entry.status for entry in response.context["preview"].entries]
    assert statuses == ["in library", "new", "repeats an earlier entry", "new", "unreadable"]
    page = response.content.decode()
    assert "2 new, 1 already in the library, 1 repeating an earlier entry, 1 unreadable" in page
    assert reverse("admin:papers_paper_change", args=[attention.pk]) in page
    assert "repeats entry 2" in page and "A paper needs a title" in page
    assert Paper.objects.count() == 1


def test_import_after_preview_merges_duplicates_and_adds_to_the_project(
    admin_client: Client, attention: Paper
) -> None:
    project = project_create(name="Thesis")
    shown = preview(admin_client, file=SimpleUploadedFile("refs.bib", BIBTEX.encode()),
                    project="Thesis")  # fmt: skip
    confirm = shown.context["confirm"]
    response = admin_client.post(
        reverse(IMPORT), {"_import": "1", "bibtex": confirm["bibtex"].value(), "project": "thesis"}
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("admin:projects_project_papers", args=["thesis"])
    assert Paper.objects.count() == 3  # BERT once, GPT-3 new, Attention merged
    assert project.paper_links.count() == 3
    attention.refresh_from_db()
    assert "bibtex" in attention.metadata.get("sources", [])


def test_import_can_skip_entries_already_in_the_library(
    admin_client: Client, attention: Paper
) -> None:
    response = admin_client.post(
        reverse(IMPORT), {"_import": "1", "bibtex": BIBTEX, "skip_duplicates": "on"}, follow=True
    )
    summary = next(m for m in messages_of(response) if m.startswith("BibTeX import"))
    assert "2 created" in summary and "1 skipped as already in the library" in summary
    assert any("entry broken" in m and "title" in m for m in messages_of(response))
    attention.refresh_from_db()
    assert "bibtex" not in attention.metadata.get("sources", [])


@pytest.mark.parametrize(
    ("data", "error"),
    [
        ({}, "Choose a file or paste BibTeX text"),
        ({"text": "@article{a, title={A}}", "file": SimpleUploadedFile("a.bib", b"@misc{b}")},
         "Choose a file or paste BibTeX text"),
        ({"file": SimpleUploadedFile("a.bib", "@misc{é}".encode("latin-1"))}, "not UTF-8"),
        ({"text": "@article{a, title={A}}", "project": "nowhere"}, "No project"),
    ],
)  # fmt: skip
def test_bad_uploads_are_refused(admin_client: Client, data: dict[str, Any], error: str) -> None:
    response = preview(admin_client, **data)
    assert response.status_code == 200
    assert error in response.content.decode()
    assert "preview" not in response.context


def test_an_oversized_upload_points_to_the_command(
    admin_client: Client, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(intake, "MAX_BIBTEX_BYTES", 100)
    response = preview(admin_client, file=SimpleUploadedFile("big.bib", BIBTEX.encode()))
    assert "manage.py import_bibtex" in response.content.decode()


def test_a_tampered_confirmation_is_refused_without_importing(admin_client: Client) -> None:
    response = admin_client.post(reverse(IMPORT), {"_import": "1", "bibtex": BIBTEX,
                                                   "project": "nowhere"})  # fmt: skip
    assert response.status_code == 200
    assert "No project" in response.content.decode()
    assert not Paper.objects.exists()


def test_records_duplicates_finds_library_papers_and_repeats_within_the_batch(
    attention: Paper,
) -> None:
    records = [
        PaperRecord.build(title="Something New", year=2024, authors=["Ada Lovelace"]),
        PaperRecord.build(title="A different title", doi="10.5555/3295222.3295349"),
        PaperRecord.build(title="Something new", year=2024, authors=["Ada Lovelace"]),
    ]
    matches = records_duplicates(records=records)
    assert [m.is_new for m in matches] == [True, False, False]
    assert matches[1].paper_id == attention.pk
    assert matches[2].earlier == 0
    assert records_duplicates(records=[]) == []

"""/api/projects: create, list, read, and the papers a project holds."""

from __future__ import annotations

import pytest

from projects.models import Project
from tests.api.conftest import Api, Library, error

pytestmark = pytest.mark.django_db


def test_create_project_is_201_with_a_slug_id(api: Api) -> None:
    response = api.post("/api/projects", {"name": "LLM  Evaluation", "description": " Evals. "})
    assert response.status_code == 201
    project = response.json()
    assert (project["project_id"], project["name"]) == ("llm-evaluation", "LLM Evaluation")
    assert project["description"] == "Evals."
    assert Project.objects.filter(pk="llm-evaluation").exists()


def test_creating_an_existing_name_is_409_naming_it(api: Api, library: Library) -> None:
    body = error(api.post("/api/projects", {"name": "TRANSFORMERS"}), 409)
    assert body["code"] == "conflict"
    assert body["name"] == "TRANSFORMERS"
    assert Project.objects.count() == 1


@pytest.mark.parametrize(
    "body", [{}, {"name": ""}, {"name": "n" * 201}, {"name": "ok", "description": "d" * 5001}]
)
def test_create_project_with_bad_fields_is_400(api: Api, body: dict) -> None:
    assert error(api.post("/api/projects", body), 400)["code"] == "invalid_input"


def test_blank_name_refused_by_the_service_is_400(api: Api) -> None:
    assert error(api.post("/api/projects", {"name": "   "}), 400)["field"] == "name"


def test_list_and_get_projects(api: Api, library: Library) -> None:
    api.post("/api/projects", {"name": "Agents"})
    listed = api.get("/api/projects").json()
    assert [(p["project_id"], p["paper_count"]) for p in listed] == [
        ("agents", 0), ("transformers", 2),
    ]  # fmt: skip
    detail = api.get("/api/projects/transformers").json()
    assert detail["paper_count"] == 2
    assert {"name": "transformers", "paper_count": 2} in detail["keywords"]
    for ref in ("transformers", "Transformers", "TRANSFORMERS"):
        assert api.get(f"/api/projects/{ref}").json()["description"] == "Attention-based models."
    assert error(api.get("/api/projects/nope"), 404)["project_id"] == "nope"


def test_project_papers_newest_additions_first_in_pages(api: Api, library: Library) -> None:
    page = api.get("/api/projects/transformers/papers").json()
    assert page["total"] == 2 and page["next_offset"] is None
    assert [p["paper_id"] for p in page["papers"]] == [library.bert.pk, library.attention.pk]
    assert page["papers"][0]["keywords"] == ["pretraining", "transformers"]
    first = api.get("/api/projects/transformers/papers", {"limit": 1}).json()
    assert first["next_offset"] == 1 and len(first["papers"]) == 1
    assert error(api.get("/api/projects/transformers/papers", {"limit": 101}), 400)
    assert error(api.get("/api/projects/transformers/papers", {"offset": 10_001}), 400)
    assert error(api.get("/api/projects/nope/papers"), 404)


def test_add_and_remove_papers(api: Api, library: Library) -> None:
    path = "/api/projects/transformers/papers"
    added = api.post(path, {"paper_ids": [library.resnet.citekey, library.bert.pk]})
    assert added.json() == {
        "project_id": "transformers", "added": 1, "removed": None, "already_in": 1,
        "not_in_project": None, "paper_ids": [library.resnet.pk, library.bert.pk],
    }  # fmt: skip
    assert api.get(path).json()["total"] == 3
    removed = api.post(f"{path}/remove", {"paper_ids": [library.resnet.pk, library.bert.pk]})
    assert removed.json()["removed"] == 2
    one = api.delete(f"{path}/{library.attention.citekey}")
    assert one.json()["removed"] == 1
    assert api.get(path).json()["total"] == 0
    assert library.attention.__class__.objects.count() == 3  # papers stay in the library


def test_membership_errors(api: Api, library: Library) -> None:
    path = "/api/projects/transformers/papers"
    unknown = error(api.post(path, {"paper_ids": [library.resnet.pk, 999999, "nokey"]}), 404)
    assert unknown["paper_ids"] == ["999999", "nokey"]
    assert api.get(path).json()["total"] == 2  # nothing was added
    assert error(api.post(path, {"paper_ids": []}), 400)
    assert error(api.post(path, {"paper_ids": list(range(1, 102))}), 400)
    assert error(api.post("/api/projects/nope/papers", {"paper_ids": [1]}), 404)
    assert error(api.delete(f"{path}/999999"), 404)
    # Digits int() refuses, and numbers past any database integer: no such paper, not a 500.
    for odd in ("²", "٣", str(2**70), 2**70):
        assert error(api.post(f"{path}/remove", {"paper_ids": [odd]}), 404)["paper_ids"] == [
            str(odd)
        ]


def test_delete_project_needs_its_name_and_keeps_the_papers(api: Api, library: Library) -> None:
    papers_before = library.attention.__class__.objects.count()
    wrong = error(api.delete("/api/projects/transformers?confirm_name=transformers"), 400)
    assert wrong["field"] == "confirm_name" and "'Transformers'" in wrong["message"]
    assert error(api.delete("/api/projects/transformers"), 400)["code"] == "invalid_input"
    assert api.get("/api/projects/transformers").status_code == 200
    done = api.delete("/api/projects/transformers?confirm_name=Transformers")
    assert done.status_code == 200, done.content
    assert done.json() == {
        "project_id": "transformers", "name": "Transformers", "deleted": True, "papers_removed": 2,
    }  # fmt: skip
    assert error(api.get("/api/projects/transformers"), 404)
    assert library.attention.__class__.objects.count() == papers_before
    assert error(api.delete("/api/projects/nope?confirm_name=Nope"), 404)

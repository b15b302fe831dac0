"""/api/projects/.../extraction: a review's or project's form (created, versioned), values
recorded by the authenticated user with their quotes anchored in a real PDF, agreement,
adjudication and the evidence table; the errors and token scopes of the rest of the API."""

from __future__ import annotations

import csv
import io
import zipfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from papers.models import Paper
from papers.pdf import services as pdf_services
from projects.models import (
    ExtractionAdjudication,
    ExtractionForm,
    ExtractionValue,
    Project,
    ReviewSession,
)
from projects.review.extraction.services import form_create
from projects.services import project_add_papers
from research_site.models import ApiToken
from tests.api.conftest import Api, error
from tests.projects.review.extraction.builders import (
    ACL,
    ACL_VALUES,
    FIELDS,
    NOT_IN_ANY,
    review_with_included,
)

pytestmark = pytest.mark.django_db

# A second extractor's graph_kind for the ACL paper, against ACL_VALUES' "property graph".
DISPUTED = {
    "graph_kind": {"value": "RDF graph", "quote": "Resource Description Framework (RDF) graphs"}
}


@pytest.fixture(autouse=True)
def knowledge_base(settings: Any, tmp_path: Path) -> None:
    settings.DOWNLOADS_DIR = tmp_path / "downloads"
    settings.CELERY_TASK_ALWAYS_EAGER = True  # the passage index is built in this process
    settings.EXTRACTION_STRICT = False


@dataclass
class Studies:
    acl: Paper  # with its PDF, indexed
    abstract: Paper  # known by its abstract only
    excluded: Paper  # screened out of the review
    review: ReviewSession
    project: Project

    @property
    def review_path(self) -> str:
        return f"/api/projects/reviews/{self.review.pk}/extraction"

    @property
    def project_path(self) -> str:
        return f"/api/projects/{self.project.pk}/extraction"


@pytest.fixture
def studies(
    make_paper: Callable[..., Paper],
    make_project: Callable[..., Project],
    django_capture_on_commit_callbacks: Any,
) -> Studies:
    acl = make_paper(title="Construction of the Literature Graph in Semantic Scholar")
    with django_capture_on_commit_callbacks(execute=True):
        pdf_services.pdf_attach_file(paper_id=acl.pk, path=ACL)
    abstract = make_paper(
        title="A study known by its abstract",
        abstract="We screened 1,204 records and included 37 randomised trials in adults.",
    )
    excluded = make_paper(title="Screened out")
    project = make_project(name="Evidence")
    project_add_papers(project=project, paper_ids=[acl.pk])
    review = review_with_included([acl, abstract], excluded=[excluded])
    return Studies(acl, abstract, excluded, review, project)


@pytest.fixture
def with_form(studies: Studies) -> Studies:
    form_create(session_id=studies.review.pk, name="Study data", fields=FIELDS)
    return studies


@pytest.fixture
def second(make_user: Callable[..., User], make_token: Callable[..., str]) -> str:
    """A write token of a second extractor, rita."""
    return make_token(make_user("rita"), ApiToken.Scope.WRITE)


# --- the form -------------------------------------------------------------------------------


def test_put_creates_the_form_then_makes_a_version_per_change(api: Api, studies: Studies) -> None:
    path = f"{studies.review_path}/form"
    assert error(api.get(path), 404)["session_id"] == str(studies.review.pk)
    created = api.put(path, {"name": "Study data", "fields": FIELDS})
    assert created.status_code == 201, created.content
    form = created.json()
    assert (form["session_id"], form["name"], form["version"]) == (
        str(studies.review.pk), "Study data", 1,
    )  # fmt: skip
    assert [f["key"] for f in form["fields"]] == [f["key"] for f in FIELDS]
    assert form["fields"][1] == {
        "key": "papers", "label": "Papers", "type": "number", "unit": "million papers",
        "choices": None, "tolerance": 0.5, "description": None, "quote_required": True,
    }  # fmt: skip
    assert api.get(path).json() == form

    same = api.put(path, {"fields": FIELDS})  # the name is kept when omitted
    assert (same.status_code, same.json()["version"]) == (200, 1)
    changed = [*FIELDS[:2], {"key": "notes", "type": "text", "quote_required": False}]
    second = api.put(path, {"fields": changed})
    assert (second.status_code, second.json()["version"]) == (200, 2)
    assert [f["key"] for f in api.get(path).json()["fields"]] == ["task", "papers", "notes"]
    assert ExtractionForm.objects.get(session=studies.review, version=2).created_by == (
        "user:writer"
    )


def test_a_project_has_its_form_too(api: Api, studies: Studies) -> None:
    path = f"{studies.project_path}/form"
    assert api.put(path, {"name": "Project data", "fields": FIELDS[:1]}).status_code == 201
    assert api.get(path).json()["project_id"] == studies.project.pk
    # By its name as well as its id.
    assert api.get("/api/projects/Evidence/extraction/form").json()["name"] == "Project data"


def test_a_bad_form_is_400_naming_the_field_and_changes_nothing(
    api: Api, with_form: Studies
) -> None:
    path = f"{with_form.review_path}/form"
    bad = [FIELDS[0], {"key": "kind", "type": "choice", "choices": ["only one"]}]
    body = error(api.put(path, {"fields": bad}), 400)
    assert (body["code"], body["field"]) == ("invalid_input", "fields[1].choices")
    assert error(api.put(path, {"fields": []}), 400)["field"] == "fields"
    schema = error(api.put(path, {"fields": [{"key": "x", "type": "text", "qoute": "1"}]}), 400)
    assert schema["errors"][0]["field"] == "body.fields.0.qoute"
    assert api.get(path).json()["version"] == 1


def test_creating_a_form_needs_a_name(api: Api, studies: Studies) -> None:
    body = error(api.put(f"{studies.review_path}/form", {"fields": FIELDS}), 400)
    assert body["field"] == "name"
    assert not ExtractionForm.objects.exists()


# --- values, agreement, adjudication, evidence ----------------------------------------------


def test_values_are_recorded_as_the_authenticated_user_with_anchored_quotes(
    api: Api, with_form: Studies
) -> None:
    answer = api.post(
        f"{with_form.review_path}/values", {"paper": with_form.acl.pk, "values": ACL_VALUES}
    )
    assert answer.status_code == 200, answer.content
    recorded = answer.json()
    assert recorded["extractor"] == "user:writer" and recorded["form_version"] == 1
    anchors = {r["field"]: r["anchor"] for r in recorded["recorded"]}
    assert (anchors["task"]["status"], anchors["task"]["page"]) == ("verified", 1)
    assert (anchors["papers"]["status"], anchors["papers"]["page"]) == ("verified", 2)
    assert recorded["flagged"] == [] and recorded["empty"] == ["open_source", "years"]
    stored = ExtractionValue.objects.get(field__key="papers")
    assert stored.user is not None and stored.user.username == "writer"
    assert stored.value == {"value": 37.0, "unit": "million papers"}


def test_an_agent_working_for_the_user_is_named_with_them(api: Api, with_form: Studies) -> None:
    recorded = api.post(
        f"{with_form.review_path}/values",
        {"paper": with_form.abstract.pk, "agent": "claude", "values": {
            "task": {"value": "Trials", "quote": "included 37 randomised trials"}}},
    ).json()  # fmt: skip
    assert recorded["extractor"] == "user:writer+agent:claude"
    assert recorded["recorded"][0]["anchor"]["status"] == "abstract_only"
    assert recorded["flagged"] == ["task"]


def test_bad_values_are_400_naming_the_field_and_record_nothing(
    api: Api, with_form: Studies
) -> None:
    path = f"{with_form.review_path}/values"
    acl = with_form.acl.pk
    wrong_unit = {**ACL_VALUES, "papers": {"value": "37 ms", "quote": "37M"}}
    body = error(api.post(path, {"paper": acl, "values": wrong_unit}), 400)
    assert (body["code"], body["field"]) == ("invalid_input", "values.papers")
    assert (
        error(api.post(path, {"paper": acl, "values": {"nope": {"value": 1}}}), 400)["field"]
        == "values.nope"
    )
    typo = {"task": {"value": "x", "qoute": "y"}}  # a misspelt property is not dropped
    assert error(api.post(path, {"paper": acl, "values": typo}), 400)["code"] == "invalid_input"
    assert error(api.post(path, {"paper": acl, "values": {"task": {"value": "x", "page": 0}}}), 400)
    assert not ExtractionValue.objects.exists()


def test_a_strict_server_refuses_a_quote_not_in_the_paper(
    api: Api, with_form: Studies, settings: Any
) -> None:
    settings.EXTRACTION_STRICT = True
    values = {"task": {"value": "Cohort", "quote": NOT_IN_ANY}}
    body = error(
        api.post(f"{with_form.review_path}/values", {"paper": with_form.acl.pk, "values": values}),
        400,
    )
    assert body["field"] == "values.task" and "task" in body["not_found"]
    assert not ExtractionValue.objects.exists()


def test_two_extractors_their_agreement_an_adjudication_and_the_evidence_table(
    api: Api, with_form: Studies, second: str
) -> None:
    base, acl = with_form.review_path, with_form.acl.pk
    api.post(f"{base}/values", {"paper": acl, "values": ACL_VALUES})
    rita = {**ACL_VALUES, **DISPUTED}
    assert (
        api.post(f"{base}/values", {"paper": acl, "values": rita}, token=second).status_code == 200
    )

    agreement = api.get(f"{base}/agreement").json()
    assert agreement["compared"] == ["user:rita", "user:writer"]
    assert agreement["fields"]["graph_kind"] == {
        "compared": 1, "agreed": 0, "share": 0.0, "kappa": 0.0,
    }  # fmt: skip
    assert agreement["overall"] == {"compared": 4, "agreed": 3, "share": 0.75}
    (disagreement,) = agreement["disagreements"]
    assert (disagreement["paper_id"], disagreement["field"]) == (acl, "graph_kind")
    named = api.get(f"{base}/agreement", {"extractors": ["user:writer", "user:rita"]}).json()
    assert named["compared"] == ["user:writer", "user:rita"]
    assert (
        error(api.get(f"{base}/agreement", {"extractors": ["user:writer"]}), 400)["field"]
        == "extractors"
    )

    table = api.get(f"{base}/evidence").json()
    row = next(r for r in table["rows"] if r["paper_id"] == acl)
    assert row["cells"]["graph_kind"]["source"] == "disagreement"
    assert row["cells"]["papers"]["source"] == "agreed"

    settle = {"paper": acl, "field": "graph_kind", "value": "property graph",
              "reason": "Section 2 says property graph."}  # fmt: skip
    settled = api.post(f"{base}/adjudications", settle)
    assert settled.status_code == 200, settled.content
    assert settled.json()["decided_by"] == "user:writer"
    assert settled.json()["anchor"] == {"status": "verified", "page": 2}
    assert error(api.post(f"{base}/adjudications", settle), 409)["code"] == "conflict"
    assert ExtractionAdjudication.objects.count() == 1
    cell = next(r for r in api.get(f"{base}/evidence").json()["rows"] if r["paper_id"] == acl)[
        "cells"
    ]["graph_kind"]
    assert (cell["source"], cell["value"], cell["decided_by"]) == (
        "adjudicated", "property graph", "user:writer",
    )  # fmt: skip
    assert api.get(f"{base}/agreement").json()["unresolved"] == 0


def test_adjudicating_where_nobody_disagrees_is_400(api: Api, with_form: Studies) -> None:
    api.post(f"{with_form.review_path}/values", {"paper": with_form.acl.pk, "values": ACL_VALUES})
    body = error(
        api.post(f"{with_form.review_path}/adjudications", {
            "paper": with_form.acl.pk, "field": "task", "value": "x", "reason": "r"}),
        400,
    )  # fmt: skip
    assert body["field"] == "field"


def test_a_project_s_papers_are_extracted_and_tabled(api: Api, studies: Studies) -> None:
    base = studies.project_path
    api.put(f"{base}/form", {"name": "Project data", "fields": FIELDS})
    api.post(f"{base}/values", {"paper": studies.acl.citekey, "values": ACL_VALUES})
    table = api.get(f"{base}/evidence").json()
    assert table["project_id"] == studies.project.pk
    assert [r["paper_id"] for r in table["rows"]] == [studies.acl.pk]
    assert table["rows"][0]["cells"]["papers"]["anchor"] == "verified"
    assert api.get(f"{base}/agreement").json()["overall"] is None  # one extractor


# --- what is not found, and who may write --------------------------------------------------


def test_unknown_reviews_projects_and_papers_outside_the_review_are_404(
    api: Api, with_form: Studies
) -> None:
    for path in (
        "/api/projects/reviews/999999/extraction/form",
        "/api/projects/reviews/not-a-review/extraction/evidence",
        "/api/projects/nope/extraction/agreement",
    ):
        assert error(api.get(path), 404)["code"] == "not_found"
    missing = error(
        api.put("/api/projects/nope/extraction/form", {"name": "n", "fields": FIELDS}), 404
    )
    assert missing["code"] == "not_found"
    # A paper of the library that the review screened out, or that the project does not hold.
    values = {"task": {"value": "x"}}
    outside = error(
        api.post(
            f"{with_form.review_path}/values", {"paper": with_form.excluded.pk, "values": values}
        ),
        404,
    )
    assert outside["paper_id"] == str(with_form.excluded.pk)
    assert error(
        api.post(f"{with_form.review_path}/values", {"paper": 999999, "values": values}), 404
    )
    assert not ExtractionValue.objects.exists()


def test_a_read_token_reads_but_cannot_extract(
    api: Api, with_form: Studies, read_token: str
) -> None:
    base = with_form.review_path
    for path in ("form", "agreement", "evidence"):
        assert api.get(f"{base}/{path}", token=read_token).status_code == 200
    writes = [
        api.put(f"{base}/form", {"fields": FIELDS[:1]}, token=read_token),
        api.post(f"{base}/values", {"paper": with_form.acl.pk, "values": ACL_VALUES}, read_token),
        api.post(f"{base}/adjudications", {"paper": with_form.acl.pk, "field": "task",
                                           "value": "x", "reason": "r"}, read_token),
    ]  # fmt: skip
    for response in writes:
        assert error(response, 403)["code"] == "insufficient_scope"
    assert ExtractionForm.objects.get().version == 1 and not ExtractionValue.objects.exists()


def test_read_only_server_refuses_extraction_writes(
    api: Api, with_form: Studies, settings: Any
) -> None:
    settings.MCP_READ_ONLY = True
    base = with_form.review_path
    assert api.get(f"{base}/evidence").status_code == 200
    body = error(api.post(f"{base}/values", {"paper": with_form.acl.pk, "values": ACL_VALUES}), 403)
    assert body["code"] == "read_only"
    assert error(api.put(f"{base}/form", {"fields": FIELDS[:1]}), 403)["code"] == "read_only"


def test_no_credentials_is_401(anonymous: Api, with_form: Studies) -> None:
    assert error(anonymous.get(f"{with_form.review_path}/evidence"), 401)["code"] == "unauthorized"


def test_the_operations_are_in_the_schema(api: Api) -> None:
    paths = api.get("/api/openapi.json").json()["paths"]
    assert set(paths["/api/projects/reviews/{session_id}/extraction/form"]) == {"get", "put"}
    operation = paths["/api/projects/{ref}/extraction/values"]["post"]
    assert operation["operationId"] == "record_project_extraction"
    assert {"200", "400", "403", "404"} <= set(operation["responses"])


def test_the_evidence_table_is_exported_as_a_file_in_each_format(
    api: Api, with_form: Studies
) -> None:
    base, acl = with_form.review_path, with_form.acl
    api.post(f"{base}/values", {"paper": acl.pk, "values": ACL_VALUES})
    csv_file = api.get(f"{base}/evidence/export", {"format": "csv", "style": "ieee"})
    assert csv_file.status_code == 200, csv_file.content
    assert csv_file["Content-Type"].startswith("text/csv")
    assert csv_file["Content-Disposition"].startswith('attachment; filename="evidence-')
    rows = list(csv.DictReader(io.StringIO(csv_file.content.decode())))
    row = next(r for r in rows if r["id"] == acl.human_id)
    assert row["papers quote"].endswith("(p. 2)") and row["citation"].startswith("[")
    xlsx = api.get(f"{base}/evidence/export", {"format": "xlsx"})
    assert zipfile.ZipFile(io.BytesIO(xlsx.content)).testzip() is None
    markdown = api.get(f"{base}/evidence/export", {"format": "markdown"}).content.decode()
    assert "| " in markdown and "resulting in 37M unique paper nodes" in markdown
    assert error(api.get(f"{base}/evidence/export", {"format": "pdf"}), 400)["field"] == "format"
    assert error(api.get(f"{base}/evidence/export", {"style": "no-such-style"}), 400)
    # The project has no form: nothing to table, and the answer says so.
    assert error(api.get(f"{with_form.project_path}/evidence/export"), 404)["code"] == "not_found"

"""The extraction page in the admin (projects/review/extraction_admin.py), through the Django
test client as a browser sends it: the form edited as a table of fields (version 2 when a
field changes), the evidence table with its flags and links to the reading page at the
quote, the agreement, a disagreement adjudicated from the page; CSRF, the change
permission and a read-only server."""

from __future__ import annotations

import re
from html.parser import HTMLParser
from typing import Any

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.urls import reverse

from papers.models import Paper
from projects.models import ExtractionAdjudication, ExtractionForm, Project
from projects.review.extraction.services import extract_record
from tests.projects.review.extraction.builders import ACL_VALUES, FIELDS, review_with_included

pytestmark = pytest.mark.django_db

RDF = {"value": "RDF graph", "quote": "Resource Description Framework (RDF) graphs"}


class Page(HTMLParser):
    """What a browser would read from a page: every form's fields as it would submit
    them, the labels, and the form controls (for the accessibility checks)."""

    def __init__(self, html: str) -> None:
        super().__init__()
        self.forms: dict[str, dict[str, Any]] = {}
        self.labels: set[str] = set()
        self.controls: list[dict[str, str]] = []
        self._form: str | None = None
        self._field: dict[str, str] | None = None  # an open textarea or select
        self._options: list[tuple[str, bool]] = []
        self._text: list[str] = []
        self.feed(html)

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        found = {name: value or "" for name, value in attrs}
        if tag == "form":
            self._form = found.get("id") or f"form-{len(self.forms)}"
            self.forms[self._form] = {"_action": found.get("action", "")}
        elif tag == "label" and "for" in found:
            self.labels.add(found["for"])
        elif tag in ("input", "select", "textarea"):
            self.controls.append({"tag": tag, **found})
            if tag == "input":
                self._input(found)
            else:
                self._field, self._options, self._text = {"tag": tag, **found}, [], []
        elif tag == "option" and self._field is not None:
            self._options.append((found.get("value", ""), "selected" in found))

    def _input(self, found: dict[str, str]) -> None:
        kind = found.get("type", "text")
        if self._form is None or "name" not in found or kind in ("submit", "button"):
            return
        if kind == "checkbox" and "checked" not in found:
            return
        self.forms[self._form][found["name"]] = found.get(
            "value", "on" if kind == "checkbox" else ""
        )

    def handle_data(self, data: str) -> None:
        if self._field is not None and self._field["tag"] == "textarea":
            self._text.append(data)

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self._form = None
        elif tag in ("select", "textarea") and self._field is not None:
            field, self._field = self._field, None
            if self._form is None or "name" not in field:
                return
            if tag == "textarea":
                value = "".join(self._text).removeprefix("\n")
            else:
                chosen = [v for v, selected in self._options if selected] or [
                    v for v, _ in self._options[:1]
                ]
                value = chosen[0] if chosen else ""
            self.forms[self._form][field["name"]] = value

    def posting_to(self, url: str) -> list[dict[str, Any]]:
        """The forms that post to `url` (not the admin's own, such as "Log out")."""
        return [form for form in self.forms.values() if form["_action"] == url]

    def unlabelled(self) -> list[dict[str, str]]:
        """Visible controls no label names (axe-core's `label` rule)."""
        return [
            control for control in self.controls
            if control.get("type") not in ("hidden", "submit", "button")
            and control.get("id", "") not in self.labels and not control.get("aria-label")
        ]  # fmt: skip


def extraction_url(owner: Project | Any) -> str:
    if isinstance(owner, Project):
        return reverse("admin:projects_project_extraction", args=[owner.pk])
    return reverse("admin:projects_reviewsession_extraction", args=[owner.pk])


def read(client: Client, url: str) -> tuple[str, Page]:
    response = client.get(url)
    assert response.status_code == 200, response.content[:500]
    html = response.content.decode()
    return html, Page(html)


def submit(client: Client, url: str, data: dict[str, Any]) -> str:
    answer = client.post(url, {k: v for k, v in data.items() if k != "_action"}, follow=True)
    assert answer.status_code == 200, answer.content[:500]
    return answer.content.decode()


@pytest.fixture
def disputed(project: Project, studies: dict[str, Paper]) -> Paper:
    """The project's ACL paper extracted by agents a and b, who differ on graph_kind."""
    acl = studies["acl"]
    extract_record(project_id=project.pk, paper=acl.pk, agent="a", values=ACL_VALUES)
    extract_record(
        project_id=project.pk, paper=acl.pk, agent="b", values={**ACL_VALUES, "graph_kind": RDF}
    )
    return acl


def test_the_page_shows_the_form_the_evidence_and_the_agreement(
    admin_client: Client, project: Project, disputed: Paper
) -> None:
    url = extraction_url(project)
    html, page = read(admin_client, url)
    assert "Form: Study data, version 1" in html
    # The evidence table: a header per field, a row per study.
    table = html.split('id="evidence-table"')[1].split("</table>")[0]
    assert table.count('<th scope="col">') == 1 + len(FIELDS)
    assert table.count('<tr data-paper="') == 3
    row = table.split(f'<tr data-paper="{disputed.pk}">')[1].split("</tr>")[0]
    assert "37 million papers" in row and "resulting in 37M unique paper nodes" in row
    read_url = reverse("admin:papers_paper_read", args=[disputed.pk])
    assert f'href="{read_url}?page=2&amp;quote=resulting+in+37M+unique+paper+nodes"' in row
    assert "open at p. 2" in row
    assert 'flag-disagreement">disagreement' in row
    assert "agent:a: property graph" in row and "agent:b: RDF graph" in row
    assert f'href="#adjudicate-{disputed.pk}-graph_kind"' in row
    # The agreement, per field and overall, and the disagreement's form.
    agreement = html.split('id="agreement-table"')[1].split("</table>")[0]
    assert re.search(r"Graph kind</th><td>1</td><td>0</td><td>0.0</td><td>0.0</td>", agreement)
    assert re.search(r"overall</th><td>4</td><td>3</td><td>0.75</td>", agreement)
    assert "Open source</th><td>0</td><td>0</td><td>—</td><td>undefined</td>" in agreement
    assert "Disagreements: 1, unresolved: 1." in html
    (adjudication,) = [f for f in page.posting_to(url) if f["action"] == "adjudicate"]
    assert adjudication["paper"] == str(disputed.pk) and adjudication["field"] == "graph_kind"
    # The editor: a row per field and a blank one, every control labelled.
    editor = page.forms["extraction-form-editor"]
    assert editor["form-TOTAL_FORMS"] == str(len(FIELDS) + 1)
    assert editor["form-1-unit"] == "million papers" and editor["form-1-tolerance"] == "0.5"
    assert editor["form-3-choices"] == "property graph\nRDF graph\nother"
    assert editor["form-3-type"] == "choice" and "form-2-quote_required" not in editor
    assert page.unlabelled() == []
    assert "<textarea" in html and "JSON" not in html


def test_the_editor_makes_version_2_when_a_field_changes(
    admin_client: Client, project: Project, disputed: Paper
) -> None:
    url = extraction_url(project)
    editor = read(admin_client, url)[1].forms["extraction-form-editor"]
    unchanged = submit(admin_client, url, editor)
    assert "Nothing changed: the form stays at v1." in unchanged
    assert ExtractionForm.objects.filter(project=project).count() == 1

    changed = {**editor, "form-0-description": "What the system does, in a sentence.",
               "form-6-key": "dataset", "form-6-label": "Dataset", "form-6-type": "text",
               "form-5-DELETE": "on"}  # fmt: skip
    answer = submit(admin_client, url, changed)
    assert "Form saved as version 2." in answer and "Form: Study data, version 2" in answer
    latest = ExtractionForm.objects.get(project=project, version=2)
    assert [f.key for f in latest.fields.order_by("order")] == [
        "task", "papers", "pages", "graph_kind", "open_source", "dataset",
    ]  # fmt: skip
    assert latest.fields.get(key="task").description == "What the system does, in a sentence."
    assert latest.created_by == "admin:admin"
    # Values answered under version 1 still count for the fields that kept their meaning.
    assert "37 million papers" in answer


def test_rows_are_reordered_and_more_rows_added_without_saving(
    admin_client: Client, project: Project
) -> None:
    url = extraction_url(project)
    editor = read(admin_client, url)[1].forms["extraction-form-editor"]
    more = submit(admin_client, url, {**editor, "add_row": "Add a row"})
    assert Page(more).forms["extraction-form-editor"]["form-TOTAL_FORMS"] == str(len(FIELDS) + 2)
    tampered = submit(admin_client, url, {**editor, "add_row": "1", "form-TOTAL_FORMS": "x"})
    assert "ManagementForm data is missing or has been tampered with" in tampered
    assert ExtractionForm.objects.filter(project=project).count() == 1
    moved = submit(admin_client, url, {**editor, "form-5-ORDER": "0"})
    assert "version 2" in moved
    latest = ExtractionForm.objects.get(project=project, version=2)
    assert [f.key for f in latest.fields.order_by("order")][:2] == ["years", "task"]


def test_a_bad_row_is_refused_naming_the_row_and_keeps_what_was_typed(
    admin_client: Client, project: Project
) -> None:
    url = extraction_url(project)
    editor = read(admin_client, url)[1].forms["extraction-form-editor"]
    bad = {**editor, "form-0-DELETE": "on", "form-3-choices": "only one"}
    answer = submit(admin_client, url, bad)
    # graph_kind is the 3rd field sent (row 1 removed), on the 4th row of the table.
    assert "row 4.choices: a choice field needs 2-50 choices" in answer
    assert Page(answer).forms["extraction-form-editor"]["form-3-choices"] == "only one"
    not_a_number = submit(admin_client, url, {**editor, "form-1-tolerance": "half"})
    assert "Correct the rows marked below." in not_a_number and "Enter a number." in not_a_number
    assert ExtractionForm.objects.filter(project=project).count() == 1


def test_a_review_s_first_form_is_made_in_the_editor(
    admin_client: Client, studies: dict[str, Paper]
) -> None:
    review = review_with_included([studies["acl"]])
    url = extraction_url(review)
    html, page = read(admin_client, url)
    assert "Form (none yet)" in html and 'id="evidence-table"' not in html
    editor = page.forms["extraction-form-editor"]
    assert editor["form-TOTAL_FORMS"] == "1"
    nameless = {**editor, "form-0-key": "sample_size", "form-0-type": "integer"}
    assert "Name must be non-empty text." in submit(admin_client, url, nameless)
    answer = submit(admin_client, url, {**nameless, "name": "Trials"})
    assert "Form saved as version 1." in answer
    form = ExtractionForm.objects.get(session=review)
    assert [(f.key, f.type, f.label) for f in form.fields.all()] == [
        ("sample_size", "integer", "Sample size"),
    ]  # fmt: skip
    assert f'<tr data-paper="{studies["acl"].pk}">' in answer


def test_a_disagreement_is_adjudicated_from_the_page(
    admin_client: Client, admin_user: User, project: Project, disputed: Paper
) -> None:
    url = extraction_url(project)
    adjudication = next(
        f for f in read(admin_client, url)[1].forms.values() if f.get("action") == "adjudicate"
    )
    assert adjudication["value"] == "property graph"  # the select's first choice
    missing = submit(admin_client, url, {**adjudication, "reason": ""})
    assert "reason must say" in missing and not ExtractionAdjudication.objects.exists()
    answer = submit(admin_client, url, {**adjudication, "reason": "Section 2 says property graph."})
    assert f"Adjudicated graph_kind of paper {disputed.pk}." in answer
    made = ExtractionAdjudication.objects.get()
    assert (made.value, made.decided_by) == ("property graph", f"user:{admin_user.username}")
    assert (made.anchor_status, made.anchor_page) == ("verified", 2)  # a's quote, kept
    assert "adjudicated by user:admin" in answer and "Disagreements: 1, unresolved: 0." in answer
    again = submit(admin_client, url, {**adjudication, "reason": "again"})
    assert "already adjudicated" in again and ExtractionAdjudication.objects.count() == 1


def test_not_reported_can_be_the_value_that_stands(
    admin_client: Client, project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"]
    extract_record(project_id=project.pk, paper=acl.pk, agent="a", values={"years": {
        "value": "2016-2018", "quote": "resulting in 37M unique paper nodes"}})  # fmt: skip
    extract_record(
        project_id=project.pk, paper=acl.pk, agent="b", values={"years": {"value": None}}
    )
    url = extraction_url(project)
    form = next(
        f for f in read(admin_client, url)[1].forms.values() if f.get("action") == "adjudicate"
    )
    assert "Give the value that stands" in submit(admin_client, url, {**form, "reason": "r"})
    submit(admin_client, url, {**form, "reason": "Not in the paper.", "not_reported": "1"})
    assert ExtractionAdjudication.objects.get().value is None


def test_writes_need_csrf_and_the_change_permission(
    project: Project, disputed: Paper, admin_user: User
) -> None:
    url = extraction_url(project)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(admin_user)
    editor = Page(strict.get(url).content.decode()).forms["extraction-form-editor"]
    without_token = {k: v for k, v in editor.items() if k not in ("_action", "csrfmiddlewaretoken")}
    assert strict.post(url, {**without_token, "form-0-key": "renamed"}).status_code == 403
    assert ExtractionForm.objects.filter(project=project).count() == 1

    viewer = User.objects.create_user("vera", password="x", is_staff=True)
    viewer.user_permissions.add(Permission.objects.get(codename="view_project"))
    browser = Client()
    browser.force_login(viewer)
    html, page = read(browser, url)
    assert "You may view this extraction but not change it." in html
    assert 'id="evidence-table"' in html and 'id="extraction-fields"' in html
    assert page.posting_to(url) == []  # neither the editor nor an adjudication form
    assert browser.post(url, {**editor, "form-0-key": "renamed"}).status_code == 403
    assert browser.post(url, {"action": "adjudicate", "paper": disputed.pk}).status_code == 403
    assert ExtractionForm.objects.filter(project=project).count() == 1

    nobody = User.objects.create_user("nora", password="x", is_staff=True)
    browser.force_login(nobody)
    assert browser.get(url).status_code == 403


def test_a_read_only_server_shows_no_forms_and_refuses_writes(
    admin_client: Client, project: Project, disputed: Paper, settings: Any
) -> None:
    url = extraction_url(project)
    editor = read(admin_client, url)[1].forms["extraction-form-editor"]
    settings.MCP_READ_ONLY = True
    html, page = read(admin_client, url)
    assert "This server is read-only" in html and page.posting_to(url) == []
    assert 'id="evidence-table"' in html and 'id="agreement-table"' in html
    answer = submit(admin_client, url, {**editor, "form-0-key": "renamed"})
    assert "This server is read-only" in answer
    assert ExtractionForm.objects.filter(project=project).count() == 1


def test_the_change_pages_link_to_the_extraction(
    admin_client: Client, project: Project, studies: dict[str, Paper]
) -> None:
    review = review_with_included([studies["acl"]])
    for owner, change in (
        (project, reverse("admin:projects_project_change", args=[project.pk])),
        (review, reverse("admin:projects_reviewsession_change", args=[review.pk])),
    ):
        page = admin_client.get(change).content.decode()
        assert f'<a href="{extraction_url(owner)}">Extraction</a>' in page
    missing = reverse("admin:projects_project_extraction", args=["nope"])
    assert admin_client.get(missing).status_code == 404

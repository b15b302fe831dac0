"""The evidence table's rows (projects/review/extraction/evidence.py): a row per study in
citation order, a cell per field with the value that stands, its quote, page and anchor;
disagreements shown as such until adjudicated; values of earlier form versions counted
while their field keeps its meaning."""

from __future__ import annotations

from papers.models import Paper
from projects.models import ExtractionValue, Project
from projects.review.extraction.evidence import evidence_rows
from projects.review.extraction.services import (
    adjudicate,
    extract_record,
    form_create,
    form_update,
)
from tests.projects.review.extraction.builders import ACL_VALUES, FIELDS, review_with_included


def test_one_row_per_study_one_cell_per_field(project: Project, studies: dict[str, Paper]) -> None:
    acl = studies["acl"]
    extract_record(project_id=project.pk, paper=acl.pk, agent="a", values=ACL_VALUES)
    table = evidence_rows(project_id=project.pk)
    assert table["columns"] == [f["key"] for f in FIELDS] and table["form"]["version"] == 1
    assert [r["paper_id"] for r in table["rows"]] == sorted(
        (p.pk for p in studies.values()), key=lambda pk: Paper.objects.get(pk=pk).human_id
    )
    row = next(r for r in table["rows"] if r["paper_id"] == acl.pk)
    assert row["id"] == acl.human_id and row["title"] == acl.title
    cell = row["cells"]["papers"]
    assert cell == {
        "value": {"value": 37.0, "unit": "million papers"},
        "quote": "resulting in 37M unique paper nodes", "page": 2, "anchor": "verified",
        "flagged": False, "source": "single", "version": 1, "extractors": ["agent:a"],
        "highlight": ExtractionValue.objects.get(field__key="papers").highlight_id,
    }  # fmt: skip
    assert cell["highlight"] is not None  # a verified quote's highlight in the PDF
    assert row["cells"]["pages"]["anchor"] == "no_quote"
    assert row["cells"]["years"] is None and row["cells"]["open_source"] is None
    others = [r for r in table["rows"] if r["paper_id"] != acl.pk]
    assert all(all(c is None for c in r["cells"].values()) for r in others)


def test_agreed_disagreed_and_adjudicated_cells(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"]
    extract_record(project_id=project.pk, paper=acl.pk, agent="a", values=ACL_VALUES)
    # b agrees on papers (within the tolerance) with a quote not found, differs on graph_kind.
    extract_record(
        project_id=project.pk, paper=acl.pk, agent="b",
        values={"papers": {"value": 37.3, "quote": "thirty seven million papers"},
                "graph_kind": {"value": "other", "quote": "The literature graph"}},
    )  # fmt: skip
    cells = evidence_rows(project_id=project.pk)["rows"]
    cells = next(r for r in cells if r["paper_id"] == acl.pk)["cells"]
    # Agreed: the value and quote of the extractor whose quote is verified.
    assert cells["papers"]["source"] == "agreed" and cells["papers"]["anchor"] == "verified"
    assert cells["papers"]["value"]["value"] == 37.0
    assert cells["papers"]["extractors"] == ["agent:a", "agent:b"]
    assert cells["graph_kind"] == {
        "value": None, "quote": None, "page": None, "anchor": None, "flagged": True,
        "source": "disagreement",
        "values": {"agent:a": "property graph", "agent:b": "other"},
        "extractors": ["agent:a", "agent:b"],
    }  # fmt: skip
    adjudicate(project_id=project.pk, paper=acl.pk, field="graph_kind", value="property graph",
               reason="Section 2", agent="judge")  # fmt: skip
    cells = evidence_rows(project_id=project.pk)["rows"]
    cell = next(r for r in cells if r["paper_id"] == acl.pk)["cells"]["graph_kind"]
    assert (cell["value"], cell["source"], cell["decided_by"], cell["page"]) == (
        "property graph", "adjudicated", "agent:judge", 2,
    )  # fmt: skip


def test_values_of_an_earlier_version_count_while_their_field_keeps_its_meaning(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"]
    extract_record(project_id=project.pk, paper=acl.pk, agent="a", values=ACL_VALUES)
    changed = [dict(f) for f in FIELDS]
    changed[0]["description"] = "What the system does, in a sentence."  # same meaning
    changed[2] = {"key": "pages", "type": "text", "quote_required": False}  # new meaning
    form_update(project_id=project.pk, fields=changed)
    table = evidence_rows(project_id=project.pk)
    assert table["form"]["version"] == 2
    cells = next(r for r in table["rows"] if r["paper_id"] == acl.pk)["cells"]
    assert cells["task"]["version"] == 1 and cells["task"]["anchor"] == "verified"
    assert cells["pages"] is None  # answered as an integer: not a value of the text field


def test_a_reviews_rows_are_its_included_studies(studies: dict[str, Paper]) -> None:
    session = review_with_included([studies["acl"]], excluded=[studies["quantum"]])
    form_create(session_id=session.pk, name="Review form", fields=FIELDS)
    table = evidence_rows(session_id=str(session.pk))
    assert [r["paper_id"] for r in table["rows"]] == [studies["acl"].pk]
    assert table["session_id"] == str(session.pk)

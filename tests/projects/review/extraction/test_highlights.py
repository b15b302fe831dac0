"""Highlights of verified quotes (projects/review/extraction/highlights.py): made in the
extraction colour with a comment naming the field and the extractor, kept on the value,
reused or replaced when the value is recorded again, never made on a read-only server."""

from __future__ import annotations

from typing import Any

import pymupdf
import pytest

from core.errors import ReadOnlyMode
from papers.models import Annotation, Paper, PaperPdf
from papers.pdf import services as pdf_services
from papers.pdf.files import stored_path
from papers.pdf.locate import text_key
from papers.pdf.spec import SEMANTIC_COLORS
from projects.models import ExtractionAdjudication, ExtractionValue, Project
from projects.review.extraction.evidence import evidence_rows
from projects.review.extraction.highlights import EXTRACTION_COLOR
from projects.review.extraction.services import adjudicate, extract_record
from tests.projects.review.extraction.builders import (
    ACL_QUOTE,
    ACL_QUOTE_CHANGED,
    ACL_QUOTE_PAGE,
    ACL_VALUES,
    NOT_IN_ANY,
)

PURPLE = SEMANTIC_COLORS[EXTRACTION_COLOR]
PAPERS_QUOTE = ACL_VALUES["papers"]["quote"]
# On page 2 of N18-3011 also: a second verified quote for the same field.
OTHER_PAPERS_QUOTE = "The literature graph is a property graph with directed edges"


def record(project: Project, paper: Paper, values: dict[str, Any], **kw: Any) -> dict[str, Any]:
    kw.setdefault("agent", "claude")
    return extract_record(project_id=project.pk, paper=paper.pk, values=values, **kw)


def highlights(paper: Paper) -> list[Annotation]:
    return list(Annotation.objects.filter(paper=paper, color=PURPLE).order_by("pk"))


def annotated_contents(paper: Paper) -> list[str]:
    """The comments of the highlights drawn into the paper's annotated copy."""
    record = PaperPdf.objects.get(paper=paper)
    if not record.annotated_file_name:
        return []
    with pymupdf.open(stored_path(record.annotated_file_name)) as document:
        return [a.info["content"] for page in document for a in page.annots() or []]


def test_a_verified_quote_is_highlighted_in_the_extraction_colour(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"]
    answer = record(project, acl, ACL_VALUES)
    shown = {r["field"]: r for r in answer["recorded"]}
    [made] = [a for a in highlights(acl) if a.comment == "extraction: papers (agent:claude)"]
    assert shown["papers"]["highlight"] == made.pk
    assert made.page == 2 and made.kind == "highlight" and made.rects
    assert text_key(PAPERS_QUOTE) in text_key(made.text)
    # One per verified quote (task, papers, graph_kind); none for a value without a quote.
    assert len(highlights(acl)) == 3 and "highlight" not in shown["pages"]
    assert ExtractionValue.objects.get(field__key="papers").highlight_id == made.pk
    assert sorted(annotated_contents(acl)) == sorted(a.comment for a in highlights(acl))
    # The purple is no colour find_quote marks with.
    assert PURPLE not in (SEMANTIC_COLORS["positive"], SEMANTIC_COLORS["detail"])


def test_flagged_quotes_are_not_highlighted(project: Project, studies: dict[str, Paper]) -> None:
    acl = studies["acl"]
    answer = record(
        project,
        acl,
        {
            "task": {"value": "metadata", "quote": ACL_QUOTE_CHANGED},  # approximate
            "open_source": {"value": "yes", "quote": NOT_IN_ANY},  # not found
        },
    )
    assert all("highlight" not in r for r in answer["recorded"])
    assert not Annotation.objects.exists()


def test_recording_the_same_quote_again_keeps_its_one_highlight(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"]
    first = record(project, acl, {"papers": ACL_VALUES["papers"]})["recorded"][0]["highlight"]
    # Another value, the same words quoted (without the page this time): the same highlight.
    again = record(project, acl, {"papers": {"value": 37, "quote": PAPERS_QUOTE}})
    assert again["recorded"][0]["highlight"] == first
    assert [a.pk for a in highlights(acl)] == [first]
    # Another extractor quoting the same words gets a highlight of its own.
    other = record(project, acl, {"papers": ACL_VALUES["papers"]}, agent="gpt")
    assert other["recorded"][0]["highlight"] != first
    assert sorted(a.comment for a in highlights(acl)) == [
        "extraction: papers (agent:claude)",
        "extraction: papers (agent:gpt)",
    ]


def test_a_new_quote_replaces_the_highlight_of_the_old_one(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"]
    first = record(project, acl, {"papers": ACL_VALUES["papers"]})["recorded"][0]["highlight"]
    moved = record(project, acl, {"papers": {"value": 37, "quote": OTHER_PAPERS_QUOTE}})
    [now] = highlights(acl)
    assert moved["recorded"][0]["highlight"] == now.pk != first
    assert text_key(OTHER_PAPERS_QUOTE) in text_key(now.text)
    assert annotated_contents(acl) == ["extraction: papers (agent:claude)"]
    # A quote no longer verified leaves no highlight.
    record(project, acl, {"papers": {"value": 37, "quote": NOT_IN_ANY}})
    assert highlights(acl) == [] and annotated_contents(acl) == []
    assert ExtractionValue.objects.get().highlight_id is None


def test_a_highlight_an_adjudication_shows_outlives_the_extractors_new_quote(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"]
    record(project, acl, {"graph_kind": ACL_VALUES["graph_kind"]}, agent="a")
    record(project, acl, {"graph_kind": {"value": "other", "quote": ACL_QUOTE}}, agent="b")
    a_highlight = ExtractionValue.objects.get(extractor="agent:a").highlight_id
    settled = adjudicate(
        project_id=project.pk, paper=acl.pk, field="graph_kind", value="property graph",
        reason="Section 2", agent="judge",
    )  # fmt: skip
    # The adjudication kept a's quote, and with it a's highlight.
    assert settled["highlight"] == a_highlight
    assert ExtractionAdjudication.objects.get().highlight_id == a_highlight
    record(project, acl, {"graph_kind": {"value": "property graph", "quote": PAPERS_QUOTE}},
           agent="a")  # fmt: skip
    assert Annotation.objects.filter(pk=a_highlight).exists()
    cell = evidence_rows(project_id=project.pk)["rows"]
    cell = next(r for r in cell if r["paper_id"] == acl.pk)["cells"]["graph_kind"]
    assert (cell["source"], cell["highlight"]) == ("adjudicated", a_highlight)


def test_an_adjudications_own_quote_gets_its_own_highlight(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"]
    record(project, acl, {"graph_kind": ACL_VALUES["graph_kind"]}, agent="a")
    record(project, acl, {"graph_kind": {"value": "other", "quote": ACL_QUOTE}}, agent="b")
    settled = adjudicate(
        project_id=project.pk, paper=acl.pk, field="graph_kind", value="RDF graph",
        quote="Resource Description Framework (RDF) graphs", reason="r", agent="judge",
    )  # fmt: skip
    made = Annotation.objects.get(pk=settled["highlight"])
    assert made.comment == "extraction: graph_kind (adjudicated by agent:judge)"
    assert made.color == PURPLE


def test_words_that_occur_twice_on_the_page_are_highlighted_where_they_were_found(
    project: Project, studies: dict[str, Paper]
) -> None:
    # Verified on page 2, where these words occur five times: the anchor's boxes say which.
    answer = record(project, studies["acl"], {"task": {"value": "x", "quote": "attributes such as",
                                                        "page": 2}})  # fmt: skip
    [shown] = answer["recorded"]
    stored = ExtractionValue.objects.get()
    assert shown["anchor"]["status"] == "verified" and shown["highlight"] == stored.highlight_id
    made = Annotation.objects.get()
    assert (made.page, made.rects) == (2, stored.anchor_rects)


def test_a_highlight_that_cannot_be_made_is_reported_and_the_value_stands(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"]
    # The file is gone; the passage index still finds the quote on its page.
    stored_path(PaperPdf.objects.get(paper=acl).file_name).unlink()
    answer = record(project, acl, {"papers": ACL_VALUES["papers"]})
    [shown] = answer["recorded"]
    assert shown["anchor"]["status"] == "verified" and "highlight" not in shown
    assert "attach" in shown["highlight_error"].lower()
    assert ExtractionValue.objects.get().value == {"value": 37.0, "unit": "million papers"}
    assert not Annotation.objects.exists()


def test_a_highlight_a_person_deleted_is_made_again(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"]
    first = record(project, acl, {"papers": ACL_VALUES["papers"]})["recorded"][0]["highlight"]
    pdf_services.annotation_delete(annotation_id=first)
    assert ExtractionValue.objects.get().highlight_id is None  # SET_NULL
    again = record(project, acl, {"papers": ACL_VALUES["papers"]})["recorded"][0]["highlight"]
    assert [a.pk for a in highlights(acl)] == [again]


def test_a_read_only_server_records_no_value_and_no_highlight(
    project: Project, studies: dict[str, Paper], settings: Any
) -> None:
    settings.MCP_READ_ONLY = True
    with pytest.raises(ReadOnlyMode):
        record(project, studies["acl"], {"task": {"value": "x", "quote": ACL_QUOTE,
                                                  "page": ACL_QUOTE_PAGE}})  # fmt: skip
    assert not ExtractionValue.objects.exists() and not Annotation.objects.exists()

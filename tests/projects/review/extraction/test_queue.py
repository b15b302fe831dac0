"""What an extractor does next (projects/review/extraction/queue.py): the studies it has not
finished, with their empty fields and the text quotes are anchored against; its progress;
and, once two extractors have values, their agreement."""

from __future__ import annotations

from typing import Any

import pytest

from core.errors import InvalidInput, NotFound
from papers.models import Paper
from projects.models import Project
from projects.review.extraction.queue import extraction_next
from projects.review.extraction.services import adjudicate, extract_record
from tests.projects.review.extraction.builders import ACL_VALUES, FIELDS, review_with_included

KEYS = [f["key"] for f in FIELDS]


def in_order(studies: dict[str, Paper]) -> list[int]:
    return [p.pk for p in sorted(studies.values(), key=lambda p: p.human_id)]


def test_without_a_form_it_says_to_make_one(studies: dict[str, Paper]) -> None:
    session = review_with_included(list(studies.values()))
    answer = extraction_next(session_id=session.pk, agent="alice")
    assert answer["form"] is None and answer["papers"] == [] and answer["studies"] == 3
    assert "extraction_form" in answer["next"]


def test_studies_come_with_their_empty_fields_and_what_quotes_are_anchored_against(
    project: Project, studies: dict[str, Paper]
) -> None:
    extract_record(project_id=project.pk, paper=studies["acl"].pk, agent="alice",
                   values=ACL_VALUES)  # fmt: skip
    answer = extraction_next(project_id=project.pk, agent="alice", limit=20)
    assert answer["extractor"] == "agent:alice" and answer["form"]["version"] == 1
    papers = {p["paper_id"]: p for p in answer["papers"]}
    assert [p["paper_id"] for p in answer["papers"]] == in_order(studies)
    assert papers[studies["acl"].pk]["empty"] == ["open_source", "years"]
    assert papers[studies["quantum"].pk]["empty"] == KEYS
    assert papers[studies["acl"].pk]["text"] == "pdf"
    assert papers[studies["abstract"].pk]["text"] == "abstract"
    assert answer["progress"] == {"studies": 3, "complete": 0, "started": 1, "not_started": 2}
    # Another extractor has done nothing yet.
    other = extraction_next(project_id=project.pk, agent="bob", limit=20)
    assert all(p["empty"] == KEYS for p in other["papers"])
    assert "agreement" not in other


def test_finished_studies_drop_out_and_limit_pages(
    project: Project, studies: dict[str, Paper]
) -> None:
    full = {**ACL_VALUES, "open_source": {"value": "unclear"}, "years": {"value": None}}
    extract_record(project_id=project.pk, paper=studies["acl"].pk, agent="alice", values=full)
    answer = extraction_next(project_id=project.pk, agent="alice", limit=1)
    assert len(answer["papers"]) == 1 and answer["papers"][0]["paper_id"] != studies["acl"].pk
    assert answer["progress"]["complete"] == 1


def test_agreement_and_disagreements_once_two_extractors_have_values(
    project: Project, studies: dict[str, Paper]
) -> None:
    acl = studies["acl"].pk
    values: dict[str, Any] = {
        **{key: {"value": None} for key in KEYS},
        "pages": {"value": 8},
    }
    for paper in studies.values():
        extract_record(project_id=project.pk, paper=paper.pk, agent="alice", values=values)
        theirs = {**values, "pages": {"value": 9}} if paper.pk == acl else values
        extract_record(project_id=project.pk, paper=paper.pk, agent="bob", values=theirs)
    answer = extraction_next(project_id=project.pk, agent="bob")
    assert answer["papers"] == [] and answer["progress"]["complete"] == 3
    agreement = answer["agreement"]
    assert agreement["overall"]["compared"] == 18 and agreement["overall"]["agreed"] == 17
    assert agreement["unresolved"] == 1
    assert agreement["disagreements"][0]["paper_id"] == acl
    assert "adjudicate" in answer["next"]
    adjudicate(project_id=project.pk, paper=acl, field="pages", value=8, reason="p. 84-91",
               agent="carol")  # fmt: skip
    settled = extraction_next(project_id=project.pk, agent="bob")
    assert settled["agreement"]["unresolved"] == 0
    assert "export_evidence_table" in settled["next"]


def test_errors_name_what_is_wrong(project: Project, studies: dict[str, Paper]) -> None:
    with pytest.raises(InvalidInput):
        extraction_next(project_id=project.pk)  # nobody named
    with pytest.raises(InvalidInput):
        extraction_next(project_id=project.pk, agent="a", limit=0)
    with pytest.raises(NotFound):
        extraction_next(session_id="999999", agent="a")

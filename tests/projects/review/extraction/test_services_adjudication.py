"""Adjudication (projects/review/extraction/services.py `adjudicate`): a third decision
settles a field the extractors disagree on, once, with a reason; its quote is anchored or
taken from the extractor it agrees with."""

from __future__ import annotations

import pytest

from core.errors import Conflict, InvalidInput
from papers.models import Paper
from projects.models import ExtractionAdjudication, Project
from projects.review.extraction.agreement import extraction_agreement
from projects.review.extraction.selectors import extraction_owner
from projects.review.extraction.services import adjudicate, extract_record
from tests.projects.review.extraction.builders import ACL_VALUES, NOT_IN_ANY


@pytest.fixture
def disputed(project: Project, studies: dict[str, Paper]) -> Paper:
    """The ACL paper, its graph_kind extracted differently by agents a and b."""
    acl = studies["acl"]
    extract_record(project_id=project.pk, paper=acl.pk, agent="a", values=ACL_VALUES)
    extract_record(
        project_id=project.pk, paper=acl.pk, agent="b",
        values={**ACL_VALUES, "graph_kind": {"value": "RDF graph", "quote": "Resource "
                "Description Framework (RDF) graphs"}},
    )  # fmt: skip
    return acl


def test_an_adjudication_settles_the_disagreement_keeping_the_agreeing_quote(
    project: Project, disputed: Paper
) -> None:
    answer = adjudicate(
        project_id=project.pk, paper=disputed.pk, field="graph_kind", value="property graph",
        reason="Section 2 says property graph; RDF is named as the contrast.", agent="judge",
    )  # fmt: skip
    assert answer["value"] == "property graph" and answer["decided_by"] == "agent:judge"
    made = ExtractionAdjudication.objects.get()
    assert made.quote == ACL_VALUES["graph_kind"]["quote"]
    assert (made.anchor_status, made.anchor_page) == ("verified", 2)
    agreement = extraction_agreement(owner=extraction_owner(project_id=project.pk))
    assert agreement["disagreements_total"] == 1 and agreement["unresolved"] == 0


def test_a_new_value_with_its_own_quote_is_anchored(project: Project, disputed: Paper) -> None:
    adjudicate(
        project_id=project.pk, paper=disputed.pk, field="graph_kind", value="other",
        quote="nodes and edges in property graphs have an internal structure",
        reason="Neither", agent="judge",
    )  # fmt: skip
    made = ExtractionAdjudication.objects.get()
    assert (made.value, made.anchor_status, made.anchor_page) == ("other", "verified", 2)


def test_a_disagreement_is_settled_once(project: Project, disputed: Paper) -> None:
    adjudicate(project_id=project.pk, paper=disputed.pk, field="graph_kind",
               value="property graph", reason="r", agent="judge")  # fmt: skip
    with pytest.raises(Conflict, match="already adjudicated"):
        adjudicate(project_id=project.pk, paper=disputed.pk, field="graph_kind",
                   value="RDF graph", reason="r", agent="other")  # fmt: skip


@pytest.mark.parametrize(
    ("field", "value", "reason", "says"),
    [
        ("pages", 8, "r", "do not disagree"),  # both said 8
        ("years", [1, 2], "r", "do not disagree"),  # nobody extracted it
        ("nope", 1, "r", "no field"),
        ("graph_kind", "tree", "r", "expects one of"),
        ("graph_kind", "other", "  ", "reason"),
    ],
)
def test_what_is_not_a_disagreement_or_not_a_valid_decision_is_refused(
    project: Project, disputed: Paper, field: str, value: object, reason: str, says: str
) -> None:
    with pytest.raises(InvalidInput, match=says):
        adjudicate(project_id=project.pk, paper=disputed.pk, field=field, value=value,
                   reason=reason, agent="judge")  # fmt: skip
    assert not ExtractionAdjudication.objects.exists()


def test_a_strict_server_refuses_an_adjudication_whose_new_quote_is_not_in_the_paper(
    project: Project, disputed: Paper
) -> None:
    with pytest.raises(InvalidInput, match="strict"):
        adjudicate(project_id=project.pk, paper=disputed.pk, field="graph_kind", value="other",
                   quote=NOT_IN_ANY, reason="r", agent="judge", strict=True)  # fmt: skip
    assert not ExtractionAdjudication.objects.exists()

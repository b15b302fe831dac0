"""Extraction writes (projects/review/extraction/services.py): forms and their versions,
extract_record's checks, anchors and strict refusals, adjudication's rules, the client's
collections and the read-only server."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth import get_user_model

from core.errors import Conflict, InvalidInput, NotFound, ReadOnlyMode
from core.scope import client_scope
from papers.models import Paper
from projects.models import ExtractionField, ExtractionForm, ExtractionValue, Project
from projects.review.extraction import services
from projects.review.extraction.selectors import extraction_owner, form_get
from tests.projects.review.extraction.builders import (
    ACL_QUOTE,
    ACL_QUOTE_CHANGED,
    ACL_QUOTE_PAGE,
    ACL_VALUES,
    FIELDS,
    NOT_IN_ANY,
    review_with_included,
)


def record(project: Project, paper: Paper, values: dict[str, Any], **kw: Any) -> dict[str, Any]:
    kw.setdefault("agent", "claude")
    return services.extract_record(project_id=project.pk, paper=paper.pk, values=values, **kw)


# --- forms ----------------------------------------------------------------------------------


def test_a_form_is_created_at_version_one_with_its_fields_in_order(project: Project) -> None:
    form = form_get(extraction_owner(project_id=project.pk))
    assert (form.name, form.version) == ("Study data", 1)
    assert [f.key for f in form.fields.order_by("order")] == [f["key"] for f in FIELDS]
    choice = form.fields.get(key="graph_kind")
    assert choice.choices == ["property graph", "RDF graph", "other"] and choice.order == 4


def test_a_second_form_for_the_same_owner_is_a_conflict(project: Project) -> None:
    with pytest.raises(Conflict, match="form_update"):
        services.form_create(project_id=project.pk, name="Again", fields=FIELDS)


def test_a_bad_form_names_the_field_and_creates_nothing(
    make_project: Callable[..., Project],
) -> None:
    other = make_project(name="Other")
    with pytest.raises(InvalidInput) as raised:
        services.form_create(
            project_id=other.pk, name="x", fields=[{"key": "n", "type": "choice", "choices": []}]
        )
    assert raised.value.details["field"] == "fields[0].choices"
    assert not ExtractionForm.objects.exists()


def test_an_owner_is_a_review_or_a_project_not_both(project: Project) -> None:
    session = review_with_included([])
    with pytest.raises(InvalidInput, match="either"):
        services.form_create(session_id=session.pk, project_id=project.pk, name="x", fields=FIELDS)
    with pytest.raises(InvalidInput, match="either"):
        services.form_create(name="x", fields=FIELDS)


def test_changing_a_form_makes_a_new_version_and_an_unchanged_one_does_not(
    project: Project,
) -> None:
    same = services.form_update(project_id=project.pk, fields=FIELDS)
    assert same.version == 1
    changed = [*FIELDS, {"key": "dataset", "type": "text", "quote_required": False}]
    second = services.form_update(project_id=project.pk, fields=changed, name="Study data v2")
    assert (second.version, second.name) == (2, "Study data v2")
    assert ExtractionForm.objects.filter(project=project).count() == 2
    assert form_get(extraction_owner(project_id=project.pk)).pk == second.pk
    # The first version keeps its own fields.
    assert ExtractionField.objects.filter(form__version=1, form__project=project).count() == 6


def test_values_keep_the_version_they_answered_when_the_form_changes(
    project: Project, studies: dict[str, Paper]
) -> None:
    record(project, studies["acl"], ACL_VALUES)
    changed = [dict(f) for f in FIELDS]
    changed[2] = {"key": "pages", "type": "text", "quote_required": False}  # integer -> text
    services.form_update(project_id=project.pk, fields=changed)
    value = ExtractionValue.objects.get(field__key="pages")
    assert value.form.version == 1 and value.field.type == "integer" and value.value == 8
    # Recorded again under version 2: a new value; the old one stays with version 1.
    answer = record(project, studies["acl"], {"pages": {"value": "eight"}})
    assert answer["form_version"] == 2
    # task, papers and graph_kind answered under version 1 still count: not empty.
    assert answer["empty"] == ["open_source", "years"]
    assert sorted(ExtractionValue.objects.filter(field__key="pages").values_list(
        "form__version", "value")) == [(1, 8), (2, "eight")]  # fmt: skip


# --- extract_record -------------------------------------------------------------------------


def test_extract_record_stores_each_value_with_its_anchor(
    project: Project, studies: dict[str, Paper]
) -> None:
    answer = record(project, studies["acl"], ACL_VALUES)
    assert answer["form_version"] == 1 and answer["extractor"] == "agent:claude"
    anchors = {r["field"]: r["anchor"] for r in answer["recorded"]}
    assert anchors["task"]["status"] == "verified" and anchors["task"]["page"] == 1
    assert anchors["papers"] == {
        "status": "verified", "source": "pdf", "page": 2,
        "text": "resulting in 37M unique paper nodes", "score": 1.0,  # as quoted
    }  # fmt: skip
    assert anchors["pages"]["status"] == "no_quote"  # the field needs none
    assert answer["flagged"] == [] and answer["empty"] == ["open_source", "years"]
    stored = ExtractionValue.objects.get(field__key="papers")
    assert stored.value == {"value": 37.0, "unit": "million papers"}
    assert stored.anchor_page == 2 and stored.anchor_rects and stored.agent == "claude"


def test_a_quote_found_on_another_page_than_given_says_so(
    project: Project, studies: dict[str, Paper]
) -> None:
    answer = record(
        project,
        studies["acl"],
        {"task": {"value": "metadata extraction", "quote": ACL_QUOTE, "page": 5}},
    )
    [shown] = answer["recorded"]
    assert shown["anchor"]["page"] == ACL_QUOTE_PAGE and shown["page_given"] == 5
    stored = ExtractionValue.objects.get()
    assert (stored.page, stored.anchor_page) == (5, ACL_QUOTE_PAGE)


def test_approximate_and_not_found_quotes_are_kept_and_flagged(
    project: Project, studies: dict[str, Paper]
) -> None:
    answer = record(
        project,
        studies["acl"],
        {
            "task": {"value": "metadata extraction", "quote": ACL_QUOTE_CHANGED},
            "open_source": {"value": "yes", "quote": NOT_IN_ANY},
            "graph_kind": {"value": "other"},  # no quote for a field that requires one
        },
    )
    statuses = {r["field"]: r["anchor"]["status"] for r in answer["recorded"]}
    assert statuses == {
        "task": "approximate",
        "open_source": "not_found",
        "graph_kind": "not_found",
    }
    assert sorted(answer["flagged"]) == ["graph_kind", "open_source", "task"]
    approximate = ExtractionValue.objects.get(field__key="task")
    assert "recurrent" in approximate.anchor_text and 0.7 <= approximate.anchor_score < 1
    assert ExtractionValue.objects.count() == 3


def test_a_strict_server_refuses_a_required_quote_not_in_the_paper_and_records_nothing(
    project: Project, studies: dict[str, Paper], settings: Any
) -> None:
    settings.EXTRACTION_STRICT = True
    values = {**ACL_VALUES, "open_source": {"value": "yes", "quote": NOT_IN_ANY}}
    with pytest.raises(InvalidInput) as raised:
        record(project, studies["acl"], values)
    assert raised.value.details["field"] == "values.open_source"
    assert list(raised.value.details["not_found"]) == ["open_source"]
    assert not ExtractionValue.objects.exists()
    # Not reported (null) needs no quote; an approximate quote is kept, flagged; a field that
    # needs no quote is fine without one.
    answer = record(
        project,
        studies["acl"],
        {
            "open_source": {"value": None},
            "task": {"value": "metadata", "quote": ACL_QUOTE_CHANGED},
            "pages": {"value": 8},
        },
    )
    assert answer["flagged"] == ["task"]
    # strict=False for one call overrides the setting.
    record(project, studies["acl"], {"open_source": {"value": "yes"}}, strict=False)


def test_a_paper_without_a_pdf_is_anchored_against_its_abstract(
    project: Project, studies: dict[str, Paper]
) -> None:
    answer = record(
        project,
        studies["abstract"],
        {"papers": {"value": "0.000037", "quote": "included 37 randomised trials"}},
    )
    [shown] = answer["recorded"]
    assert shown["anchor"]["status"] == "abstract_only" and shown["anchor"]["source"] == "abstract"
    assert shown["flagged"] and "page" not in shown["anchor"]


def test_recording_a_field_again_replaces_that_extractors_value(
    project: Project, studies: dict[str, Paper]
) -> None:
    record(project, studies["acl"], {"pages": {"value": 8}})
    record(project, studies["acl"], {"pages": {"value": 9}})
    record(project, studies["acl"], {"pages": {"value": 8}}, agent="gpt")
    values = ExtractionValue.objects.filter(field__key="pages")
    assert sorted(values.values_list("extractor", "value")) == [
        ("agent:claude", 9),
        ("agent:gpt", 8),
    ]


@pytest.mark.parametrize(
    ("values", "where"),
    [
        ({"sample": {"value": 1}}, "values.sample"),
        ({"pages": 8}, "values.pages"),
        ({"pages": {"quote": "x"}}, "values.pages"),
        ({"pages": {"value": "eight"}}, "values.pages"),
        ({"pages": {"value": 8, "page": 0}}, "values.pages.page"),
        ({"pages": {"value": 8, "note": "x"}}, "values.pages"),
        ({"task": {"value": "x", "quote": 3}}, "values.task.quote"),
        ({}, "values"),
    ],
)
def test_bad_values_are_refused_naming_the_field_and_nothing_is_recorded(
    project: Project, studies: dict[str, Paper], values: dict[str, Any], where: str
) -> None:
    good = {"task": {"value": "graph", "quote": ACL_QUOTE}}
    with pytest.raises(InvalidInput) as raised:
        record(project, studies["acl"], {**good, **values} if values else values)
    assert raised.value.details["field"] == where
    assert not ExtractionValue.objects.exists()


def test_the_extractor_is_a_user_an_agent_or_both(
    project: Project, studies: dict[str, Paper]
) -> None:
    user = get_user_model().objects.create_user(username="alice", password="x")
    answer = record(project, studies["acl"], {"pages": {"value": 8}}, user=user, agent=None)
    assert answer["extractor"] == "user:alice"
    both = record(project, studies["acl"], {"pages": {"value": 8}}, user=user, agent="claude")
    assert both["extractor"] == "user:alice+agent:claude"
    assert ExtractionValue.objects.filter(user=user).count() == 2
    with pytest.raises(InvalidInput, match="Name the extractor"):
        record(project, studies["acl"], {"pages": {"value": 8}}, agent=None)


def test_a_paper_outside_the_project_or_not_included_in_the_review_is_not_found(
    project: Project, studies: dict[str, Paper], make_paper: Callable[..., Paper]
) -> None:
    stranger = make_paper(title="Not in the project", authors=["C. Else"])
    with pytest.raises(NotFound, match="not in the project"):
        record(project, stranger, {"pages": {"value": 8}})
    session = review_with_included([studies["acl"]], excluded=[studies["quantum"]])
    services.form_create(session_id=session.pk, name="Review form", fields=FIELDS)
    done = services.extract_record(
        session_id=session.pk, paper=studies["acl"].citekey, values={"pages": {"value": 8}},
        agent="claude",
    )  # fmt: skip
    assert done["session_id"] == str(session.pk)
    with pytest.raises(NotFound, match="not an included study"):
        services.extract_record(
            session_id=session.pk, paper=studies["quantum"].pk, values={"pages": {"value": 8}},
            agent="claude",
        )  # fmt: skip


def test_an_owner_without_a_form_says_to_create_one(
    make_project: Callable[..., Project], studies: dict[str, Paper]
) -> None:
    bare = make_project(name="Bare")
    with pytest.raises(NotFound, match="no extraction form"):
        services.extract_record(project_id=bare.pk, paper=1, values={"x": {"value": 1}}, agent="a")


def test_a_client_scoped_to_other_collections_cannot_reach_the_extraction(
    project: Project, studies: dict[str, Paper], make_project: Callable[..., Project]
) -> None:
    make_project(name="Elsewhere")
    session = review_with_included([studies["acl"]])
    session.collections = [project.pk]
    session.save()
    with client_scope(("Elsewhere",)):
        with pytest.raises(NotFound):
            record(project, studies["acl"], {"pages": {"value": 8}})
        with pytest.raises(NotFound):
            services.form_update(project_id=project.pk, fields=FIELDS)
        with pytest.raises(NotFound):
            services.form_create(session_id=session.pk, name="x", fields=FIELDS)
    with client_scope((project.name,)):
        assert record(project, studies["acl"], {"pages": {"value": 8}})["paper_id"]
        services.form_create(session_id=session.pk, name="x", fields=FIELDS)


def test_a_read_only_server_refuses_every_extraction_write(
    project: Project, studies: dict[str, Paper], settings: Any
) -> None:
    settings.MCP_READ_ONLY = True
    with pytest.raises(ReadOnlyMode):
        record(project, studies["acl"], {"pages": {"value": 8}})
    with pytest.raises(ReadOnlyMode):
        services.form_update(project_id=project.pk, fields=FIELDS[:2])
    with pytest.raises(ReadOnlyMode):
        services.adjudicate(
            project_id=project.pk, paper=studies["acl"].pk, field="pages", value=8, reason="r",
            agent="a",
        )  # fmt: skip

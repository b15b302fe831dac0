"""Reads of data extraction: whose form it is (a review or a project, within the client's
collections), the current form, the papers it covers, and the values that count for the
current form version (docs/EXTRACTION.md, "Versions").

Every entry point takes a review's session_id or a project_id and resolves it here
(`extraction_owner`): a review through projects/review/selectors.review_get, a project
through papers.scoping.project_find, so a client scoped to collections never reads or
writes the extraction of a review or project outside them (NotFound, as for screening).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.db.models import QuerySet

from core.errors import InvalidInput, NotFound
from papers.models import Paper
from papers.scoping import project_find
from papers.selectors import paper_get
from projects.models import (
    ExtractionAdjudication,
    ExtractionField,
    ExtractionForm,
    ExtractionValue,
    Project,
    ReviewCandidate,
    ReviewSession,
)
from projects.review.extraction.forms import FieldSpec
from projects.review.selectors import review_get


@dataclass(frozen=True)
class Owner:
    """The review or the project an extraction form belongs to (exactly one is set)."""

    session: ReviewSession | None = None
    project: Project | None = None

    @property
    def label(self) -> str:
        if self.session is not None:
            return f"review {self.session.pk}"
        assert self.project is not None
        return f"project {self.project.pk!r}"

    def as_dict(self) -> dict[str, str]:
        if self.session is not None:
            return {"session_id": str(self.session.pk)}
        assert self.project is not None
        return {"project_id": str(self.project.pk)}

    def forms(self) -> QuerySet[ExtractionForm]:
        if self.session is not None:
            return ExtractionForm.objects.filter(session=self.session)
        return ExtractionForm.objects.filter(project=self.project)

    def papers(self) -> QuerySet[Paper]:
        """The studies extracted: a review's included candidates, a project's papers."""
        if self.session is not None:
            included = ReviewCandidate.objects.filter(
                session=self.session, status=ReviewCandidate.Status.INCLUDED
            )
            return Paper.objects.filter(pk__in=included.values("paper_id"))
        return Paper.objects.filter(project_links__project=self.project)


def extraction_owner(*, session_id: Any = None, project_id: Any = None) -> Owner:
    """The review (session_id) or project (project_id, its id or name) named: exactly one.
    Raises InvalidInput for both or neither, NotFound for one unknown or outside the
    client's collections."""
    if (session_id is None) == (project_id is None):
        raise InvalidInput("Name either a review (session_id) or a project (project_id).")
    if session_id is not None:
        return Owner(session=review_get(session_id=str(session_id)))
    return Owner(project=project_find(ref=str(project_id)))


def form_current(owner: Owner) -> ExtractionForm | None:
    return owner.forms().order_by("-version").first()


def form_get(owner: Owner) -> ExtractionForm:
    """The current (latest) version of the owner's form; NotFound when it has none."""
    form = form_current(owner)
    if form is None:
        raise NotFound(
            f"The {owner.label} has no extraction form yet: create one first.", **owner.as_dict()
        )
    return form


def field_spec(row: ExtractionField) -> FieldSpec:
    return FieldSpec(
        key=row.key,
        label=row.label,
        type=row.type,
        unit=row.unit,
        choices=tuple(row.choices or ()),
        tolerance=row.tolerance,
        description=row.description,
        quote_required=row.quote_required,
    )


def form_fields(form: ExtractionForm) -> list[ExtractionField]:
    return list(form.fields.order_by("order"))


def form_describe(form: ExtractionForm) -> dict[str, Any]:
    """The form as tools and resources show it: name, version, fields in order."""
    return {
        "name": form.name,
        "version": form.version,
        "created_at": form.created_at.isoformat(),
        "fields": [field_spec(row).as_dict() for row in form_fields(form)],
    }


def owner_paper(owner: Owner, ref: str | int) -> Paper:
    """The paper `ref` names (paper_id, human id, citekey, DOI ...), which must be one of the
    owner's studies; NotFound otherwise (or outside the client's collections)."""
    paper = paper_get(ref=ref)
    if not owner.papers().filter(pk=paper.pk).exists():
        what = "an included study of" if owner.session is not None else "in"
        raise NotFound(f"Paper {ref!r} is not {what} the {owner.label}.", paper_id=str(ref))
    return paper


@dataclass
class Cell:
    """What counts for one field of one paper under the current form: each extractor's
    latest value answered under a version whose field has the same key and meaning
    (type, unit, choices), and the adjudication if any."""

    field: ExtractionField
    spec: FieldSpec
    values: dict[str, ExtractionValue] = dataclasses.field(default_factory=dict)
    adjudication: ExtractionAdjudication | None = None


def cells_current(
    owner: Owner, form: ExtractionForm, *, paper_ids: Iterable[int] | None = None
) -> dict[int, dict[str, Cell]]:
    """paper_id -> field key -> Cell, for the papers with any value or adjudication (of
    `paper_ids` when given) under `form`, the owner's current version. Values of earlier
    versions count when their field kept its key and meaning; those of a field whose type,
    unit or choices changed stay stored with their version but do not count here."""
    current = {row.key: row for row in form_fields(form)}
    specs = {key: field_spec(row) for key, row in current.items()}
    compatible: dict[int, str] = {}  # field id of any version -> current key
    versions: dict[int, int] = {}
    for row in ExtractionField.objects.filter(form__in=owner.forms()).select_related("form"):
        if row.key in specs and field_spec(row).signature() == specs[row.key].signature():
            compatible[row.pk] = row.key
            versions[row.pk] = row.form.version
    values = ExtractionValue.objects.filter(field_id__in=list(compatible)).select_related("form")
    adjudications = ExtractionAdjudication.objects.filter(
        field_id__in=list(compatible)
    ).select_related("form")
    if paper_ids is not None:
        wanted = list(paper_ids)
        values = values.filter(paper_id__in=wanted)
        adjudications = adjudications.filter(paper_id__in=wanted)
    cells: dict[int, dict[str, Cell]] = {}

    def cell(paper_id: int, field_id: int) -> Cell:
        key = compatible[field_id]
        row = cells.setdefault(paper_id, {})
        return row.setdefault(key, Cell(current[key], specs[key]))

    # Oldest version first, so a later version's value replaces an earlier one.
    for value in sorted(values, key=lambda v: (versions[v.field_id], v.pk)):
        cell(value.paper_id, value.field_id).values[value.extractor] = value
    for adjudication in sorted(adjudications, key=lambda a: (versions[a.field_id], a.pk)):
        cell(adjudication.paper_id, adjudication.field_id).adjudication = adjudication
    return cells

"""REST endpoints of data extraction (docs/EXTRACTION.md, "REST"), for a review
(`/api/projects/reviews/{session_id}/extraction/...`) and for a project
(`/api/projects/{ref}/extraction/...`): the form (read, create or change), one extractor's
values, an adjudication, the agreement between two extractors and the evidence table.

Each endpoint calls one service or selector of projects/review/extraction, which resolves
the review or project, the paper and the form and refuses what is not allowed (unknown
owner or paper: 404; a bad form, value, quote or page: 400 naming the field; a second
adjudication: 409; a read-only server: 403). The extractor is the authenticated user,
with an optional `agent` for an agent client working for them. `strict` is the server's
(EXTRACTION_STRICT): a client cannot turn it off.
"""

from __future__ import annotations

from typing import Annotated, Any

from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema, Status
from pydantic import ConfigDict

from core.schemas import with_errors
from papers.selectors import PaperRefValue
from projects.review.extraction import export, services
from projects.review.extraction.agreement import extraction_agreement
from projects.review.extraction.evidence import evidence_rows
from projects.review.extraction.forms import (
    MAX_CHOICE,
    MAX_CHOICES,
    MAX_DESCRIPTION,
    MAX_FIELDS,
    MAX_LABEL,
    MAX_NAME,
    MAX_UNIT,
    TYPES,
)
from projects.review.extraction.selectors import (
    extraction_owner,
    form_current,
    form_describe,
    form_get,
)

router = Router(tags=["extraction"])

REVIEW = "/reviews/{session_id}/extraction"
PROJECT = "/{ref}/extraction"
MAX_PAGE = services.MAX_PAGE
AgentName = Annotated[
    str | None,
    Field(
        default=None,
        max_length=services.MAX_AGENT,
        description="The agent client working for the authenticated user, if any: the "
        "extractor is then `user:<name>+agent:<agent>`.",
    ),
]
Page = Annotated[int | None, Field(default=None, ge=1, le=MAX_PAGE, description="From 1.")]


# --- schemas -------------------------------------------------------------------------------


class FieldIn(Schema):
    """One field of the form; the service checks every field at once and names each
    problem (`fields[2].choices`)."""

    model_config = ConfigDict(extra="forbid")

    key: str = Field(max_length=50, description="A lower-case identifier, e.g. sample_size.")
    type: str = Field(
        description="How its values are checked and compared.",
        # The list comes from forms.py, which validates the value.
        json_schema_extra={"enum": list(TYPES)},
    )
    label: str | None = Field(default=None, max_length=MAX_LABEL, description="Default: from key.")
    unit: str | None = Field(default=None, max_length=MAX_UNIT, description="number and range.")
    choices: list[Annotated[str, Field(max_length=MAX_CHOICE)]] | None = Field(
        default=None, max_length=MAX_CHOICES, description="choice: 2-50 distinct choices."
    )
    tolerance: float | None = Field(
        default=None, ge=0, description="number and range: values this close agree."
    )
    description: str | None = Field(
        default=None, max_length=MAX_DESCRIPTION, description="The instruction to extractors."
    )
    quote_required: bool | None = Field(default=None, description="Default true.")


class FormIn(Schema):
    name: str | None = Field(
        default=None, max_length=MAX_NAME, description="Needed to create; kept when omitted."
    )
    fields: list[FieldIn] = Field(
        max_length=MAX_FIELDS, description="The whole list of fields, in order (1-50)."
    )


class FieldOut(Schema):
    key: str
    label: str
    type: str
    unit: str | None = None
    choices: list[str] | None = None
    tolerance: float | None = None
    description: str | None = None
    quote_required: bool


class FormOut(Schema):
    session_id: str | None = None
    project_id: str | None = None
    name: str
    version: int = Field(description="1, 2, 3 ...: a new one each time the form changes.")
    created_at: str
    fields: list[FieldOut]


class ValueIn(Schema):
    model_config = ConfigDict(extra="forbid")

    value: Any = Field(description="As the field's type takes it; null: not reported.")
    quote: str | None = Field(default=None, description="The paper's words that support it.")
    page: Page


class ValuesIn(Schema):
    paper: PaperRefValue = Field(description="paper_id, human id, citekey, DOI ...")
    values: dict[str, ValueIn] = Field(
        max_length=MAX_FIELDS, description='{field key: {"value", "quote", "page"}}.'
    )
    agent: AgentName


class AdjudicationIn(Schema):
    paper: PaperRefValue
    field: str = Field(max_length=50, description="The field's key.")
    value: Any = Field(description="The value that stands; null: not reported.")
    reason: str = Field(max_length=services.MAX_REASON, description="Why it settles it.")
    quote: str | None = None
    page: Page
    agent: AgentName


class AgreementParams(Schema):
    extractors: list[Annotated[str, Field(max_length=300)]] | None = Field(
        default=None,
        max_length=2,
        description="Two extractor labels (`user:alice`, `agent:claude`); default: the two "
        "with the most values.",
    )
    limit: int = Field(default=20, ge=1, le=100, description="Disagreements listed (1-100).")


class ExportParams(Schema):
    model_config = ConfigDict(extra="forbid")

    format: str = Field(default="csv", description="csv, xlsx, markdown or json.")
    style: str = Field(
        default="apa", min_length=1, max_length=200, description="A CSL style id for citations."
    )


# --- the operations, once for either owner --------------------------------------------------


def _caller(request: HttpRequest) -> Any:
    """The authenticated user (api_auth: the token's user or the staff session's)."""
    return request.auth  # type: ignore[attr-defined]


def _form(owner: dict[str, Any]) -> dict[str, Any]:
    return {**owner, **form_describe(form_get(extraction_owner(**owner)))}


def _form_put(request: HttpRequest, owner: dict[str, Any], body: FormIn) -> Status[Any]:
    fields = [field.model_dump(exclude_none=True) for field in body.fields]
    by = f"user:{_caller(request).get_username()}"
    if form_current(extraction_owner(**owner)) is None:
        form = services.form_create(**owner, name=body.name, fields=fields, created_by=by)
        return Status(201, {**owner, **form_describe(form)})
    form = services.form_update(**owner, name=body.name, fields=fields, created_by=by)
    return Status(200, {**owner, **form_describe(form)})


def _record(request: HttpRequest, owner: dict[str, Any], body: ValuesIn) -> dict[str, Any]:
    values = {key: entry.model_dump(exclude_unset=True) for key, entry in body.values.items()}
    return services.extract_record(
        **owner, paper=body.paper, values=values, user=_caller(request), agent=body.agent
    )


def _adjudicate(request: HttpRequest, owner: dict[str, Any], body: AdjudicationIn) -> Any:
    return services.adjudicate(
        **owner, paper=body.paper, field=body.field, value=body.value, reason=body.reason,
        quote=body.quote, page=body.page, user=_caller(request), agent=body.agent,
    )  # fmt: skip


def _agreement(owner: dict[str, Any], params: AgreementParams) -> dict[str, Any]:
    return extraction_agreement(
        owner=extraction_owner(**owner), extractors=params.extractors, shown=params.limit
    )


def _export(owner: dict[str, Any], params: ExportParams) -> HttpResponse:
    table = export.export_evidence_table(**owner, format=params.format, style=params.style)
    response = HttpResponse(table.content, content_type=table.media_type)
    response["Content-Disposition"] = f'attachment; filename="{table.filename}"'
    return response


EXPORT_DOC = (
    "The evidence table as a file: a row per study, a column per field, each value with its "
    "quote and page and its flag, and each study's citation in a CSL style "
    '(docs/EXTRACTION.md, "Exporting the evidence table").'
)
EXPORT_RESPONSE = with_errors({200: str}, 400, 404)


# --- a review's extraction ------------------------------------------------------------------

FORM_DOC = (
    "PUT creates the form (201; `name` needed) or, when it has one, makes a new version "
    "with these fields (200; the same fields and name change nothing). Values answered "
    "under earlier versions keep counting where a field keeps its key, type, unit and "
    'choices (docs/EXTRACTION.md, "Versions").'
)
RECORD_DOC = (
    "One extractor's values of some fields of one study, each quote anchored in the paper "
    "(`verified`, `approximate`, `not_found`, `abstract_only`, `no_quote`). All or nothing; "
    "recording a field again replaces this extractor's value. Answers the anchors, the "
    "`flagged` fields and the fields this extractor left `empty`."
)
ADJUDICATE_DOC = (
    "Settles a field of a study whose extractors disagree (once: 409 after). Without a "
    "quote, the quote of an extractor whose value agrees is kept."
)


@router.get(
    f"{REVIEW}/form",
    operation_id="get_review_extraction_form",
    summary="A review's extraction form (its current version)",
    response=with_errors({200: FormOut}, 404),
)
def review_form(request: HttpRequest, session_id: str) -> dict[str, Any]:
    return _form({"session_id": session_id})


@router.put(
    f"{REVIEW}/form",
    operation_id="set_review_extraction_form",
    summary="Create or change a review's extraction form",
    description=FORM_DOC,
    response=with_errors({200: FormOut, 201: FormOut}, 403, 404, 409),
)
def review_form_put(request: HttpRequest, session_id: str, body: FormIn) -> Status[Any]:
    return _form_put(request, {"session_id": session_id}, body)


@router.post(
    f"{REVIEW}/values",
    operation_id="record_review_extraction",
    summary="Record extracted values of an included study, each with its quote",
    description=RECORD_DOC,
    response=with_errors({200: dict[str, Any]}, 403, 404),
)
def review_record(request: HttpRequest, session_id: str, body: ValuesIn) -> dict[str, Any]:
    return _record(request, {"session_id": session_id}, body)


@router.post(
    f"{REVIEW}/adjudications",
    operation_id="adjudicate_review_extraction",
    summary="Settle a field the extractors of a study disagree on",
    description=ADJUDICATE_DOC,
    response=with_errors({200: dict[str, Any]}, 403, 404, 409),
)
def review_adjudicate(request: HttpRequest, session_id: str, body: AdjudicationIn) -> Any:
    return _adjudicate(request, {"session_id": session_id}, body)


@router.get(
    f"{REVIEW}/agreement",
    operation_id="get_review_extraction_agreement",
    summary="Agreement between two extractors, per field and overall, and the disagreements",
    response=with_errors({200: dict[str, Any]}, 404),
)
def review_agreement(
    request: HttpRequest, session_id: str, params: Query[AgreementParams]
) -> dict[str, Any]:
    return _agreement({"session_id": session_id}, params)


@router.get(
    f"{REVIEW}/evidence",
    operation_id="get_review_evidence",
    summary="A review's evidence table: a row per included study, a cell per field",
    response=with_errors({200: dict[str, Any]}, 404),
)
def review_evidence(request: HttpRequest, session_id: str) -> dict[str, Any]:
    return evidence_rows(session_id=session_id)


@router.get(
    f"{REVIEW}/evidence/export",
    operation_id="export_review_evidence_table",
    summary="A review's evidence table as CSV, XLSX, Markdown or JSON",
    description=EXPORT_DOC,
    response=EXPORT_RESPONSE,
)
def review_evidence_export(
    request: HttpRequest, session_id: str, params: Query[ExportParams]
) -> HttpResponse:
    return _export({"session_id": session_id}, params)


# --- a project's extraction -----------------------------------------------------------------


@router.get(
    f"{PROJECT}/form",
    operation_id="get_project_extraction_form",
    summary="A project's extraction form (its current version)",
    response=with_errors({200: FormOut}, 404),
)
def project_form(request: HttpRequest, ref: str) -> dict[str, Any]:
    return _form({"project_id": ref})


@router.put(
    f"{PROJECT}/form",
    operation_id="set_project_extraction_form",
    summary="Create or change a project's extraction form",
    description=FORM_DOC,
    response=with_errors({200: FormOut, 201: FormOut}, 403, 404, 409),
)
def project_form_put(request: HttpRequest, ref: str, body: FormIn) -> Status[Any]:
    return _form_put(request, {"project_id": ref}, body)


@router.post(
    f"{PROJECT}/values",
    operation_id="record_project_extraction",
    summary="Record extracted values of a project's paper, each with its quote",
    description=RECORD_DOC,
    response=with_errors({200: dict[str, Any]}, 403, 404),
)
def project_record(request: HttpRequest, ref: str, body: ValuesIn) -> dict[str, Any]:
    return _record(request, {"project_id": ref}, body)


@router.post(
    f"{PROJECT}/adjudications",
    operation_id="adjudicate_project_extraction",
    summary="Settle a field the extractors of a paper disagree on",
    description=ADJUDICATE_DOC,
    response=with_errors({200: dict[str, Any]}, 403, 404, 409),
)
def project_adjudicate(request: HttpRequest, ref: str, body: AdjudicationIn) -> Any:
    return _adjudicate(request, {"project_id": ref}, body)


@router.get(
    f"{PROJECT}/agreement",
    operation_id="get_project_extraction_agreement",
    summary="Agreement between two extractors of a project, and the disagreements",
    response=with_errors({200: dict[str, Any]}, 404),
)
def project_agreement(
    request: HttpRequest, ref: str, params: Query[AgreementParams]
) -> dict[str, Any]:
    return _agreement({"project_id": ref}, params)


@router.get(
    f"{PROJECT}/evidence",
    operation_id="get_project_evidence",
    summary="A project's evidence table: a row per paper, a cell per field",
    response=with_errors({200: dict[str, Any]}, 404),
)
def project_evidence(request: HttpRequest, ref: str) -> dict[str, Any]:
    return evidence_rows(project_id=ref)


@router.get(
    f"{PROJECT}/evidence/export",
    operation_id="export_project_evidence_table",
    summary="A project's evidence table as CSV, XLSX, Markdown or JSON",
    description=EXPORT_DOC,
    response=EXPORT_RESPONSE,
)
def project_evidence_export(
    request: HttpRequest, ref: str, params: Query[ExportParams]
) -> HttpResponse:
    return _export({"project_id": ref}, params)

"""Tool set `extraction`: data extraction from a review's included studies or a project's
papers, every value anchored to a quote on a page (docs/EXTRACTION.md).

`extraction_form` makes or changes the form, `extract_next` says what to extract next,
`extract_record` records one extractor's values (or, with `adjudicate`, settles a
disagreement) and `export_evidence_table` publishes the table. Resources: the form and
the evidence table as CSV, per review. Thin adapters over projects/review/extraction/;
the extractor is named by the client (`extractor`, stored as `agent:<name>`), as
screeners are.
"""

from __future__ import annotations

import base64
import json
from typing import Annotated, Any, Literal

from mcp_types import ToolAnnotations
from pydantic import BaseModel, ConfigDict, Field

from core.errors import InvalidInput
from mcp_endpoint.registry import READ_ONLY, Registry, mcp_resource, mcp_tool
from projects.review.extraction import export, queue, services
from projects.review.extraction.selectors import (
    extraction_owner,
    form_current,
    form_describe,
)

SessionId = Annotated[str | None, Field(min_length=1, max_length=64, description="A review.")]
ProjectId = Annotated[
    str | None, Field(min_length=1, max_length=200, description="Or a project (id or name).")
]
Extractor = Annotated[
    str, Field(min_length=1, max_length=150, description="Who extracts; a second one: agreement.")
]
Text = Annotated[str, Field(max_length=4_000)]

RECORDS = ToolAnnotations(
    read_only_hint=False, destructive_hint=False, idempotent_hint=True, open_world_hint=False
)
DEFAULT_FORM_NAME = "Extraction form"


class Extracted(BaseModel):
    model_config = ConfigDict(extra="forbid")

    value: Any = Field(description="null: not reported.")
    quote: Text | None = Field(default=None, description="The words the value rests on.")
    page: Annotated[int, Field(ge=1, le=services.MAX_PAGE)] | None = None


class Answer(BaseModel):
    model_config = ConfigDict(extra="allow")


@mcp_tool(
    name="extraction_form",
    title="Extraction form",
    description=(
        "The data-extraction form of a review or project; with fields, create it or make a "
        "new version (earlier values stay). Field: {key, label, type: text|number|integer|"
        "choice|yes_no_unclear|range, unit, choices, tolerance, description, quote_required}."
    ),
    annotations=RECORDS,
)
def extraction_form(
    session_id: SessionId = None,
    project_id: ProjectId = None,
    fields: Annotated[list[dict[str, Any]] | None, Field(max_length=100)] = None,
    name: Annotated[str | None, Field(min_length=1, max_length=200)] = None,
) -> Answer:
    owner = extraction_owner(session_id=session_id, project_id=project_id)
    ids = owner.as_dict()
    if fields is None:
        if name is not None:
            raise InvalidInput("A new name needs the fields too (the whole form).", field="name")
        form = form_current(owner)
        return Answer.model_validate({**ids, "form": form_describe(form) if form else None})
    if form_current(owner) is None:
        form = services.form_create(**ids, name=name or DEFAULT_FORM_NAME, fields=fields)
    else:
        form = services.form_update(**ids, fields=fields, name=name)
    return Answer.model_validate({**ids, "form": form_describe(form)})


@mcp_tool(
    name="extract_next",
    title="Next studies to extract",
    description=(
        "The next studies this extractor has fields to fill in, with the form and the empty "
        "fields; progress, and agreement between two extractors. Answer with extract_record."
    ),
    annotations=READ_ONLY,
)
def extract_next(
    session_id: SessionId = None,
    project_id: ProjectId = None,
    extractor: Extractor = "agent",
    limit: Annotated[int, Field(ge=1, le=queue.MAX_LIMIT)] = queue.DEFAULT_LIMIT,
) -> Answer:
    return Answer(
        **queue.extraction_next(
            session_id=session_id, project_id=project_id, agent=extractor, limit=limit
        )
    )


@mcp_tool(
    name="extract_record",
    title="Record extracted values",
    description=(
        "One study's values, each with the quote it rests on and its page; each quote is "
        "looked up in the paper (verified, approximate, not_found). All or none. "
        "adjudicate=true settles one field extractors disagree on (reason required)."
    ),
    annotations=RECORDS,
)
def extract_record(
    paper: Annotated[int | str, Field(description="paper_id, human id or citekey.")],
    values: Annotated[
        dict[str, Extracted], Field(min_length=1, max_length=100, description="By field key.")
    ],
    session_id: SessionId = None,
    project_id: ProjectId = None,
    extractor: Extractor = "agent",
    adjudicate: bool = False,
    reason: Annotated[str | None, Field(max_length=services.MAX_REASON)] = None,
) -> Answer:
    if not adjudicate:
        if reason is not None:
            raise InvalidInput("reason is for adjudicate=true.", field="reason")
        plain = {key: item.model_dump(exclude_none=True) for key, item in values.items()}
        for key, item in values.items():
            plain[key]["value"] = item.value  # null stays: "not reported"
        return Answer(
            **services.extract_record(
                session_id=session_id,
                project_id=project_id,
                paper=paper,
                values=plain,
                agent=extractor,
            )
        )
    if len(values) != 1:
        raise InvalidInput("adjudicate=true settles one field at a time.", field="values")
    (key, item), *_ = values.items()
    return Answer(
        **services.adjudicate(
            session_id=session_id,
            project_id=project_id,
            paper=paper,
            field=key,
            value=item.value,
            reason=reason or "",
            quote=item.quote,
            page=item.page,
            agent=extractor,
        )
    )


@mcp_tool(
    name="export_evidence_table",
    title="Export the evidence table",
    description=(
        "The evidence table as markdown, csv, json or xlsx (base64): a row per study, a "
        "column per field, each value with its quote, page and flags; citations in a CSL style."
    ),
    annotations=READ_ONLY,
)
def export_evidence_table(
    session_id: SessionId = None,
    project_id: ProjectId = None,
    format: Literal["markdown", "csv", "xlsx", "json"] = "markdown",
    style: Annotated[str, Field(min_length=1, max_length=200)] = "apa",
) -> Answer:
    owner = extraction_owner(session_id=session_id, project_id=project_id)
    table = export.export_evidence_table(**owner.as_dict(), format=format, style=style)
    shown: dict[str, Any] = {
        **owner.as_dict(),
        "format": table.format,
        "filename": table.filename,
        "studies": table.studies,
        "fields": table.fields,
    }
    if isinstance(table.content, bytes):
        shown["content_base64"] = base64.b64encode(table.content).decode("ascii")
    else:
        shown["content"] = table.content
    return Answer(**shown)


@mcp_resource(
    "review://{session_id}/extraction-form",
    name="review_extraction_form",
    title="Extraction form of a review",
    description="The review's current data-extraction form (fields, types, instructions).",
    mime_type="application/json",
)
def review_extraction_form_resource(session_id: str) -> str:
    owner = extraction_owner(session_id=session_id)
    form = form_current(owner)
    return json.dumps(
        {**owner.as_dict(), "form": form_describe(form) if form else None}, ensure_ascii=False
    )


@mcp_resource(
    "review://{session_id}/evidence.csv",
    name="review_evidence_table",
    title="Evidence table of a review",
    description="One row per included study, one column per field, with quotes and pages.",
    mime_type="text/csv",
)
def review_evidence_resource(session_id: str) -> str:
    table = export.export_evidence_table(session_id=session_id, format="csv")
    assert isinstance(table.content, str)
    return table.content


def register(registry: Registry) -> None:
    registry.add_tools(extraction_form, extract_next, extract_record)
    registry.add_tools(export_evidence_table)
    registry.add_resources(review_extraction_form_resource, review_evidence_resource)

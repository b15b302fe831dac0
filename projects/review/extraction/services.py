"""Writes of data extraction (docs/EXTRACTION.md): a review's or project's form and its
versions, each extractor's values with their anchored quotes, and the adjudication of a
field the extractors disagree on.

Every function takes the review's `session_id` or a `project_id` and resolves it through
selectors.extraction_owner (NotFound outside the client's collections), and the paper
through selectors.owner_paper (an included study of the review, or a paper of the
project). Writes are refused on a read-only server (ReadOnlyMode). Quotes are anchored
(anchoring.py) before the transaction that saves them, so the PDF is read without holding
the database; a verified quote's highlight (highlights.py) is made after they are saved.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings
from django.db import transaction

from core.attribution import DEFAULT_AGENT, attribution
from core.errors import Conflict, InvalidInput, ReadOnlyMode
from projects import permissions
from projects.models import (
    AnchorStatus,
    ExtractionAdjudication,
    ExtractionField,
    ExtractionForm,
    ExtractionValue,
    Project,
    ReviewSession,
)
from projects.review.extraction.agreement import values_agree
from projects.review.extraction.anchoring import Anchor, quote_anchor, quote_clean
from projects.review.extraction.forms import (
    MAX_FIELDS,
    FieldSpec,
    fields_parse,
    form_name_clean,
    value_clean,
)
from projects.review.extraction.highlights import (
    Wanted,
    highlight_comment,
    highlight_fits,
    highlights_sync,
)
from projects.review.extraction.selectors import (
    Owner,
    cells_current,
    extraction_owner,
    field_spec,
    form_current,
    form_fields,
    form_get,
    owner_paper,
)

MAX_AGENT = 150
MAX_REASON = 2_000
MAX_PAGE = 100_000


def _writable() -> None:
    if settings.MCP_READ_ONLY:
        raise ReadOnlyMode("This server is read-only (MCP_READ_ONLY): nothing can be extracted.")


def _lock_owner(owner: Owner) -> None:
    """Serialise form changes of one owner (the next version number is read, then used)."""
    if owner.session is not None:
        ReviewSession.objects.select_for_update().filter(pk=owner.session.pk).first()
    else:
        assert owner.project is not None
        Project.objects.select_for_update().filter(pk=owner.project.pk).first()


def _form_write(
    owner: Owner, *, name: str, specs: list[FieldSpec], version: int, by: str
) -> ExtractionForm:
    form = ExtractionForm.objects.create(
        session=owner.session, project=owner.project, name=name, version=version, created_by=by
    )
    ExtractionField.objects.bulk_create(
        ExtractionField(
            form=form,
            key=spec.key,
            label=spec.label,
            type=spec.type,
            unit=spec.unit,
            choices=list(spec.choices),
            tolerance=spec.tolerance,
            description=spec.description,
            quote_required=spec.quote_required,
            order=order,
        )
        for order, spec in enumerate(specs, start=1)
    )
    return form


@transaction.atomic
def form_create(
    *,
    session_id: Any = None,
    project_id: Any = None,
    name: Any,
    fields: Any,
    created_by: str = "",
) -> ExtractionForm:
    """The first version of the extraction form of a review or a project.

    Raises InvalidInput (fields_parse's per-field errors, a bad name), NotFound (owner),
    Conflict when it already has a form (form_update changes it), ReadOnlyMode."""
    _writable()
    owner = extraction_owner(session_id=session_id, project_id=project_id)
    permissions.require_extraction(owner, permissions.EDIT)
    text = form_name_clean(name)
    specs = fields_parse(fields)
    _lock_owner(owner)
    if form_current(owner) is not None:
        raise Conflict(
            f"The {owner.label} already has an extraction form: change it with form_update "
            "(a new version).",
            **owner.as_dict(),
        )
    return _form_write(owner, name=text, specs=specs, version=1, by=created_by[:300])


@transaction.atomic
def form_update(
    *,
    session_id: Any = None,
    project_id: Any = None,
    fields: Any,
    name: Any = None,
    created_by: str = "",
) -> ExtractionForm:
    """A new version of the owner's form with these fields (the whole list, in order) and
    name (kept when None). The values answered under earlier versions stay with the fields
    they answered; for the new version they still count where a field keeps its key, type,
    unit and choices (selectors.cells_current). Nothing changes, and the current version
    is returned, when the fields and name are the same.

    Raises InvalidInput, NotFound (owner, or no form yet), ReadOnlyMode."""
    _writable()
    owner = extraction_owner(session_id=session_id, project_id=project_id)
    permissions.require_extraction(owner, permissions.EDIT)
    specs = fields_parse(fields)
    _lock_owner(owner)
    current = form_get(owner)
    text = current.name if name is None else form_name_clean(name)
    if text == current.name and [field_spec(row) for row in form_fields(current)] == specs:
        return current
    return _form_write(
        owner, name=text, specs=specs, version=current.version + 1, by=created_by[:300]
    )


# --- extracting -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Extractor:
    """Who extracted: a person (`user`), an agent client (`agent`), or a person through an
    agent. `label` names them in agreement and evidence tables."""

    label: str
    user: Any = None
    agent: str = ""
    client: str = ""


def extractor_resolve(*, user: Any = None, agent: str | None = None) -> Extractor:
    """The extractor of a call. Raises InvalidInput when neither is given, or for an agent
    name that is not 1-150 printable characters.

    A client proved by its person's own token (core/attribution.py) extracts as that
    person: `user:<name>`, or `user:<name>+agent:<agent>` when it names itself other than
    the default `agent`; the client is recorded beside."""
    who = attribution()
    if user is None and who.named:
        user = who.user
        if agent == DEFAULT_AGENT:
            agent = None
    name = " ".join(str(agent or "").split())
    if agent is not None and name and (len(name) > MAX_AGENT or not name.isprintable()):
        raise InvalidInput(f"agent must be 1-{MAX_AGENT} printable characters.", field="agent")
    if user is not None and not getattr(user, "is_authenticated", False):
        user = None
    if user is None and not name:
        raise InvalidInput("Name the extractor: a user, an agent client, or both.", field="agent")
    parts = []
    if user is not None:
        parts.append(f"user:{user.get_username()}")
    if name:
        parts.append(f"agent:{name}")
    return Extractor(label="+".join(parts), user=user, agent=name, client=who.client[:200])


@dataclass(frozen=True)
class _Entry:
    field: ExtractionField
    spec: FieldSpec
    value: Any
    quote: str
    page: int | None


def _page_clean(raw: Any, where: str) -> int | None:
    if raw is None:
        return None
    if isinstance(raw, bool) or not isinstance(raw, int) or not 1 <= raw <= MAX_PAGE:
        raise InvalidInput(f"{where}: page must be a page number from 1.", field=where)
    return raw


def _entries_parse(values: Any, fields: list[ExtractionField]) -> list[_Entry]:
    """{field key: {"value", "quote", "page"}} checked against the form's fields."""
    if not isinstance(values, Mapping) or not 1 <= len(values) <= MAX_FIELDS:
        raise InvalidInput(
            f'values must map 1-{MAX_FIELDS} field keys to {{"value", "quote", "page"}}.',
            field="values",
        )
    by_key = {row.key: row for row in fields}
    unknown = [key for key in values if key not in by_key]
    if unknown:
        raise InvalidInput(
            f"The form has no fields {unknown[:20]}; its fields: {list(by_key)}.",
            field=f"values.{unknown[0]}",
        )
    entries = []
    for key, entry in values.items():
        where = f"values.{key}"
        if not isinstance(entry, Mapping) or "value" not in entry:
            raise InvalidInput(
                f'{where}: expects {{"value": ..., "quote": "...", "page": n}} '
                "(value null: not reported).",
                field=where,
            )
        extra = set(entry) - {"value", "quote", "page"}
        if extra:
            raise InvalidInput(f"{where}: unknown properties {sorted(extra)}.", field=where)
        row = by_key[key]
        spec = field_spec(row)
        entries.append(
            _Entry(
                field=row,
                spec=spec,
                value=value_clean(spec, entry["value"]),
                quote=quote_clean(entry.get("quote"), where=f"{where}.quote"),
                page=_page_clean(entry.get("page"), f"{where}.page"),
            )
        )
    return entries


def _anchor(paper: Any, entry: _Entry) -> Anchor:
    if not entry.quote and entry.spec.quote_required and entry.value is not None:
        return Anchor(AnchorStatus.NOT_FOUND, source="")  # nothing supports the value
    return quote_anchor(paper=paper, quote=entry.quote, page=entry.page)


def _strict_refusals(entries: list[tuple[_Entry, Anchor]], strict: bool) -> None:
    """With `strict`, a required quote that is not in the paper refuses the whole call."""
    if not strict:
        return
    refused = [
        (entry, anchor)
        for entry, anchor in entries
        if entry.spec.quote_required
        and entry.value is not None
        and anchor.status == AnchorStatus.NOT_FOUND
    ]
    if not refused:
        return
    details = {
        entry.spec.key: (
            "no quote given" if not entry.quote else f"closest text: {anchor.text[:200]!r}"
            if anchor.text else "nothing close in the paper"
        )
        for entry, anchor in refused
    }  # fmt: skip
    raise InvalidInput(
        f"Nothing was recorded: fields {list(details)} require a quote found in the paper "
        "(this server is strict), and theirs was not found. Quote the paper's words.",
        field=f"values.{refused[0][0].spec.key}",
        not_found=details,
    )


def _anchor_fields(anchor: Anchor) -> dict[str, Any]:
    return {
        "anchor_status": anchor.status,
        "anchor_page": anchor.page,
        "anchor_rects": anchor.rects,
        "anchor_text": anchor.text,
        "anchor_score": round(anchor.score, 4),
    }


def extract_record(
    *,
    session_id: Any = None,
    project_id: Any = None,
    paper: str | int,
    values: Any,
    user: Any = None,
    agent: str | None = None,
    strict: bool | None = None,
) -> dict[str, Any]:
    """Record one extractor's values of some fields of one study, under the current form
    version, each with its quote anchored in the paper (anchoring.py). Recording a field
    again replaces that extractor's value (for this version). All or nothing: every value
    is checked and anchored before any is saved.

    `values`: {field key: {"value": ..., "quote": "...", "page": n}}; a null value is "not
    reported" and needs no quote. `strict` (default: settings.EXTRACTION_STRICT) refuses
    the call when a field that requires a quote has one not found in the paper (or none).

    A verified quote is highlighted in the PDF in the extraction colour (highlights.py;
    the row keeps the annotation, a re-recorded value reuses or replaces it).

    Returns the recorded values with their anchors and highlights (`highlight`: the
    annotation id, or `highlight_error` when none could be made), which are flagged
    (approximate, not_found, abstract_only), and the form's fields this extractor left
    empty for the paper. Raises InvalidInput (a value, quote or page per field, unknown
    fields, a strict refusal naming the quotes not found), NotFound (owner, form, paper),
    ReadOnlyMode."""
    _writable()
    owner = extraction_owner(session_id=session_id, project_id=project_id)
    permissions.require_extraction(owner, permissions.SCREEN)
    form = form_get(owner)
    fields = form_fields(form)
    study = owner_paper(owner, paper)
    extractor = extractor_resolve(user=user, agent=agent)
    entries = _entries_parse(values, fields)
    anchored = [(entry, _anchor(study, entry)) for entry in entries]
    _strict_refusals(anchored, settings.EXTRACTION_STRICT if strict is None else strict)
    previous = {
        row.field_id: row
        for row in ExtractionValue.objects.filter(
            field__in=[entry.field for entry, _ in anchored], paper=study, extractor=extractor.label
        ).select_related("highlight")
    }
    saved: list[tuple[ExtractionValue, int | None]] = []
    with transaction.atomic():
        for entry, anchor in anchored:
            before = previous.get(entry.field.pk)
            old = before.highlight if before is not None else None
            fits = highlight_fits(old, status=anchor.status, page=anchor.page, text=anchor.text)
            row, _ = ExtractionValue.objects.update_or_create(
                field=entry.field,
                paper=study,
                extractor=extractor.label,
                defaults={
                    "form": form,
                    "user": extractor.user,
                    "agent": extractor.agent,
                    "client": extractor.client,
                    "value": entry.value,
                    "quote": entry.quote,
                    "page": entry.page,
                    **_anchor_fields(anchor),
                    "highlight": old if fits else None,
                },
            )
            saved.append((row, old.pk if old is not None else None))
    # After the save, outside its transaction: the PDF is read and its annotated copy written.
    highlights = highlights_sync(
        paper=study,
        wanted=[
            Wanted(row, highlight_comment(entry.spec.key, extractor.label), replaced)
            for (entry, _), (row, replaced) in zip(anchored, saved, strict=True)
        ],
    )
    # Empty for this extractor: no value under this version, nor under an earlier one that
    # still counts (selectors.cells_current).
    cells = cells_current(owner, form, paper_ids=[study.pk]).get(study.pk, {})
    answered = {key for key, cell in cells.items() if extractor.label in cell.values}
    recorded = []
    for (entry, anchor), highlight in zip(anchored, highlights, strict=True):
        shown: dict[str, Any] = {
            "field": entry.spec.key,
            "value": entry.value,
            "anchor": anchor.as_dict(),
            "flagged": anchor.flagged,
            **highlight,
        }
        if entry.page is not None and anchor.page is not None and entry.page != anchor.page:
            shown["page_given"] = entry.page
        recorded.append(shown)
    return {
        **owner.as_dict(),
        "paper_id": study.pk,
        "form_version": form.version,
        "extractor": extractor.label,
        "recorded": recorded,
        "flagged": [r["field"] for r in recorded if r["flagged"]],
        "empty": [row.key for row in fields if row.key not in answered],
    }


# --- adjudication ---------------------------------------------------------------------------


def adjudicate(
    *,
    session_id: Any = None,
    project_id: Any = None,
    paper: str | int,
    field: str,
    value: Any,
    reason: str,
    quote: str | None = None,
    page: int | None = None,
    user: Any = None,
    agent: str | None = None,
    strict: bool | None = None,
) -> dict[str, Any]:
    """Settle a field of a study whose extractors disagree with a third decision: the value
    that stands (checked as any value of the field), why, and who decided. Without a quote,
    the quote and anchor of an extractor whose value agrees with it are kept; a new quote
    is anchored (and refused under `strict` as in extract_record) and, verified,
    highlighted as extract_record does.

    Raises InvalidInput (unknown field, bad value or quote, no reason, the extractors do
    not disagree), Conflict (already adjudicated), NotFound, ReadOnlyMode."""
    _writable()
    owner = extraction_owner(session_id=session_id, project_id=project_id)
    permissions.require_extraction(owner, permissions.EDIT)
    form = form_get(owner)
    study = owner_paper(owner, paper)
    decider = extractor_resolve(user=user, agent=agent)
    why = " ".join(str(reason or "").split())
    if not why or len(why) > MAX_REASON:
        raise InvalidInput(
            f"reason must say, in 1-{MAX_REASON} characters, why this value settles it.",
            field="reason",
        )
    rows = {row.key: row for row in form_fields(form)}
    if field not in rows:
        raise InvalidInput(
            f"The form has no field {field!r}; its fields: {list(rows)}.", field="field"
        )
    cell = cells_current(owner, form, paper_ids=[study.pk]).get(study.pk, {}).get(field)
    spec = field_spec(rows[field])
    answers = list(cell.values.values()) if cell else []
    disputed = any(
        not values_agree(spec, x.value, y.value) for x in answers for y in answers if x is not y
    )
    if not disputed:
        raise InvalidInput(
            f"The extractors of {field!r} for paper {study.pk} do not disagree (adjudication "
            "settles a disagreement between two extractors).",
            field="field",
        )
    if cell is not None and cell.adjudication is not None:
        raise Conflict(
            f"{field!r} of paper {study.pk} was already adjudicated by "
            f"{cell.adjudication.decided_by}.",
            field="field",
        )
    entry = _Entry(
        field=rows[field],
        spec=spec,
        value=value_clean(spec, value),
        quote=quote_clean(quote, where="quote"),
        page=_page_clean(page, "page"),
    )
    source = next(
        (a for a in answers if a.quote and values_agree(spec, a.value, entry.value)), None
    )
    if not entry.quote and source is not None:
        kept = {
            "quote": source.quote,
            "page": source.page,
            "anchor_status": source.anchor_status,
            "anchor_page": source.anchor_page,
            "anchor_rects": source.anchor_rects,
            "anchor_text": source.anchor_text,
            "anchor_score": source.anchor_score,
            "highlight_id": source.highlight_id,
        }
    else:
        anchor = _anchor(study, entry)
        _strict_refusals(
            [(entry, anchor)], settings.EXTRACTION_STRICT if strict is None else strict
        )
        kept = {"quote": entry.quote, "page": entry.page, **_anchor_fields(anchor)}
    with transaction.atomic():
        if ExtractionAdjudication.objects.filter(field=rows[field], paper=study).exists():
            raise Conflict(f"{field!r} of paper {study.pk} was already adjudicated.", field="field")
        made = ExtractionAdjudication.objects.create(
            form=form,
            field=rows[field],
            paper=study,
            value=entry.value,
            decided_by=decider.label,
            reason=why,
            user=decider.user,
            client=decider.client,
            **kept,
        )
    # A new quote's highlight (one kept from an extractor is theirs already).
    [highlight] = highlights_sync(
        paper=study,
        wanted=[Wanted(made, highlight_comment(field, f"adjudicated by {decider.label}"))],
    )
    return {
        **owner.as_dict(),
        "paper_id": study.pk,
        "field": field,
        "value": made.value,
        "decided_by": made.decided_by,
        "anchor": {"status": made.anchor_status, "page": made.anchor_page},
        **highlight,
    }


__all__ = [
    "Extractor",
    "adjudicate",
    "extract_record",
    "extractor_resolve",
    "form_create",
    "form_update",
]

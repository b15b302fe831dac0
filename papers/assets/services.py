"""Writes: storing assets, recording remote ones, choosing the preferred summary."""

from __future__ import annotations

import hashlib
import json

from django.conf import settings
from django.db import transaction

from core.atomic import write_atomic
from core.errors import InvalidInput
from papers.assets.errors import Kind, TemplateNotAvailable
from papers.assets.names import asset_relative_path, name_clean, template_name_clean
from papers.assets.remote import fetch_remote
from papers.assets.selectors import available_summary_templates
from papers.assets.storage import check_summary_json, decode_text, local_path
from papers.models import Paper, PaperAsset

Storage = PaperAsset.Storage
CONTENT_TYPES = {
    Kind.SUMMARY: "application/json",
    Kind.SOURCE: "text/markdown",
    Kind.TRANSLATION: "text/markdown",
}


def _encode(content: str | bytes, *, kind: str, name: str) -> bytes:
    data = content.encode("utf-8") if isinstance(content, str) else bytes(content)
    field = "content"
    if len(data) > settings.ASSET_MAX_BYTES:
        raise InvalidInput(
            f"The content is larger than the {settings.ASSET_MAX_BYTES} bytes an asset may have.",
            field=field,
        )
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise InvalidInput("The content is not UTF-8 text.", field=field) from None
    if not text.strip():
        raise InvalidInput("The content is empty.", field=field)
    if kind == Kind.SUMMARY:
        _validate_summary(text, template=name)
    return data


def _validate_summary(text: str, *, template: str) -> None:
    """A summary is a JSON object: a bare string is usually JSON encoded twice by mistake."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as error:
        raise InvalidInput(
            f"The '{template}' summary is not valid JSON: {error.msg} at line {error.lineno} "
            f"column {error.colno}.",
            field="content",
        ) from None
    if not isinstance(value, dict):
        raise InvalidInput(
            f"The '{template}' summary must be a JSON object (got a JSON "
            f"{type(value).__name__}); send the object itself, not a string that holds it.",
            field="content",
        )


def _record(
    *, paper: Paper, kind: str, name: str, storage: str, data: bytes, set_preferred: bool
) -> PaperAsset:
    asset, _ = PaperAsset.objects.update_or_create(
        paper=paper,
        kind=kind,
        name=name,
        defaults={
            "storage": storage,
            "content_type": CONTENT_TYPES[Kind(kind)],
            "size": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        },
    )
    # The first summary of a paper becomes its preferred one, so get_paper_summary
    # without a template has an answer.
    if kind == Kind.SUMMARY and (set_preferred or not paper.preferred_summary_template):
        Paper.objects.filter(pk=paper.pk).update(preferred_summary_template=name)
        paper.preferred_summary_template = name
    return asset


@transaction.atomic
def asset_save(
    *,
    paper: Paper,
    kind: str,
    name: str = "",
    content: str | bytes,
    set_preferred: bool = False,
) -> PaperAsset:
    """Store an asset in the knowledge base (atomic file replace) and record it.

    `name` is the template of a summary or the language of a translation ('' for the
    source). A summary must be a JSON object. `set_preferred` makes a summary's template
    the paper's preferred one (the first summary of a paper always does). Replaces an
    earlier asset of the same kind and name, wherever it was stored.
    Raises InvalidInput (name, size over ASSET_MAX_BYTES, not UTF-8, empty, not JSON).
    """
    kind = Kind(kind) if kind in Kind.values else kind
    name = name_clean(kind, name)
    data = _encode(content, kind=kind, name=name)
    relative = asset_relative_path(paper_id=paper.pk, kind=kind, name=name)
    asset = _record(
        paper=paper,
        kind=kind,
        name=name,
        storage=Storage.LOCAL,
        data=data,
        set_preferred=set_preferred,
    )
    # Last, so a failed write rolls the row back; os.replace keeps readers on the old file.
    write_atomic(local_path(relative), data)
    return asset


def asset_register_remote(
    *, paper: Paper, kind: str, name: str = "", set_preferred: bool = False
) -> PaperAsset:
    """Record an asset served by ASSET_BASE_URL, after fetching it once to check that it
    exists and is valid (size and sha256 are taken from that copy).
    Raises InvalidInput, AssetFetchFailed, AssetParseFailed (a summary that is not JSON).
    """
    kind = Kind(kind) if kind in Kind.values else kind
    name = name_clean(kind, name)
    relative = asset_relative_path(paper_id=paper.pk, kind=kind, name=name)
    data = fetch_remote(relative, paper_id=paper.pk, kind=kind, name=name)  # not in atomic()
    text = decode_text(data, paper_id=paper.pk, kind=kind, name=name)
    if kind == Kind.SUMMARY:
        check_summary_json(text, paper_id=paper.pk, template=name)
    with transaction.atomic():
        return _record(
            paper=paper,
            kind=kind,
            name=name,
            storage=Storage.REMOTE,
            data=data,
            set_preferred=set_preferred,
        )


@transaction.atomic
def paper_preferred_template_set(*, paper: Paper, template: str) -> Paper:
    """Make `template` the summary get_paper_summary returns by default.
    Raises InvalidInput, TemplateNotAvailable (the paper has no such summary)."""
    name = template_name_clean(template)
    available = available_summary_templates(paper)
    if name not in available:
        raise TemplateNotAvailable(
            f"Paper {paper.pk} has no '{name}' summary to prefer.",
            paper_id=paper.pk,
            template=name,
            available_summary_templates=available,
        )
    Paper.objects.filter(pk=paper.pk).update(preferred_summary_template=name)
    paper.preferred_summary_template = name
    return paper

"""The errors of paper assets, and the details every one of them carries.

Messages and details name the paper and the asset, never a path or a URL.
"""

from __future__ import annotations

from core.errors import DomainError, NotFound
from papers.models import PaperAsset

Kind = PaperAsset.Kind


class TemplateNotAvailable(NotFound):
    """The paper has no summary for the template asked for (or none at all)."""

    code = "template_not_available"


class AssetNotFound(NotFound):
    """The paper has no such asset: no source markdown, no translation in that language."""

    code = "asset_not_found"


class AssetFetchFailed(DomainError):
    """The asset is recorded but its content could not be read (404, timeout, refused...)."""

    code = "asset_fetch_failed"


class AssetParseFailed(DomainError):
    """The content was read but is unusable: a summary that is not JSON, text that is not
    UTF-8."""

    code = "asset_parse_failed"


def asset_details(paper_id: int, kind: str, name: str) -> dict[str, object]:
    details: dict[str, object] = {"paper_id": paper_id, "kind": str(kind)}
    if kind == Kind.SUMMARY:
        details["template"] = name
    elif kind == Kind.TRANSLATION:
        details["lang"] = name
    return details


def asset_label(paper_id: int, kind: str, name: str) -> str:
    if kind == Kind.SUMMARY:
        return f"the '{name}' summary of paper {paper_id}"
    if kind == Kind.TRANSLATION:
        return f"the '{name}' translation of paper {paper_id}"
    return f"the source markdown of paper {paper_id}"

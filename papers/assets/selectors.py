"""Reads: which assets a paper has, and their content."""

from __future__ import annotations

from dataclasses import dataclass

from papers.assets.errors import (
    AssetNotFound,
    Kind,
    TemplateNotAvailable,
    asset_details,
    asset_label,
)
from papers.assets.names import asset_relative_path, language_code_clean, template_name_clean
from papers.assets.remote import fetch_remote
from papers.assets.storage import check_summary_json, decode_text, read_local
from papers.models import Paper, PaperAsset

Storage = PaperAsset.Storage


@dataclass(frozen=True)
class AssetContent:
    paper_id: int
    kind: str
    name: str
    text: str


def available_summary_templates(paper: Paper) -> list[str]:
    """The template names the paper has a summary for, sorted."""
    return sorted(paper.assets.filter(kind=Kind.SUMMARY).values_list("name", flat=True))


def available_translations(paper: Paper) -> list[str]:
    """The language codes the paper has a translation in, sorted."""
    return sorted(paper.assets.filter(kind=Kind.TRANSLATION).values_list("name", flat=True))


def summary_templates_info(*, paper_id: int) -> dict[str, object]:
    """`preferred_summary_template` (None when unset) and `available_summary_templates`,
    the two fields get_paper_metadata adds to a paper's record."""
    paper = Paper.objects.only("paper_id", "preferred_summary_template").get(pk=paper_id)
    return {
        "preferred_summary_template": paper.preferred_summary_template or None,
        "available_summary_templates": available_summary_templates(paper),
    }


def _default_template(paper: Paper, available: list[str]) -> str:
    preferred = paper.preferred_summary_template
    if preferred:
        return preferred
    if len(available) == 1:
        return available[0]
    if not available:
        raise TemplateNotAvailable(
            f"Paper {paper.pk} has no summaries.",
            paper_id=paper.pk,
            template=None,
            available_summary_templates=[],
        )
    raise TemplateNotAvailable(
        f"Paper {paper.pk} has no preferred summary template; name one of: {', '.join(available)}.",
        paper_id=paper.pk,
        template=None,
        available_summary_templates=available,
    )


def summary_get(*, paper: Paper, template: str | None = None) -> AssetContent:
    """The paper's summary for `template` (the preferred one when None) as its full JSON text.

    Without a preferred template, a paper with exactly one summary answers with that one.
    Raises InvalidInput (bad name), TemplateNotAvailable (with the available templates),
    AssetFetchFailed, AssetParseFailed (content is not JSON).
    """
    available = available_summary_templates(paper)
    name = _default_template(paper, available) if template is None else template
    name = template_name_clean(name)
    if name not in available:
        listed = ", ".join(available) if available else "none"
        raise TemplateNotAvailable(
            f"Paper {paper.pk} has no '{name}' summary; available templates: {listed}.",
            paper_id=paper.pk,
            template=name,
            available_summary_templates=available,
        )
    content = _content(paper, Kind.SUMMARY, name)
    check_summary_json(content.text, paper_id=paper.pk, template=name)
    return content


def source_get(*, paper: Paper) -> AssetContent:
    """The paper's source markdown. Raises AssetNotFound ('not available'), AssetFetchFailed,
    AssetParseFailed."""
    return _content(paper, Kind.SOURCE, "")


def translation_get(*, paper: Paper, lang: str) -> AssetContent:
    """The paper's markdown translation into `lang`. Raises InvalidInput (bad code),
    AssetNotFound (with the languages available), AssetFetchFailed, AssetParseFailed."""
    return _content(paper, Kind.TRANSLATION, language_code_clean(lang))


def _content(paper: Paper, kind: str, name: str) -> AssetContent:
    asset = paper.assets.filter(kind=kind, name=name).first()
    if asset is None:
        details = asset_details(paper.pk, kind, name)
        if kind == Kind.TRANSLATION:
            details["available_translations"] = available_translations(paper)
        raise AssetNotFound(
            f"{asset_label(paper.pk, kind, name).capitalize()} is not available.", **details
        )
    relative = asset_relative_path(paper_id=paper.pk, kind=kind, name=name)
    if asset.storage == Storage.REMOTE:
        data = fetch_remote(relative, paper_id=paper.pk, kind=kind, name=name)
    else:
        data = read_local(relative, paper_id=paper.pk, kind=kind, name=name)
    return AssetContent(
        paper.pk, kind, name, decode_text(data, paper_id=paper.pk, kind=kind, name=name)
    )

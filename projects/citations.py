"""Citations of a project's papers: `format_citations(project_id=...)` formats them without
the caller listing them first. Lives above papers because it reads projects; the
formatting is papers/citations/csl.py's.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from core.errors import InvalidInput
from papers.citations import csl
from papers.citations.styles import DEFAULT_STYLE
from papers.models import Paper
from papers.selectors import MAX_REFS
from projects.selectors import project_get


def citations_for_project(
    *,
    project: str | None,
    refs: Sequence[str | int] = (),
    style: str | None = DEFAULT_STYLE,
    locale: str | None = None,
    locators: Mapping[str, str] | None = None,
    output: str = "text",
    scope: Sequence[str] | None = None,
) -> csl.CitationResult:
    """`csl.citations_for_refs` for every paper of `project` (id or name, looked up within
    the client's `scope` as every project tool does) and the papers `refs` names. Either
    may be left out, not both. Raises NotFound for an unknown project or paper,
    InvalidInput for an empty project or one of more than MAX_REFS papers."""
    refs = list(refs)
    if project is None:
        if not refs:
            raise InvalidInput("Give paper_ids or a project_id.", field="paper_ids")
        return csl.citations_for_refs(
            refs=refs, style=style, locale=locale, locators=locators, output=output, scope=scope
        )
    found = project_get(ref=project, scope=scope)
    members = Paper.objects.filter(project_links__project=found).order_by("pk")
    ids = list(members.values_list("pk", flat=True)[: MAX_REFS + 1])
    if not ids and not refs:
        raise InvalidInput(f"Project {found.name!r} has no papers to cite.", field="project_id")
    if len(ids) + len(refs) > MAX_REFS:
        raise InvalidInput(
            f"At most {MAX_REFS} papers at a time; project {found.name!r} has more.",
            field="project_id",
        )
    return csl.citations_for_refs(
        refs=[*ids, *refs], style=style, locale=locale, locators=locators, output=output,
        scope=scope,
    )  # fmt: skip

"""Reads over projects."""

from __future__ import annotations

from collections.abc import Sequence

from papers import scoping
from papers.models import Paper
from papers.selectors import with_relations
from projects.models import Project


def project_ids_for(refs: Sequence[str]) -> list[str]:
    """Project ids for references given as ids or names (case-insensitive); unknown ones
    match nothing, so a scoped client with a wrong name sees an empty library, never more."""
    return scoping.project_ids_for(refs)


def project_get(*, ref: str, scope: Sequence[str] | None = None) -> Project:
    """The project with this id or (case-insensitive) name; NotFound otherwise or when the
    client's collection scope does not include it."""
    project: Project = scoping.project_find(ref=ref, scope=scope)
    return project


def project_papers(*, project: Project, limit: int, offset: int) -> tuple[list[Paper], int]:
    """A page of a project's papers (most recently added first) and the total count."""
    queryset = Paper.objects.filter(project_links__project=project)
    total = queryset.count()
    page = with_relations(queryset.order_by("-project_links__added_at", "-paper_id"))[
        offset : offset + limit
    ]
    return list(page), total


def project_list(*, scope: Sequence[str] | None = None) -> list[Project]:
    queryset = Project.objects.all()
    if scope is not None:
        queryset = queryset.filter(id__in=project_ids_for(scope))
    return list(queryset.order_by("name"))

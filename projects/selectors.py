"""Reads over projects."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.contrib.auth.models import AnonymousUser, User
from django.db.models import Case, Count, Max, Min, Q, Value, When

from core.errors import InvalidInput
from papers import scoping
from papers.models import Keyword, Paper, PaperKeyword
from papers.selectors import with_relations
from projects.models import Project, ProjectPaper

# project_detail: how many of the project's most used keywords it lists.
DETAIL_KEYWORDS = 20
# project_match: the most projects one answer lists (a picker's listbox, not a report).
MATCH_LIMIT = 20
MATCH_MAX_CHARS = 200


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
    """Every project (only those in the client's scope and, for a principal bound by
    roles, those it is a member of), by name, each with `paper_count`
    annotated: one query, whatever the number of projects."""
    queryset = Project.objects.annotate(paper_count=Count("paper_links"))
    scope = scoping.project_scope(scope)
    if scope is not None:
        queryset = queryset.filter(id__in=project_ids_for(scope))
    return list(queryset.order_by("name"))


def project_match(
    *,
    text: str,
    user: User | AnonymousUser | None = None,
    limit: int = MATCH_LIMIT,
    scope: Sequence[str] | None = None,
) -> list[Project]:
    """The projects whose name or id contains `text` (case-insensitive, anywhere), those
    starting with it first, then by name: what a project picker lists as one types.

    Only projects the caller may see: `user` (a browser session) needs the permission to
    view projects, or nothing matches; the client's collection scope narrows as in every
    project read. Empty text lists the first projects by name. Raises InvalidInput for
    text longer than MATCH_MAX_CHARS or a limit outside 1..MATCH_LIMIT.
    """
    words = " ".join((text or "").split())
    if len(words) > MATCH_MAX_CHARS:
        raise InvalidInput(f"At most {MATCH_MAX_CHARS} characters.", field="q")
    if not 1 <= limit <= MATCH_LIMIT:
        raise InvalidInput(f"limit must be 1 to {MATCH_LIMIT}.", field="limit")
    if user is not None and not (
        user.has_perm("projects.view_project") or user.has_perm("projects.change_project")
    ):
        return []
    queryset = Project.objects.annotate(paper_count=Count("paper_links"))
    allowed = scoping.project_scope(scope)
    if allowed is not None:
        queryset = queryset.filter(id__in=project_ids_for(allowed))
    if not words:
        return list(queryset.order_by("name")[:limit])
    queryset = queryset.filter(Q(name__icontains=words) | Q(id__icontains=words))
    first = Case(When(name__istartswith=words, then=Value(0)), default=Value(1))
    return list(queryset.annotate(first=first).order_by("first", "name")[:limit])


def project_brief(project: Project) -> dict[str, Any]:
    """The record of a project in lists: id, name, description, paper_count, dates.
    `paper_count` comes from project_list's annotation, else from one count query."""
    count = getattr(project, "paper_count", None)
    if count is None:
        count = ProjectPaper.objects.filter(project=project).count()
    return {
        "project_id": project.id,
        "name": project.name,
        "description": project.description,
        "paper_count": count,
        "created_at": project.created_at,
        "updated_at": project.updated_at,
    }


def project_detail(*, ref: str, scope: Sequence[str] | None = None) -> dict[str, Any]:
    """One project (id or name) as `get_project` shows it: project_brief, plus the years
    its papers span, when a paper was last added, and the DETAIL_KEYWORDS keywords most
    used by its papers with their counts (`keywords`: [{name, paper_count}], most used
    first; `distinct_keywords`: how many there are in all). A few queries, whatever the
    project's size. Raises NotFound (unknown or outside the scope), InvalidInput (empty)."""
    project = project_get(ref=ref, scope=scope)
    links = ProjectPaper.objects.filter(project=project)
    totals = links.aggregate(
        papers=Count("pk"),
        first_year=Min("paper__year"),
        last_year=Max("paper__year"),
        last_added=Max("added_at"),
    )
    keyword_links = PaperKeyword.objects.filter(paper__in=links.values("paper_id")).order_by()
    groups = list(
        keyword_links.values("keyword_id")
        .annotate(n=Count("pk"))
        .order_by("-n", "keyword_id")[:DETAIL_KEYWORDS]
    )
    names = dict(
        Keyword.objects.filter(pk__in=[row["keyword_id"] for row in groups]).values_list(
            "pk", "name"
        )
    )
    keywords = sorted(
        ({"name": names[row["keyword_id"]], "paper_count": row["n"]} for row in groups),
        key=lambda item: (-item["paper_count"], item["name"].casefold()),
    )
    project.paper_count = totals["papers"]  # type: ignore[attr-defined]
    return {
        **project_brief(project),
        "first_year": totals["first_year"],
        "last_year": totals["last_year"],
        "last_added_at": totals["last_added"],
        "keywords": keywords,
        "distinct_keywords": keyword_links.values("keyword_id").distinct().count(),
    }

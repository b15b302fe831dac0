"""Writes over projects: create, rename, delete, membership."""

from __future__ import annotations

import unicodedata
from collections.abc import Sequence
from typing import Any

from django.db import transaction
from django.db.models import Max
from django.utils.text import slugify

from core.errors import Conflict, InvalidInput
from papers import scoping
from papers.models import Paper
from papers.selectors import papers_resolve
from papers.services import OnSaved
from projects import permissions
from projects.models import Project, ProjectPaper

NAME_MAX_LENGTH = 200


def _clean_name(name: str) -> str:
    if not isinstance(name, str):
        raise InvalidInput("Project name must be text.", field="name")
    cleaned = " ".join(name.split())
    if not cleaned:
        raise InvalidInput("Project name cannot be empty.", field="name")
    if len(cleaned) > NAME_MAX_LENGTH:
        raise InvalidInput(f"Project name is over {NAME_MAX_LENGTH} characters.", field="name")
    if any(unicodedata.category(ch) == "Cc" for ch in name.strip()):
        raise InvalidInput("Project name contains control characters.", field="name")
    return cleaned


def _unique_slug(name: str) -> str:
    base = slugify(name)[:90] or "project"
    candidate, n = base, 2
    while Project.objects.filter(id=candidate).exists():
        candidate, n = f"{base}-{n}", n + 1
    return candidate


@transaction.atomic
def project_create(*, name: str, description: str = "") -> Project:
    """A new project with a slug id made from its name. Conflict if the name is taken
    (names are unique regardless of case). The acting user becomes its owner."""
    cleaned = _clean_name(name)
    if Project.objects.filter(name__iexact=cleaned).exists():
        raise Conflict(f"A project named {cleaned!r} already exists.", name=cleaned)
    project = Project.objects.create(
        id=_unique_slug(cleaned), name=cleaned, description=(description or "").strip()
    )
    permissions.owner_add(project)
    return project


@transaction.atomic
def project_rename(*, project: Project | str, name: str) -> Project:
    """Rename a project; its id stays, so references keep working."""
    from projects.selectors import project_get

    target = project if isinstance(project, Project) else project_get(ref=project)
    permissions.require(target, permissions.EDIT)
    cleaned = _clean_name(name)
    if Project.objects.filter(name__iexact=cleaned).exclude(pk=target.pk).exists():
        raise Conflict(f"A project named {cleaned!r} already exists.", name=cleaned)
    target.name = cleaned
    target.save(update_fields=["name", "updated_at"])
    return target


@transaction.atomic
def project_delete(*, project: Project | str) -> int:
    """Delete a project and its memberships. Papers are never deleted: a paper belongs to
    the library, and may be in other projects. Returns the number of memberships removed."""
    from projects.selectors import project_get

    target = project if isinstance(project, Project) else project_get(ref=project)
    permissions.require(target, permissions.MANAGE)
    removed, _ = ProjectPaper.objects.filter(project=target).delete()
    target.delete()
    return removed


@transaction.atomic
def project_delete_confirmed(
    *, project: Project | str, confirm_name: str, scope: Sequence[str] | None = None
) -> dict[str, Any]:
    """Delete a project after the caller has typed its name (`delete_project`, REST DELETE):
    `confirm_name` must be the project's name exactly (spaces around it are ignored), so
    a project is never deleted by a mistaken id. Papers stay in the library.

    Returns {project_id, name, deleted: True, papers_removed}. Raises InvalidInput when
    the name does not match (saying what to pass), NotFound for an unknown project (or one
    outside the client's scope).
    """
    from projects.selectors import project_get

    target = project if isinstance(project, Project) else project_get(ref=project, scope=scope)
    permissions.require(target, permissions.MANAGE)
    typed = confirm_name.strip() if isinstance(confirm_name, str) else ""
    if typed != target.name:
        count = ProjectPaper.objects.filter(project=target).count()
        raise InvalidInput(
            f"To delete project {target.name!r} (id {target.id!r}, {count} papers), pass "
            f"confirm_name={target.name!r}, its exact name"
            + (f"; got {typed!r}." if typed else ".")
            + " The papers stay in the library.",
            field="confirm_name",
            project_id=target.id,
        )
    project_id, name = target.id, target.name
    removed = project_delete(project=target)
    return {"project_id": project_id, "name": name, "deleted": True, "papers_removed": removed}


@transaction.atomic
def project_papers_add(
    *, project: Project | str, refs: Sequence[str | int], scope: Sequence[str] | None = None
) -> dict[str, Any]:
    """Add papers already in the library to a project, named by any paper id form
    (paper_id, human id, citekey or citekey alias). All or nothing: when any reference
    matches no paper (in the client's scope), nothing is added and NotFound names every
    unknown one (`paper_ids`), so the caller can fix the list in one go.

    Returns {project_id, added, already_in, paper_ids} (the resolved ids, in the order
    given). Raises InvalidInput (empty list, over MAX_REFS, a malformed reference),
    NotFound (unknown references; unknown project or one outside the scope).
    """
    target, ids = _membership_targets(project, refs, scope)
    added = project_add_papers(project=target, paper_ids=ids)
    return {
        "project_id": target.id,
        "added": added,
        "already_in": len(ids) - added,
        "paper_ids": ids,
    }


@transaction.atomic
def project_papers_remove(
    *, project: Project | str, refs: Sequence[str | int], scope: Sequence[str] | None = None
) -> dict[str, Any]:
    """Remove papers from a project (they stay in the library and in other projects),
    named as project_papers_add takes them, all or nothing the same way.

    Returns {project_id, removed, not_in_project, paper_ids}: `not_in_project` lists the
    paper_ids that were not in the project (nothing to remove). Raises as
    project_papers_add.
    """
    target, ids = _membership_targets(project, refs, scope)
    present = set(
        ProjectPaper.objects.filter(project=target, paper_id__in=ids).values_list(
            "paper_id", flat=True
        )
    )
    removed = project_remove_papers(project=target, paper_ids=sorted(present))
    return {
        "project_id": target.id,
        "removed": removed,
        "not_in_project": [pk for pk in ids if pk not in present],
        "paper_ids": ids,
    }


def _membership_targets(
    project: Project | str, refs: Sequence[str | int], scope: Sequence[str] | None
) -> tuple[Project, list[int]]:
    from projects.selectors import project_get

    target = project if isinstance(project, Project) else project_get(ref=project, scope=scope)
    permissions.require(target, permissions.EDIT)
    if isinstance(refs, str | bytes | int) or not refs:
        raise InvalidInput("paper_ids must be a non-empty list of paper ids.", field="paper_ids")
    return target, papers_resolve(refs=refs, scope=scope)


@transaction.atomic
def project_add_papers(*, project: Project | str, paper_ids: Sequence[int]) -> int:
    """Add papers (by paper_id) to a project; already-present ones are left as they are.
    Returns how many were added."""
    from projects.selectors import project_get

    target = project if isinstance(project, Project) else project_get(ref=project)
    permissions.require(target, permissions.EDIT)
    ids = set(Paper.objects.filter(pk__in=set(paper_ids)).values_list("pk", flat=True))
    present = set(
        ProjectPaper.objects.filter(project=target, paper_id__in=ids).values_list(
            "paper_id", flat=True
        )
    )
    ProjectPaper.objects.bulk_create(
        [ProjectPaper(project=target, paper_id=pid) for pid in sorted(ids - present)],
        ignore_conflicts=True,
        batch_size=1000,
    )
    return len(ids - present)


@transaction.atomic
def project_remove_papers(*, project: Project | str, paper_ids: Sequence[int]) -> int:
    from projects.selectors import project_get

    target = project if isinstance(project, Project) else project_get(ref=project)
    permissions.require(target, permissions.EDIT)
    removed, _ = ProjectPaper.objects.filter(project=target, paper_id__in=paper_ids).delete()
    return removed


def projects_adder(project_ids: Sequence[str]) -> OnSaved | None:
    """The hook the library's writes take (`on_saved`: papers_upsert, import_records, the
    engine searches) to add the papers they save to these projects, in the same
    transaction; None when there is no project, so those writes skip the step.

    For a client scoped to collections (core.scope) it files only papers the client may
    already see, and papers this write created: an engine result (or an identifier) that
    de-duplicates into a paper outside the client's collections is never filed into them,
    which would hand the client that paper's record, summaries, PDF and annotations."""
    if not project_ids:
        return None
    for project_id in project_ids:  # refused before anything is searched or saved
        permissions.require(project_id, permissions.EDIT)
    floor = newest_paper_id() if scoping.client_project_ids() is not None else None

    def add(paper_ids: list[int]) -> None:
        if floor is not None:
            paper_ids = fileable_by_client(paper_ids, created_after=floor)
        for project_id in project_ids:
            project_add_papers(project=project_id, paper_ids=paper_ids)

    return add


def newest_paper_id() -> int:
    """The highest paper_id now: papers above it were created after this call."""
    return Paper.objects.aggregate(newest=Max("pk"))["newest"] or 0


def fileable_by_client(paper_ids: Sequence[int], *, created_after: int) -> list[int]:
    """The papers of `paper_ids` a scoped client may file into its collections: those it
    already sees, and those created after paper id `created_after` that no project holds
    yet (new to the library, so nothing in them belongs to anyone)."""
    visible = set(
        scoping.papers_in_scope(None).filter(pk__in=paper_ids).values_list("pk", flat=True)
    )
    fresh = set(
        Paper.objects.filter(
            pk__in=paper_ids, pk__gt=created_after, project_links__isnull=True
        ).values_list("pk", flat=True)
    )
    return [pid for pid in paper_ids if pid in visible or pid in fresh]

"""Who may do what to a project: the one permission layer, called by the services.

A project's members have one role each (`ProjectMember.Role`); a role allows an action
and everything a lower role allows:

| action | least role | what |
|---|---|---|
| `read` | viewer | the project, its papers, reviews, extraction, saved searches, alerts, exports |
| `screen` | screener | screening decisions and extraction records in its reviews |
| `edit` | editor | its papers, name, reviews (checkpoints, removal), forms, saved searches |
| `manage` | owner | members, invitations, deleting the project |

Reads are narrowed where the project is looked up (papers.scoping: a principal bound by
roles resolves only the projects it is a member of, so any other project is NotFound, as
if it did not exist); writes call `require` (or `require_review`) with the project and the
action, and a member whose role is too low gets `Forbidden`. Principals not bound by
roles (core.identity.unrestricted: no principal, the local owner, the service identity,
superusers) may do everything. A project with no members is open: every signed-in user
may do everything to it, as to every project before roles (its first member makes it
private); a project created by a user bound by roles has that user as its owner, so it is
private from the start. A review filed in no project and started outside any is open in
the same way.

What is not a project's (papers, keywords, PDFs, summaries, highlights: the shared
library) is not checked here: every principal that may write may change it.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from typing import Any

from django.db.models import Q, QuerySet
from django.db.models.signals import post_delete, post_save
from django.dispatch import receiver

from core import identity
from core.errors import Forbidden, NotFound
from papers import scoping
from projects.models import Project, ProjectMember, ReviewSession, SavedSearch

Role = ProjectMember.Role
ROLES: tuple[str, ...] = (Role.VIEWER, Role.SCREENER, Role.EDITOR, Role.OWNER)
RANK = {role: rank for rank, role in enumerate(ROLES)}

READ = "read"
SCREEN = "screen"
EDIT = "edit"
MANAGE = "manage"
LEAST_ROLE: dict[str, str] = {
    READ: Role.VIEWER,
    SCREEN: Role.SCREENER,
    EDIT: Role.EDITOR,
    MANAGE: Role.OWNER,
}
ACTION_TEXT = {
    READ: "read it",
    SCREEN: "screen or extract in its reviews",
    EDIT: "change it",
    MANAGE: "manage its members or delete it",
}


def bound() -> bool:
    """Whether project roles bind the acting principal."""
    return not identity.unrestricted(identity.current_principal())


def role_of(project_id: str) -> str | None:
    """The acting principal's role on the project: `owner` when roles do not bind it or
    the project is open (no members), None when it is not a member."""
    if not bound():
        return Role.OWNER
    return review_role([project_id])


def allows(role: str | None, action: str) -> bool:
    return role is not None and RANK[role] >= RANK[LEAST_ROLE[action]]


def _refuse(project: Project | str, role: str | None, action: str) -> None:
    project_id = project.pk if isinstance(project, Project) else project
    if role is None:  # not a member: it does not exist, as far as this user knows
        raise NotFound(f"No project {project_id!r}.", project_id=project_id)
    least = LEAST_ROLE[action]
    raise Forbidden(
        f"Your role on project {project_id!r} is {role}: to {ACTION_TEXT[action]} you need "
        f"the role {least} or higher (ask an owner of the project).",
        project_id=project_id,
        role=role,
        required_role=least,
    )


def require(project: Project | str, action: str) -> None:
    """Raise NotFound (not a member) or Forbidden (a role below `action`'s) for the
    acting principal on `project`; nothing for those roles do not bind."""
    if not bound():
        return
    if isinstance(project, Project):
        project_id = project.pk
    else:  # an id or a name: resolved among the principal's projects only
        found = scoping.project_ids_for([project])
        if not found:
            raise NotFound(f"No project {project!r}.", project_id=project)
        project_id = found[0]
    role = role_of(project_id)
    if not allows(role, action):
        _refuse(project_id, role, action)


def review_projects(session: ReviewSession | Any) -> list[str]:
    """The projects a review belongs to: the one it is filed into and those of the client
    that started it (its `collections`)."""
    found = [session.project_id] if session.project_id else []
    return found + [ref for ref in (session.collections or []) if isinstance(ref, str)]


def review_role(project_ids: Iterable[str]) -> str | None:
    """The acting principal's highest role over some projects (a review's): `owner` on an
    open one (no members) or with no projects at all (an open review); None when it is a
    member of none of them."""
    if not bound():
        return Role.OWNER
    ids = list(project_ids)
    if not ids:
        return Role.OWNER
    existing = set(Project.objects.filter(pk__in=ids).values_list("pk", flat=True))
    rows = list(
        ProjectMember.objects.filter(project_id__in=existing).values_list(
            "project_id", "user_id", "role"
        )
    )
    if existing - {project_id for project_id, _, _ in rows}:
        return Role.OWNER  # an open project among them
    user_id = getattr(identity.current_user(), "pk", None)
    roles = [role for _, member, role in rows if user_id is not None and member == user_id]
    return max(roles, key=RANK.__getitem__, default=None)


def require_review(session_id: uuid.UUID | str, action: str) -> None:
    """`require` for a review: the highest role over its projects must allow `action`.
    NotFound for a review the principal may not see (as for an unknown id)."""
    if not bound():
        return
    row = ReviewSession.objects.filter(pk=session_id).values("project_id", "collections").first()
    if row is None:
        raise NotFound(f"No review session {str(session_id)!r}.", session_id=str(session_id))
    projects = [row["project_id"]] if row["project_id"] else []
    projects += [ref for ref in (row["collections"] or []) if isinstance(ref, str)]
    role = review_role(projects)
    if role is None:
        raise NotFound(f"No review session {str(session_id)!r}.", session_id=str(session_id))
    if not allows(role, action):
        least = LEAST_ROLE[action]
        raise Forbidden(
            f"Your role on this review's project is {role}: to {ACTION_TEXT[action]} you "
            f"need the role {least} or higher.",
            session_id=str(session_id),
            role=role,
            required_role=least,
        )


def require_extraction(owner: Any, action: str) -> None:
    """`require` for a data-extraction owner (projects.review.extraction.selectors.Owner):
    its review's projects, or its project."""
    if owner.session is not None:
        require_review(owner.session.pk, action)
    else:
        require(owner.project, action)


def review_collections(client: Iterable[str] | None) -> list[str]:
    """The `collections` a new review records: the client's (who may see it follows from
    them). A principal bound by roles starts a review in the projects it edits (or open
    ones) among the client's collections or, with none chosen, in every project it is an
    editor or owner of, so that those projects' members see it (with none, the review is
    open, as before roles); Forbidden when the client chose only projects it may not edit."""
    chosen = sorted(client or ())
    editable = projects_with(EDIT)
    if editable is None:
        return chosen
    if not chosen:
        return sorted(editable)
    mine = sorted(p for p in chosen if p in set(editable) or role_of(p) == Role.OWNER)
    if not mine:
        raise Forbidden(
            "A review belongs to the projects it is started in: you need the role editor "
            "(or owner) on a project to start one (choose it with ?collections=, or ask an "
            "owner to make you an editor).",
            required_role=Role.EDITOR,
        )
    return mine


def projects_with(action: str) -> list[str] | None:
    """The ids of the projects where the acting principal may do `action`; None when roles
    do not bind it."""
    if not bound():
        return None
    user = identity.current_user()
    if user is None:
        return []
    least = RANK[LEAST_ROLE[action]]
    roles = [role for role in ROLES if RANK[role] >= least]
    return list(
        ProjectMember.objects.filter(user=user, role__in=roles).values_list("project_id", flat=True)
    )


def projects_open() -> list[str]:
    """The open projects: those with no members."""
    return list(Project.objects.filter(memberships__isnull=True).values_list("pk", flat=True))


def require_saved_search(search: SavedSearch, action: str) -> None:
    """`require` for a saved search: its project's role; one filed in no project is its
    maker's own (NotFound for anyone else bound by roles)."""
    if not bound():
        return
    if search.project_id:
        require(search.project_id, action)
        return
    user = identity.current_user()
    if search.owner_id is not None and (user is None or search.owner_id != user.pk):
        raise NotFound(f"No saved search named {search.name!r}.", name=search.name)


def saved_searches_visible(searches: QuerySet[SavedSearch]) -> QuerySet[SavedSearch]:
    """The saved searches of `searches` the acting principal may see: those of its
    projects and its own unfiled ones (all when roles do not bind it)."""
    permitted = scoping.permitted_project_ids()
    if permitted is None:
        return searches
    user = identity.current_user()
    mine = Q(project__isnull=True, owner=user) if user is not None else Q(pk__in=[])
    unowned = Q(project__isnull=True, owner__isnull=True)  # open, as before roles
    return searches.filter(Q(project_id__in=permitted) | mine | unowned)


def reviews_visible(reviews: QuerySet[ReviewSession]) -> QuerySet[ReviewSession]:
    """The reviews of `reviews` the acting principal may see: those filed in or started in
    its projects (or open ones), and open reviews (in no project); all when roles do not
    bind it. The admin's lists."""
    permitted = scoping.permitted_project_ids()
    if permitted is None:
        return reviews
    rows = reviews.values_list("pk", "project_id", "collections")
    visible = [
        pk
        for pk, project_id, collections in rows
        if (not project_id and not collections)
        or project_id in permitted
        or any(ref in permitted for ref in (collections or []) if isinstance(ref, str))
    ]
    return reviews.filter(pk__in=visible)


def owner_add(project: Project) -> None:
    """A new project: the acting user becomes its owner, so the project is private to it
    from the start. Not for the shared identities of a one-person library (no principal,
    the local owner, stdio, MCP_AUTH_TOKEN): their projects stay open, as before roles."""
    principal = identity.current_principal()
    if principal is None or principal.kind in identity.UNRESTRICTED_KINDS:
        return
    user = principal.user
    if user is not None and getattr(user, "pk", None) is not None:
        ProjectMember.objects.get_or_create(
            project=project, user=user, defaults={"role": Role.OWNER}
        )


@receiver([post_save, post_delete], sender=ProjectMember)
@receiver([post_save, post_delete], sender=Project)
def _memberships_changed(**_: Any) -> None:
    scoping.forget_permissions()

"""Project membership as the paper layer sees it: collection scoping and project filters.

Projects live in the app above (projects.models: Project, and ProjectPaper, which links a
project to a paper with `related_name="project_links"`). The paper layer never imports
that app: it reads membership through the relation projects declares on Paper, and finds
the two models through it (`membership_model`, `project_model`). projects.selectors
resolves project references with these same functions, so there is one definition.

Every function here that takes a `scope` narrows it to the current client's collections
(core.scope): a caller that passes None, or forgets to pass the scope, still never sees
beyond the client's projects. Outside an MCP client nothing is narrowed.

Project roles narrow the same functions: a principal bound by roles (core.identity
`unrestricted`) knows only the projects it is a member of and the open ones, which have
no members (`permitted_project_ids`, read
through the relation ProjectMember declares on Project, `related_name="memberships"`).
A reference to any other project resolves to nothing (`project_ids_for`, `project_find`:
NotFound, as for a project that does not exist), a paper lists only the projects it may
know of, and the client's collections are intersected with its projects. The papers
themselves are the shared library: visible to every signed-in user (docs/AUTH.md).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from contextvars import ContextVar
from typing import Any

from django.db.models import Model, Q, QuerySet

from core import identity
from core.errors import InvalidInput, NotFound
from core.scope import current_scope
from papers.models import Paper

# The relation from Paper to its membership rows, declared by projects.models.ProjectPaper.
LINKS = "project_links"

# The client's collections resolved to project ids, once per call (the context of one tool
# call or resource read): records list their projects through it, one lookup per answer.
_resolved: ContextVar[tuple[tuple[str, ...], frozenset[str]] | None] = ContextVar(
    "client_project_ids", default=None
)


# The projects the acting principal may see, once per principal and membership change:
# (principal, generation, ids). `forget_permissions` starts a new generation.
_permitted: ContextVar[tuple[object, int, frozenset[str]] | None] = ContextVar(
    "permitted_project_ids", default=None
)
_generation = [0]
MEMBERS = "memberships"


def forget_permissions() -> None:
    """Memberships changed (projects.permissions' signals): look them up again."""
    _generation[0] += 1


def member_model() -> type[Model]:
    """ProjectMember (project, user, role)."""
    return project_model()._meta.get_field(MEMBERS).related_model  # type: ignore[return-value]


def permitted_project_ids() -> frozenset[str] | None:
    """The ids of the projects the acting principal may see: those it is a member of (any
    role) and the open ones (no members at all: every project before roles was one). None
    when project roles do not bind it (core.identity.unrestricted): no principal, the
    local owner, the MCP_AUTH_TOKEN service identity, a superuser."""
    principal = identity.current_principal()
    if identity.unrestricted(principal):
        return None
    cached = _permitted.get()
    if cached is not None and cached[0] is principal and cached[1] == _generation[0]:
        return cached[2]
    user = principal.user if principal is not None else None
    projects: Any = project_model()._default_manager
    visible = Q(**{f"{MEMBERS}__isnull": True})
    if user is not None and user.is_active:
        members: Any = member_model()._default_manager
        visible |= Q(pk__in=members.filter(user=user).values("project_id"))
    ids = frozenset(projects.filter(visible).values_list("pk", flat=True).distinct())
    _permitted.set((principal, _generation[0], ids))
    return ids


def may_see_project(project_id: str) -> bool:
    permitted = permitted_project_ids()
    return permitted is None or project_id in permitted


def membership_model() -> type[Model]:
    """ProjectPaper (project, paper, added_at)."""
    return Paper._meta.get_field(LINKS).related_model  # type: ignore[return-value]


def project_model() -> type[Model]:
    """Project (id, name, ...)."""
    return membership_model()._meta.get_field("project").related_model  # type: ignore[return-value]


def project_ids_for(refs: Sequence[str]) -> list[str]:
    """Project ids for references given as ids or names (case-insensitive); unknown ones
    match nothing, so a scoped client with a wrong name sees an empty library, never more."""
    if not refs:
        return []
    condition = Q(id__in=list(refs))
    for ref in refs:
        condition |= Q(name__iexact=ref)
    manager: Any = project_model()._default_manager
    queryset = manager.filter(condition)
    permitted = permitted_project_ids()
    if permitted is not None:  # a project the principal is not a member of: no such project
        queryset = queryset.filter(id__in=permitted)
    return list(queryset.values_list("id", flat=True))


def client_project_ids() -> frozenset[str] | None:
    """The ids of the projects the current client may see; None outside a scoped client."""
    client = current_scope()
    if client is None:
        return None
    key = (*client, "\x00", *sorted(permitted_project_ids() or ()))
    cached = _resolved.get()
    if cached is not None and cached[0] == key:
        return cached[1]
    ids = frozenset(project_ids_for(client))
    _resolved.set((key, ids))
    return ids


def visible_project_ids(project_ids: Iterable[str]) -> list[str]:
    """The projects of a record that the current client may know of, sorted: a scoped
    client never learns the ids of other projects a paper is filed in."""
    allowed = client_project_ids()
    permitted = permitted_project_ids()
    return sorted(
        p
        for p in project_ids
        if (allowed is None or p in allowed) and (permitted is None or p in permitted)
    )


def effective_scope(scope: Sequence[str] | None) -> list[str] | None:
    """The scope to apply: `scope` (project ids or names; None for the whole library)
    narrowed to the current client's collections. None only when neither restricts;
    otherwise project ids (an empty list sees nothing)."""
    allowed = client_project_ids()
    if allowed is None:
        return None if scope is None else list(scope)
    if scope is None:
        return sorted(allowed)
    return [project_id for project_id in project_ids_for(scope) if project_id in allowed]


def project_scope(scope: Sequence[str] | None) -> list[str] | None:
    """The projects a listing of projects (or of what belongs to projects: saved searches,
    alerts, reviews) may show: `effective_scope` narrowed to the principal's projects.
    None only when nothing restricts."""
    narrowed = effective_scope(scope)
    permitted = permitted_project_ids()
    if permitted is None:
        return narrowed
    if narrowed is None:
        return sorted(permitted)
    return [project_id for project_id in project_ids_for(narrowed) if project_id in permitted]


def alerts_visible(allowed: Sequence[str]) -> Q:
    """The alerts (projects.models.Alert) of `project_scope`'s projects, and, for a client
    that chose no collections, the library-wide ones (filed in no project)."""
    condition = Q(project_id__in=list(allowed))
    if current_scope() is None:
        condition |= Q(project__isnull=True)
    return condition


def project_find(*, ref: str, scope: Sequence[str] | None = None) -> Any:
    """The project with this id or (case-insensitive) name; NotFound otherwise or when the
    client's collection scope does not include it. InvalidInput for an empty reference."""
    text = (ref or "").strip()
    if not text:
        raise InvalidInput("project_id cannot be empty.", field="project_id")
    manager: Any = project_model()._default_manager
    project = manager.filter(id=text).first() or manager.filter(name__iexact=text).first()
    scope = effective_scope(scope)
    if (
        project is None
        or not may_see_project(project.id)
        or (scope is not None and project.id not in project_ids_for(scope))
    ):
        raise NotFound(f"No project {ref!r}.", project_id=ref)
    return project


def scope_paper_ids(scope: Sequence[str]) -> QuerySet[Any]:
    """The ids of the papers in these projects, as a subquery (`paper_id` values)."""
    manager: Any = membership_model()._default_manager
    allowed = effective_scope(scope)
    return manager.filter(project__in=project_ids_for(allowed or [])).values("paper_id")


def papers_in_scope(scope: Sequence[str] | None) -> QuerySet[Paper]:
    """All papers, or only those in the given projects (ids or names) for a scoped client.
    A semi-join (`paper_id IN (...)`), so a paper in two of the projects is one row."""
    queryset = Paper.objects.all()
    scope = effective_scope(scope)
    if scope is None:
        return queryset
    return queryset.filter(pk__in=scope_paper_ids(scope))


def papers_in_project(project: Any) -> QuerySet[Paper]:
    return Paper.objects.filter(**{f"{LINKS}__project": project})

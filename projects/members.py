"""A project's members and invitations: the one service the REST API, the admin and the
invite page call (projects/permissions.py says what each role may do).

- `members_list`: any member sees who else is in the project (role `read`).
- `member_set` / `member_remove`: an owner adds a user by user name, changes a role or
  removes a member; the last owner cannot be removed or demoted (a project always has
  someone who can manage it).
- `invitation_create`: an owner makes an invite link for a role, valid for some days;
  the token is shown once (only its SHA-256 is kept). `invitation_accept`: a signed-in
  user who opens the link becomes a member with that role (a member keeps the higher of
  its role and the link's); a link works once.
"""

from __future__ import annotations

import hashlib
import secrets
from datetime import timedelta
from typing import Any

from django.contrib.auth import get_user_model
from django.db import transaction
from django.utils import timezone

from core.errors import Conflict, InvalidInput, NotFound
from projects import permissions
from projects.models import Project, ProjectInvitation, ProjectMember
from projects.selectors import project_get

INVITE_DAYS_DEFAULT = 7
INVITE_DAYS_MAX = 30


def _role_clean(role: Any) -> str:
    if role not in permissions.ROLES:
        raise InvalidInput(
            f"role must be one of {', '.join(permissions.ROLES)}; got {role!r}.", field="role"
        )
    return str(role)


def _target(project: Project | str) -> Project:
    return project if isinstance(project, Project) else project_get(ref=project)


def member_record(member: ProjectMember) -> dict[str, Any]:
    return {
        "username": member.user.get_username(),
        "role": member.role,
        "added_at": member.added_at,
    }


def members_list(*, project: Project | str) -> list[dict[str, Any]]:
    """The project's members, owners first, then by user name. NotFound for a project the
    acting user may not see."""
    target = _target(project)
    permissions.require(target, permissions.READ)
    members = ProjectMember.objects.filter(project=target).select_related("user")
    return sorted(
        (member_record(m) for m in members),
        key=lambda r: (-permissions.RANK[r["role"]], r["username"].casefold()),
    )


def _owners_left(project: Project, without_user: Any) -> int:
    return (
        ProjectMember.objects.filter(project=project, role=ProjectMember.Role.OWNER)
        .exclude(user=without_user)
        .count()
    )


@transaction.atomic
def member_set(*, project: Project | str, username: str, role: str) -> dict[str, Any]:
    """Make the user `username` a member with `role`, or change its role (owners only).
    Raises NotFound (no such project for the acting user, or no such active user),
    Forbidden (not an owner), InvalidInput (a bad role), Conflict (demoting the last
    owner)."""
    target = _target(project)
    permissions.require(target, permissions.MANAGE)
    role = _role_clean(role)
    name = (username or "").strip()
    user = get_user_model().objects.filter(username=name, is_active=True).first()
    if user is None:
        raise NotFound(f"No user {name!r}.", username=name)
    member = ProjectMember.objects.select_for_update().filter(project=target, user=user).first()
    if member is not None and member.role == ProjectMember.Role.OWNER and role != member.role:
        if not _owners_left(target, user):
            raise Conflict(
                f"{name} is the last owner of {target.name!r}: make someone else owner first.",
                project_id=target.pk,
            )
    if member is None:
        member = ProjectMember.objects.create(project=target, user=user, role=role)
    elif member.role != role:
        member.role = role
        member.save(update_fields=["role"])
    return {"project_id": target.pk, **member_record(member)}


@transaction.atomic
def member_remove(*, project: Project | str, username: str) -> dict[str, Any]:
    """Remove a member (owners only). Raises NotFound (no such member), Conflict (the
    last owner)."""
    target = _target(project)
    permissions.require(target, permissions.MANAGE)
    name = (username or "").strip()
    member = (
        ProjectMember.objects.select_for_update()
        .filter(project=target, user__username=name)
        .select_related("user")
        .first()
    )
    if member is None:
        raise NotFound(f"{name!r} is not a member of {target.name!r}.", username=name)
    if member.role == ProjectMember.Role.OWNER and not _owners_left(target, member.user):
        raise Conflict(
            f"{name} is the last owner of {target.name!r}: make someone else owner first.",
            project_id=target.pk,
        )
    member.delete()
    return {"project_id": target.pk, "username": name, "removed": True}


def token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@transaction.atomic
def invitation_create(
    *,
    project: Project | str,
    role: str = ProjectMember.Role.VIEWER,
    days: int = INVITE_DAYS_DEFAULT,
) -> dict[str, Any]:
    """An invite link's token for `role`, valid `days` (1-30) days (owners only). The
    token is returned once: the link is `/invite/<token>/`."""
    target = _target(project)
    permissions.require(target, permissions.MANAGE)
    role = _role_clean(role)
    if isinstance(days, bool) or not isinstance(days, int) or not 1 <= days <= INVITE_DAYS_MAX:
        raise InvalidInput(f"days must be 1-{INVITE_DAYS_MAX}.", field="days")
    from core.identity import current_user

    user = current_user()
    token = secrets.token_urlsafe(32)
    invitation = ProjectInvitation.objects.create(
        project=target,
        role=role,
        token_hash=token_hash(token),
        created_by=user if getattr(user, "pk", None) is not None else None,
        expires_at=timezone.now() + timedelta(days=days),
    )
    return {
        "project_id": target.pk,
        "role": role,
        "token": token,
        "path": f"/invite/{token}/",
        "expires_at": invitation.expires_at,
    }


def invitation_find(token: str) -> ProjectInvitation:
    """The live invitation of this token; NotFound for an unknown, used or expired one
    (the same answer for each, so a guessed token learns nothing)."""
    invitation = (
        ProjectInvitation.objects.select_related("project")
        .filter(token_hash=token_hash(token or ""))
        .first()
    )
    if (
        invitation is None
        or invitation.accepted_at is not None
        or invitation.expires_at <= timezone.now()
    ):
        raise NotFound("This invite link is unknown, used or expired: ask for a new one.")
    return invitation


@transaction.atomic
def invitation_accept(*, token: str, user: Any) -> dict[str, Any]:
    """`user` (signed in) accepts the invite link: it becomes a member with the link's
    role, or keeps its role if that is higher. The link is used up."""
    if user is None or not getattr(user, "is_authenticated", False):
        raise InvalidInput("Sign in to accept an invitation.")
    invitation = invitation_find(token)
    ProjectInvitation.objects.select_for_update().filter(pk=invitation.pk).first()
    member, created = ProjectMember.objects.get_or_create(
        project=invitation.project, user=user, defaults={"role": invitation.role}
    )
    if not created and permissions.RANK[invitation.role] > permissions.RANK[member.role]:
        member.role = invitation.role
        member.save(update_fields=["role"])
    invitation.accepted_by = user
    invitation.accepted_at = timezone.now()
    invitation.save(update_fields=["accepted_by", "accepted_at"])
    return {
        "project_id": invitation.project_id,
        "project": invitation.project.name,
        "role": member.role,
    }

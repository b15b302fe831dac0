"""REST endpoints for research projects (`/api/projects`): create, list (with paper
counts), read (with keyword counts), delete (confirmed by name), and the papers they hold.
The same selectors and services as the MCP `library` tools; a project is named by its id
(a slug such as `llm-evaluation`) or its name (URL-encoded).

Also a literature review's PRISMA 2020 flow, as numbers and as the diagram (SVG):
`/api/projects/reviews/{session_id}/prisma[.svg]` (docs/REVIEW.md).
"""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from django.conf import settings
from django.http import HttpRequest, HttpResponse
from ninja import Field, Query, Router, Schema, Status

from core.paging import next_offset
from core.schemas import with_errors
from papers import selectors as paper_selectors
from papers.api import PaperBrief, PaperRefs
from projects import members
from projects import selectors as project_selectors
from projects import services as project_services
from projects.models import Project
from projects.review import selectors as review_selectors
from projects.review.prisma import prisma_svg

router = Router(tags=["projects"])


class ProjectIn(Schema):
    name: str = Field(min_length=1, max_length=200, description="Unique, regardless of case.")
    description: str = Field(default="", max_length=5000)


class ProjectOut(Schema):
    project_id: str = Field(description="A slug made from the name; it never changes.")
    name: str
    description: str
    created_at: datetime
    updated_at: datetime


class ProjectSummary(ProjectOut):
    paper_count: int = Field(description="How many papers the project holds.")


class KeywordCount(Schema):
    name: str
    paper_count: int


class ProjectDetail(ProjectSummary):
    first_year: int | None = Field(description="The oldest paper's year.")
    last_year: int | None = Field(description="The newest paper's year.")
    last_added_at: datetime | None = Field(description="When a paper was last added.")
    keywords: list[KeywordCount] = Field(description="The 20 most used keywords, most first.")
    distinct_keywords: int


class DeleteParams(Schema):
    confirm_name: str = Field(
        max_length=200, description="The project's exact name: a guard against deleting by mistake."
    )


class ProjectDeleted(Schema):
    project_id: str
    name: str
    deleted: bool
    papers_removed: int = Field(description="Memberships removed; the papers stay in the library.")


class PageParams(Schema):
    limit: Annotated[int, Field(ge=1, le=settings.MAX_PAGE_SIZE, description="1-100.")] = 20
    offset: Annotated[int, Field(ge=0, le=settings.MAX_OFFSET, description="0-10000.")] = 0


class ProjectPapersPage(Schema):
    project_id: str
    project_name: str
    total: int = Field(description="How many papers the project holds.")
    limit: int
    offset: int
    next_offset: int | None = Field(description="The offset of the next page; null on the last.")
    papers: list[PaperBrief]


class PapersIn(Schema):
    paper_ids: PaperRefs


class MembershipChanged(Schema):
    project_id: str
    added: int | None = Field(default=None, description="Papers added (others were already in).")
    removed: int | None = Field(default=None, description="Papers removed (others were not in).")
    already_in: int | None = Field(default=None, description="Listed papers already in it.")
    not_in_project: list[int] | None = Field(
        default=None, description="Listed papers that were not in it (nothing to remove)."
    )
    paper_ids: list[int] | None = Field(default=None, description="The papers named, resolved.")


def _project(project: Project) -> dict[str, Any]:
    return {
        "project_id": project.id,
        "name": project.name,
        "description": project.description,
        "created_at": project.created_at,
        "updated_at": project.updated_at,
    }


@router.post(
    "",
    operation_id="create_project",
    summary="Create a research project",
    response=with_errors({201: ProjectOut}, 403, 409),
)
def project_create(request: HttpRequest, body: ProjectIn) -> Status[dict[str, Any]]:
    """409 if a project of that name (regardless of case) exists."""
    project = project_services.project_create(name=body.name, description=body.description)
    return Status(201, _project(project))


@router.get(
    "",
    operation_id="list_projects",
    summary="All projects, by name, with their paper counts",
    response=with_errors({200: list[ProjectSummary]}),
)
def project_list(request: HttpRequest) -> list[dict[str, Any]]:
    return [project_selectors.project_brief(p) for p in project_selectors.project_list()]


# --- a review's PRISMA 2020 flow (before /{ref}) -------------------------------------------


@router.get(
    "/reviews/{session_id}/prisma",
    operation_id="get_review_prisma",
    summary="A literature review's PRISMA 2020 flow counts",
    response=with_errors({200: dict[str, Any]}, 404),
)
def review_prisma(request: HttpRequest, session_id: str) -> dict[str, Any]:
    """Records identified per source and by citation search, duplicates removed (other
    versions grouped among them), screened, excluded with reasons, reports sought and not
    retrieved, studies and reports included (docs/REVIEW.md, "De-duplication and PRISMA")."""
    session = review_selectors.review_get(session_id=session_id)
    return review_selectors.review_prisma(session=session)


@router.get(
    "/reviews/{session_id}/prisma.svg",
    operation_id="get_review_prisma_diagram",
    summary="A literature review's PRISMA 2020 flow diagram (SVG)",
    response=with_errors({200: str}, 404),
    openapi_extra={
        "responses": {
            200: {
                "description": "The diagram.",
                "content": {"image/svg+xml": {"schema": {"type": "string"}}},
            }
        }
    },
)
def review_prisma_diagram(request: HttpRequest, session_id: str) -> HttpResponse:
    session = review_selectors.review_get(session_id=session_id)
    flow = review_selectors.review_prisma(session=session)
    response = HttpResponse(
        prisma_svg(flow, title=session.query), content_type="image/svg+xml; charset=utf-8"
    )
    response["Content-Disposition"] = f'inline; filename="prisma-{session.pk}.svg"'
    return response


@router.get(
    "/{ref}",
    operation_id="get_project",
    summary="One project, with its paper count, years and most used keywords",
    response=with_errors({200: ProjectDetail}, 404),
)
def project_get(request: HttpRequest, ref: str) -> dict[str, Any]:
    return project_selectors.project_detail(ref=ref)


@router.delete(
    "/{ref}",
    operation_id="delete_project",
    summary="Delete a project, confirmed by its name (the papers stay in the library)",
    response=with_errors({200: ProjectDeleted}, 403, 404),
)
def project_delete(request: HttpRequest, ref: str, query: Query[DeleteParams]) -> dict[str, Any]:
    """`?confirm_name=` must be the project's exact name, else 400 saying what to pass."""
    return project_services.project_delete_confirmed(project=ref, confirm_name=query.confirm_name)


@router.get(
    "/{ref}/papers",
    operation_id="list_project_papers",
    summary="A project's papers, most recently added first",
    response=with_errors({200: ProjectPapersPage}, 404),
)
def project_papers(request: HttpRequest, ref: str, page: Query[PageParams]) -> dict[str, Any]:
    project = project_selectors.project_get(ref=ref)
    papers, total = project_selectors.project_papers(
        project=project, limit=page.limit, offset=page.offset
    )
    return {
        "project_id": project.id,
        "project_name": project.name,
        "total": total,
        "limit": page.limit,
        "offset": page.offset,
        "next_offset": next_offset(page.offset, len(papers), total),
        "papers": [paper_selectors.paper_brief(paper) for paper in papers],
    }


@router.post(
    "/{ref}/papers",
    operation_id="add_project_papers",
    summary="Add papers to a project",
    response=with_errors({200: MembershipChanged}, 403, 404),
)
def project_papers_add(request: HttpRequest, ref: str, body: PapersIn) -> dict[str, Any]:
    """Papers already in the project stay as they are. Any unknown paper adds nothing: 404
    whose `paper_ids` lists every unknown reference."""
    return project_services.project_papers_add(project=ref, refs=body.paper_ids)


@router.post(
    "/{ref}/papers/remove",
    operation_id="remove_project_papers",
    summary="Remove papers from a project (the papers stay in the library)",
    response=with_errors({200: MembershipChanged}, 403, 404),
)
def project_papers_remove(request: HttpRequest, ref: str, body: PapersIn) -> dict[str, Any]:
    """`not_in_project` lists the papers that were not in it; unknown papers: 404."""
    return project_services.project_papers_remove(project=ref, refs=body.paper_ids)


@router.delete(
    "/{ref}/papers/{paper_ref}",
    operation_id="remove_project_paper",
    summary="Remove one paper from a project (the paper stays in the library)",
    response=with_errors({200: MembershipChanged}, 403, 404),
)
def project_paper_remove(request: HttpRequest, ref: str, paper_ref: str) -> dict[str, Any]:
    project = project_selectors.project_get(ref=ref)
    paper = paper_selectors.paper_get(ref=paper_ref)
    removed = project_services.project_remove_papers(project=project, paper_ids=[paper.pk])
    return {"project_id": project.id, "removed": removed}


# --- members and invitations (projects/members.py; who may: docs/AUTH.md) ------------------

RoleName = Literal["viewer", "screener", "editor", "owner"]


class Member(Schema):
    username: str
    role: RoleName
    added_at: datetime


class MemberIn(Schema):
    role: RoleName = Field(description="viewer, screener, editor or owner.")


class MemberChanged(Schema):
    project_id: str
    username: str
    role: RoleName | None = None
    added_at: datetime | None = None
    removed: bool | None = None


class InvitationIn(Schema):
    role: RoleName = "viewer"
    days: int = Field(default=7, ge=1, le=30, description="How long the link works: 1-30 days.")


class InvitationOut(Schema):
    project_id: str
    role: RoleName
    url: str = Field(description="The invite link; shown once (only its hash is kept).")
    expires_at: datetime


@router.get(
    "/{ref}/members",
    operation_id="list_project_members",
    summary="A project's members and their roles",
    response=with_errors({200: list[Member]}, 404),
)
def project_members(request: HttpRequest, ref: str) -> list[dict[str, Any]]:
    return members.members_list(project=ref)


@router.put(
    "/{ref}/members/{username}",
    operation_id="set_project_member",
    summary="Add a user to a project by user name, or change its role (owners only)",
    response=with_errors({200: MemberChanged}, 403, 404, 409),
)
def project_member_set(request: HttpRequest, ref: str, username: str, body: MemberIn) -> Any:
    """403 for a member who is not an owner; 409 when it would leave no owner."""
    return members.member_set(project=ref, username=username, role=body.role)


@router.delete(
    "/{ref}/members/{username}",
    operation_id="remove_project_member",
    summary="Remove a member from a project (owners only)",
    response=with_errors({200: MemberChanged}, 403, 404, 409),
)
def project_member_remove(request: HttpRequest, ref: str, username: str) -> Any:
    return members.member_remove(project=ref, username=username)


@router.post(
    "/{ref}/invitations",
    operation_id="create_project_invitation",
    summary="An invite link to a project for a role (owners only)",
    response=with_errors({201: InvitationOut}, 403, 404),
)
def project_invitation_create(
    request: HttpRequest, ref: str, body: InvitationIn
) -> Status[dict[str, Any]]:
    """A signed-in user who opens `url` before `expires_at` becomes a member (once)."""
    made = members.invitation_create(project=ref, role=body.role, days=body.days)
    made["url"] = request.build_absolute_uri(made.pop("path"))
    made.pop("token")
    return Status(201, made)

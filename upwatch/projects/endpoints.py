"""Projects and their members (seed 13, 14; contract §6)."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from upwatch.callers.dependencies import CurrentUser, PersonUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.pagination import PageParams
from upwatch.kit.routes import Routes
from upwatch.kit.schemas import DeletedOut
from upwatch.models import ProjectInvitation, ProjectMember
from upwatch.projects.repository import ProjectAccess
from upwatch.projects.schemas import (
    AcceptInvitation,
    InvitationOut,
    InviteRequest,
    MemberOut,
    ProjectCreate,
    ProjectOut,
    ProjectUpdate,
)
from upwatch.projects.service import ProjectService, accept_invitation

router = Routes("/projects", "projects")


def _projects(session: Session, runtime: RuntimeDep) -> ProjectService:
    return ProjectService(session, runtime)


# For the handlers that need the service alone.
Projects = Annotated[ProjectService, Depends(_projects)]


def project_out(access: ProjectAccess) -> ProjectOut:
    return ProjectOut.model_validate(access.project, context={"role": access.role})


@router.creates("createProject", 402)
async def create_project(body: ProjectCreate, user: PersonUser, projects: Projects) -> ProjectOut:
    """Create a project owned by the caller (limit `projectCount`)."""
    return project_out(await projects.create(user, body))


@router.post("/invitations/accept", operation_id="acceptProjectInvitation")
async def accept(
    body: AcceptInvitation, user: PersonUser, session: Session, runtime: RuntimeDep
) -> ProjectOut:
    """Join a project with the token from an invitation e-mail; the caller's address must be
    the invited one (404 otherwise)."""
    project_id = await accept_invitation(session, runtime, user, body.token)
    return project_out(await ProjectService(session, runtime).joined(user, project_id))


@router.get("", operation_id="listProjects")
async def list_projects(
    user: CurrentUser, projects: Projects, page: PageParams
) -> list[ProjectOut]:
    """Projects the caller owns or is a member of, newest first."""
    items, total = await projects.list(user, page.limit, page.offset)
    page.total(total)
    return [project_out(a) for a in items]


@router.get("/{id}", operation_id="getProject")
async def get_project(id: str, user: CurrentUser, projects: Projects) -> ProjectOut:
    """One project the caller belongs to."""
    return project_out(await projects.visible(user, id))


@router.updates("updateProject", 403, 409)
async def update_project(
    id: str, body: ProjectUpdate, user: PersonUser, projects: Projects
) -> ProjectOut:
    """Rename or describe a project (owner, project manager or admin). Only the owner turns
    `requireTwoFactor` on or off, and turns it on only with a second factor on their own
    account (409 otherwise): then members without one get 403 `mfa-required-by-project` on
    the project and everything in it until they enrol (docs/two-factor-projects.md)."""
    return project_out(await projects.update(user, id, body))


@router.deletes("deleteProject", 403)
async def delete_project(id: str, user: PersonUser, projects: Projects) -> DeletedOut:
    """Delete a project and everything in it (owner or admin)."""
    await projects.delete(user, id)
    return DeletedOut(id=id)


@router.creates("inviteProjectMember", 402, 403, 409, path="/{id}/users")
async def invite_member(
    id: str, body: InviteRequest, user: PersonUser, projects: Projects
) -> InvitationOut:
    """Add an existing account at once (told by e-mail), or invite an address with no account
    (it joins when it signs up). Limits `teamMembersPerProject` and `teamMembers`."""
    row, invitee = await projects.invite(user, id, body.email)
    return InvitationOut(
        projectId=id,
        email=invitee.email if invitee else body.email,
        userId=invitee.id if invitee else None,
        role="member",
        status="added" if isinstance(row, ProjectMember) else "pending",
    )


@router.get("/{id}/users", operation_id="listProjectMembers")
async def list_members(id: str, user: CurrentUser, projects: Projects) -> list[MemberOut]:
    """The owner, the members, and pending invitations."""
    members, invitations = await projects.members(user, id)
    return [
        MemberOut(
            projectId=id,
            userId=member.user_id,
            invitationId=None,
            email=person.email,
            firstName=person.first_name,
            lastName=person.last_name,
            role=member.role,
            status="active",
            createdAt=member.created_at,
        )
        for member, person in members
    ] + [_pending(id, invitation) for invitation in invitations]


def _pending(project_id: str, invitation: ProjectInvitation) -> MemberOut:
    return MemberOut(
        projectId=project_id,
        userId=None,
        invitationId=invitation.id,
        email=invitation.email,
        firstName="",
        lastName="",
        role="member",
        status="pending",
        createdAt=invitation.created_at,
    )


@router.deletes("removeProjectMember", 403, 409, path="/{id}/users/{userId}")
async def remove_member(
    id: str,
    userId: str,
    user: PersonUser,
    projects: Projects,
) -> DeletedOut:
    """Remove a member (owner, project manager or admin), or leave a project yourself."""
    await projects.remove_member(user, id, userId)
    return DeletedOut(id=userId)


@router.deletes("cancelProjectInvitation", 403, path="/{id}/invitations/{invitationId}")
async def cancel_invitation(
    id: str,
    invitationId: str,
    user: PersonUser,
    projects: Projects,
) -> DeletedOut:
    """Withdraw a pending invitation."""
    await projects.cancel_invitation(user, id, invitationId)
    return DeletedOut(id=invitationId)

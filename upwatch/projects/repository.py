"""Every query of projects and membership; who may open a project is ``callers/access.py``'s
rule, the one every project-scoped row follows."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, delete, func, select
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.callers.access import lacks_second_factor, listed_memberships, opens_by_membership
from upwatch.kit.errors import NotFound, TwoFactorRequired
from upwatch.models import Project, ProjectInvitation, ProjectMember, User


@dataclass(frozen=True)
class ProjectAccess:
    """A project as one caller may use it."""

    project: Project
    role: str  # owner, member, or admin (an administrator who is not a member)
    caller: User

    @property
    def can_manage_members(self) -> bool:
        if self.caller.grant is not None:
            return False  # a key acts in the project; who belongs to it is for people
        return (
            self.role == "owner" or self.caller.is_admin or "project_manager" in self.caller.roles
        )

    @property
    def can_delete(self) -> bool:
        # An administrator keeps its rights in a project it is also a plain member of.
        return self.caller.grant is None and (self.role == "owner" or self.caller.is_admin)


class ProjectRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, project_id: str) -> Project | None:
        """A project by id, with no access check: for one already passed through ``access``
        (then it is in the session and costs no query)."""
        return await self.session.get(Project, project_id)

    # ---- the access rule ----

    async def access(self, caller: User, project_id: str) -> ProjectAccess | None:
        """The project if ``caller`` may open it by id (``callers.access.may_open``: members their
        projects, administrators any project, a key its own), with the caller's role. None
        (to be answered 404) for everyone else. A member or administrator without a second
        factor, of a project that requires one, gets 403 ``mfa-required-by-project``: the
        project row is at hand, so the rule costs a query only for such a project."""
        row = await self._opened(caller, project_id)
        return await self._access(caller, row[0], row[1]) if row is not None else None

    async def access_with(
        self, caller: User, project_id: str, figure: ColumnElement[int]
    ) -> tuple[ProjectAccess, int] | None:
        """``access``, and ``figure`` (a scalar subquery that may name ``Project``, such as a
        count of what the project's owner has) read by the same statement: a creation checks
        access and its plan limit in one query. Nothing of a project the caller may not open
        is read."""
        row = await self._opened(caller, project_id, figure)
        if row is None:
            return None
        return await self._access(caller, row[0], row[1]), int(row[2] or 0)

    async def _opened(
        self, caller: User, project_id: str, *figures: ColumnElement[int]
    ) -> tuple[Any, ...] | None:
        row = (
            await self.session.execute(
                select(Project, ProjectMember.role, *figures)
                .outerjoin(
                    ProjectMember,
                    (ProjectMember.project_id == Project.id) & (ProjectMember.user_id == caller.id),
                )
                .where(Project.id == project_id, opens_by_membership(caller, Project.id))
            )
        ).first()
        return tuple(row) if row is not None else None

    async def _access(self, caller: User, project: Project, role: str | None) -> ProjectAccess:
        if project.require_two_factor and await lacks_second_factor(self.session, caller):
            raise TwoFactorRequired
        # A row let through without a membership is an administrator's.
        return ProjectAccess(project=project, role=role or "admin", caller=caller)

    async def get_visible(self, caller: User, project_id: str) -> ProjectAccess:
        """``access``, or 404 when the caller may not open the project (never reveal that it
        exists): what a row's project is checked with before the row is made in it."""
        access = await self.access(caller, project_id)
        if access is None:
            raise NotFound("no such project")
        return access

    async def get_visible_with(
        self, caller: User, project_id: str, figure: ColumnElement[int]
    ) -> tuple[ProjectAccess, int]:
        """``access_with``, or 404 as ``get_visible`` answers."""
        found = await self.access_with(caller, project_id, figure)
        if found is None:
            raise NotFound("no such project")
        return found

    async def of_member(
        self, caller: User, limit: int, offset: int
    ) -> Sequence[tuple[Project, str]]:
        """The caller's projects with its role in each, so administrators see only their own
        and a key its project. A project that requires a second factor the caller lacks is
        listed all the same (it says ``requireTwoFactor``), so a member sees why it is shut;
        its rows stay out of every other list (``readable_project_ids``)."""
        rows = await self.session.execute(
            select(Project, ProjectMember.role)
            .join(ProjectMember, ProjectMember.project_id == Project.id)
            .where(listed_memberships(caller))
            .order_by(Project.created_at.desc(), Project.id)
            .limit(limit)
            .offset(offset)
        )
        return [(project, role) for project, role in rows.all()]

    async def count_of_member(self, caller: User) -> int:
        total = await self.session.scalar(
            select(func.count()).select_from(ProjectMember).where(listed_memberships(caller))
        )
        return int(total or 0)

    # ---- projects ----

    async def add(self, project: Project, now: datetime) -> Project:
        self.session.add(project)
        await self.session.flush()
        self.session.add(
            ProjectMember(
                project_id=project.id, user_id=project.owner_id, role="owner", created_at=now
            )
        )
        await self.session.flush()
        return project

    async def delete(self, project: Project) -> None:
        for model in (ProjectMember, ProjectInvitation):
            await self.session.execute(delete(model).where(model.project_id == project.id))
        await self.session.delete(project)
        await self.session.flush()

    async def owned_by(self, user_id: str) -> Sequence[Project]:
        return (
            await self.session.scalars(select(Project).where(Project.owner_id == user_id))
        ).all()

    # ---- members and invitations ----

    async def member(self, project_id: str, user_id: str) -> ProjectMember | None:
        return await self.session.scalar(
            select(ProjectMember).where(
                ProjectMember.project_id == project_id, ProjectMember.user_id == user_id
            )
        )

    async def invitation(self, project_id: str, email: str) -> ProjectInvitation | None:
        return await self.session.scalar(
            select(ProjectInvitation).where(
                ProjectInvitation.project_id == project_id, ProjectInvitation.email == email
            )
        )

    async def invitation_by_id(
        self, project_id: str, invitation_id: str
    ) -> ProjectInvitation | None:
        return await self.session.scalar(
            select(ProjectInvitation).where(
                ProjectInvitation.project_id == project_id, ProjectInvitation.id == invitation_id
            )
        )

    async def add_member(self, member: ProjectMember) -> None:
        self.session.add(member)
        await self.session.flush()

    async def add_invitation(self, invitation: ProjectInvitation) -> None:
        self.session.add(invitation)
        await self.session.flush()

    async def remove(self, row: ProjectMember | ProjectInvitation) -> None:
        await self.session.delete(row)
        await self.session.flush()

    async def members(self, project_id: str) -> Sequence[tuple[ProjectMember, User]]:
        rows = await self.session.execute(
            select(ProjectMember, User)
            .join(User, User.id == ProjectMember.user_id)
            .where(ProjectMember.project_id == project_id)
            .order_by(ProjectMember.created_at, ProjectMember.id)
        )
        return [(member, user) for member, user in rows.all()]

    async def invitations(self, project_id: str) -> Sequence[ProjectInvitation]:
        return (
            await self.session.scalars(
                select(ProjectInvitation)
                .where(ProjectInvitation.project_id == project_id)
                .order_by(ProjectInvitation.created_at, ProjectInvitation.id)
            )
        ).all()

    async def invitation_by_token(self, token_hash: str) -> ProjectInvitation | None:
        return await self.session.scalar(
            select(ProjectInvitation).where(ProjectInvitation.token_hash == token_hash)
        )

    async def leave_all(self, user_id: str) -> None:
        await self.session.execute(delete(ProjectMember).where(ProjectMember.user_id == user_id))

"""Every query of plans and usage: subscriptions and measured usage (the daily API counters
are the callers' package's)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    ColumnElement,
    Integer,
    Select,
    String,
    cast,
    func,
    literal,
    select,
    union,
    update,
)
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.callers.repository import SubscriptionDirectory
from upwatch.models import (
    Monitor,
    Project,
    ProjectInvitation,
    ProjectMember,
    StatusPage,
    Subscription,
    User,
)

# Rough bytes per row beyond its text (keys, timestamps, index entries).
ROW_OVERHEAD = 96


class SubscriptionRepository(SubscriptionDirectory):
    async def lock(self, user_id: str) -> str | None:
        """Serialise limit checks of one owner: a no-op write takes PostgreSQL's row lock and
        SQLite's writer lock, so two creations cannot both pass a count of N-1. Answers the
        plan's name as the lock holds it (None: no subscription row), sparing a read."""
        plan: str | None = await self.session.scalar(
            update(Subscription)
            .where(Subscription.user_id == user_id)
            .values(plan=Subscription.plan)
            .returning(Subscription.plan)
        )
        return plan

    async def lock_owner_of(self, project_id: str) -> str | None:
        """``lock`` for the owner of ``project_id``, found by the same statement: a creation
        locks before it reads access and counts in one query (the count must come after the
        lock). A project that does not exist locks nothing."""
        owner = select(Project.owner_id).where(Project.id == project_id).scalar_subquery()
        plan: str | None = await self.session.scalar(
            update(Subscription)
            .where(Subscription.user_id == owner)
            .values(plan=Subscription.plan)
            .returning(Subscription.plan)
        )
        return plan


class UsageRepository:
    """What an owner has stored, measured from the tables themselves."""

    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def _count(self, query: ColumnElement[int] | object) -> int:
        return int(await self.session.scalar(query) or 0)  # type: ignore[call-overload]

    @staticmethod
    def _monitors(owner_id: str) -> Select[Any]:
        owned = select(Project.id).where(Project.owner_id == owner_id)
        return select(func.count()).select_from(Monitor).where(Monitor.project_id.in_(owned))

    @staticmethod
    def _status_pages(owner_id: str) -> Select[Any]:
        owned = select(Project.id).where(Project.owner_id == owner_id)
        return select(func.count()).select_from(StatusPage).where(StatusPage.project_id.in_(owned))

    @staticmethod
    def _projects(owner_id: str) -> Select[Any]:
        return select(func.count()).select_from(Project).where(Project.owner_id == owner_id)

    async def monitors(self, owner_id: str) -> int:
        return await self._count(self._monitors(owner_id))

    async def status_pages(self, owner_id: str) -> int:
        return await self._count(self._status_pages(owner_id))

    async def projects(self, owner_id: str) -> int:
        return await self._count(self._projects(owner_id))

    async def counts(self, owner_id: str) -> tuple[int, int, int, int]:
        """Monitors, status pages, projects and team members of the owner, in one query
        (usage is read on every GET /subscriptions/current)."""
        queries = (self._monitors, self._status_pages, self._projects, self._team_members)
        row = (
            await self.session.execute(select(*(q(owner_id).scalar_subquery() for q in queries)))
        ).one()
        monitors, pages, projects, members = (int(n or 0) for n in row)
        return monitors, pages, projects, members

    @staticmethod
    def _team_members(owner_id: str) -> Select[Any]:
        owned = select(Project.id).where(Project.owner_id == owner_id)
        members = (
            select(User.email.label("email"))
            .join(ProjectMember, ProjectMember.user_id == User.id)
            .where(ProjectMember.project_id.in_(owned), ProjectMember.role != "owner")
        )
        invitees = select(ProjectInvitation.email.label("email")).where(
            ProjectInvitation.project_id.in_(owned)
        )
        people = union(members, invitees).subquery()
        return select(func.count()).select_from(people)

    async def team_members(self, owner_id: str) -> int:
        """Distinct people (members and pending invitees) across the owner's projects."""
        return await self._count(self._team_members(owner_id))

    async def team_emails(self, owner_id: str) -> set[str]:
        owned = select(Project.id).where(Project.owner_id == owner_id)
        members = (
            select(User.email)
            .join(ProjectMember, ProjectMember.user_id == User.id)
            .where(ProjectMember.project_id.in_(owned), ProjectMember.role != "owner")
        )
        invitees = select(ProjectInvitation.email).where(ProjectInvitation.project_id.in_(owned))
        rows = await self.session.scalars(union(members, invitees))
        return set(rows.all())

    async def project_seats(self, project_id: str) -> int:
        """Members (the owner not counted) and pending invitations of one project."""
        members = await self._count(
            select(func.count())
            .select_from(ProjectMember)
            .where(ProjectMember.project_id == project_id, ProjectMember.role != "owner")
        )
        invitations = await self._count(
            select(func.count())
            .select_from(ProjectInvitation)
            .where(ProjectInvitation.project_id == project_id)
        )
        return members + invitations

    async def busiest_project_seats(self, owner_id: str) -> int:
        """The most seats (members and invitations, not the owner) any owned project uses."""
        owned = select(Project.id).where(Project.owner_id == owner_id)
        seats = [await self.project_seats(pid) for pid in (await self.session.scalars(owned)).all()]
        return max(seats, default=0)

    async def storage_bytes(self, owner_id: str) -> int:
        """Bytes of the owner's stored data: its text plus a per-row overhead."""
        owned = select(Project.id).where(Project.owner_id == owner_id)
        text_len = func.coalesce(
            func.sum(func.length(Project.name) + func.length(Project.description)), 0
        )
        project_rows = select(cast(text_len, Integer) + func.count() * literal(ROW_OVERHEAD)).where(
            Project.owner_id == owner_id
        )
        member_rows = select(func.count() * literal(ROW_OVERHEAD)).where(
            ProjectMember.project_id.in_(owned)
        )
        invitation_rows = select(
            func.coalesce(func.sum(func.length(ProjectInvitation.email)), 0)
            + func.count() * literal(ROW_OVERHEAD)
        ).where(ProjectInvitation.project_id.in_(owned))
        settings = select(func.length(cast(User.settings, String)) + literal(ROW_OVERHEAD)).where(
            User.id == owner_id
        )
        parts = (project_rows, member_rows, invitation_rows, settings)
        row = (await self.session.execute(select(*(q.scalar_subquery() for q in parts)))).one()
        return sum(int(value or 0) for value in row)

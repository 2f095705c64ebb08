"""Purging audit events past their keep, in bounded batches: a project's events go by its
owner's plan, an account's own events (and those of projects since deleted) by that
account's plan, and events no existing account or project holds by the default plan."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import ColumnElement, and_, delete, not_, or_, select
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.models import AuditEvent, Project, User
from upwatch.retention.repository.scope import NO_SYNC, owner_projects, rowcount


def _projectless() -> ColumnElement[bool]:
    """No project, or one that no longer exists."""
    return or_(AuditEvent.project_id.is_(None), not_(AuditEvent.project_id.in_(select(Project.id))))


def _owners_events(owner_id: str) -> ColumnElement[bool]:
    return or_(
        AuditEvent.project_id.in_(owner_projects(owner_id)),
        and_(AuditEvent.account_id == owner_id, _projectless()),
    )


def _nobodys_events() -> ColumnElement[bool]:
    return and_(
        or_(AuditEvent.account_id.is_(None), not_(AuditEvent.account_id.in_(select(User.id)))),
        _projectless(),
    )


class AuditPurgeRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def purge_owner(self, owner_id: str, before: datetime, rows: int) -> int:
        """Up to ``rows`` of the owner's events older than ``before``; how many went."""
        return await self._purge(_owners_events(owner_id), before, rows)

    async def purge_nobodys(self, before: datetime, rows: int) -> int:
        return await self._purge(_nobodys_events(), before, rows)

    async def _purge(self, which: ColumnElement[bool], before: datetime, rows: int) -> int:
        ids = (
            select(AuditEvent.id)
            .where(which, AuditEvent.occurred_at < before)
            .order_by(AuditEvent.occurred_at)
            .limit(rows)
        )
        chosen = list((await self.session.scalars(ids)).all())
        if not chosen:
            return 0
        result = await self.session.execute(
            delete(AuditEvent).where(AuditEvent.id.in_(chosen)).execution_options(**NO_SYNC)
        )
        return rowcount(result)

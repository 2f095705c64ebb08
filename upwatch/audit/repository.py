"""Every query of the audit log: one page of events under a filter, and whose project a
project's log belongs to."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import select

from upwatch.callers.access import may_open
from upwatch.kit.repository import Listed, Repository
from upwatch.models import AuditEvent, Project, User


@dataclass(frozen=True)
class AuditFilter:
    """Which events a list shows; None leaves a field open."""

    project_id: str | None = None
    account_id: str | None = None
    kind: str | None = None
    since: datetime | None = None
    until: datetime | None = None


class AuditRepository(Repository):
    async def page(self, only: AuditFilter, limit: int, offset: int) -> Listed[AuditEvent]:
        """Newest first; ``since`` and ``until`` are both inclusive."""
        query = select(AuditEvent)
        if only.project_id is not None:
            query = query.where(AuditEvent.project_id == only.project_id)
        if only.account_id is not None:
            query = query.where(AuditEvent.account_id == only.account_id)
        if only.kind is not None:
            query = query.where(AuditEvent.kind == only.kind)
        if only.since is not None:
            query = query.where(AuditEvent.occurred_at >= only.since)
        if only.until is not None:
            query = query.where(AuditEvent.occurred_at <= only.until)
        query = query.order_by(AuditEvent.occurred_at.desc(), AuditEvent.id.desc())
        return await self.page_of(query, limit, offset)

    async def owner_of(self, caller: User, project_id: str) -> str | None:
        """The owner of the project ``caller`` may open (members, administrators); None when
        it may not, to be answered 404 like any project it cannot see."""
        owner: str | None = await self.session.scalar(
            select(Project.owner_id).where(Project.id == project_id, may_open(caller, Project.id))
        )
        return owner

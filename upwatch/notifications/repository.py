"""Every query of notification providers, alerts and their attempts."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import and_, exists, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession
from sqlalchemy.orm import aliased

from upwatch.callers.access import ProjectScopedRepository
from upwatch.models import Alert, AlertAttempt, NotificationProvider


class ProviderRepository(ProjectScopedRepository[NotificationProvider]):
    model = NotificationProvider
    order = (NotificationProvider.created_at.desc(), NotificationProvider.id)
    not_found = "no such notification provider"

    async def count_in_project(self, project_id: str) -> int:
        return await self.count_of(
            select(NotificationProvider).where(NotificationProvider.project_id == project_id)
        )

    async def of_project(self, project_id: str) -> Sequence[NotificationProvider]:
        return await self.rows_of(
            select(NotificationProvider)
            .where(NotificationProvider.project_id == project_id)
            .order_by(NotificationProvider.created_at, NotificationProvider.id)
        )


class AlertRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    def add(self, alert: Alert) -> None:
        self.session.add(alert)

    async def of_incident(self, incident_id: str) -> Sequence[Alert]:
        return (
            await self.session.scalars(
                select(Alert).where(Alert.incident_id == incident_id).order_by(Alert.id)
            )
        ).all()

    async def attempts_of(self, alert_ids: Sequence[int]) -> Sequence[AlertAttempt]:
        if not alert_ids:
            return []
        return (
            await self.session.scalars(
                select(AlertAttempt)
                .where(AlertAttempt.alert_id.in_(alert_ids))
                .order_by(AlertAttempt.alert_id, AlertAttempt.attempt)
            )
        ).all()

    async def due(self, now: datetime, batch: int) -> Sequence[tuple[int, datetime]]:
        """Pending alerts whose time has come, oldest first, skipping any alert while an
        earlier one to the same destination (provider, or member and personal channel) about
        the same incident is still pending, so a recovery never overtakes its outage alert."""
        earlier = aliased(Alert)
        same_destination = or_(
            earlier.provider_id == Alert.provider_id,
            and_(earlier.user_id == Alert.user_id, earlier.provider_type == Alert.provider_type),
        )
        blocked = exists().where(
            and_(
                earlier.status == "pending",
                same_destination,
                earlier.incident_id == Alert.incident_id,
                earlier.id < Alert.id,
            )
        )
        rows = await self.session.execute(
            select(Alert.id, Alert.next_attempt_at)
            .where(Alert.status == "pending", Alert.next_attempt_at <= now, ~blocked)
            .order_by(Alert.next_attempt_at, Alert.id)
            .limit(batch)
        )
        return [(int(i), t) for i, t in rows.all()]

    async def claim(self, alert_id: int, due_at: datetime, until: datetime) -> bool:
        """Hide a due alert from other senders until ``until``; only one claim wins."""
        claimed = await self.session.execute(
            update(Alert)
            .where(Alert.id == alert_id, Alert.status == "pending", Alert.next_attempt_at == due_at)
            .values(next_attempt_at=until)
        )
        return getattr(claimed, "rowcount", 0) == 1

    async def record(
        self, alert_id: int, claimed_until: datetime, attempt: AlertAttempt, **values: object
    ) -> bool:
        """Write an attempt's outcome if this sender's claim still holds; False when another
        sender took the alert over (the claim expired), whose outcome then counts."""
        result = await self.session.execute(
            update(Alert)
            .where(
                Alert.id == alert_id,
                Alert.status == "pending",
                Alert.next_attempt_at == claimed_until,
            )
            .values(**values)
        )
        if getattr(result, "rowcount", 0) != 1:
            return False
        self.session.add(attempt)
        return True

    async def cancel_pending(self, provider_id: str, reason: str) -> None:
        await self.session.execute(
            update(Alert)
            .where(Alert.provider_id == provider_id, Alert.status == "pending")
            .values(status="failed", reason=reason)
        )

    async def outage_alerted(self, incident_id: str) -> set[str]:
        """Providers that got (or are getting) the alert that opened this incident."""
        rows = await self.session.scalars(
            select(Alert.provider_id).where(
                Alert.incident_id == incident_id,
                Alert.event == "incident.opened",
                Alert.status.in_(("sent", "pending")),
            )
        )
        return {p for p in rows if p is not None}

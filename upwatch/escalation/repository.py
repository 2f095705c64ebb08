"""Every query of escalation policies and of the paging of open incidents."""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime

from sqlalchemy import func, select, tuple_, update

from upwatch.callers.access import ProjectScopedRepository
from upwatch.kit.repository import Repository
from upwatch.models import (
    Alert,
    EscalationPolicy,
    Incident,
    Monitor,
    NotificationProvider,
)

# Alerts that tell a provider of an open incident: what a reminder counts from.
PAGING_EVENTS = ("incident.opened", "incident.reminder")


class EscalationRepository(ProjectScopedRepository[EscalationPolicy]):
    model = EscalationPolicy
    order = (EscalationPolicy.created_at, EscalationPolicy.id)
    not_found = "no such escalation policy"

    async def of_monitor(self, monitor: Monitor) -> EscalationPolicy | None:
        """The policy the monitor names, if any."""
        if monitor.escalation_policy_id is None:
            return None
        return await self.get(monitor.escalation_policy_id)

    async def in_project(self, policy_id: str, project_id: str) -> bool:
        found = await self.session.scalar(
            select(EscalationPolicy.id).where(
                EscalationPolicy.id == policy_id, EscalationPolicy.project_id == project_id
            )
        )
        return found is not None

    async def providers_in_project(
        self, project_id: str, provider_ids: Collection[str]
    ) -> set[str]:
        if not provider_ids:
            return set()
        rows = await self.session.scalars(
            select(NotificationProvider.id).where(
                NotificationProvider.project_id == project_id,
                NotificationProvider.id.in_(sorted(provider_ids)),
            )
        )
        return set(rows.all())


class PagingRepository(Repository):
    """What the pager reads and claims: open, unacknowledged automatic incidents."""

    async def unsettled(
        self, limit: int, after: tuple[datetime, str] | None = None
    ) -> Sequence[tuple[str, int, datetime]]:
        """(id, page version, start) of open automatic incidents no one acknowledged, oldest
        first, from after ``after`` (keyset paging: a pass reads them all, page by page)."""
        query = select(Incident.id, Incident.page_version, Incident.started_at).where(
            Incident.automatic.is_(True),
            Incident.resolved_at.is_(None),
            Incident.acknowledged_at.is_(None),
            Incident.monitor_id.is_not(None),
        )
        if after is not None:
            query = query.where(tuple_(Incident.started_at, Incident.id) > tuple_(*after))
        rows = await self.session.execute(
            query.order_by(Incident.started_at, Incident.id).limit(limit)
        )
        return [(incident_id, int(version), started) for incident_id, version, started in rows]

    async def claim(self, incident_id: str, version: int, steps_paged: int) -> bool:
        """Record a paging decision made at ``version``; False when another pager (or an
        acknowledgement) got there first, and the decision must be dropped."""
        return await self.changed_one(
            update(Incident)
            .where(
                Incident.id == incident_id,
                Incident.page_version == version,
                Incident.acknowledged_at.is_(None),
                Incident.resolved_at.is_(None),
            )
            .values(page_version=version + 1, escalation_step=steps_paged)
            .execution_options(synchronize_session=False)
        )

    async def last_alerted(self, incident_id: str) -> dict[str, datetime]:
        """Per provider, when it was last told of the incident (outage or reminder)."""
        rows = await self.session.execute(
            select(Alert.provider_id, func.max(Alert.created_at))
            .where(
                Alert.incident_id == incident_id,
                Alert.event.in_(PAGING_EVENTS),
                Alert.provider_id.is_not(None),
            )
            .group_by(Alert.provider_id)
        )
        return {provider_id: at for provider_id, at in rows.all() if provider_id is not None}

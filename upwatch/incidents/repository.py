"""Every query of incidents and their timeline."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import ColumnElement, and_, func, or_, select, update

from upwatch.callers.access import ProjectScopedRepository
from upwatch.models import (
    CheckResult,
    Incident,
    IncidentUpdate,
    Monitor,
    StatusPage,
    StatusPageComponent,
)
from upwatch.models.compact import epoch_ms, from_epoch_ms
from upwatch.models.keys import monitor_number

# How far back the start of an outage is looked for.
OUTAGE_LOOKBACK = timedelta(days=7)


def _instant(moment: datetime) -> datetime:
    """One spelling of a moment, to the millisecond a check result keeps: SQLite gives back
    times without their zone."""
    aware = moment.replace(tzinfo=UTC) if moment.tzinfo is None else moment.astimezone(UTC)
    return from_epoch_ms(epoch_ms(aware))


class IncidentRepository(ProjectScopedRepository[Incident]):
    model = Incident
    order = (Incident.created_at.desc(), Incident.id)
    not_found = "no such incident"

    @staticmethod
    def narrowed(status: str | None, monitor_id: str | None) -> list[ColumnElement[bool]]:
        """The conditions of a list's ``status`` and ``monitorId`` filters."""
        conditions = []
        if status is not None:
            conditions.append(Incident.status == status)
        if monitor_id is not None:
            conditions.append(Incident.monitor_id == monitor_id)
        return conditions

    async def updates_of(
        self, incident_ids: Sequence[str], public: bool = False
    ) -> dict[str, list[IncidentUpdate]]:
        """Each incident's timeline; ``public``: without the entries only members see."""
        timeline: dict[str, list[IncidentUpdate]] = {i: [] for i in incident_ids}
        if incident_ids:
            query = select(IncidentUpdate).where(IncidentUpdate.incident_id.in_(incident_ids))
            if public:
                query = query.where(IncidentUpdate.internal.is_(False))
            rows = await self.session.scalars(query.order_by(IncidentUpdate.id))
            for update in rows:
                timeline[update.incident_id].append(update)
        return timeline

    async def evidence_of(self, incidents: Sequence[Incident]) -> dict[str, dict[str, Any]]:
        """What the failing check that opened each automatic incident saw, by incident id.

        That check's result is the monitor's result at the moment the incident was opened
        (``opened_at``, its ``checked_at``); incidents whose result kept no evidence (or was
        removed by retention) are left out. Members only: status pages never call this.
        """
        opened = [i for i in incidents if i.monitor_id is not None and i.opened_at is not None]
        if not opened:
            return {}
        rows = await self.session.execute(
            select(Monitor.id, CheckResult.checked_at, CheckResult.evidence)
            .join(Monitor, Monitor.number == CheckResult.monitor_number)
            .where(
                or_(
                    *(
                        and_(
                            Monitor.id == i.monitor_id,
                            CheckResult.checked_at == i.opened_at,
                        )
                        for i in opened
                    )
                ),
                CheckResult.evidence.is_not(None),
            )
            .order_by(CheckResult.region_number)
        )
        # The latest result wins when regions reported the same instant.
        seen = {(m, _instant(at)): evidence for m, at, evidence in rows.all()}
        found: dict[str, dict[str, Any]] = {}
        for incident in opened:
            assert incident.opened_at is not None
            evidence = seen.get((incident.monitor_id, _instant(incident.opened_at)))
            if isinstance(evidence, dict):
                found[incident.id] = evidence
        return found

    async def monitors(self, monitor_ids: Sequence[str], project_id: str) -> Sequence[Monitor]:
        """Those monitors of the project, in the order given (a deleted one is left out)."""
        if not monitor_ids:
            return []
        rows = await self.session.scalars(
            select(Monitor).where(Monitor.id.in_(monitor_ids), Monitor.project_id == project_id)
        )
        found = {m.id: m for m in rows.all()}
        return [found[m] for m in monitor_ids if m in found]

    async def children_down(self, parent: Monitor) -> list[Monitor]:
        """Monitors of the parent's project that depend on it and are down."""
        rows = await self.session.scalars(
            select(Monitor).where(
                Monitor.project_id == parent.project_id,
                Monitor.status == "down",
                Monitor.id != parent.id,
            )
        )
        return [m for m in rows.all() if parent.id in (m.depends_on or [])]

    async def acknowledge(self, incident_id: str, user_id: str, now: datetime) -> bool:
        """Mark an open incident acknowledged, once; the page version moves, so a pager that
        decided before this commits cannot page after it."""
        return await self.changed_one(
            update(Incident)
            .where(
                Incident.id == incident_id,
                Incident.acknowledged_at.is_(None),
                Incident.resolved_at.is_(None),
            )
            .values(
                acknowledged_at=now,
                acknowledged_by=user_id,
                page_version=Incident.page_version + 1,
            )
            .execution_options(synchronize_session=False)
        )

    async def pages_in(self, project_id: str, page_ids: Sequence[str]) -> set[str]:
        """Which of ``page_ids`` are status pages of the project."""
        if not page_ids:
            return set()
        rows = await self.session.scalars(
            select(StatusPage.id).where(
                StatusPage.id.in_(page_ids), StatusPage.project_id == project_id
            )
        )
        return set(rows.all())

    async def components_in(self, project_id: str, component_ids: Sequence[str]) -> dict[str, str]:
        """Which of ``component_ids`` are components of the project's status pages, each
        with its page."""
        if not component_ids:
            return {}
        rows = await self.session.execute(
            select(StatusPageComponent.id, StatusPageComponent.status_page_id)
            .join(StatusPage, StatusPage.id == StatusPageComponent.status_page_id)
            .where(StatusPageComponent.id.in_(component_ids), StatusPage.project_id == project_id)
        )
        return {str(component_id): str(page_id) for component_id, page_id in rows.all()}

    async def add_update(self, update: IncidentUpdate) -> None:
        self.session.add(update)
        await self.session.flush()

    async def delete(self, incident: Incident) -> None:
        await self.session.delete(incident)
        await self.session.flush()

    async def open_automatic(self, monitor_id: str) -> Incident | None:
        """The monitor's automatic incident that is not resolved yet, if any."""
        return await self.session.scalar(
            select(Incident)
            .where(
                Incident.monitor_id == monitor_id,
                Incident.automatic,
                Incident.status != "resolved",
            )
            .order_by(Incident.created_at.desc())
            .limit(1)
        )

    async def outage_start(self, monitor_id: str, confirmed_at: datetime) -> datetime:
        """When the current run of failing checks began: the first failure after the last
        success (within the look-back), or ``confirmed_at`` when none is stored."""
        since = confirmed_at - OUTAGE_LOOKBACK
        last_ok = await self.session.scalar(
            select(func.max(CheckResult.checked_at)).where(
                CheckResult.monitor_number == monitor_number(monitor_id),
                CheckResult.status != "down",
                CheckResult.checked_at >= since,
                CheckResult.checked_at <= confirmed_at,
            )
        )
        first_failure = await self.session.scalar(
            select(func.min(CheckResult.checked_at)).where(
                CheckResult.monitor_number == monitor_number(monitor_id),
                CheckResult.status == "down",
                CheckResult.checked_at > (last_ok or since),
                CheckResult.checked_at <= confirmed_at,
            )
        )
        return first_failure or confirmed_at

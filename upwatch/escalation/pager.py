"""The pager: a supervised loop that pages the next escalation step and sends reminders while
automatic incidents are open and unacknowledged.

Each decision is taken in one transaction with the alerts it writes, and claimed by bumping
the incident's page version: two pagers (two sender processes) never page the same step or
the same reminder twice, and an acknowledgement that commits first stops the page.
"""

from __future__ import annotations

import logging
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.escalation.repository import EscalationRepository, PagingRepository
from upwatch.escalation.rules import Paging, providers_of, reminders_due, steps_due
from upwatch.escalation.service import steps_of
from upwatch.incidents.automatic import IncidentAutomation
from upwatch.incidents.repository import IncidentRepository
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.outbox import Wakeable
from upwatch.kit.progress import progress
from upwatch.models import Incident, IncidentUpdate, Monitor
from upwatch.notifications.events import EventKind
from upwatch.notifications.repository import ProviderRepository

log = logging.getLogger(__name__)

# Incidents looked at per pass; open, unacknowledged incidents are few.
BATCH = 200


class Pager:
    def __init__(
        self,
        database: Database,
        clock: Clock,
        automation: IncidentAutomation,
        poll_seconds: float,
    ) -> None:
        self.database = database
        self.clock = clock
        self.automation = automation
        self.poll_seconds = poll_seconds
        self.loop = Wakeable()

    async def run(self) -> None:
        """Page what is due, then wait a poll interval; until cancelled."""
        await self.loop.drain_forever(self._pass, lambda: self.poll_seconds)

    async def _pass(self) -> int:
        await self.page_due()
        return 0  # one pass per interval: what it paged is not due again before then

    async def page_due(self) -> int:
        """One pass as of the clock's now; returns how many incidents were paged."""
        now = self.clock.now()
        async with self.database.workreader() as session:
            candidates = await PagingRepository(session).unsettled(BATCH)
        paged = 0
        for incident_id, version in candidates:
            async with self.database.worksession() as session:
                if await self._page(session, incident_id, version, now):
                    await session.commit()
                    paged += 1
            progress()
        return paged

    async def _page(
        self, session: AsyncSession, incident_id: str, version: int, now: datetime
    ) -> bool:
        incident = await session.get(Incident, incident_id)
        monitor = (
            await session.get(Monitor, incident.monitor_id)
            if incident is not None and incident.monitor_id is not None
            else None
        )
        if incident is None or monitor is None:
            return False
        policy = await EscalationRepository(session).of_monitor(monitor)
        steps = steps_of(policy) if policy is not None else []
        paging = Paging(
            incident.opened_at or incident.started_at,
            incident.escalation_step,
            acknowledged=incident.acknowledged_at is not None,
            resolved=incident.resolved_at is not None,
        )
        due = steps_due(steps, paging, now)
        escalated = providers_of(steps, due)
        repeating = {
            p.id: p.repeat_every_minutes
            for p in await ProviderRepository(session).of_project(incident.project_id)
            if p.is_enabled
        }
        paging_repository = PagingRepository(session)
        last = await paging_repository.last_alerted(incident.id)
        reminded = [p for p in reminders_due(paging, repeating, last, now) if p not in escalated]
        if not due and not reminded:
            return False
        if not await paging_repository.claim(
            incident.id, version, max(due.stop, paging.steps_paged)
        ):
            return False  # acknowledged, resolved or paged by another pager meanwhile
        if due:
            steps_named = ", ".join(str(i + 1) for i in due)
            await IncidentRepository(session).add_update(
                IncidentUpdate(
                    incident_id=incident.id,
                    status=incident.status,
                    message=f"Not acknowledged: escalated to step {steps_named} "
                    f"of {policy.name if policy else 'the policy'}.",
                    automatic=True,
                    internal=True,
                    created_at=now,
                )
            )
            await self.automation.page(session, incident, EventKind.OPENED, escalated, now)
        if reminded:
            await self.automation.page(session, incident, EventKind.REMINDER, reminded, now)
        return True

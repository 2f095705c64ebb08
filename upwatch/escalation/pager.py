"""The pager: a supervised loop that pages the next escalation step and sends reminders while
automatic incidents are open and unacknowledged.

Each decision is taken in one transaction with the alerts it writes, and claimed by bumping
the incident's page version: two pagers (two sender processes) never page the same step or
the same reminder twice, and an acknowledgement that commits first stops the page.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.escalation.repository import EscalationRepository, PagingRepository
from upwatch.escalation.rules import Paging, providers_of, reminders_due, steps_due
from upwatch.escalation.service import steps_of
from upwatch.incidents.automatic import IncidentAutomation, add_internal_note
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.outbox import Wakeable
from upwatch.kit.progress import progress, stop_if_cancelled
from upwatch.maintenance.calendar import WindowCalendar
from upwatch.models import Incident, Monitor
from upwatch.notifications.events import EventKind
from upwatch.notifications.repository import ProviderRepository

log = logging.getLogger(__name__)

# Incidents read per query; a pass reads them all.
BATCH = 200


@dataclass(eq=False)
class Pager:
    database: Database
    clock: Clock
    automation: IncidentAutomation
    poll_seconds: float
    loop: Wakeable = field(default_factory=Wakeable, init=False)

    async def run(self) -> None:
        """Page what is due, then wait a poll interval; until cancelled."""
        await self.loop.drain_forever(self._pass, lambda: self.poll_seconds)

    async def _pass(self) -> int:
        await self.page_due()
        return 0  # one pass per interval: what it paged is not due again before then

    async def page_due(self) -> int:
        """One pass over every open, unacknowledged incident as of the clock's now, page by
        page; returns how many were paged. One incident that fails is logged and skipped:
        the others are still paged."""
        now = self.clock.now()
        paged = 0
        after: tuple[datetime, str] | None = None
        while True:
            async with self.database.workreader() as session:
                candidates = await PagingRepository(session).unsettled(BATCH, after)
            for incident_id, version, started in candidates:
                after = (started, incident_id)
                try:
                    async with self.database.worksession() as session:
                        if await self._page(session, incident_id, version, now):
                            await session.commit()
                            paged += 1
                except Exception:
                    stop_if_cancelled()
                    log.exception(
                        "paging incident %s failed; the next pass tries again", incident_id
                    )
                progress()
            if len(candidates) < BATCH:
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
        if incident is None or monitor is None or not monitor.is_active:
            return False  # a paused monitor pages no one
        calendar = WindowCalendar()
        if (await calendar.in_maintenance(session, [(monitor.id, monitor.project_id, now)]))[0]:
            return False  # no reminders or steps while the monitor is in maintenance
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
            await add_internal_note(
                session,
                incident,
                f"Not acknowledged: escalated to step {steps_named} "
                f"of {policy.name if policy else 'the policy'}.",
                now,
            )
            await self.automation.page(session, incident, EventKind.OPENED, escalated, now)
        if reminded:
            await self.automation.page(session, incident, EventKind.REMINDER, reminded, now)
        return True

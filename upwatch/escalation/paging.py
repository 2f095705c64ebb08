"""The incidents domain's ``Escalation`` port: under a monitor's policy, who hears of an
automatic incident at once, and who was paged so far (they hear of its end)."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.escalation.repository import EscalationRepository, PagingRepository
from upwatch.escalation.rules import Paging, providers_of, steps_due
from upwatch.escalation.service import steps_of
from upwatch.models import Incident, Monitor


class PolicyPaging:
    async def first_page(
        self, session: AsyncSession, monitor: Monitor, incident: Incident, now: datetime
    ) -> list[str] | None:
        policy = await EscalationRepository(session).of_monitor(monitor)
        if policy is None:
            return None
        steps = steps_of(policy)
        due = steps_due(steps, Paging(now, 0, acknowledged=False, resolved=False), now)
        incident.escalation_step = due.stop
        return providers_of(steps, due)

    async def paged(self, session: AsyncSession, incident_id: str) -> set[str]:
        return set(await PagingRepository(session).last_alerted(incident_id))

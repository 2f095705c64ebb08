"""What the engine asks of the domains around it, declared here so the arrows point inward.

The engine never imports a domain: a domain implements one of these protocols structurally (no
base class) and is handed to the engine where the process is assembled.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.engine.status import IncidentAction
from upwatch.models import Monitor
from upwatch.probes.outcome import Outcome


class TransitionHandler(Protocol):
    """Reacts to a status transition that calls for an incident action (open or resolve).

    Called inside the ingester's transaction, after the batch's results are inserted and only
    for results inserted by this batch, so whatever it writes commits with the state change or
    not at all, and a retried batch does not act twice.
    """

    async def carry_out(
        self,
        session: AsyncSession,
        monitor: Monitor,
        action: IncidentAction,
        outcome: Outcome,
        checked_at: datetime,
    ) -> object: ...

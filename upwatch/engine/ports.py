"""What the engine calls out to, declared here and implemented by the domains.

The engine never imports a domain: incidents implement ``TransitionHandler`` structurally,
and the composition root (``app.py``) hands the implementation in.
"""

from __future__ import annotations

from datetime import datetime
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.engine.status import IncidentAction
from upwatch.models import Monitor
from upwatch.probes.outcome import Outcome


class TransitionHandler(Protocol):
    async def carry_out(
        self,
        session: AsyncSession,
        monitor: Monitor,
        action: IncidentAction,
        outcome: Outcome,
        checked_at: datetime,
    ) -> object:
        """React to a monitor's outage opening or closing, in the ingester's transaction."""

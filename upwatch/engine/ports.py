"""What the engine asks of the domains around it, declared here so the arrows point inward.

The engine never imports a domain: a domain implements one of these protocols structurally (no
base class) and is handed to the engine where the process is assembled.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.engine.certificates import CertificateChange
from upwatch.engine.status import IncidentAction
from upwatch.models import Monitor
from upwatch.probes.outcome import Outcome


class TransitionHandler(Protocol):
    """Reacts to a status transition that calls for an incident action (open or resolve),
    and to a certificate's days left crossing a monitor's warning days.

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

    async def certificate_changed(
        self,
        session: AsyncSession,
        monitor: Monitor,
        change: CertificateChange,
        checked_at: datetime,
    ) -> None:
        """Open the warning incidents ``change`` opens (with the ids it names) and resolve
        the ones it resolves; in the ingester's transaction, like ``carry_out``."""


class MaintenanceCalendar(Protocol):
    """Says which checks were made during a maintenance window of their monitor.

    Called once per batch inside the ingester's transaction with (monitor id, project id,
    checked at) per result; answers one flag per result, in order. Such results are stored and
    counted (also apart, for SLA figures), but do not move the monitor's status, so no incident
    opens and no alert goes out; the first check after the window moves it.
    """

    async def in_maintenance(
        self, session: AsyncSession, checks: Sequence[tuple[str, str, datetime]]
    ) -> list[bool]: ...

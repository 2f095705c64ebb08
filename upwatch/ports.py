"""The small protocols through which requests reach background machinery.

The lifespan builds whatever implements them (the embedded engine today, a broker-backed
client in distributed mode, nothing at all in an API-only process) and puts them in the
``Runtime``. Request code depends on these, never on the engine object, so the arrows point
one way: domains -> ports -> kit and models.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal, Protocol

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.kit.errors import ServiceUnavailable
from upwatch.models import (
    CheckResult,
    Incident,
    IncidentUpdate,
    MaintenanceWindow,
    Monitor,
    NotificationProvider,
    StatusPage,
)

IncidentChange = Literal["opened", "updated", "resolved"]


class MonitorChanges(Protocol):
    def changed(self, monitor_id: str) -> None:
        """A monitor was created, edited, paused, resumed or deleted (after commit)."""


class StatusPageChanges(Protocol):
    def changed(self, page_id: str) -> None:
        """A status page, its components or its message changed (after commit): its public
        snapshot is built again on the next visit."""

    async def preview(self, session: AsyncSession, page: StatusPage) -> bytes:
        """The page's HTML as visitors would see it now, public or not (the console's
        preview), without the owner's CSS and script."""


class CheckRunner(Protocol):
    async def check_now(self, monitor: Monitor) -> CheckResult | None:
        """Run one check of ``monitor`` now and store it like a scheduled one."""


class DeliveryFailure(Protocol):
    @property
    def message(self) -> str: ...


class AlertSending(Protocol):
    def wake(self) -> None:
        """Alert rows were committed: deliver them soon."""

    async def send(self, provider: NotificationProvider, event: Any) -> DeliveryFailure | None:
        """Deliver one message now (a test message); the failure, or None when delivered.

        ``event`` is the channel payload (``notifications.events.AlertEvent``); it stays
        untyped here so the port needs no import from a domain."""


class IncidentFollowers(Protocol):
    """Who follows incidents and maintenance from outside their project: status-page
    subscribers. The incidents and maintenance domains tell them of each change; they do not
    know who they are."""

    async def incident_changed(
        self,
        session: AsyncSession,
        incident: Incident,
        update: IncidentUpdate,
        change: IncidentChange,
        machine_title: str | None,
    ) -> list[str]:
        """Enqueue what the followers hear, in the caller's transaction; the ids of the status
        pages that show the incident (their snapshots are stale once it commits)."""

    async def maintenance_changed(
        self,
        session: AsyncSession,
        window: MaintenanceWindow,
        monitor_ids: list[str] | None,
        occurrence: tuple[datetime, datetime] | None,
        announce: bool,
        now: datetime,
    ) -> None:
        """A maintenance window was created (``announce``) or changed: write what the
        followers hear when it is announced, starts and ends (``occurrence``: the current or
        next one), in the caller's transaction."""


class Escalation(Protocol):
    """Who is paged about an automatic incident when its monitor has an escalation policy."""

    async def first_page(
        self, session: AsyncSession, monitor: Monitor, incident: Incident, now: datetime
    ) -> list[str] | None:
        """The providers of the steps due at once (a pager pages the rest), setting the
        incident's step; None when the monitor has no policy: every provider."""

    async def paged(self, session: AsyncSession, incident_id: str) -> set[str]:
        """The providers the policy alerted about this incident so far."""


class ApiMeter(Protocol):
    """Counts authenticated requests per account and UTC day. ``session`` is the caller's
    own: a request holds one connection, never a second one (which, with every pooled
    connection held by a waiting request, would deadlock)."""

    async def admit(self, session: AsyncSession, user_id: str, limit: int) -> int | None:
        """Count one request and return today's count, or None (uncounted) when ``limit``
        requests were already made today."""

    async def today(self, session: AsyncSession, user_id: str) -> int: ...

    async def run(self) -> None: ...

    async def flush(self) -> None: ...


class NoEngine:
    """What an API-only process has instead of an engine: nothing here schedules checks, so
    a change needs no notice, and a check on demand cannot run here."""

    def changed(self, monitor_id: str) -> None:
        return None

    async def check_now(self, monitor: Monitor) -> CheckResult | None:
        raise ServiceUnavailable("no monitoring engine runs in this process")

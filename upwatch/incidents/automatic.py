"""Incidents the status machine decides on: opened when a monitor turns down, resolved when it
comes back. A monitor degraded for ``alert_on_degraded`` checks opens a low-severity incident,
which becomes the outage's (escalated: high severity, alerts as for an outage) if it then
turns down. Runs inside the ingester's transaction, so the incident, its timeline entry and
its alerts are committed together with the state change, or not at all."""

from __future__ import annotations

import logging
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from datetime import datetime
from functools import partial
from urllib.parse import urlsplit

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.engine.certificates import CertificateChange
from upwatch.engine.status import IncidentAction
from upwatch.incidents.repository import IncidentRepository
from upwatch.incidents.rules import down_parent
from upwatch.kit.db import after_commit
from upwatch.kit.logs import log_event
from upwatch.kit.targets import target_of
from upwatch.models import Incident, IncidentUpdate, Monitor, Project
from upwatch.notifications.delivery import AlertOutbox
from upwatch.notifications.events import AlertEvent, EventKind, Failure, format_duration
from upwatch.ports import Escalation, IncidentChange, IncidentFollowers
from upwatch.probes.outcome import ErrorKind, Outcome
from upwatch.probes.tls import DEFAULT_WARNING_DAYS

log = logging.getLogger(__name__)


def _log_incident(event: str, message: str, incident: Incident, *args: object) -> None:
    log_event(
        log,
        event,
        message,
        incident.id,
        *args,
        incident_id=incident.id,
        monitor_id=incident.monitor_id,
        project_id=incident.project_id,
    )


LOGGED = {
    "incident.opened": "incident %s opened: monitor %s (%s) is down: %s",
    "incident.resolved": "incident %s resolved: monitor %s (%s) is up again after %s",
    "incident.degraded": "incident %s opened: monitor %s (%s) is degraded: %s",
    "incident.escalated": "incident %s escalated: monitor %s (%s) is down: %s",
    "incident.certificate_warning": "incident %s opened: monitor %s (%s): %s",
    "incident.certificate_renewed": "incident %s resolved: monitor %s (%s): %s",
}


def _log_once_committed(
    session: AsyncSession, event: str, incident: Incident, monitor: Monitor, detail: str
) -> None:
    """Log an automatic change once its transaction commits (a rolled-back one never
    happened)."""
    message = LOGGED[event]
    after_commit(
        session, partial(_log_incident, event, message, incident, monitor.id, monitor.name, detail)
    )


def automatic_title(monitor: Monitor) -> str:
    """The title of the incident a monitor turning down opens."""
    return f"{monitor.name} is down"[:200]


def degraded_title(monitor: Monitor) -> str:
    """The title of the incident a monitor degraded for ``alert_on_degraded`` checks opens."""
    return f"{monitor.name} is degraded"[:200]


def degraded_failure(monitor: Monitor, outcome: Outcome) -> Failure:
    """Why the monitor reads as degraded: the baseline rule's verdict, or its threshold."""
    reason = (monitor.state or {}).get("baseline")
    if not isinstance(reason, str):
        took = outcome.response_time_ms
        measured = f"{took:.0f} ms" if took is not None else "slow responses"
        limit = monitor.degraded_threshold_ms
        reason = (
            f"{measured}, above the degraded threshold of {limit:.0f} ms"
            if limit is not None
            else measured
        )
    return Failure(kind="degraded", message=reason, status_code=None)


async def add_internal_note(
    session: AsyncSession, incident: Incident, message: str, at: datetime
) -> None:
    """A timeline entry the automation writes for the project's members only (a child folded
    into its parent's outage, an escalation step)."""
    await IncidentRepository(session).add_update(
        IncidentUpdate(
            incident_id=incident.id,
            status=incident.status,
            message=message,
            automatic=True,
            internal=True,
            created_at=at,
        )
    )


def incident_link(public_url: str, incident_id: str) -> str:
    """A page a person can open from an alert: the web console's incident page (``GET
    /incidents/{id}`` itself would answer a browser 401)."""
    return f"{public_url}/app/incidents/{incident_id}"


def certificate_severity(threshold: int, warning_days: Sequence[int] | None) -> str:
    """The first warning is low, the last high, any between medium (14, 7, 1 by default);
    a single warning day is medium."""
    ordered = sorted(set(warning_days or DEFAULT_WARNING_DAYS), reverse=True)
    if len(ordered) == 1 or threshold not in ordered:
        return "medium"
    if threshold == ordered[0]:
        return "low"
    return "high" if threshold == ordered[-1] else "medium"


def certificate_title(monitor: Monitor, days: int) -> str:
    """``Certificate of example.com expires in 6 days``."""
    host = monitor.host or (urlsplit(monitor.url).hostname if monitor.url else None)
    when = f"expires in {days} day{'' if days == 1 else 's'}" if days >= 0 else "has expired"
    return f"Certificate of {host or monitor.name} {when}"[:200]


@dataclass(eq=False)
class IncidentAutomation:
    """The engine's ``TransitionHandler`` (``engine/ports.py``), implemented structurally: the
    engine calls it without importing this domain."""

    outbox: AlertOutbox
    public_url: str
    # Status-page subscribers' e-mails, in the same transaction.
    notices: IncidentFollowers
    escalation: Escalation

    async def carry_out(
        self,
        session: AsyncSession,
        monitor: Monitor,
        action: IncidentAction,
        outcome: Outcome,
        checked_at: datetime,
    ) -> Incident | None:
        """Open or resolve the monitor's automatic incident and write its alerts."""
        if action is IncidentAction.OPEN:
            return await self._open(session, monitor, outcome, checked_at)
        if action is IncidentAction.RESOLVE:
            return await self._resolve(session, monitor, checked_at)
        if action is IncidentAction.OPEN_DEGRADED:
            return await self._open_degraded(session, monitor, outcome, checked_at)
        if action is IncidentAction.ESCALATE:
            return await self._escalate(session, monitor, outcome, checked_at)
        return None

    async def certificate_changed(
        self,
        session: AsyncSession,
        monitor: Monitor,
        change: CertificateChange,
        checked_at: datetime,
    ) -> None:
        """Open one warning incident per threshold crossed, resolve the renewed ones, and
        alert every provider of the project (no escalation policy: a warning pages no one).

        Not ``automatic``: that marks the incident of a monitor that is down, which the status
        machine opens and resolves; status-page subscribers are not e-mailed either.
        """
        project = await session.get(Project, monitor.project_id)
        if project is None:
            return
        repository = IncidentRepository(session)
        expiry = f" ({change.not_after})" if change.not_after else ""
        failure = Failure(
            kind=ErrorKind.CERTIFICATE_EXPIRY.value,
            message=f"{change.days} days left{expiry}",
            status_code=None,
        )
        for threshold, incident_id in change.opened:
            incident = await repository.add(
                Incident(
                    id=incident_id,
                    project_id=monitor.project_id,
                    monitor_id=monitor.id,
                    title=certificate_title(monitor, change.days),
                    description=f"Fewer than {threshold} days left: {failure.describe()}",
                    status="investigating",
                    severity=certificate_severity(threshold, monitor.certificate_warning_days),
                    automatic=False,
                    started_at=checked_at,
                    resolved_at=None,
                    opened_at=None,
                )
            )
            said = f"Opened automatically: fewer than {threshold} days left ({change.days})."
            await self._certificate_news(
                session, EventKind.OPENED, said, (project, monitor, incident), failure, checked_at
            )
            _log_once_committed(
                session, "incident.certificate_warning", incident, monitor, incident.title
            )
        for threshold, incident_id in change.resolved:
            warned = await session.get(Incident, incident_id)
            if warned is None or warned.status == "resolved":
                continue  # resolved or deleted by a person meanwhile
            warned.status = "resolved"
            warned.resolved_at = checked_at
            said = (
                f"Resolved automatically: the certificate has {change.days} days left, "
                f"no longer fewer than {threshold}."
            )
            await self._certificate_news(
                session, EventKind.RESOLVED, said, (project, monitor, warned), None, checked_at
            )
            _log_once_committed(session, "incident.certificate_renewed", warned, monitor, said)

    async def _certificate_news(
        self,
        session: AsyncSession,
        kind: EventKind,
        message: str,
        subject: tuple[Project, Monitor, Incident],
        failure: Failure | None,
        checked_at: datetime,
    ) -> None:
        incident = subject[2]
        await IncidentRepository(session).add_update(
            IncidentUpdate(
                incident_id=incident.id,
                status=incident.status,
                message=message,
                automatic=True,
                created_at=checked_at,
            )
        )
        await self._alert(session, kind, subject, failure, checked_at, None)

    def _event(
        self,
        kind: EventKind,
        project: Project,
        monitor: Monitor,
        incident: Incident,
        failure: Failure | None,
        now: datetime,
    ) -> Callable[[str], AlertEvent]:
        def build(delivery_id: str) -> AlertEvent:
            return AlertEvent(
                kind=kind,
                delivery_id=delivery_id,
                occurred_at=now,
                project_id=project.id,
                project_name=project.name,
                monitor_id=monitor.id,
                monitor_name=monitor.name,
                monitor_type=monitor.type,
                monitor_target=target_of(monitor),
                incident_id=incident.id,
                incident_title=incident.title,
                incident_url=incident_link(self.public_url, incident.id),
                severity=incident.severity,
                failure=failure,
                since=incident.started_at,
                resolved_at=incident.resolved_at,
            )

        return build

    async def _open(
        self, session: AsyncSession, monitor: Monitor, outcome: Outcome, checked_at: datetime
    ) -> Incident | None:
        project = await session.get(Project, monitor.project_id)
        if project is None:
            return None
        repository = IncidentRepository(session)
        parents = await repository.monitors(monitor.depends_on or [], monitor.project_id)
        blocking = down_parent([(p.id, p.status) for p in parents])
        if blocking is not None:
            await self._fold_into(session, monitor, blocking, checked_at)
            return None
        failure = Failure(
            kind=outcome.error_kind.value if outcome.error_kind else None,
            message=outcome.error,
            status_code=outcome.status_code,
            evidence=None if outcome.evidence is None else dict(outcome.evidence),
        )
        incident = await repository.add(
            Incident(
                project_id=monitor.project_id,
                monitor_id=monitor.id,
                title=automatic_title(monitor),
                description=failure.describe(),
                status="investigating",
                severity="high",
                automatic=True,
                started_at=await repository.outage_start(monitor.id, checked_at),
                resolved_at=None,
                opened_at=checked_at,
            )
        )
        opened = f"Opened automatically: {failure.describe()}"
        subject = (project, monitor, incident)
        paged = await self.escalation.first_page(session, monitor, incident, checked_at)
        await self._announce(
            session, EventKind.OPENED, opened, subject, failure, checked_at, only=paged
        )
        # The kind only: a failure's text may quote the target's address, secrets and all.
        kind = replace(failure, message=None).describe()
        _log_once_committed(session, "incident.opened", incident, monitor, kind)
        return incident

    async def _open_degraded(
        self, session: AsyncSession, monitor: Monitor, outcome: Outcome, checked_at: datetime
    ) -> Incident | None:
        """A low-severity incident for a monitor degraded too long, alerted like an outage."""
        project = await session.get(Project, monitor.project_id)
        if project is None:
            return None
        failure = degraded_failure(monitor, outcome)
        incident = await IncidentRepository(session).add(
            Incident(
                project_id=monitor.project_id,
                monitor_id=monitor.id,
                title=degraded_title(monitor),
                description=failure.describe(),
                status="investigating",
                severity="low",
                automatic=True,
                started_at=checked_at,
                resolved_at=None,
                opened_at=checked_at,
            )
        )
        opened = f"Opened automatically: {failure.describe()}"
        subject = (project, monitor, incident)
        paged = await self.escalation.first_page(session, monitor, incident, checked_at)
        await self._announce(
            session, EventKind.OPENED, opened, subject, failure, checked_at, only=paged
        )
        _log_once_committed(session, "incident.degraded", incident, monitor, "degraded")
        return incident

    async def _escalate(
        self, session: AsyncSession, monitor: Monitor, outcome: Outcome, checked_at: datetime
    ) -> Incident | None:
        """The monitor's degraded incident becomes its outage's: one incident, never two."""
        repository = IncidentRepository(session)
        incident = await repository.open_automatic(monitor.id)
        project = await session.get(Project, monitor.project_id)
        if incident is None or project is None:
            # A person resolved the degraded incident meanwhile: the outage opens its own.
            return await self._open(session, monitor, outcome, checked_at)
        parents = await repository.monitors(monitor.depends_on or [], monitor.project_id)
        blocking = down_parent([(p.id, p.status) for p in parents])
        if blocking is not None:
            # The outage is the parent's: listed there, like any child that turns down.
            incident.status = "resolved"
            incident.resolved_at = checked_at
            await add_internal_note(
                session,
                incident,
                f"Closed automatically: {monitor.name} is now down together with a monitor "
                "it depends on, and is listed under that outage.",
                checked_at,
            )
            await self._fold_into(session, monitor, blocking, checked_at)
            return None
        failure = Failure(
            kind=outcome.error_kind.value if outcome.error_kind else None,
            message=outcome.error,
            status_code=outcome.status_code,
        )
        incident.title = automatic_title(monitor)
        incident.severity = "high"
        incident.description = failure.describe()
        escalated = f"Escalated automatically: {monitor.name} is now down: {failure.describe()}"
        told = (
            await self.escalation.paged(session, incident.id)
            if monitor.escalation_policy_id is not None
            else None
        )
        await self._announce(
            session,
            EventKind.OPENED,
            escalated,
            (project, monitor, incident),
            failure,
            checked_at,
            only=told,
            change="updated",
        )
        kind = replace(failure, message=None).describe()
        _log_once_committed(session, "incident.escalated", incident, monitor, kind)
        return incident

    async def _resolve(
        self, session: AsyncSession, monitor: Monitor, checked_at: datetime
    ) -> Incident | None:
        repository = IncidentRepository(session)
        # First: the parent is up, whether or not its incident is still open.
        await self._open_held_back(session, monitor, checked_at)
        incident = await repository.open_automatic(monitor.id)
        project = await session.get(Project, monitor.project_id)
        if incident is None or project is None:
            return None  # resolved or deleted by a person meanwhile: nothing to announce
        incident.status = "resolved"
        incident.resolved_at = checked_at
        length = format_duration((checked_at - incident.started_at).total_seconds())
        resolved = f"Resolved automatically: {monitor.name} is up again after {length}."
        subject = (project, monitor, incident)
        # Under a policy, whoever was paged hears of the end, and no one else.
        told = (
            await self.escalation.paged(session, incident.id)
            if monitor.escalation_policy_id is not None
            else None
        )
        await self._announce(
            session, EventKind.RESOLVED, resolved, subject, None, checked_at, only=told
        )
        _log_once_committed(session, "incident.resolved", incident, monitor, length)
        return incident

    async def _announce(
        self,
        session: AsyncSession,
        kind: EventKind,
        message: str,
        subject: tuple[Project, Monitor, Incident],
        failure: Failure | None,
        checked_at: datetime,
        only: Collection[str] | None = None,
        change: IncidentChange | None = None,
    ) -> None:
        """The incident's timeline entry and its alerts, in the ingester's transaction;
        ``only``: the providers an escalation policy pages (None: everyone); ``change``: what
        followers hear, when not what ``kind`` says."""
        _, monitor, incident = subject
        update = IncidentUpdate(
            incident_id=incident.id,
            status=incident.status,
            message=message,
            automatic=True,
            created_at=checked_at,
        )
        await IncidentRepository(session).add_update(update)
        if change is None:
            change = "resolved" if kind == EventKind.RESOLVED else "opened"
        await self.notices.incident_changed(
            session, incident, update, change, automatic_title(monitor)
        )
        await self._alert(session, kind, subject, failure, checked_at, only)

    async def _alert(
        self,
        session: AsyncSession,
        kind: EventKind,
        subject: tuple[Project, Monitor, Incident],
        failure: Failure | None,
        now: datetime,
        only: Collection[str] | None,
    ) -> None:
        """The incident's alerts in the outbox; ``only``: the providers a policy pages."""
        project, monitor, incident = subject
        event = self._event(kind, project, monitor, incident, failure, now)
        await self.outbox.enqueue(session, project, event, incident.id, now, only=only)

    async def _fold_into(
        self, session: AsyncSession, child: Monitor, parent_id: str, checked_at: datetime
    ) -> None:
        """A child down while its parent is: listed under the parent's open incident, with a
        timeline entry for members, and no incident or alert of its own."""
        repository = IncidentRepository(session)
        incident = await repository.open_automatic(parent_id)
        if incident is None:
            return  # a person resolved the parent's incident: nothing to list it under
        if child.id in (incident.dependents or []):
            return  # listed already: a flapping child adds nothing to the timeline
        incident.dependents = [*(incident.dependents or []), child.id]
        count = len(incident.dependents)
        await add_internal_note(
            session,
            incident,
            f"{child.name} is down too; it depends on this monitor "
            f"({count} dependent monitor{'s' if count != 1 else ''} affected).",
            checked_at,
        )

    async def _open_held_back(
        self, session: AsyncSession, parent: Monitor, checked_at: datetime
    ) -> None:
        """The parent is up again: children still down were held back by it, and now open
        incidents of their own (unless another parent of theirs is still down)."""
        repository = IncidentRepository(session)
        for child in await repository.children_down(parent):
            if await repository.open_automatic(child.id) is not None:
                continue
            still = Outcome(
                ok=False,
                response_time_ms=None,
                error=f"still down after {parent.name}, which it depends on, recovered",
            )
            await self._open(session, child, still, checked_at)

    async def page(
        self,
        session: AsyncSession,
        incident: Incident,
        kind: EventKind,
        provider_ids: Collection[str],
        now: datetime,
    ) -> None:
        """Alerts about an open incident to these providers: a later escalation step
        (``OPENED``: they hear of the outage) or a reminder."""
        monitor = await session.get(Monitor, incident.monitor_id) if incident.monitor_id else None
        project = await session.get(Project, incident.project_id)
        if monitor is None or project is None or not provider_ids:
            return
        await self._alert(session, kind, (project, monitor, incident), None, now, provider_ids)

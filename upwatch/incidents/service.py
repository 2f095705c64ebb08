"""Incident rules: who may see and change one, the timeline, and `resolvedAt`."""

from __future__ import annotations

import logging
from datetime import datetime
from functools import partial

from pydantic.alias_generators import to_snake

from upwatch.incidents.automatic import automatic_title
from upwatch.incidents.repository import IncidentRepository
from upwatch.incidents.rules import OPENED
from upwatch.incidents.schemas import IncidentCreate, IncidentPatch, IncidentUpdateCreate
from upwatch.kit.db import after_commit
from upwatch.kit.errors import Conflict, ValidationFailed
from upwatch.kit.logs import log_event
from upwatch.models import Alert, AlertAttempt, Incident, IncidentUpdate, Monitor, User
from upwatch.notifications.events import iso
from upwatch.notifications.repository import AlertRepository
from upwatch.ports import IncidentChange
from upwatch.projects.repository import ProjectRepository
from upwatch.runtime import DomainService, uses

log = logging.getLogger(__name__)


def _log_change(incident: Incident, caller: User, was: str | None) -> None:
    """A person opened, resolved or reopened an incident (status changes within an open
    incident, such as investigating to identified, are its timeline, not the log's)."""
    if was is None:
        event, what = "incident.opened", "opened"
    elif incident.status == "resolved":
        event, what = "incident.resolved", "resolved"
    else:
        event, what = "incident.reopened", "reopened"
    log_event(
        log,
        event,
        "incident %s %s by user %s (status %s)",
        incident.id,
        what,
        caller.id,
        incident.status,
        incident_id=incident.id,
        monitor_id=incident.monitor_id,
        project_id=incident.project_id,
        user_id=caller.id,
    )


def _log_acknowledged(incident: Incident, caller: User) -> None:
    log_event(
        log,
        "incident.acknowledged",
        "incident %s acknowledged by user %s",
        incident.id,
        caller.id,
        incident_id=incident.id,
        monitor_id=incident.monitor_id,
        project_id=incident.project_id,
        user_id=caller.id,
    )


def _opens_or_closes(was: str, now: str) -> bool:
    return (was == "resolved") != (now == "resolved")


def _change(incident: Incident) -> IncidentChange:
    return "resolved" if incident.status == "resolved" else "updated"


def move_status(incident: Incident, status: str, now: datetime) -> bool:
    """Set ``status``; `resolvedAt` is set on moving to resolved and cleared on leaving it.
    Returns whether the status changed."""
    if status == incident.status:
        return False
    incident.status = status
    incident.resolved_at = now if status == "resolved" else None
    return True


class IncidentService(DomainService):
    incidents = uses(IncidentRepository)
    projects = uses(ProjectRepository)

    async def _tell_subscribers(
        self, incident: Incident, update: IncidentUpdate, change: IncidentChange
    ) -> None:
        """Tell the subscribers of the status pages that show the incident (through its
        monitor, or placed on them); those pages show the change at their next visit after
        the commit."""
        monitor = (
            None
            if incident.monitor_id is None
            else await self.session.get(Monitor, incident.monitor_id)
        )
        machine = automatic_title(monitor) if monitor is not None else None
        pages = await self.runtime.incident_followers.incident_changed(
            self.session, incident, update, change, machine
        )
        for page_id in pages:
            after_commit(self.session, partial(self.runtime.status_pages.changed, page_id))

    async def _placed_on(
        self, project_id: str, page_ids: list[str], component_ids: list[str]
    ) -> set[str]:
        """The pages that show an incident placed on ``page_ids`` and ``component_ids``,
        which must be of its project (422 naming the first that is not, like ``monitorId``)."""
        pages = await self.incidents.pages_in(project_id, page_ids)
        for page_id in page_ids:
            if page_id not in pages:
                raise ValidationFailed.on(
                    "statusPageIds", f"no such status page in the incident's project: {page_id}"
                )
        components = await self.incidents.components_in(project_id, component_ids)
        for component_id in component_ids:
            if component_id not in components:
                raise ValidationFailed.on(
                    "componentIds",
                    f"no such status-page component in the incident's project: {component_id}",
                )
        return pages | set(components.values())

    async def _pages_placed_on(self, incident: Incident) -> set[str]:
        """The pages an incident is placed on (ids of deleted pages and components drop out)."""
        pages = await self.incidents.pages_in(incident.project_id, incident.status_page_ids)
        components = await self.incidents.components_in(incident.project_id, incident.component_ids)
        return pages | set(components.values())

    async def _placements_changed(self, incident: Incident, also: set[str] | None = None) -> None:
        """The pages the incident is placed on (and ``also``, those it was) show the change
        at their next visit after the commit."""
        for page_id in (also or set()) | await self._pages_placed_on(incident):
            after_commit(self.session, partial(self.runtime.status_pages.changed, page_id))

    async def _monitor_of(self, project_id: str, monitor_id: str) -> Monitor:
        monitor = await self.session.get(Monitor, monitor_id)
        if monitor is None or monitor.project_id != project_id:
            raise ValidationFailed.on("monitorId", "no such monitor in the incident's project")
        return monitor

    async def create(self, caller: User, body: IncidentCreate) -> Incident:
        await self.projects.get_visible(caller, body.projectId)
        if body.monitorId is not None:
            await self._monitor_of(body.projectId, body.monitorId)
        await self._placed_on(body.projectId, body.statusPageIds, body.componentIds)
        now = self.runtime.clock.now()
        incident = await self.incidents.add(
            Incident(
                project_id=body.projectId,
                monitor_id=body.monitorId,
                title=body.title,
                description=body.description,
                status=body.status,
                severity=body.severity,
                automatic=False,
                started_at=body.startedAt or now,
                resolved_at=now if body.status == "resolved" else None,
                status_page_ids=list(dict.fromkeys(body.statusPageIds)),
                component_ids=list(dict.fromkeys(body.componentIds)),
            )
        )
        opened = IncidentUpdate(
            incident_id=incident.id,
            status=incident.status,
            message=body.description or OPENED,
            created_at=now,
        )
        await self.incidents.add_update(opened)
        await self._tell_subscribers(incident, opened, "opened")
        await self._placements_changed(incident)
        after_commit(self.session, partial(_log_change, incident, caller, None))
        return incident

    async def update(self, caller: User, incident_id: str, body: IncidentPatch) -> Incident:
        incident = await self.incidents.get_visible(caller, incident_id)
        given = body.model_fields_set
        # The schema refuses null for these; left out means unchanged.
        plain = {"title", "severity", "description", "startedAt"}
        for field, value in body.model_dump(exclude_unset=True, include=plain).items():
            setattr(incident, to_snake(field), value)
        if "monitorId" in given:
            if body.monitorId is not None:
                await self._monitor_of(incident.project_id, body.monitorId)
            incident.monitor_id = body.monitorId
        # Pages it leaves show that too.
        was_on: set[str] = set()
        if body.statusPageIds is not None or body.componentIds is not None:
            was_on = await self._pages_placed_on(incident)
            if body.statusPageIds is not None:
                incident.status_page_ids = list(dict.fromkeys(body.statusPageIds))
            if body.componentIds is not None:
                incident.component_ids = list(dict.fromkeys(body.componentIds))
            await self._placed_on(
                incident.project_id, body.statusPageIds or [], body.componentIds or []
            )
        if body.status is not None:
            now = self.runtime.clock.now()
            was = incident.status
            if move_status(incident, body.status, now):
                if _opens_or_closes(was, incident.status):
                    after_commit(self.session, partial(_log_change, incident, caller, was))
                changed = IncidentUpdate(
                    incident_id=incident.id,
                    status=incident.status,
                    message=f"Status changed to {incident.status}.",
                    created_at=now,
                )
                await self.incidents.add_update(changed)
                await self._tell_subscribers(incident, changed, _change(incident))
        await self._placements_changed(incident, was_on)
        await self.session.flush()
        await self.session.refresh(incident)
        return incident

    async def add_update(
        self, caller: User, incident_id: str, body: IncidentUpdateCreate
    ) -> Incident:
        incident = await self.incidents.get_visible(caller, incident_id)
        now = self.runtime.clock.now()
        was = incident.status
        move_status(incident, body.status or incident.status, now)
        if _opens_or_closes(was, incident.status):
            after_commit(self.session, partial(_log_change, incident, caller, was))
        posted = IncidentUpdate(
            incident_id=incident.id,
            status=incident.status,
            message=body.message,
            created_at=now,
        )
        await self.incidents.add_update(posted)
        await self._tell_subscribers(incident, posted, _change(incident))
        await self._placements_changed(incident)
        incident.updated_at = now
        await self.session.flush()
        return incident

    async def acknowledge(self, caller: User, incident_id: str) -> Incident:
        incident = await self.incidents.get_visible(caller, incident_id)
        if incident.resolved_at is not None:
            raise Conflict("the incident is resolved: there is nothing to acknowledge")
        if incident.acknowledged_at is not None:
            raise Conflict(f"already acknowledged at {iso(incident.acknowledged_at)}")
        now = self.runtime.clock.now()
        if not await self.incidents.acknowledge(incident.id, caller.id, now):
            raise Conflict("the incident was resolved or acknowledged meanwhile")
        await self.incidents.add_update(
            IncidentUpdate(
                incident_id=incident.id,
                status=incident.status,
                message=f"Acknowledged by {caller.email}.",
                internal=True,
                created_at=now,
            )
        )
        after_commit(self.session, partial(_log_acknowledged, incident, caller))
        await self.session.refresh(incident)
        return incident

    async def delete(self, caller: User, incident_id: str) -> None:
        incident = await self.incidents.get_visible(caller, incident_id)
        await self._placements_changed(incident)
        await self.incidents.delete(incident)

    async def alerts(
        self, caller: User, incident_id: str
    ) -> tuple[list[Alert], dict[int, list[AlertAttempt]]]:
        """The incident's alerts and every delivery attempt of each."""
        incident = await self.incidents.get_visible(caller, incident_id)
        repository = AlertRepository(self.session)
        alerts = list(await repository.of_incident(incident.id))
        attempts: dict[int, list[AlertAttempt]] = {a.id: [] for a in alerts}
        for attempt in await repository.attempts_of([a.id for a in alerts]):
            attempts[attempt.alert_id].append(attempt)
        return alerts, attempts

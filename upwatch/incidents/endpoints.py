"""Incidents and their timeline (seed 12, contract §8), and their alert history."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated, Any

from fastapi import Depends

from upwatch.callers.dependencies import CurrentUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.incidents.repository import IncidentRepository
from upwatch.incidents.schemas import (
    IncidentCreate,
    IncidentOut,
    IncidentPatch,
    IncidentStatus,
    IncidentUpdateCreate,
)
from upwatch.incidents.service import IncidentService
from upwatch.kit.errors import problem_responses
from upwatch.kit.pagination import IdFilter, PageParams
from upwatch.kit.routes import Routes
from upwatch.kit.schemas import DeletedOut
from upwatch.models import Alert, AlertAttempt, Incident, IncidentUpdate
from upwatch.notifications.schemas import AlertOut

router = Routes("/incidents", "incidents")


def _incidents(session: Session, runtime: RuntimeDep) -> IncidentService:
    return IncidentService(session, runtime)


# For the handlers that need the service alone.
Incidents = Annotated[IncidentService, Depends(_incidents)]


def incident_out(
    incident: Incident,
    updates: Sequence[IncidentUpdate],
    evidence: dict[str, Any] | None = None,
) -> IncidentOut:
    return IncidentOut.model_validate(incident, context={"updates": updates, "evidence": evidence})


async def _with_timeline(session: Session, incident: Incident) -> IncidentOut:
    repository = IncidentRepository(session)
    timeline = await repository.updates_of([incident.id])
    evidence = await repository.evidence_of([incident])
    return incident_out(incident, timeline[incident.id], evidence.get(incident.id))


def alert_out(alert: Alert, attempts: Sequence[AlertAttempt]) -> AlertOut:
    return AlertOut.model_validate(alert, context={"attempts": attempts})


@router.creates("createIncident")
async def create_incident(
    body: IncidentCreate, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> IncidentOut:
    """Open an incident in a project the caller belongs to. `status` defaults to
    `investigating`, `severity` to `medium`, `startedAt` to now; `monitorId` must be a monitor
    of the same project (422). `statusPageIds` and `componentIds` place it on the whole of
    status pages or on chosen components (of the same project, 422 otherwise), besides the
    components of its monitor: that is how an incident without a monitor shows on a page. The
    first timeline entry records the opening."""
    incident = await IncidentService(session, runtime).create(user, body)
    return await _with_timeline(session, incident)


@router.get("", operation_id="listIncidents")
async def list_incidents(
    user: CurrentUser,
    session: Session,
    page: PageParams,
    projectId: IdFilter = None,
    status: IncidentStatus | None = None,
    monitorId: IdFilter = None,
) -> list[IncidentOut]:
    """Incidents in the caller's projects, newest first."""
    # Not ProjectPageParams: the OpenAPI document names projectId before the filters.
    repository = IncidentRepository(session)
    items, total = await repository.list_visible(
        user,
        page.limit,
        page.offset,
        project_id=projectId,
        where=repository.narrowed(status, monitorId),
    )
    page.total(total)
    timeline = await repository.updates_of([i.id for i in items])
    evidence = await repository.evidence_of(items)
    return [incident_out(i, timeline[i.id], evidence.get(i.id)) for i in items]


@router.get("/{id}", operation_id="getIncident")
async def get_incident(id: str, user: CurrentUser, session: Session) -> IncidentOut:
    incident = await IncidentRepository(session).get_visible(user, id)
    return await _with_timeline(session, incident)


@router.updates("updateIncident")
async def update_incident(
    id: str, body: IncidentPatch, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> IncidentOut:
    """Change an incident; fields left out stay as they are, and only `monitorId` may be
    null (it unlinks the monitor). `monitorId` must be a monitor of the incident's project
    (422, contract §8). `statusPageIds` and `componentIds` each replace the list before
    (`[]` takes the incident off), with the rule of `createIncident`. A new `status` adds a
    timeline entry; moving to `resolved` sets `resolvedAt`, moving away from it clears it."""
    incident = await IncidentService(session, runtime).update(user, id, body)
    return await _with_timeline(session, incident)


@router.deletes("deleteIncident")
async def delete_incident(id: str, user: CurrentUser, incidents: Incidents) -> DeletedOut:
    await incidents.delete(user, id)
    return DeletedOut(id=id)


@router.creates("addIncidentUpdate", path="/{id}/updates")
async def add_incident_update(
    id: str,
    body: IncidentUpdateCreate,
    user: CurrentUser,
    session: Session,
    runtime: RuntimeDep,
) -> IncidentOut:
    """Post a timeline entry, optionally moving the status; answers the incident with its
    whole timeline (the new entry last)."""
    incident = await IncidentService(session, runtime).add_update(user, id, body)
    return await _with_timeline(session, incident)


@router.post(
    "/{id}/acknowledge", operation_id="acknowledgeIncident", responses=problem_responses(409)
)
async def acknowledge_incident(
    id: str, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> IncidentOut:
    """Take an open incident: records who and when (`acknowledgedBy`, `acknowledgedAt`, and
    an entry on the timeline that only members see), and stops its reminders and further
    escalation steps. Whoever was alerted still hears of the recovery. 409 when the incident
    is resolved or already acknowledged."""
    incident = await IncidentService(session, runtime).acknowledge(user, id)
    return await _with_timeline(session, incident)


@router.get("/{id}/alerts", operation_id="listIncidentAlerts")
async def list_incident_alerts(id: str, user: CurrentUser, incidents: Incidents) -> list[AlertOut]:
    """Delivery history: each alert this incident caused, per provider or member's personal
    channel (`providerId` null, `userId` and `channel` set), with every attempt (outcome,
    error, time). Suppressed alerts say why (quiet hours, disabled, plan)."""
    alerts, attempts = await incidents.alerts(user, id)
    return [alert_out(a, attempts[a.id]) for a in alerts]

"""Incidents: the list, an incident's timeline, acknowledge, resolve, post an update."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import ValidationError

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import FragmentPage, Page, SignedInPage
from upwatch.incidents.repository import IncidentRepository
from upwatch.incidents.schemas import IncidentPatch, IncidentUpdateCreate
from upwatch.incidents.service import IncidentService
from upwatch.kit.errors import ProblemError

router = APIRouter(prefix="/app")


async def _incidents(page: Page) -> list[Any]:
    repository = IncidentRepository(page.session)
    return list((await repository.list_visible(page.user, 100, 0)).rows)


@router.get("/incidents", openapi_extra=offers("listIncidents"))
async def incidents_page(page: SignedInPage) -> Response:
    incidents = await _incidents(page)
    return page.html("incidents.html", title="Incidents", section="incidents", incidents=incidents)


@router.get("/incidents/rows")
async def incident_rows(page: FragmentPage) -> Response:
    return page.fragment("_incident_rows.html", incidents=await _incidents(page))


async def _incident_page(
    page: Page, incident_id: str, status: int = 200, **context: Any
) -> Response:
    try:
        incident = await IncidentRepository(page.session).get_visible(page.user, incident_id)
    except ProblemError:
        page.not_found("incident")
    updates = await IncidentRepository(page.session).updates_of([incident.id])
    return page.html(
        "incident.html",
        status,
        title=incident.title,
        section="incidents",
        incident=incident,
        updates=updates.get(incident.id, []),
        **context,
    )


@router.get("/incidents/{incident_id}", openapi_extra=offers("getIncident"))
async def incident_page(incident_id: str, page: SignedInPage) -> Response:
    return await _incident_page(page, incident_id)


async def _act(page: Page, incident_id: str, action: str) -> Response:
    form = await page.form()
    service = IncidentService(page.session, page.runtime)
    try:
        if action == "acknowledge":
            await service.acknowledge(page.user, incident_id)
            done = "Acknowledged."
        elif action == "resolve":
            await service.update(page.user, incident_id, IncidentPatch(status="resolved"))
            done = "Resolved."
        else:
            body = IncidentUpdateCreate(message=form.get("message", ""))
            await service.add_update(page.user, incident_id, body)
            done = "Update posted."
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "incident")
        return await _incident_page(page, incident_id, status, form=form, errors=errors)
    return page.redirect(f"/app/incidents/{incident_id}", done)


@router.post("/incidents/{incident_id}/acknowledge", openapi_extra=offers("acknowledgeIncident"))
async def acknowledge(incident_id: str, page: SignedInPage) -> Response:
    return await _act(page, incident_id, "acknowledge")


@router.post("/incidents/{incident_id}/resolve")
async def resolve(incident_id: str, page: SignedInPage) -> Response:
    return await _act(page, incident_id, "resolve")


@router.post("/incidents/{incident_id}/updates", openapi_extra=offers("addIncidentUpdate"))
async def post_update(incident_id: str, page: SignedInPage) -> Response:
    return await _act(page, incident_id, "update")

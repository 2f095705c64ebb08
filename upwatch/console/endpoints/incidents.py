"""Incidents: the list with its filter, a new incident, an incident's page (its timeline,
acknowledge, post an update, change status, severity and description, its alerts and their
deliveries), deleting with confirmation."""

from __future__ import annotations

from typing import Any, Final, get_args
from urllib.parse import urlencode

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import ValidationError
from sqlalchemy import ColumnElement

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import FragmentPage, Page, SignedInPage
from upwatch.console.endpoints.projects import projects_of
from upwatch.incidents.repository import IncidentRepository
from upwatch.incidents.rules import OPENED
from upwatch.incidents.schemas import (
    IncidentCreate,
    IncidentPatch,
    IncidentStatus,
    IncidentUpdateCreate,
    Severity,
)
from upwatch.incidents.service import IncidentService
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_
from upwatch.models import Incident, StatusPage, StatusPageComponent
from upwatch.monitors.repository import MonitorRepository
from upwatch.notifications.schemas import AlertOut
from upwatch.statuspages.render import INCIDENT_WORDS
from upwatch.statuspages.repository import StatusPageRepository

router = APIRouter(prefix="/app")

STATUSES: Final = get_args(IncidentStatus)
SEVERITIES: Final = get_args(Severity)
# The forms' options, as (value, label) pairs; the labels are translated where shown.
LABELS: Final = {
    "investigating": N_("Investigating"),
    "identified": N_("Identified"),
    "monitoring": N_("Monitoring"),
    "resolved": N_("Resolved"),
    "low": N_("Low"),
    "medium": N_("Medium"),
    "high": N_("High"),
    "critical": N_("Critical"),
}
STATUS_CHOICES: Final = tuple((s, LABELS[s]) for s in STATUSES)
SEVERITY_CHOICES: Final = tuple((s, LABELS[s]) for s in SEVERITIES)
# What became of an alert and of each attempt to deliver it (notifications/schemas.py).
ALERT_WORDS: Final = {
    "pending": N_("pending"),
    "sent": N_("sent"),
    "failed": N_("failed"),
    "suppressed": N_("suppressed"),
    "retry": N_("retry"),
}
# The new-incident form's fields (besides the optional monitor).
CREATED: Final = ("projectId", "title", "description", "status", "severity")
# The list shows the newest incidents; the API pages through all of them.
LISTED: Final = 100


def _filter_of(page: Page) -> dict[str, str]:
    """The list's filter from the query: values the API would refuse are ignored."""
    given = page.request.query_params
    wanted = {
        "project": given.get("project", ""),
        "status": given.get("status", "") if given.get("status") in STATUSES else "",
        "severity": given.get("severity", "") if given.get("severity") in SEVERITIES else "",
    }
    return {key: value for key, value in wanted.items() if value}


def _choices(page: Page, pairs: tuple[tuple[str, str], ...]) -> list[tuple[str, str]]:
    """A select's options with their labels in the visitor's language."""
    return [(value, page.gettext(label)) for value, label in pairs]


async def _incidents(page: Page, chosen: dict[str, str]) -> list[Incident]:
    repository = IncidentRepository(page.session)
    where: list[ColumnElement[bool]] = repository.narrowed(chosen.get("status"), None)
    if "severity" in chosen:
        where.append(Incident.severity == chosen["severity"])
    listed = await repository.list_visible(
        page.user, LISTED, 0, project_id=chosen.get("project"), where=where
    )
    return list(listed.rows)


async def _names(page: Page) -> dict[str, Any]:
    """The visitor's projects and monitors, and their names by id (for columns and forms)."""
    projects = await projects_of(page)
    monitors = await MonitorRepository(page.session).visible_all(page.user)
    project_names = {a.project.id: a.project.name for a in projects}
    return {
        "projects": projects,
        "project_names": project_names,
        "monitor_names": {m.id: m.name for m in monitors},
        "incident_words": INCIDENT_WORDS,
        "monitor_choices": [("", page.gettext("None"))]
        + [(m.id, f"{project_names.get(m.project_id, '?')}: {m.name}") for m in monitors],
    }


# Where an incident may be placed: the form lists at most this many status pages.
PAGES_LISTED: Final = 200


async def _placements(
    page: Page, project_id: str | None
) -> list[tuple[StatusPage, list[StatusPageComponent]]]:
    """The status pages the visitor may place an incident on (those of ``project_id`` when
    given), each with its components: the choices of the form's "Status pages" box."""
    repository = StatusPageRepository(page.session)
    pages = list(
        (await repository.list_visible(page.user, PAGES_LISTED, 0, project_id=project_id)).rows
    )
    components = await repository.components([p.id for p in pages])
    return [(p, components[p.id]) for p in pages]


async def _placed(page: Page) -> dict[str, list[str]]:
    """The pages and components ticked in the posted form (none ticked: none)."""
    posted = await page.request.form()
    return {
        name: list(dict.fromkeys(str(v) for v in posted.getlist(name) if v))
        for name in ("statusPageIds", "componentIds")
    }


@router.get("/incidents", openapi_extra=offers("listIncidents"))
async def incidents_page(page: SignedInPage) -> Response:
    chosen = _filter_of(page)
    return page.html(
        "incidents.html",
        title=page.gettext("Incidents"),
        section="incidents",
        incidents=await _incidents(page, chosen),
        chosen=chosen,
        query=urlencode(chosen),
        statuses=STATUSES,
        severities=SEVERITIES,
        **await _names(page),
    )


@router.get("/incidents/rows")
async def incident_rows(page: FragmentPage) -> Response:
    chosen = _filter_of(page)
    incidents = await _incidents(page, chosen)
    return page.fragment(
        "_incident_rows.html", incidents=incidents, chosen=chosen, **await _names(page)
    )


async def _new_page(page: Page, status: int = 200, **context: Any) -> Response:
    context.setdefault("form", {"status": "investigating", "severity": "medium"})
    context.setdefault("placed", {})
    return page.html(
        "incident_form.html",
        status,
        title=page.gettext("New incident"),
        section="incidents",
        status_choices=_choices(page, STATUS_CHOICES),
        severity_choices=_choices(page, SEVERITY_CHOICES),
        placements=await _placements(page, None),
        **await _names(page),
        **context,
    )


@router.get("/incidents/new")
async def new_incident(page: SignedInPage) -> Response:
    return await _new_page(page)


@router.post("/incidents", openapi_extra=offers("createIncident"))
async def create_incident(page: SignedInPage) -> Response:
    form = await page.form()
    placed = await _placed(page)
    try:
        # A field left out takes the API's default (a status, a severity).
        given = {name: form[name] for name in CREATED if name in form}
        body = IncidentCreate.model_validate(
            {**given, **placed, "monitorId": form.get("monitorId") or None}
        )
        made = await IncidentService(page.session, page.runtime).create(page.user, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
        return await _new_page(page, status, form=form, errors=errors, placed=placed)
    return page.redirect(
        f"/app/incidents/{made.id}",
        page.gettext("Incident %(title)s opened.") % {"title": made.title},
    )


async def _visible(page: Page, incident_id: str) -> Incident:
    try:
        return await IncidentRepository(page.session).get_visible(page.user, incident_id)
    except ProblemError:
        page.not_found(N_("incident"))


def _settings_of(incident: Incident) -> dict[str, str]:
    """The change form filled in with what the incident has now."""
    return {
        "status": incident.status,
        "severity": incident.severity,
        "description": incident.description,
    }


async def _alerts(page: Page, incident_id: str) -> list[AlertOut]:
    """As the API lists them (listIncidentAlerts): its masking of recipients included."""
    alerts, attempts = await IncidentService(page.session, page.runtime).alerts(
        page.user, incident_id
    )
    return [AlertOut.model_validate(a, context={"attempts": attempts[a.id]}) for a in alerts]


async def _incident_page(
    page: Page, incident_id: str, status: int = 200, **context: Any
) -> Response:
    incident = await _visible(page, incident_id)
    repository = IncidentRepository(page.session)
    updates = await repository.updates_of([incident.id])
    evidence = await repository.evidence_of([incident])
    context.setdefault("settings", _settings_of(incident))
    context.setdefault(
        "placed",
        {"statusPageIds": incident.status_page_ids, "componentIds": incident.component_ids},
    )
    return page.html(
        "incident.html",
        status,
        title=incident.title,
        section="incidents",
        incident=incident,
        updates=updates.get(incident.id, []),
        evidence=evidence.get(incident.id),
        alerts=await _alerts(page, incident.id),
        placements=await _placements(page, incident.project_id),
        status_choices=_choices(page, STATUS_CHOICES),
        severity_choices=_choices(page, SEVERITY_CHOICES),
        alert_words=ALERT_WORDS,
        opened=OPENED,
        **await _names(page),
        **context,
    )


@router.get("/incidents/{incident_id}", openapi_extra=offers("getIncident", "listIncidentAlerts"))
async def incident_page(incident_id: str, page: SignedInPage) -> Response:
    return await _incident_page(page, incident_id)


async def _act(page: Page, incident_id: str, action: str) -> Response:
    form = await page.form()
    service = IncidentService(page.session, page.runtime)
    try:
        if action == "acknowledge":
            await service.acknowledge(page.user, incident_id)
            done = page.gettext("Acknowledged.")
        elif action == "resolve":
            await service.update(page.user, incident_id, IncidentPatch(status="resolved"))
            done = page.gettext("Resolved.")
        else:
            body = IncidentUpdateCreate(message=form.get("message", ""))
            await service.add_update(page.user, incident_id, body)
            done = page.gettext("Update posted.")
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("incident"))
        return await _incident_page(page, incident_id, status, form=form, errors=errors)
    return page.redirect(f"/app/incidents/{incident_id}", done)


@router.post("/incidents/{incident_id}/acknowledge", openapi_extra=offers("acknowledgeIncident"))
async def acknowledge(incident_id: str, page: SignedInPage) -> Response:
    return await _act(page, incident_id, "acknowledge")


@router.post("/incidents/{incident_id}/resolve", openapi_extra=offers("updateIncident"))
async def resolve(incident_id: str, page: SignedInPage) -> Response:
    return await _act(page, incident_id, "resolve")


@router.post("/incidents/{incident_id}/updates", openapi_extra=offers("addIncidentUpdate"))
async def post_update(incident_id: str, page: SignedInPage) -> Response:
    return await _act(page, incident_id, "update")


@router.post("/incidents/{incident_id}/edit", openapi_extra=offers("updateIncident"))
async def change_incident(incident_id: str, page: SignedInPage) -> Response:
    """Status, severity, description and the status pages it is placed on, as the API's
    patch; a new status goes on the timeline (the service's rule)."""
    form = await page.form()
    placed = await _placed(page)
    try:
        body = IncidentPatch.model_validate(
            {name: form.get(name, "") for name in ("status", "severity", "description")} | placed
        )
        await IncidentService(page.session, page.runtime).update(page.user, incident_id, body)
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("incident"))
        return await _incident_page(
            page, incident_id, status, settings=form, errors=errors, placed=placed
        )
    return page.redirect(f"/app/incidents/{incident_id}", page.gettext("Incident saved."))


@router.get("/incidents/{incident_id}/delete")
async def confirm_delete(incident_id: str, page: SignedInPage) -> Response:
    """Asks first: deleting takes the timeline and the alert history with it."""
    incident = await _visible(page, incident_id)
    return page.html(
        "confirm_action.html",
        title=page.gettext("Delete %(name)s?") % {"name": incident.title},
        section="incidents",
        action=f"/app/incidents/{incident_id}/delete",
        detail=page.gettext(
            "%(title)s (%(status)s) goes with its timeline and its alert history; status pages "
            "stop showing it. Its monitor stays."
        )
        % {
            "title": incident.title,
            "status": page.gettext(INCIDENT_WORDS.get(incident.status, incident.status)),
        },
        confirm=page.gettext("Delete the incident"),
        cancel=f"/app/incidents/{incident_id}",
    )


@router.post("/incidents/{incident_id}/delete", openapi_extra=offers("deleteIncident"))
async def delete_incident(incident_id: str, page: SignedInPage) -> Response:
    async with page.button(N_("incident"), f"/app/incidents/{incident_id}", N_("Not deleted")):
        await IncidentService(page.session, page.runtime).delete(page.user, incident_id)
    return page.redirect("/app/incidents", page.gettext("Incident deleted."))

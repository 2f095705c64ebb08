"""Maintenance windows: the list with what is on now and next, a new window, delete."""

from __future__ import annotations

from datetime import datetime
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from fastapi import APIRouter
from fastapi.responses import Response
from pydantic import ValidationError

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Page, SignedInPage
from upwatch.console.endpoints.projects import projects_of
from upwatch.kit.errors import ProblemError
from upwatch.maintenance.repository import MaintenanceRepository
from upwatch.maintenance.schemas import MaintenanceWindowCreate
from upwatch.maintenance.service import MaintenanceService
from upwatch.monitors.repository import MonitorRepository

router = APIRouter(prefix="/app")


async def _windows_page(page: Page, status: int = 200, **context: Any) -> Response:
    windows, _total = await MaintenanceRepository(page.session).list_visible(page.user, 500, 0)
    shown = await MaintenanceService(page.session, page.runtime).shown(windows)
    projects = await projects_of(page)
    monitors = await MonitorRepository(page.session).visible_all(page.user)
    context.setdefault("chosen", [])
    return page.html(
        "maintenance.html",
        status,
        title="Maintenance windows",
        section="maintenance",
        windows=shown,
        projects=projects,
        project_names={a.project.id: a.project.name for a in projects},
        monitors=monitors,
        monitor_names={m.id: m.name for m in monitors},
        **context,
    )


@router.get("/maintenance", openapi_extra=offers("listMaintenanceWindows"))
async def maintenance_page(page: SignedInPage) -> Response:
    return await _windows_page(page)


def _instant(local: str, zone: str) -> str:
    """A browser's ``datetime-local`` value read in ``zone``, as ISO text with its offset;
    anything else as it came, for the API's own check to name."""
    try:
        moment = datetime.fromisoformat(local)
        if moment.tzinfo is None:
            moment = moment.replace(tzinfo=ZoneInfo(zone))
    except (ValueError, ZoneInfoNotFoundError):
        return local
    return moment.isoformat()


@router.post("/maintenance", openapi_extra=offers("createMaintenanceWindow"))
async def create_window(page: SignedInPage) -> Response:
    form = await page.form()
    chosen = [str(v) for v in (await page.request.form()).getlist("monitorIds")]
    zone = form.get("timezone") or "UTC"
    body: dict[str, Any] = {
        "projectId": form.get("projectId", ""),
        "title": form.get("title", ""),
        "startsAt": _instant(form.get("startsAt", ""), zone),
        "endsAt": _instant(form.get("endsAt", ""), zone),
        "timezone": zone,
        "monitorIds": chosen or None,
    }
    if form.get("rrule"):
        body["rrule"] = form["rrule"]
    try:
        window = await MaintenanceService(page.session, page.runtime).create(
            page.user, MaintenanceWindowCreate(**body)
        )
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, "project")
        return await _windows_page(page, status, form=form, chosen=chosen, errors=errors)
    return page.redirect("/app/maintenance", f"Maintenance window {window.title} planned.")


@router.post("/maintenance/{window_id}/delete", openapi_extra=offers("deleteMaintenanceWindow"))
async def delete_window(window_id: str, page: SignedInPage) -> Response:
    async with page.button("maintenance window", "/app/maintenance", "Not deleted"):
        await MaintenanceService(page.session, page.runtime).delete(page.user, window_id)
    return page.redirect("/app/maintenance", "Maintenance window deleted.")

"""Maintenance windows: the list with what is on now and next, a new window, its edit,
delete."""

from __future__ import annotations

from contextlib import suppress
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
from upwatch.kit.languages import N_
from upwatch.maintenance.repository import MaintenanceRepository
from upwatch.maintenance.schemas import MaintenanceWindowCreate, MaintenanceWindowPatch
from upwatch.maintenance.service import MaintenanceService
from upwatch.models import MaintenanceWindow
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
        title=page.gettext("Maintenance windows"),
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


async def _window_form(page: Page) -> tuple[dict[str, str], list[str], dict[str, Any]]:
    """The posted window form, the monitors ticked, and the API's body made of them (the
    fields the create and the edit share)."""
    form = await page.form()
    chosen = [str(v) for v in (await page.request.form()).getlist("monitorIds")]
    zone = form.get("timezone") or "UTC"
    body: dict[str, Any] = {
        "title": form.get("title", ""),
        "startsAt": _instant(form.get("startsAt", ""), zone),
        "endsAt": _instant(form.get("endsAt", ""), zone),
        "timezone": zone,
        "monitorIds": chosen or None,
        "rrule": form.get("rrule") or None,
    }
    return form, chosen, body


@router.post("/maintenance", openapi_extra=offers("createMaintenanceWindow"))
async def create_window(page: SignedInPage) -> Response:
    form, chosen, body = await _window_form(page)
    body["projectId"] = form.get("projectId", "")
    try:
        window = await MaintenanceService(page.session, page.runtime).create(
            page.user, MaintenanceWindowCreate(**body)
        )
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("project"))
        return await _windows_page(page, status, form=form, chosen=chosen, errors=errors)
    return page.redirect(
        "/app/maintenance",
        page.gettext("Maintenance window %(title)s planned.") % {"title": window.title},
    )


@router.post("/maintenance/{window_id}/delete", openapi_extra=offers("deleteMaintenanceWindow"))
async def delete_window(window_id: str, page: SignedInPage) -> Response:
    async with page.button(N_("maintenance window"), "/app/maintenance", N_("Not deleted")):
        await MaintenanceService(page.session, page.runtime).delete(page.user, window_id)
    return page.redirect("/app/maintenance", page.gettext("Maintenance window deleted."))


async def _edit_page(
    page: Page, window: MaintenanceWindow, status: int = 200, **context: Any
) -> Response:
    monitors = await MonitorRepository(page.session).visible_all(page.user, window.project_id)
    return page.html(
        "maintenance_edit.html",
        status,
        title=page.gettext("Edit %(name)s") % {"name": window.title},
        section="maintenance",
        window=window,
        monitors=monitors,
        **context,
    )


async def _visible_window(page: Page, window_id: str) -> MaintenanceWindow:
    try:
        return await MaintenanceRepository(page.session).get_visible(page.user, window_id)
    except ProblemError:
        page.not_found(N_("maintenance window"))


def _local(moment: datetime, zone: str) -> str:
    """An instant as a ``datetime-local`` value in ``zone`` (the window's own)."""
    with suppress(ZoneInfoNotFoundError):
        moment = moment.astimezone(ZoneInfo(zone))
    return moment.strftime("%Y-%m-%dT%H:%M")


@router.get("/maintenance/{window_id}/edit", openapi_extra=offers("getMaintenanceWindow"))
async def edit_window_page(window_id: str, page: SignedInPage) -> Response:
    window = await _visible_window(page, window_id)
    [shown] = await MaintenanceService(page.session, page.runtime).shown([window])
    form = {
        "title": window.title,
        "startsAt": _local(window.starts_at, window.timezone),
        "endsAt": _local(window.ends_at, window.timezone),
        "timezone": window.timezone,
        "rrule": window.rrule or "",
    }
    return await _edit_page(page, window, form=form, chosen=shown.monitor_ids or [])


@router.post("/maintenance/{window_id}/edit", openapi_extra=offers("updateMaintenanceWindow"))
async def edit_window(window_id: str, page: SignedInPage) -> Response:
    window = await _visible_window(page, window_id)
    form, chosen, body = await _window_form(page)
    try:
        await MaintenanceService(page.session, page.runtime).update(
            page.user, window_id, MaintenanceWindowPatch(**body)
        )
    except (ProblemError, ValidationError) as exc:
        status, errors = page.refused(exc, N_("maintenance window"))
        return await _edit_page(page, window, status, form=form, chosen=chosen, errors=errors)
    return page.redirect(
        "/app/maintenance",
        page.gettext("Maintenance window %(title)s saved.") % {"title": body["title"]},
    )

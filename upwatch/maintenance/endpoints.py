"""Maintenance windows: scheduled time when a project's monitors are checked and stored but
open no incident and alert no one."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends

from upwatch.callers.access import ProjectPageParams
from upwatch.callers.dependencies import CurrentUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.routes import Routes
from upwatch.kit.schemas import DeletedOut
from upwatch.maintenance.repository import MaintenanceRepository
from upwatch.maintenance.schemas import (
    MaintenanceWindowCreate,
    MaintenanceWindowOut,
    MaintenanceWindowPatch,
)
from upwatch.maintenance.service import MaintenanceService, Shown
from upwatch.models import MaintenanceWindow

router = Routes("/maintenance-windows", "maintenance windows")


def _windows(session: Session, runtime: RuntimeDep) -> MaintenanceService:
    return MaintenanceService(session, runtime)


# For the handlers that need the service alone.
Windows = Annotated[MaintenanceService, Depends(_windows)]


def window_out(shown: Shown) -> MaintenanceWindowOut:
    return MaintenanceWindowOut.model_validate(
        shown.window,
        context={
            "monitor_ids": shown.monitor_ids,
            "active": shown.active,
            "next_starts_at": shown.next_starts_at,
        },
    )


async def _out(service: MaintenanceService, window: MaintenanceWindow) -> MaintenanceWindowOut:
    return window_out((await service.shown([window]))[0])


@router.creates("createMaintenanceWindow", 409)
async def create_window(
    body: MaintenanceWindowCreate, user: CurrentUser, windows: Windows
) -> MaintenanceWindowOut:
    """Schedule maintenance in a project the caller belongs to. During an occurrence, the
    covered monitors (`monitorIds`, or the whole project) are still checked and their results
    stored, but their status does not move: no incident opens and no alert goes out; the first
    check after the window moves it. Those checks are left out of SLA figures. `rrule` makes
    the window recur (RFC 5545, at most hourly) by the wall clock of `timezone`; each
    occurrence lasts `endsAt - startsAt` (at most 31 days). A monitor of another project:
    422."""
    return await _out(windows, await windows.create(user, body))


@router.get("", operation_id="listMaintenanceWindows")
async def list_windows(
    user: CurrentUser,
    session: Session,
    runtime: RuntimeDep,
    page: ProjectPageParams,
) -> list[MaintenanceWindowOut]:
    """Windows in the caller's projects, by first start."""
    windows = await page.of(MaintenanceRepository(session), user)
    return [window_out(s) for s in await MaintenanceService(session, runtime).shown(windows)]


@router.get("/{id}", operation_id="getMaintenanceWindow")
async def get_window(
    id: str, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> MaintenanceWindowOut:
    window = await MaintenanceRepository(session).get_visible(user, id)
    return await _out(MaintenanceService(session, runtime), window)


@router.updates("updateMaintenanceWindow", 409)
async def update_window(
    id: str,
    body: MaintenanceWindowPatch,
    user: CurrentUser,
    windows: Windows,
) -> MaintenanceWindowOut:
    """Change a window; fields left out stay as they are. `rrule: null` makes it one-off;
    `monitorIds: null` makes it cover the whole project."""
    return await _out(windows, await windows.update(user, id, body))


@router.deletes("deleteMaintenanceWindow")
async def delete_window(id: str, user: CurrentUser, windows: Windows) -> DeletedOut:
    await windows.delete(user, id)
    return DeletedOut(id=id)

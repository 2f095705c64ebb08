"""Maintenance window rules: who may see and change a window (any member of its project),
its schedule, and the monitors of its own project it may cover."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime

from upwatch.kit.declared import require_free_key
from upwatch.kit.errors import ValidationFailed
from upwatch.maintenance.repository import MaintenanceRepository
from upwatch.maintenance.rules import (
    BadSchedule,
    Schedule,
    active,
    next_start,
    occurrence_at,
    validate,
)
from upwatch.maintenance.schemas import MaintenanceWindowCreate, MaintenanceWindowPatch
from upwatch.models import MaintenanceWindow, User
from upwatch.projects.repository import ProjectRepository
from upwatch.runtime import DomainService, uses

WINDOW = "maintenance window"


def schedule_of(window: MaintenanceWindow) -> Schedule:
    return Schedule(window.starts_at, window.ends_at, window.rrule, window.timezone)


def _current_or_next(schedule: Schedule, now: datetime) -> tuple[datetime, datetime] | None:
    current = occurrence_at(schedule, now)
    if current is not None:
        return current
    start = next_start(schedule, now)
    return None if start is None else (start, start + schedule.duration)


@dataclass(frozen=True, slots=True)
class Shown:
    window: MaintenanceWindow
    monitor_ids: list[str] | None
    active: bool
    next_starts_at: datetime | None


class MaintenanceService(DomainService):
    windows = uses(MaintenanceRepository)
    projects = uses(ProjectRepository)

    async def create(self, caller: User, body: MaintenanceWindowCreate) -> MaintenanceWindow:
        await self.projects.get_visible(caller, body.projectId)
        window = MaintenanceWindow(
            project_id=body.projectId,
            title=body.title,
            # To the second, as RRULE occurrences are.
            starts_at=body.startsAt.replace(microsecond=0),
            ends_at=body.endsAt.replace(microsecond=0),
            rrule=body.rrule,
            timezone=body.timezone,
            whole_project=body.monitorIds is None,
            key=body.key,
        )
        await self._check(window)
        await require_free_key(self.session, MaintenanceWindow, WINDOW, window.project_id, body.key)
        await self._check_monitors(window.project_id, body.monitorIds)
        await self.windows.add(window)
        if body.monitorIds is not None:
            await self.windows.set_monitors(window.id, body.monitorIds)
        await self._tell_followers(window, body.monitorIds, announce=True)
        return window

    async def update(
        self, caller: User, window_id: str, body: MaintenanceWindowPatch
    ) -> MaintenanceWindow:
        window = await self.windows.get_visible(caller, window_id)
        given = body.model_fields_set
        if body.title is not None:
            window.title = body.title
        if body.startsAt is not None:
            window.starts_at = body.startsAt.replace(microsecond=0)
        if body.endsAt is not None:
            window.ends_at = body.endsAt.replace(microsecond=0)
        if "rrule" in given:
            window.rrule = body.rrule
        if body.timezone is not None:
            window.timezone = body.timezone
        if "key" in given:
            await require_free_key(
                self.session, MaintenanceWindow, WINDOW, window.project_id, body.key, window.id
            )
            window.key = body.key
        await self._check(window)
        if "monitorIds" in given:
            await self._check_monitors(window.project_id, body.monitorIds)
            window.whole_project = body.monitorIds is None
            await self.windows.set_monitors(window.id, body.monitorIds or [])
        window.updated_at = self.runtime.clock.now()
        await self.session.flush()
        if given & {"startsAt", "endsAt", "rrule", "timezone", "monitorIds", "title"}:
            monitor_ids = None
            if not window.whole_project:
                monitor_ids = (await self.windows.monitors_of([window.id]))[window.id]
            await self._tell_followers(window, monitor_ids, announce=False)
        return window

    async def delete(self, caller: User, window_id: str) -> None:
        await self.windows.delete(await self.windows.get_visible(caller, window_id))

    async def shown(self, windows: Sequence[MaintenanceWindow]) -> list[Shown]:
        """Each window with its monitors and its schedule as of now."""
        listed = await self.windows.monitors_of([w.id for w in windows if not w.whole_project])
        now = self.runtime.clock.now()
        return [
            Shown(
                window,
                None if window.whole_project else listed[window.id],
                active(schedule_of(window), now),
                next_start(schedule_of(window), now),
            )
            for window in windows
        ]

    async def _tell_followers(
        self, window: MaintenanceWindow, monitor_ids: list[str] | None, announce: bool
    ) -> None:
        """Status-page subscribers hear of the window when it is created, and when its
        current or next occurrence starts and ends (written now, due then; an edit writes
        them again)."""
        now = self.runtime.clock.now()
        occurrence = await asyncio.to_thread(_current_or_next, schedule_of(window), now)
        await self.runtime.incident_followers.maintenance_changed(
            self.session, window, monitor_ids, occurrence, announce, now
        )

    @staticmethod
    async def _check(window: MaintenanceWindow) -> None:
        # Off the event loop: refusing a rule that never occurs can cost dateutil a walk to
        # the year 9999 (a few hundred ms at worst) before it says so.
        try:
            await asyncio.to_thread(validate, schedule_of(window))
        except BadSchedule as exc:
            raise ValidationFailed.on(exc.field, str(exc)) from None

    async def _check_monitors(self, project_id: str, monitor_ids: Sequence[str] | None) -> None:
        if not monitor_ids:
            if monitor_ids is not None:
                raise ValidationFailed.on(
                    "monitorIds", "name at least one monitor, or leave it out for the project"
                )
            return
        found = await self.windows.monitors_in_project(project_id, monitor_ids)
        missing = sorted(set(monitor_ids) - found)
        if missing:
            raise ValidationFailed.on(
                "monitorIds", f"not monitors of the window's project: {', '.join(missing)}"
            )

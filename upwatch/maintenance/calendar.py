"""The engine's ``MaintenanceCalendar``: which results of a batch fall in a window of their
monitor, read from the database in the ingester's transaction (two queries a batch at most)."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.maintenance.repository import MaintenanceRepository
from upwatch.maintenance.rules import Schedule, active
from upwatch.maintenance.service import schedule_of


class WindowCalendar:
    async def in_maintenance(
        self, session: AsyncSession, checks: Sequence[tuple[str, str, datetime]]
    ) -> list[bool]:
        covering = await MaintenanceRepository(session).covering(
            {project_id for _, project_id, _ in checks}
        )
        if not covering:
            return [False] * len(checks)
        by_project: dict[str, list[tuple[Schedule, frozenset[str] | None]]] = {}
        for window, covers in covering:
            by_project.setdefault(window.project_id, []).append((schedule_of(window), covers))
        return [
            any(
                (covers is None or monitor_id in covers) and active(schedule, checked_at)
                for schedule, covers in by_project.get(project_id, ())
            )
            for monitor_id, project_id, checked_at in checks
        ]

"""Every query of maintenance windows and the monitors they cover."""

from __future__ import annotations

from collections.abc import Collection, Sequence

from sqlalchemy import delete, select

from upwatch.callers.access import ProjectScopedRepository
from upwatch.models import MaintenanceWindow, MaintenanceWindowMonitor, Monitor


class MaintenanceRepository(ProjectScopedRepository[MaintenanceWindow]):
    model = MaintenanceWindow
    order = (MaintenanceWindow.starts_at, MaintenanceWindow.id)  # soonest first
    not_found = "no such maintenance window"

    async def of_projects(self, project_ids: Collection[str]) -> Sequence[MaintenanceWindow]:
        if not project_ids:
            return []
        return await self.rows_of(
            select(MaintenanceWindow).where(MaintenanceWindow.project_id.in_(sorted(project_ids)))
        )

    async def covering(
        self, project_ids: Collection[str]
    ) -> list[tuple[MaintenanceWindow, frozenset[str] | None]]:
        """Each window of these projects with the monitors it covers (None: the whole
        project, monitors added later included). Two queries, however many windows."""
        windows = await self.of_projects(project_ids)
        listed = await self.monitors_of([w.id for w in windows if not w.whole_project])
        return [(w, None if w.whole_project else frozenset(listed[w.id])) for w in windows]

    async def monitors_of(self, window_ids: Collection[str]) -> dict[str, list[str]]:
        """The monitors each window lists (empty for one over its whole project)."""
        covered: dict[str, list[str]] = {w: [] for w in window_ids}
        if window_ids:
            rows = await self.session.execute(
                select(MaintenanceWindowMonitor.window_id, MaintenanceWindowMonitor.monitor_id)
                .where(MaintenanceWindowMonitor.window_id.in_(sorted(window_ids)))
                .order_by(MaintenanceWindowMonitor.monitor_id)
            )
            for window_id, monitor_id in rows:
                covered[window_id].append(monitor_id)
        return covered

    async def monitors_in_project(self, project_id: str, monitor_ids: Collection[str]) -> set[str]:
        if not monitor_ids:
            return set()
        rows = await self.session.scalars(
            select(Monitor.id).where(
                Monitor.project_id == project_id, Monitor.id.in_(sorted(monitor_ids))
            )
        )
        return set(rows.all())

    async def set_monitors(self, window_id: str, monitor_ids: Collection[str]) -> None:
        await self.session.execute(
            delete(MaintenanceWindowMonitor).where(MaintenanceWindowMonitor.window_id == window_id)
        )
        self.session.add_all(
            MaintenanceWindowMonitor(window_id=window_id, monitor_id=m) for m in sorted(monitor_ids)
        )
        await self.session.flush()

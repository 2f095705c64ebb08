"""SLA reports of a monitor or of a project's monitors: the period asked for and the service
that answers it from daily aggregates (the figures themselves are ``sla.py``'s, pure)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, date, datetime, time, timedelta

from upwatch.kit.errors import ValidationFailed
from upwatch.maintenance.repository import MaintenanceRepository
from upwatch.maintenance.rules import occurrences
from upwatch.maintenance.service import schedule_of
from upwatch.models import User
from upwatch.monitors import sla
from upwatch.monitors.repository import MonitorRepository, SlaRepository
from upwatch.projects.repository import ProjectRepository
from upwatch.runtime import DomainService, uses

# Aggregates are kept at least 90 days and longer on paid plans; a year and a bit covers any
# yearly report.
SLA_LONGEST_DAYS = 400
# The day after a period (its end as an instant) must be a date Python can hold.
LAST_REPORTED_DAY = date(9998, 12, 31)


@dataclass(frozen=True, slots=True)
class SlaPeriod:
    """Whole UTC days ``first`` to ``last``, the uptime objective and the Apdex threshold."""

    first: date
    last: date
    target: float = 99.9
    threshold_ms: float = 500

    def check(self) -> None:
        if self.last > LAST_REPORTED_DAY:
            raise ValidationFailed.on("to", f"a period ends by {LAST_REPORTED_DAY} at the latest")
        if self.last < self.first:
            raise ValidationFailed.on("to", "must not be before from")
        if (self.last - self.first).days + 1 > SLA_LONGEST_DAYS:
            raise ValidationFailed.on("to", f"a period spans at most {SLA_LONGEST_DAYS} days")

    def bounds(self, now: datetime) -> tuple[datetime, datetime]:
        """The period as instants, cut at ``now``."""
        since = datetime.combine(self.first, time(), UTC)
        return since, min(datetime.combine(self.last + timedelta(days=1), time(), UTC), now)


@dataclass(frozen=True, slots=True)
class SlaSlice:
    first: date
    last: date
    report: sla.Report


class SlaService(DomainService):
    """SLA reports of a monitor or of a project's monitors over whole UTC days, answered from
    aggregates; time figures count up to now when the period reaches it."""

    monitors = uses(MonitorRepository)
    projects = uses(ProjectRepository)
    reports = uses(SlaRepository)
    windows = uses(MaintenanceRepository)

    async def of_monitor(
        self, caller: User, monitor_id: str, period: SlaPeriod, monthly: bool
    ) -> list[SlaSlice]:
        monitor = await self.monitors.get_visible(caller, monitor_id)
        return await self._slices([monitor.id], monitor.project_id, period, monthly)

    async def of_project(
        self, caller: User, project_id: str, period: SlaPeriod, monthly: bool
    ) -> list[SlaSlice]:
        """Checks and incidents of every monitor of the project; maintenance minutes are the
        mean of its monitors' (each window counts for the monitors it covers)."""
        await self.projects.get_visible(caller, project_id)
        monitor_ids = await self.reports.monitor_ids(project_id)
        return await self._slices(monitor_ids, project_id, period, monthly)

    async def _slices(
        self, monitor_ids: list[str], project_id: str, period: SlaPeriod, monthly: bool
    ) -> list[SlaSlice]:
        """The whole period, after each calendar month of it when ``monthly``."""
        period.check()
        spans = await self._maintenance(monitor_ids, project_id, *period.bounds(self.now))
        parts = sla.months(period.first, period.last) if monthly else []
        return [
            SlaSlice(first, last, await self._report(monitor_ids, spans, period, first, last))
            for first, last in [*parts, (period.first, period.last)]
        ]

    @property
    def now(self) -> datetime:
        return self.runtime.clock.now()

    async def _report(
        self,
        monitor_ids: list[str],
        spans: list[list[tuple[datetime, datetime]]],
        period: SlaPeriod,
        first: date,
        last: date,
    ) -> sla.Report:
        since, until = SlaPeriod(first, last).bounds(self.now)
        first_day, last_day = first.isoformat(), last.isoformat()
        # Monitors covered by the same windows share one list: merged once, not per monitor.
        merged: dict[int, float] = {}
        for covered in spans:
            if id(covered) not in merged:
                merged[id(covered)] = sla.merged_minutes(covered, since, until)
        maintenance = sum(merged[id(c)] for c in spans) / len(spans) if spans else 0.0
        repairs = [
            None if resolved is None else (resolved - started).total_seconds() / 60
            for started, resolved in await self.reports.incidents(monitor_ids, since, until)
        ]
        return sla.report(
            await self.reports.counts(monitor_ids, first_day, last_day),
            await self.reports.buckets(monitor_ids, first_day, last_day),
            max((until - since).total_seconds() / 60, 0.0),
            maintenance,
            repairs,
            period.target,
            period.threshold_ms,
        )

    async def _maintenance(
        self, monitor_ids: list[str], project_id: str, since: datetime, until: datetime
    ) -> list[list[tuple[datetime, datetime]]]:
        """Per monitor, the maintenance time of the period (each window worked out once)."""
        covering = await self.windows.covering([project_id])
        spans = {w.id: list(occurrences(schedule_of(w), since, until)) for w, _ in covering}
        # One list per distinct set of windows (usually one for the whole project).
        keys = [
            tuple(w.id for w, covers in covering if covers is None or monitor_id in covers)
            for monitor_id in monitor_ids
        ]
        shared: dict[tuple[str, ...], list[tuple[datetime, datetime]]] = {}
        for key in keys:
            if key not in shared:
                shared[key] = [span for window_id in key for span in spans[window_id]]
        return [shared[key] for key in keys]

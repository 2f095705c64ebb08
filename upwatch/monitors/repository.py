"""Every query of monitors, regions, check results and daily aggregates."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import fields as dataclass_fields
from datetime import datetime
from functools import cache
from typing import Any, TypeVar

from sqlalchemy import ColumnElement, Select, String, cast, delete, func, or_, select
from sqlalchemy.orm import aliased, undefer

from upwatch.callers.access import ProjectScopedRepository, refuse_without_second_factor
from upwatch.kit.repository import Listed, Repository
from upwatch.models import (
    CheckResult,
    DailyAggregate,
    HistogramBucket,
    HourlyCount,
    Incident,
    Monitor,
    Project,
    Region,
    User,
)
from upwatch.models.keys import monitor_number, monitor_numbers, region_number
from upwatch.monitors.sla import Counts

# The monitor's and the region's ids of each result read, for the API.
_WITH_IDS = (undefer(CheckResult.monitor_id), undefer(CheckResult.region_id))


_Query = TypeVar("_Query", bound=Select[*tuple[Any, ...]])


def _with_ids(query: _Query) -> _Query:
    """``query`` of results joined to their monitor and region (their ids selectable)."""
    return query.join(Monitor, Monitor.number == CheckResult.monitor_number).join(
        Region, Region.number == CheckResult.region_number
    )


class MonitorRepository(ProjectScopedRepository[Monitor]):
    model = Monitor
    order = (Monitor.created_at.desc(), Monitor.id)
    not_found = "no such monitor"

    async def by_heartbeat_token(self, token: str) -> Monitor | None:
        return await self.session.scalar(select(Monitor).where(Monitor.heartbeat_token == token))

    async def dependencies_in(self, project_id: str) -> dict[str, list[str]]:
        """Every monitor of the project and the monitors it depends on."""
        rows = await self.session.execute(
            select(Monitor.id, Monitor.depends_on).where(Monitor.project_id == project_id)
        )
        return {monitor_id: list(parents or []) for monitor_id, parents in rows.all()}

    async def depending_on(self, monitor: Monitor) -> list[Monitor]:
        rows = await self.session.scalars(
            select(Monitor).where(
                Monitor.project_id == monitor.project_id, Monitor.id != monitor.id
            )
        )
        return [m for m in rows.all() if monitor.id in (m.depends_on or [])]

    @staticmethod
    @cache
    def count_of_owner() -> ColumnElement[int]:
        """How many monitors the owner of the project being read has, in all its projects: a
        figure for ``ProjectRepository.access_with``, so a create reads access and its plan
        limit with one statement (a count over the index on ``project_id``, no rows). Built
        once: an alias proxies every column of its table, a fifth of a create's time when it
        was built per request."""
        owned = aliased(Project)
        return (
            select(func.count())
            .select_from(Monitor)
            .join(owned, owned.id == Monitor.project_id)
            .where(owned.owner_id == Project.owner_id)
            .scalar_subquery()
        )

    async def delete(self, monitor: Monitor) -> None:
        await self.session.execute(
            delete(CheckResult).where(CheckResult.monitor_number == monitor_number(monitor.id))
        )
        for model in (DailyAggregate, HistogramBucket, HourlyCount):
            await self.session.execute(delete(model).where(model.monitor_id == monitor.id))
        await super().delete(monitor)

    async def active(self) -> Sequence[Monitor]:
        return await self.rows_of(select(Monitor).where(Monitor.is_active))

    async def using_region(self, region_id: str) -> Sequence[Monitor]:
        # region_ids is a JSON array of ids; matching its text with quotes finds an element.
        text = cast(Monitor.region_ids, String)
        return await self.rows_of(select(Monitor).where(text.like(f'%"{region_id}"%')))

    async def results(
        self,
        monitor_id: str,
        since: datetime | None,
        until: datetime | None,
        region_id: str | None,
        limit: int,
        offset: int,
    ) -> Listed[CheckResult]:
        query = (
            select(CheckResult)
            .options(*_WITH_IDS)
            .where(CheckResult.monitor_number == monitor_number(monitor_id))
        )
        if since is not None:
            query = query.where(CheckResult.checked_at >= since)
        if until is not None:
            query = query.where(CheckResult.checked_at <= until)
        if region_id is not None:
            query = query.where(CheckResult.region_number == region_number(region_id))
        return await self.page_of(
            query.order_by(CheckResult.checked_at.desc(), CheckResult.region_number),
            limit,
            offset,
        )

    async def latest(self, monitor_id: str, limit: int) -> Sequence[CheckResult]:
        """A monitor's last ``limit`` results, newest first (no count of all of them)."""
        return await self.rows_of(
            select(CheckResult)
            .options(*_WITH_IDS)
            .where(CheckResult.monitor_number == monitor_number(monitor_id))
            .order_by(CheckResult.checked_at.desc(), CheckResult.region_number)
            .limit(limit)
        )

    async def recent_results(
        self, monitor_ids: Sequence[str], since: datetime
    ) -> Sequence[CheckResult]:
        """Raw results of the last hours (bounded by the interval), for 24-hour figures."""
        return await self.rows_of(
            select(CheckResult)
            .options(*_WITH_IDS)
            .where(
                CheckResult.monitor_number.in_(monitor_numbers(monitor_ids)),
                CheckResult.checked_at >= since,
            )
        )

    async def visible_all(self, caller: User, project_id: str | None = None) -> Sequence[Monitor]:
        """Every monitor the caller lists (the dashboard), by ``readable_project_ids``; only
        those of ``project_id`` when given."""
        query = select(Monitor).where(self.readable(caller))
        if project_id is not None:
            query = query.where(Monitor.project_id == project_id)
        rows = await self.rows_of(query.order_by(Monitor.created_at, Monitor.id))
        if project_id is not None and not rows:
            await refuse_without_second_factor(self.session, caller, project_id)
        return rows

    async def listed(
        self, caller: User, project_id: str | None, status: str | None, search: str = ""
    ) -> Sequence[tuple[str, str, str, datetime | None, list[float | None] | None]]:
        """(id, name, status, last check, recent response times) of the monitors the caller
        lists, as ``visible_all`` finds them: the columns of a list, without whole monitors.
        ``search``: a part of the name, URL or host, in any case."""
        query = select(
            Monitor.id, Monitor.name, Monitor.status, Monitor.last_checked_at, Monitor.recent_ms
        ).where(self.readable(caller))
        if search:
            query = query.where(
                or_(
                    *(
                        column.icontains(search, autoescape=True)
                        for column in (Monitor.name, Monitor.url, Monitor.host)
                    )
                )
            )
        if project_id is not None:
            query = query.where(Monitor.project_id == project_id)
        if status is not None:
            query = query.where(Monitor.status == status)
        rows = await self.session.execute(query.order_by(Monitor.created_at, Monitor.id))
        found = [(i, n, s, t, r) for i, n, s, t, r in rows.all()]
        if project_id is not None and not found:
            await refuse_without_second_factor(self.session, caller, project_id)
        return found

    async def counts_since(
        self, monitor_ids: Sequence[str], since: datetime, until: datetime | None = None
    ) -> Sequence[tuple[str, str, str, int, datetime]]:
        """(monitor, region, status, checks, latest check) from ``since`` (until before
        ``until``, when given), counted in SQL."""
        query = _with_ids(
            select(
                Monitor.id,
                Region.id,
                CheckResult.status,
                func.count(),
                func.max(CheckResult.checked_at),
            )
        ).where(Monitor.id.in_(monitor_ids), CheckResult.checked_at >= since)
        if until is not None:
            query = query.where(CheckResult.checked_at < until)
        rows = await self.session.execute(query.group_by(Monitor.id, Region.id, CheckResult.status))
        return [(m, r, s, int(n), t) for m, r, s, n, t in rows.all()]

    async def hour_counts(
        self, monitor_ids: Sequence[str], first_hour: str
    ) -> list[tuple[str, int, int, int, int]]:
        """(monitor, total, up, down, degraded) of the hours from ``first_hour`` on, summed
        over hours and regions in SQL."""
        if not monitor_ids:
            return []
        hours = HourlyCount
        rows = await self.session.execute(
            select(
                hours.monitor_id,
                func.sum(hours.total),
                func.sum(hours.up),
                func.sum(hours.down),
                func.sum(hours.degraded),
            )
            .where(hours.monitor_id.in_(monitor_ids), hours.hour >= first_hour)
            .group_by(hours.monitor_id)
        )
        return [(m, int(t), int(u), int(d), int(g)) for m, t, u, d, g in rows.all()]

    async def response_times_since(
        self, monitor_ids: Sequence[str], since: datetime
    ) -> Sequence[tuple[str, str, float]]:
        rows = await self.session.execute(
            _with_ids(select(Monitor.id, Region.id, CheckResult.response_time_ms)).where(
                Monitor.id.in_(monitor_ids),
                CheckResult.checked_at >= since,
                CheckResult.response_time_ms.is_not(None),
            )
        )
        return [(m, r, float(ms)) for m, r, ms in rows.all() if ms is not None]

    async def timed_response_times(
        self, monitor_id: str, since: datetime
    ) -> list[tuple[datetime, float]]:
        """(checked at, response time) of a monitor's results since ``since``, all regions."""
        rows = await self.session.execute(
            select(CheckResult.checked_at, CheckResult.response_time_ms).where(
                CheckResult.monitor_number == monitor_number(monitor_id),
                CheckResult.checked_at >= since,
                CheckResult.response_time_ms.is_not(None),
            )
        )
        return [(at, float(ms)) for at, ms in rows.all() if ms is not None]

    async def day_buckets(self, monitor_id: str, first_day: str) -> list[tuple[str, int, int]]:
        """(day, bucket, count) of a monitor's response-time histograms from ``first_day`` on,
        summed over regions in SQL."""
        rows = await self.session.execute(
            select(HistogramBucket.day, HistogramBucket.bucket, func.sum(HistogramBucket.count))
            .where(HistogramBucket.monitor_id == monitor_id, HistogramBucket.day >= first_day)
            .group_by(HistogramBucket.day, HistogramBucket.bucket)
        )
        return [(day, int(bucket), int(count)) for day, bucket, count in rows.all()]

    async def aggregates(
        self, monitor_ids: Sequence[str], first_day: str
    ) -> Sequence[DailyAggregate]:
        return await self.rows_of(
            select(DailyAggregate).where(
                DailyAggregate.monitor_id.in_(monitor_ids), DailyAggregate.day >= first_day
            )
        )

    async def histogram_buckets(
        self, monitor_ids: Sequence[str], first_day: str
    ) -> Sequence[tuple[int, int]]:
        """(bucket, count) of the monitors' response times from ``first_day`` on, summed in SQL
        over days and regions: at most one row per bucket, however long the period."""
        rows = await self.session.execute(
            select(HistogramBucket.bucket, func.sum(HistogramBucket.count))
            .where(HistogramBucket.monitor_id.in_(monitor_ids), HistogramBucket.day >= first_day)
            .group_by(HistogramBucket.bucket)
        )
        return [(int(bucket), int(count)) for bucket, count in rows.all()]


class SlaRepository(Repository):
    """What an SLA report reads of some monitors: day counts, response-time buckets and
    incidents over whole UTC days, each summed in SQL (one row per bucket, one row of counts)."""

    async def monitor_ids(self, project_id: str) -> list[str]:
        rows = await self.session.scalars(
            select(Monitor.id).where(Monitor.project_id == project_id).order_by(Monitor.id)
        )
        return list(rows.all())

    async def counts(self, monitor_ids: Sequence[str], first_day: str, last_day: str) -> Counts:
        days = DailyAggregate
        row = (
            await self.session.execute(
                select(
                    *(
                        func.coalesce(func.sum(getattr(days, f.name)), 0)
                        for f in dataclass_fields(Counts)
                    )
                ).where(days.monitor_id.in_(monitor_ids), days.day.between(first_day, last_day))
            )
        ).one()
        return Counts(*(int(value) for value in row))

    async def buckets(
        self, monitor_ids: Sequence[str], first_day: str, last_day: str
    ) -> dict[int, int]:
        rows = await self.session.execute(
            select(HistogramBucket.bucket, func.sum(HistogramBucket.count))
            .where(
                HistogramBucket.monitor_id.in_(monitor_ids),
                HistogramBucket.day.between(first_day, last_day),
            )
            .group_by(HistogramBucket.bucket)
        )
        return {int(bucket): int(count) for bucket, count in rows.all()}

    async def incidents(
        self, monitor_ids: Sequence[str], since: datetime, until: datetime
    ) -> list[tuple[datetime, datetime | None]]:
        """(started, resolved) of the monitors' incidents that started in [since, until)."""
        rows = await self.session.execute(
            select(Incident.started_at, Incident.resolved_at).where(
                Incident.monitor_id.in_(monitor_ids),
                Incident.started_at >= since,
                Incident.started_at < until,
            )
        )
        return [(started, resolved) for started, resolved in rows.all()]


class RegionRepository(Repository):
    async def all(self) -> Sequence[Region]:
        return await self.rows_of(select(Region).order_by(Region.created_at, Region.code))

    async def get(self, region_id: str) -> Region | None:
        return await self.session.get(Region, region_id)

    async def online_ids(self, since: datetime) -> tuple[str, ...]:
        """Regions whose workers reported at or after ``since``."""
        rows = await self.session.scalars(select(Region.id).where(Region.last_seen_at >= since))
        return tuple(sorted(rows.all()))

    async def by_code(self, code: str) -> Region | None:
        return await self.session.scalar(select(Region).where(Region.code == code))

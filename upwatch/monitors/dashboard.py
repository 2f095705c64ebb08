"""Figures over many monitors at once: the dashboard and a monitor's regions (seed 21-23)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.engine.status import decode_state, region_status, settings_of
from upwatch.models import DailyAggregate, HourlyCount, Monitor, User
from upwatch.monitors import statistics
from upwatch.monitors.repository import MonitorRepository, RegionRepository
from upwatch.monitors.schemas import (
    DashboardPerformanceItem,
    DashboardUptimeItem,
    MonitorRegionsOut,
    MonitorRegionStats,
)
from upwatch.monitors.statistics import Figures


async def last_24h(
    session: AsyncSession, monitor_ids: Sequence[str], now: datetime
) -> tuple[dict[tuple[str, str], Figures], dict[tuple[str, str], datetime]]:
    """Per (monitor, region): the last 24 hours' figures and latest check time."""
    repository = MonitorRepository(session)
    since = statistics.since_24h(now)
    counts: dict[tuple[str, str], list[tuple[str, int]]] = defaultdict(list)
    latest: dict[tuple[str, str], datetime] = {}
    for monitor_id, region_id, status, checks, at in await repository.counts_since(
        monitor_ids, since
    ):
        key = (monitor_id, region_id)
        counts[key].append((status, checks))
        latest[key] = max(latest.get(key, at), at)
    times: dict[tuple[str, str], list[float]] = defaultdict(list)
    for monitor_id, region_id, ms in await repository.response_times_since(monitor_ids, since):
        times[(monitor_id, region_id)].append(ms)
    figures = {key: statistics.from_counts(counts[key], times.get(key, [])) for key in counts}
    return figures, latest


async def counted_24h(
    session: AsyncSession, monitor_ids: Sequence[str], now: datetime
) -> dict[str, Figures]:
    """Each monitor's last 24 hours, its regions together, from counts alone (no response
    time): the whole hours from the stored hour counts, and the raw results only of the
    part of an hour where the window begins. Exact, and it reads at most 25 rows per monitor
    and region plus an hour of results, however often the monitors are checked."""
    repository = MonitorRepository(session)
    since = statistics.since_24h(now)
    whole_from = since.replace(minute=0, second=0, microsecond=0) + timedelta(hours=1)
    counts: dict[str, list[tuple[str, int]]] = defaultdict(list)
    for monitor_id, _region, status, checks, _at in await repository.counts_since(
        monitor_ids, since, whole_from
    ):
        counts[monitor_id].append((status, checks))
    for monitor_id, _total, up, down, degraded in await repository.hour_counts(
        monitor_ids, HourlyCount.key_of(whole_from)
    ):
        counts[monitor_id] += [("up", up), ("down", down), ("degraded", degraded)]
    return {m: statistics.from_counts(parts, []) for m, parts in counts.items()}


async def uptime_24h(
    session: AsyncSession, monitor_ids: Sequence[str], now: datetime
) -> dict[str, float | None]:
    return {m: f.uptime for m, f in (await counted_24h(session, monitor_ids, now)).items()}


def _merge(parts: Sequence[Figures]) -> Figures:
    total = Figures()
    for part in parts:
        total.merge(part)
    return total


def _region_status(monitor: Monitor, region_id: str) -> str:
    if not monitor.is_active:
        return "paused"
    region = decode_state(monitor).regions.get(region_id)
    return region_status(region, settings_of(monitor, (region_id,)))


async def monitor_regions(
    session: AsyncSession, monitor: Monitor, online: Sequence[str], now: datetime
) -> MonitorRegionsOut:
    regions = {r.id: r for r in await RegionRepository(session).all()}
    figures, latest = await last_24h(session, [monitor.id], now)
    wanted = list(monitor.region_ids or online)
    wanted += [r for (_m, r) in figures if r not in wanted]
    items = []
    for region_id in wanted:
        region = regions.get(region_id)
        part = figures.get((monitor.id, region_id), Figures())
        items.append(
            MonitorRegionStats(
                regionId=region_id,
                name=region.name if region else region_id,
                code=region.code if region else region_id,
                status=_region_status(monitor, region_id),
                lastCheckedAt=latest.get((monitor.id, region_id)),
                uptimePercentage=part.uptime,
                avgResponseTimeMs=part.average_ms,
                p95ResponseTimeMs=part.percentile(0.95),
                totalChecks=part.total,
            )
        )
    return MonitorRegionsOut(monitorId=monitor.id, regions=items)


async def dashboard(
    session: AsyncSession,
    caller: User,
    now: datetime,
    project_id: str | None = None,
    *,
    performance_wanted: bool = True,
    window: slice | None = None,
) -> tuple[list[DashboardUptimeItem], list[DashboardPerformanceItem]]:
    """The uptime and performance rows of the caller's monitors (``window``: of those, by
    name, only that part: the 24 hours' response times are read per result). Without
    ``performance_wanted`` the last day is read as grouped counts alone (the uptime rows need
    no response time), and the performance rows are left empty."""
    repository = MonitorRepository(session)
    monitors = await repository.visible_all(caller, project_id)
    if window is not None:
        monitors = sorted(monitors, key=lambda m: (m.name.lower(), m.id))[window]
    ids = [m.id for m in monitors]
    per_monitor: dict[str, list[Figures]] = defaultdict(list)
    if performance_wanted:
        figures, _latest = await last_24h(session, ids, now)
        for (monitor_id, _region), part in figures.items():
            per_monitor[monitor_id].append(part)
    else:
        for monitor_id, counted in (await counted_24h(session, ids, now)).items():
            per_monitor[monitor_id].append(counted)
    days: dict[str, dict[str, Figures]] = {"7d": {}, "30d": {}}
    for period in days:
        by_monitor: dict[str, list[DailyAggregate]] = defaultdict(list)
        for aggregate in await repository.aggregates(ids, statistics.first_day(period, now)):
            by_monitor[aggregate.monitor_id].append(aggregate)
        days[period] = {m: statistics.from_aggregates(a) for m, a in by_monitor.items()}
    uptime, performance = [], []
    for monitor in monitors:
        day = _merge(per_monitor.get(monitor.id, []))
        # Both rows name the monitor alike.
        named: dict[str, Any] = {
            "monitorId": monitor.id,
            "name": monitor.name,
            "projectId": monitor.project_id,
        }
        uptime.append(
            DashboardUptimeItem(
                **named,
                status=monitor.status,
                uptime24h=day.uptime,
                uptime7d=days["7d"].get(monitor.id, Figures()).uptime,
                uptime30d=days["30d"].get(monitor.id, Figures()).uptime,
                lastCheckedAt=monitor.last_checked_at,
            )
        )
        if not performance_wanted:
            continue
        performance.append(
            DashboardPerformanceItem(
                **named,
                avgResponseTimeMs=day.average_ms,
                p50ResponseTimeMs=day.percentile(0.5),
                p95ResponseTimeMs=day.percentile(0.95),
                p99ResponseTimeMs=day.percentile(0.99),
                checks24h=day.total,
            )
        )
    return uptime, performance

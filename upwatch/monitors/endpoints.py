"""Monitors, check results, statistics, regions and heartbeats (contract §7; seed 23, 24)."""

from __future__ import annotations

import csv
import io
from dataclasses import dataclass
from datetime import timedelta
from typing import Annotated, Any, Literal

from fastapi import Depends, Path, Query, Response

from upwatch.callers.access import ProjectPageParams
from upwatch.callers.dependencies import AdminUser, CurrentUser
from upwatch.dependencies import RuntimeDep, Session, WritingSession
from upwatch.kit.errors import Conflict, problem_responses
from upwatch.kit.inputs import Day
from upwatch.kit.pagination import IdFilter, PageParams
from upwatch.kit.routes import SIGNED_IN, Routes
from upwatch.kit.schemas import DeletedOut
from upwatch.models import CheckResult, Monitor, Region
from upwatch.monitors import dashboard
from upwatch.monitors.repository import MonitorRepository, RegionRepository
from upwatch.monitors.schemas import (
    ApdexOut,
    CheckResultOut,
    DashboardPerformanceItem,
    DashboardUptimeItem,
    ErrorBudgetOut,
    MonitorCreate,
    MonitorOut,
    MonitorRegionsOut,
    MonitorUpdate,
    Period,
    QueryTime,
    RegionIn,
    RegionOut,
    SlaOut,
    StatsOut,
)
from upwatch.monitors.service import MonitorService, admin_region_event
from upwatch.monitors.sla_reports import SlaPeriod, SlaService, SlaSlice
from upwatch.runtime import Runtime

reports_router = Routes("/projects", "projects")
router = Routes("/monitors", "monitors")
regions = Routes("/regions", "regions", SIGNED_IN)
board = Routes("/dashboard", "dashboard", SIGNED_IN)
heartbeats = Routes("/heartbeat", "heartbeats", (400, 404, 500))


def _monitors(session: Session, runtime: RuntimeDep) -> MonitorService:
    return MonitorService(session, runtime)


# For the handlers that need the service alone.
Monitors = Annotated[MonitorService, Depends(_monitors)]


def monitor_out(monitor: Monitor, runtime: Runtime) -> MonitorOut:
    return MonitorOut.model_validate(monitor, context={"public_url": runtime.settings.public_url})


def result_out(result: CheckResult) -> CheckResultOut:
    return CheckResultOut.model_validate(result)


@router.creates("createMonitor", 402, 409)
async def create_monitor(
    body: MonitorCreate, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> MonitorOut:
    """Create a monitor in a project the caller belongs to (limits `monitorCount` and
    `checkFrequencyMinutes`). Its first check runs within a few seconds. A `url` or `host` at
    an internal address is refused (422, contract §7), and so is one whose host is no address
    or domain name DNS can look up (`a..b`, `xn--a.com`); `regionIds` must name existing
    regions. Values of `Authorization`, `Cookie`, `Proxy-Authorization` and of the headers
    named in `secretHeaders` are masked in every answer."""
    return monitor_out(await MonitorService(session, runtime).create(user, body), runtime)


@router.get("", operation_id="listMonitors")
async def list_monitors(
    user: CurrentUser,
    session: Session,
    runtime: RuntimeDep,
    page: ProjectPageParams,
) -> list[MonitorOut]:
    """Monitors in the caller's projects, newest first; `projectId` narrows to one project."""
    return [monitor_out(m, runtime) for m in await page.of(MonitorRepository(session), user)]


@router.get("/{id}", operation_id="getMonitor")
async def get_monitor(
    id: str, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> MonitorOut:
    return monitor_out(await MonitorRepository(session).get_visible(user, id), runtime)


@router.updates("updateMonitor", 402, 409)
async def update_monitor(
    id: str, body: MonitorUpdate, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> MonitorOut:
    """Change a monitor; fields left out stay as they are, and `isActive: false` pauses it,
    `true` resumes it (checked within a few seconds). Rules the schema cannot state, since
    they depend on the monitor's type (contract §7), answer 422 naming the field: what the
    type checks may not be null (`url` of http, `host` and `port` of tcp, `host` of dns and
    tls); a `url` or `host` at an internal address, or whose host is no address or domain
    name, is refused; `regionIds` must name existing
    regions; `timeoutSeconds` must stay below `intervalSeconds`. Secret header values are
    masked in the answer; sent back masked they keep the stored value, but not when `url`
    moves to another server (give the secret again)."""
    return monitor_out(await MonitorService(session, runtime).update(user, id, body), runtime)


@router.deletes("deleteMonitor")
async def delete_monitor(id: str, user: CurrentUser, monitors: Monitors) -> DeletedOut:
    """Delete a monitor with its results and statistics."""
    await monitors.delete(user, id)
    return DeletedOut(id=id)


@router.post("/{id}/check", operation_id="checkMonitorNow", responses=problem_responses(409, 503))
async def check_now(
    id: str, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> CheckResultOut:
    """Run one check now; it is stored and counts toward the status like a scheduled one.

    In a distributed deployment the check runs in a worker of one of the monitor's regions
    that is online, and the answer waits for its stored result: 503 with Retry-After when no
    such worker is online, or when the result is not stored within the check's timeout plus
    about 10 s (it is stored later and listed under the monitor's checks)."""
    return result_out(await MonitorService(session, runtime).check_now(user, id))


@router.get("/{id}/checks", operation_id="listMonitorChecks")
async def list_checks(
    id: str,
    user: CurrentUser,
    session: Session,
    runtime: RuntimeDep,
    page: PageParams,
    from_: Annotated[QueryTime | None, Query(alias="from")] = None,
    to: Annotated[QueryTime | None, Query()] = None,
    regionId: IdFilter = None,
) -> list[CheckResultOut]:
    """Stored check results, newest first, optionally within [from, to] and for one region."""
    monitor = await MonitorRepository(session).get_visible(user, id)
    items, total = await MonitorRepository(session).results(
        monitor.id, from_, to, regionId, page.limit, page.offset
    )
    page.total(total)
    return [result_out(r) for r in items]


@router.get("/{id}/stats", operation_id="monitorStats")
async def monitor_stats(
    id: str,
    user: CurrentUser,
    monitors: Monitors,
    period: Period = "24h",
) -> StatsOut:
    """Uptime and response times over the period: 24h from stored results, 7d/30d/90d from
    per-day aggregates (whole UTC days, today included)."""
    monitor, figures = await monitors.stats(user, id, period)
    return StatsOut(
        uptimePercentage=figures.uptime,
        totalChecks=figures.total,
        upChecks=figures.up + figures.degraded,
        downChecks=figures.down,
        avgResponseTimeMs=figures.average_ms,
        p50ResponseTimeMs=figures.percentile(0.5),
        p95ResponseTimeMs=figures.percentile(0.95),
        p99ResponseTimeMs=figures.percentile(0.99),
        lastCheckedAt=monitor.last_checked_at,
        status=monitor.status,
    )


SlaFrom = Annotated[
    Day | None, Query(alias="from", description="First UTC day; default: 29 days before to")
]
SlaTo = Annotated[Day | None, Query(description="Last UTC day, included; default: today")]
SlaTarget = Annotated[float, Query(gt=0, le=100, description="Uptime objective in %")]
ApdexT = Annotated[int, Query(ge=1, le=600_000, description="Apdex threshold T in ms")]
SlaFormat = Annotated[
    Literal["json", "csv"],
    Query(
        description="csv: a row per calendar month of the period, then one for the whole "
        "period (the monthly report)"
    ),
]
SLA_RESPONSES: dict[int | str, dict[str, Any]] = {
    200: {"content": {"text/csv": {"schema": {"type": "string"}}}}
}
CSV_COLUMNS = [
    "from",
    "to",
    "target",
    "uptimePercentage",
    "downtimeMinutes",
    "maintenanceMinutes",
    "incidents",
    "mttrMinutes",
    "mtbfMinutes",
    "allowedMinutes",
    "usedMinutes",
    "remainingMinutes",
    "apdexThreshold",
    "apdexScore",
    "satisfied",
    "tolerating",
    "frustrated",
]


@dataclass(frozen=True, slots=True)
class SlaQuery:
    period: SlaPeriod
    as_csv: bool


def sla_query(
    runtime: RuntimeDep,
    from_: SlaFrom = None,
    to: SlaTo = None,
    target: SlaTarget = 99.9,
    apdexT: ApdexT = 500,
    format: SlaFormat = "json",
) -> SlaQuery:
    """The query parameters both SLA routes take."""
    last = to or runtime.clock.now().date()
    period = SlaPeriod(from_ or last - timedelta(days=29), last, target, apdexT)
    return SlaQuery(period, format == "csv")


SlaQueryDep = Annotated[SlaQuery, Depends(sla_query)]


def sla_out(part: SlaSlice, target: float) -> SlaOut:
    figures = part.report
    return SlaOut(
        from_=part.first,
        to=part.last,
        target=target,
        uptimePercentage=figures.uptime_percentage,
        downtimeMinutes=figures.downtime_minutes,
        maintenanceMinutes=figures.maintenance_minutes,
        incidents=figures.incidents,
        mttrMinutes=figures.mttr_minutes,
        mtbfMinutes=figures.mtbf_minutes,
        errorBudget=ErrorBudgetOut(
            allowedMinutes=figures.error_budget.allowed_minutes,
            usedMinutes=figures.error_budget.used_minutes,
            remainingMinutes=figures.error_budget.remaining_minutes,
        ),
        apdex=ApdexOut(
            threshold=figures.apdex.threshold,
            score=figures.apdex.score,
            satisfied=figures.apdex.satisfied,
            tolerating=figures.apdex.tolerating,
            frustrated=figures.apdex.frustrated,
        ),
    )


def sla_answer(
    slices: list[SlaSlice], period: SlaPeriod, name: str, as_csv: bool
) -> SlaOut | Response:
    """JSON: the whole period (the last slice). CSV: every slice, one row each."""
    if not as_csv:
        return sla_out(slices[-1], period.target)
    sheet = io.StringIO()
    rows = csv.writer(sheet, lineterminator="\r\n")
    rows.writerow(CSV_COLUMNS)
    for part in slices:
        out = sla_out(part, period.target).model_dump(mode="json", by_alias=True)
        flat = {**out, **out.pop("errorBudget"), **out.pop("apdex")}
        flat["apdexThreshold"], flat["apdexScore"] = flat["threshold"], flat["score"]
        rows.writerow("" if flat[c] is None else flat[c] for c in CSV_COLUMNS)
    filename = f"sla-{name}-{period.first}-{period.last}.csv"
    return Response(
        sheet.getvalue(),
        media_type="text/csv; charset=utf-8",
        headers={"Content-Disposition": f'attachment; filename="{filename}"'},
    )


@router.get("/{id}/sla", operation_id="monitorSla", response_model=SlaOut, responses=SLA_RESPONSES)
async def monitor_sla(
    id: str, query: SlaQueryDep, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> SlaOut | Response:
    """SLA figures over whole UTC days (at most 400), answered from the daily aggregates, so a
    year costs what a day does. Checks made during maintenance windows are left out of the
    uptime, and the windows' time out of the period; downtime and the error budget count the
    period up to now. Apdex counts each histogram bucket by its upper edge (docs/api.md)."""
    service = SlaService(session, runtime)
    slices = await service.of_monitor(user, id, query.period, query.as_csv)
    return sla_answer(slices, query.period, id, query.as_csv)


@reports_router.get(
    "/{id}/sla", operation_id="projectSla", response_model=SlaOut, responses=SLA_RESPONSES
)
async def project_sla(
    id: str, query: SlaQueryDep, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> SlaOut | Response:
    """The SLA of a project: checks, response times and incidents of all its monitors
    together; maintenance minutes are the mean of its monitors' (a window counts for the
    monitors it covers). Otherwise as `GET /monitors/{id}/sla`."""
    service = SlaService(session, runtime)
    slices = await service.of_project(user, id, query.period, query.as_csv)
    return sla_answer(slices, query.period, id, query.as_csv)


@router.get("/{id}/regions", operation_id="monitorRegions")
async def monitor_regions(
    id: str, user: CurrentUser, session: Session, runtime: RuntimeDep
) -> MonitorRegionsOut:
    """Per region over the last 24 hours: status, last check, uptime, response times."""
    monitor = await MonitorRepository(session).get_visible(user, id)
    now = runtime.clock.now()
    online = await RegionRepository(session).online_ids(
        now - timedelta(seconds=runtime.settings.region_online_seconds)
    )
    return await dashboard.monitor_regions(session, monitor, online, now)


@board.get("/uptime", operation_id="dashboardUptime")
async def dashboard_uptime(
    user: CurrentUser, session: Session, runtime: RuntimeDep, projectId: IdFilter = None
) -> list[DashboardUptimeItem]:
    """One item per monitor the caller can see: status and uptime over 24 h, 7 and 30 days;
    `projectId` narrows to one project."""
    uptime, _ = await dashboard.dashboard(
        session, user, runtime.clock.now(), projectId, performance_wanted=False
    )
    return uptime


@board.get("/performance-metrics", operation_id="dashboardPerformance")
async def dashboard_performance(
    user: CurrentUser, session: Session, runtime: RuntimeDep, projectId: IdFilter = None
) -> list[DashboardPerformanceItem]:
    """One item per monitor the caller can see: response times over the last 24 hours;
    `projectId` narrows to one project."""
    _, performance = await dashboard.dashboard(session, user, runtime.clock.now(), projectId)
    return performance


def region_out(region: Region, runtime: Runtime) -> RegionOut:
    since = runtime.clock.now() - timedelta(seconds=runtime.settings.region_online_seconds)
    return RegionOut.model_validate(region, context={"since": since})


@regions.get("", operation_id="listRegions")
async def list_regions(
    _user: CurrentUser, session: Session, runtime: RuntimeDep
) -> list[RegionOut]:
    """Every region, and whether a worker for it is online."""
    return [region_out(r, runtime) for r in await RegionRepository(session).all()]


@regions.creates("createRegion", 403, 409)
async def create_region(
    body: RegionIn, admin: AdminUser, session: Session, runtime: RuntimeDep
) -> RegionOut:
    """Add a region (admin); it is online once a worker for it reports."""
    repository = RegionRepository(session)
    if await repository.by_code(body.code) is not None:
        raise Conflict("a region with this code exists")
    region = await repository.add(
        Region(code=body.code, name=body.name, builtin=False, created_at=runtime.clock.now())
    )
    await admin_region_event(session, runtime, admin, region, "create_region")
    return region_out(region, runtime)


@regions.deletes("deleteRegion", 403, 404, 409)
async def delete_region(id: str, admin: AdminUser, monitors: Monitors) -> DeletedOut:
    """Delete a region (admin); it is removed from every monitor. `local` cannot go (409)."""
    await monitors.delete_region(admin, id)
    return DeletedOut(id=id)


@heartbeats.post("/{token}", operation_id="heartbeatPost")
async def heartbeat_post(token: str, session: Session, runtime: RuntimeDep) -> dict[str, bool]:
    """The monitored job reports in (no bearer token: the URL is the secret)."""
    await MonitorService(session, runtime).ping(token, runtime.clock.now())
    return {"ok": True}


@heartbeats.get("/{token}", operation_id="heartbeatGet")
async def heartbeat_get(
    token: str, session: WritingSession, runtime: RuntimeDep
) -> dict[str, bool]:
    """The same as POST, for jobs that can only fetch a URL."""
    return await heartbeat_post(token, session, runtime)


JobReport = Annotated[
    Literal["start", "fail"],
    Path(
        description="start: the job began (unless a success ping follows within the grace, "
        "the monitor turns down); fail: the job failed (down at the next evaluation, until "
        "a success ping)"
    ),
]


@heartbeats.post(
    "/{token}/{report}", operation_id="heartbeatReportPost", responses=problem_responses(422)
)
async def heartbeat_report_post(
    token: str, report: JobReport, session: Session, runtime: RuntimeDep
) -> dict[str, bool]:
    """The job reports that it started or that it failed."""
    await MonitorService(session, runtime).ping(token, runtime.clock.now(), report)
    return {"ok": True}


@heartbeats.get(
    "/{token}/{report}", operation_id="heartbeatReportGet", responses=problem_responses(422)
)
async def heartbeat_report_get(
    token: str, report: JobReport, session: WritingSession, runtime: RuntimeDep
) -> dict[str, bool]:
    """The same as POST, for jobs that can only fetch a URL."""
    return await heartbeat_report_post(token, report, session, runtime)

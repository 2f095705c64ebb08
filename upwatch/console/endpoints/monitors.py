"""The monitors list, a new monitor, a monitor's page and "check now"."""

from __future__ import annotations

from datetime import timedelta
from typing import Any, Final
from urllib.parse import urlencode

from fastapi import APIRouter
from fastapi.responses import Response

from upwatch.console import charts
from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import Answer, FragmentPage, Page, SignedInPage
from upwatch.console.endpoints.projects import projects_of
from upwatch.console.render import local_time, percent, sparkline, zone_of
from upwatch.kit.errors import ProblemError
from upwatch.kit.languages import N_
from upwatch.models import Monitor
from upwatch.monitors import dashboard, statistics
from upwatch.monitors.repository import MonitorRepository, RegionRepository
from upwatch.monitors.schemas import MonitorRegionStats
from upwatch.monitors.service import MonitorService
from upwatch.statuspages.repository import StatusPageRepository

SORTS: Final = ("name", "status", "uptime")
STATUS_ORDER: Final = {"down": 0, "degraded": 1, "pending": 2, "up": 3, "paused": 4}
# A monitor's (and a check's) status as the pages name it, translated where shown (the
# templates' ``_(status)``); the value itself stays in the CSS classes and the filters.
STATUS_WORDS: Final = {
    "up": N_("up"),
    "down": N_("down"),
    "degraded": N_("degraded"),
    "paused": N_("paused"),
    "pending": N_("pending"),
}
RECENT_CHECKS: Final = 20

router = APIRouter(prefix="/app")


async def _monitor_rows(page: Page, query: dict[str, str]) -> list[dict[str, Any]]:
    repository = MonitorRepository(page.session)
    monitors = await repository.listed(
        page.user, query["project"] or None, query["status"] or None, query["q"]
    )
    ids = [monitor_id for monitor_id, *_rest in monitors]
    uptime = await dashboard.uptime_24h(page.session, ids, page.runtime.clock.now())
    # Each cell's text made here, not by template calls: 250 rows of them were a third of
    # the page's time (bench/console.py).
    zone = page.zone
    rows = [
        {
            "id": monitor_id,
            "name": name,
            "status": status,
            "checked": local_time(last_checked_at, zone, page.words),
            "uptime24h": uptime.get(monitor_id),
            "uptime": percent(uptime.get(monitor_id), page.words),
            "points": sparkline(recent or []),
        }
        for monitor_id, name, status, last_checked_at, recent in monitors
    ]
    sort = query["sort"]
    if sort == "status":
        rows.sort(key=lambda r: (STATUS_ORDER.get(str(r["status"]), 9), str(r["name"]).lower()))
    elif sort == "uptime":
        rows.sort(key=lambda r: (r["uptime24h"] is None, r["uptime24h"] or 0.0))
    else:
        rows.sort(key=lambda r: str(r["name"]).lower())
    return rows


def _monitor_query(page: Page) -> dict[str, str]:
    params = page.request.query_params
    sort = params.get("sort", "name")
    return {
        "project": params.get("project", ""),
        "status": params.get("status", ""),
        "sort": sort if sort in SORTS else "name",
        "q": params.get("q", "").strip()[:100],
    }


@router.get("/monitors", openapi_extra=offers("listMonitors"))
async def monitors_page(page: SignedInPage) -> Response:
    query = _monitor_query(page)
    return page.html(
        "monitors.html",
        title=page.gettext("Monitors"),
        section="monitors",
        query=query,
        query_string=urlencode(query),
        filtered=bool(query["project"] or query["status"] or query["q"]),
        projects=await projects_of(page),
        rows=await _monitor_rows(page, query),
    )


@router.get("/monitors/rows")
async def monitor_rows(page: FragmentPage) -> Response:
    query = _monitor_query(page)
    rows = await _monitor_rows(page, query)
    filtered = bool(query["project"] or query["status"] or query["q"])
    return page.fragment("_monitor_rows.html", rows=rows, filtered=filtered)


# ---- the monitor form: new, clone, edit (console/monitor_form.py) ----


async def _monitor_state(page: Page, monitor_id: str) -> dict[str, Any]:
    try:
        monitor = await MonitorRepository(page.session).get_visible(page.user, monitor_id)
    except ProblemError:
        page.not_found(N_("monitor"))
    repository = MonitorRepository(page.session)
    checks = await repository.latest(monitor.id, RECENT_CHECKS)
    now = page.runtime.clock.now()
    uptime = await dashboard.uptime_24h(page.session, [monitor.id], now)
    return {
        "monitor": monitor,
        "checks": checks,
        "uptime": uptime.get(monitor.id),
        # From the newest recent check that read a certificate: a failed handshake reads none.
        "certificate_days": next(
            (c.certificate_days for c in checks if c.certificate_days is not None), None
        ),
    }


async def _history(page: Page, monitor_id: str, span: str) -> dict[str, Any]:
    """The chart over ``span`` (hours from raw results for 24 h, days from the stored
    histograms beyond) and the 90 day bars (from the day counts)."""
    repository = MonitorRepository(page.session)
    now = page.runtime.clock.now()
    if span == "24h":
        times = await repository.timed_response_times(monitor_id, statistics.since_24h(now))
        points = charts.hourly(times, now, zone_of(page.zone))
    else:
        days = charts.RANGES[span]
        first = now.date() - timedelta(days=days - 1)
        buckets = await repository.day_buckets(monitor_id, first.isoformat())
        points = charts.daily(buckets, first, days)
    first_bar = now.date() - timedelta(days=charts.BAR_DAYS - 1)
    counts = await StatusPageRepository(page.session).day_counts(
        [monitor_id], first_bar.isoformat()
    )
    by_day = {day: (total, up, degraded, down) for _m, day, total, up, degraded, down in counts}
    return {
        "span": span,
        "spans": list(charts.RANGES),
        "chart": charts.chart(points, page.words),
        "bars": charts.day_bars(by_day, now.date(), page.words),
    }


async def _regions(page: Page, monitor: Monitor) -> list[MonitorRegionStats]:
    """Each region's last 24 hours, as ``GET /monitors/{id}/regions`` gives them; the
    built-in region's name (ours, not an administrator's) in the visitor's language."""
    now = page.runtime.clock.now()
    repository = RegionRepository(page.session)
    online = await repository.online_ids(
        now - timedelta(seconds=page.runtime.settings.region_online_seconds)
    )
    builtin = {r.id for r in await repository.all() if r.builtin}
    regions = (await dashboard.monitor_regions(page.session, monitor, online, now)).regions
    return [
        r.model_copy(update={"name": page.gettext(r.name)}) if r.regionId in builtin else r
        for r in regions
    ]


@router.get(
    "/monitors/{monitor_id}",
    openapi_extra=offers("getMonitor", "listMonitorChecks", "monitorRegions"),
)
async def monitor_page(monitor_id: str, page: SignedInPage) -> Response:
    state = await _monitor_state(page, monitor_id)
    span = page.request.query_params.get("range", "24h")
    history = await _history(page, monitor_id, span if span in charts.RANGES else "24h")
    regions = await _regions(page, state["monitor"])
    title = state["monitor"].name
    return page.html(
        "monitor.html", title=title, section="monitors", regions=regions, **state, **history
    )


@router.get("/monitors/{monitor_id}/state")
async def monitor_state(monitor_id: str, page: FragmentPage) -> Response:
    try:
        state = await _monitor_state(page, monitor_id)
    except Answer:
        return Response(status_code=404)
    return page.fragment("_monitor_state.html", **state)


@router.post("/monitors/{monitor_id}/check", openapi_extra=offers("checkMonitorNow"))
async def check_monitor(monitor_id: str, page: SignedInPage) -> Response:
    async with page.button(N_("monitor"), f"/app/monitors/{monitor_id}", N_("Not checked")):
        result = await MonitorService(page.session, page.runtime).check_now(page.user, monitor_id)
    status = page.gettext(STATUS_WORDS.get(result.status, result.status))
    if result.status_code:
        said = page.gettext("Checked now: %(status)s, HTTP %(code)s") % {
            "status": status,
            "code": result.status_code,
        }
    else:
        said = page.gettext("Checked now: %(status)s") % {"status": status}
    return page.redirect(f"/app/monitors/{monitor_id}", said)

"""The dashboard: the landing page after sign-in (seed 21, 22)."""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter
from fastapi.responses import Response

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import SignedInPage
from upwatch.incidents.repository import IncidentRepository
from upwatch.kit.languages import N_
from upwatch.models import Incident
from upwatch.monitors import dashboard
from upwatch.monitors.repository import MonitorRepository
from upwatch.retention.service import RetentionService

router = APIRouter(prefix="/app")

# Monitors a page of the table shows (sorted by name).
PER_PAGE = 50
# The order the status counts are shown in: what needs a look first.
STATUSES = ("down", "degraded", "pending", "up", "paused")
# The kinds of data a retention notice names, translated where shown ("12 check results
# records go on ..."); the statuses are named as in endpoints/monitors.py.
DATA_WORDS = {
    "check_results": N_("check results"),
    "monitoring_data": N_("monitoring data"),
    "alert_history": N_("alert history"),
    "incident_data": N_("incident data"),
}


@router.get(
    "/dashboard",
    openapi_extra=offers("dashboardUptime", "dashboardPerformance", "listRetentionNotifications"),
)
async def dashboard_page(page: SignedInPage) -> Response:
    listed = await MonitorRepository(page.session).listed(page.user, None, None)
    counts: Counter[str] = Counter(status for _id, _name, status, _at, _ms in listed)
    pages = max(1, -(-len(listed) // PER_PAGE))
    number = min(max(_number(page.request.query_params.get("page")), 1), pages)
    # One pass gives both the uptime and the performance rows of a page of monitors
    # (batched queries; each monitor's day of response times is read, so a page at a time).
    uptime, performance = await dashboard.dashboard(
        page.session,
        page.user,
        page.runtime.clock.now(),
        window=slice((number - 1) * PER_PAGE, number * PER_PAGE),
    )
    incidents = IncidentRepository(page.session)
    _open, open_incidents = await incidents.list_visible(
        page.user, 1, 0, where=[Incident.status != "resolved"]
    )
    notices = await RetentionService(page.session, page.runtime).upcoming(page.user)
    return page.html(
        "dashboard.html",
        title=page.gettext("Dashboard"),
        section="dashboard",
        rows=zip(uptime, performance, strict=True),
        monitors=len(listed),
        number=number,
        per_page=PER_PAGE,
        pages=pages,
        counts=[(status, counts.get(status, 0)) for status in STATUSES],
        open_incidents=open_incidents,
        notices=notices,
        data_words=DATA_WORDS,
    )


def _number(text: str | None) -> int:
    return int(text) if text and text.isdigit() and len(text) < 7 else 1

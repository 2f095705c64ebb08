"""The dashboard: the landing page after sign-in (seed 21, 22)."""

from __future__ import annotations

from collections import Counter

from fastapi import APIRouter
from fastapi.responses import Response

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import SignedInPage
from upwatch.incidents.repository import IncidentRepository
from upwatch.models import Incident
from upwatch.monitors import dashboard
from upwatch.retention.service import RetentionService

router = APIRouter(prefix="/app")

# The order the status counts are shown in: what needs a look first.
STATUSES = ("down", "degraded", "pending", "up", "paused")


@router.get(
    "/dashboard",
    openapi_extra=offers("dashboardUptime", "dashboardPerformance", "listRetentionNotifications"),
)
async def dashboard_page(page: SignedInPage) -> Response:
    # One pass gives both the uptime and the performance rows (batched queries).
    uptime, performance = await dashboard.dashboard(
        page.session, page.user, page.runtime.clock.now()
    )
    counts: Counter[str] = Counter(item.status for item in uptime)
    incidents = IncidentRepository(page.session)
    _open, open_incidents = await incidents.list_visible(
        page.user, 1, 0, where=[Incident.status != "resolved"]
    )
    notices = await RetentionService(page.session, page.runtime).upcoming(page.user)
    return page.html(
        "dashboard.html",
        title="Dashboard",
        section="dashboard",
        rows=zip(uptime, performance, strict=True),
        monitors=len(uptime),
        counts=[(status, counts.get(status, 0)) for status in STATUSES],
        open_incidents=open_incidents,
        notices=notices,
    )

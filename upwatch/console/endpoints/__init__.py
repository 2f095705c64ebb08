"""The web console's pages under /app (docs/console.md), one module per group of pages.

Every read and every form works without JavaScript: a form posts, the server acts through
the same domain services as the API, and answers with a redirect and a flash message (or the
form again, each error next to its field). A script only refreshes marked parts of a page.

Sessions are cookies (``console/service.py``); every form that changes state carries the
session's CSRF token, and the sign-in forms one of a cookie of their own (double submit).
The bearer API never reads these cookies.
"""

from __future__ import annotations

from typing import Final

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse, Response

from upwatch.console.endpoints import (
    account,
    admin,
    apikeys,
    audit,
    dashboard,
    escalation,
    fallback,
    incidents,
    maintenance,
    monitor_changes,
    monitors,
    notifications,
    passkeys,
    projects,
    reports,
    second_factor,
    security,
    sessions,
    signin,
    sso,
    statuspages,
)
from upwatch.console.endpoints.page import Answer, send_answer
from upwatch.console.render import STATIC

STATIC_FILES: Final = {
    "console.js": "text/javascript",
    "console.css": "text/css",
    "passkeys.js": "text/javascript",
}

router = APIRouter(include_in_schema=False)
GROUPS: Final = (
    signin,
    second_factor,
    passkeys,
    sso,
    dashboard,
    projects,
    apikeys,
    reports,
    # Before monitors: /monitors/new and /monitors/bulk are not monitor ids.
    monitor_changes,
    monitors,
    incidents,
    notifications,
    escalation,
    statuspages,
    maintenance,
    account,
    security,
    sessions,
    admin,
    audit,
)
for group in GROUPS:
    router.include_router(group.router)
links = signin.links


@router.get("/app/static/{name}")
async def static(name: str) -> Response:
    if name not in STATIC_FILES:
        return Response(status_code=404)
    return FileResponse(
        STATIC / name,
        media_type=STATIC_FILES[name],
        headers={"Cache-Control": "public, max-age=300"},
    )


def install(app: FastAPI) -> None:
    """The console's pages, the links the e-mails carry, and its early answers."""
    app.include_router(router)
    # Last: it answers every console address no page above has claimed.
    app.include_router(fallback.router)
    app.include_router(links)
    app.add_exception_handler(Answer, send_answer)
    app.add_middleware(signin.EarlierIncidentLinks)

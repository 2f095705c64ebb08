"""The visitor's sessions: where they are signed in, ending one, signing out everywhere else."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import Response

from upwatch.console.endpoints.offers import offers
from upwatch.console.endpoints.page import SESSION_COOKIE, SignedInPage
from upwatch.kit.languages import N_
from upwatch.sessions.service import SessionService

router = APIRouter(prefix="/app")
PAGE = "/app/settings/sessions"
# More than anyone keeps open; the rest are counted on the page.
SHOWN = 200


@router.get("/settings/sessions", openapi_extra=offers("listSessions"))
async def sessions_page(page: SignedInPage) -> Response:
    current = page.visitor.session_id
    listed = await SessionService(page.session, page.runtime).listed(page.user, current, SHOWN, 0)
    return page.html(
        "sessions.html",
        title=page.gettext("Sessions"),
        section="settings",
        sessions=listed.rows,
        total=listed.total,
    )


@router.post("/settings/sessions/others", openapi_extra=offers("endOtherSessions"))
async def end_other_sessions(page: SignedInPage) -> Response:
    async with page.button(N_("session"), PAGE, N_("Sessions not ended")):
        service = SessionService(page.session, page.runtime)
        ended = await service.end_others(page.user, page.visitor.session_id)
    said = page.words.ngettext(
        "Signed out everywhere else (%(count)d session).",
        "Signed out everywhere else (%(count)d sessions).",
        ended,
    )
    return page.redirect(PAGE, said % {"count": ended})


@router.post("/settings/sessions/{session_id}/end", openapi_extra=offers("endSession"))
async def end_session(session_id: str, page: SignedInPage) -> Response:
    current = page.visitor.session_id
    async with page.button(N_("session"), PAGE, N_("Session not ended")):
        await SessionService(page.session, page.runtime).end(page.user, session_id, current)
    if session_id == current:
        response = page.redirect("/app/login", page.gettext("You are signed out."))
        response.delete_cookie(SESSION_COOKIE, path="/app")
        return response
    return page.redirect(PAGE, page.gettext("The session is ended."))

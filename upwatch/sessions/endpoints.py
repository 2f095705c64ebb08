"""HTTP routes of the caller's sessions: /users/me/sessions."""

from __future__ import annotations

from upwatch.callers.dependencies import CurrentSessionId, PersonUser
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.pagination import PageParams
from upwatch.kit.routes import Routes
from upwatch.kit.schemas import DeletedOut
from upwatch.sessions.schemas import EndedSessionsOut, SessionOut
from upwatch.sessions.service import SessionService

router = Routes("/users/me/sessions", "users", (400, 401, 403, 422, 429, 500))


@router.get("", operation_id="listSessions")
async def list_sessions(
    user: PersonUser,
    current: CurrentSessionId,
    page: PageParams,
    session: Session,
    runtime: RuntimeDep,
) -> list[SessionOut]:
    """The caller's live sessions, latest used first: each API login (`kind: api`, one per
    `POST /auth/login`, however often refreshed) and each web console sign-in (`console`),
    with where and with what it was last used. `current` marks the one this access token
    belongs to. Tokens never appear here. An API key is refused (403)."""
    listed = await SessionService(session, runtime).listed(user, current, page.limit, page.offset)
    page.total(listed.total)
    return list(listed.rows)


@router.post("/revoke-others", operation_id="endOtherSessions")
async def end_other_sessions(
    user: PersonUser, current: CurrentSessionId, session: Session, runtime: RuntimeDep
) -> EndedSessionsOut:
    """Sign out everywhere else: end every session of the caller but the one this access
    token belongs to, which keeps working. Their refresh tokens are refused from now on,
    their access tokens and console pages at once. Unlike a password change, the current
    session stays signed in. (A token issued before sessions were listed names no session:
    then every session ends, and the token itself holds until it expires.)"""
    ended = await SessionService(session, runtime).end_others(user, current)
    return EndedSessionsOut(ended=ended)


@router.deletes("endSession", 404, path="/{id}")
async def end_session(
    id: str, user: PersonUser, current: CurrentSessionId, session: Session, runtime: RuntimeDep
) -> DeletedOut:
    """End one of the caller's sessions: an API login's refresh token is refused from now
    on and its access token at once (401); a console session is signed out. The current
    session may be ended too (that is signing out). An unknown id, an ended session or
    another person's is a 404."""
    await SessionService(session, runtime).end(user, id, current)
    return DeletedOut(id=id)

"""Who is calling: the bearer token's account, as ``Annotated`` aliases for endpoints.

The per-day API metering runs right after authentication, so every authenticated request is
counted exactly once.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import BackgroundTasks, Depends, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import Request

from upwatch.callers.apikeys import TOUCH_EVERY, caller_of_key, is_api_key, touch_key
from upwatch.callers.authentication import caller_of_access_token
from upwatch.callers.metering import admit_request
from upwatch.callers.repository import KeyDirectory
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.declared import digests_shown
from upwatch.kit.errors import Forbidden, Unauthorized
from upwatch.models import User

_bearer = HTTPBearer(
    scheme_name="bearer",
    bearerFormat="JWT",
    description="An access token from POST /auth/login (15 minutes)",
    auto_error=False,
)
BearerCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]
# The same header carrying an API key; declared apart so the OpenAPI document names both.
_key_bearer = HTTPBearer(
    scheme_name="apiKey",
    bearerFormat="upw_...",
    description="An API key from POST /projects/{id}/api-keys: one project, read or write; "
    "account, billing, membership and admin routes answer 403",
    auto_error=False,
)
KeyCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_key_bearer)]
READING_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def _current_user(
    request: Request,
    response: Response,
    background: BackgroundTasks,
    credentials: BearerCredentials,
    key_credentials: KeyCredentials,
    session: Session,
    runtime: RuntimeDep,
) -> User:
    """The caller: a person's access token, or an API key acting for its project's owner."""
    return await _authenticate(request, response, background, credentials, session, runtime)


async def _authenticate(
    request: Request,
    response: Response,
    background: BackgroundTasks,
    credentials: HTTPAuthorizationCredentials | None,
    session: Session,
    runtime: RuntimeDep,
) -> User:
    if credentials is None:
        raise Unauthorized("a bearer token is required")
    token = credentials.credentials
    if is_api_key(token):
        user = await _key_holder(request, background, token, session, runtime)
    else:
        user, request.state.session_id = await caller_of_access_token(session, runtime, token)
    request.state.user_id = user.id
    digests_shown.set(user.grant is None or user.grant.writes)
    if runtime.settings.api_metering:
        # A key's calls count against the project's owner, whose account it acts for.
        await admit_request(session, runtime, user.id, response)
    return user


async def _key_holder(
    request: Request,
    background: BackgroundTasks,
    token: str,
    session: Session,
    runtime: RuntimeDep,
) -> User:
    now = runtime.clock.now()
    user, key = await caller_of_key(KeyDirectory(session), token, now)
    if key.scope != "write" and request.method not in READING_METHODS:
        raise Forbidden("a read API key can only read")
    if key.last_used_at is None or now - key.last_used_at >= TOUCH_EVERY:
        # After the response, in a transaction of its own: a request's reads stay reads.
        background.add_task(touch_key, runtime.db, key.id, now)
    return user


async def _person_user(
    request: Request,
    response: Response,
    background: BackgroundTasks,
    credentials: BearerCredentials,
    session: Session,
    runtime: RuntimeDep,
) -> User:
    """A person's own access token only (its OpenAPI security names no API key)."""
    user = await _authenticate(request, response, background, credentials, session, runtime)
    if user.grant is not None:
        raise Forbidden("API keys cannot use account, billing, membership or admin routes")
    return user


async def _optional_person(
    request: Request,
    response: Response,
    background: BackgroundTasks,
    credentials: BearerCredentials,
    session: Session,
    runtime: RuntimeDep,
) -> User | None:
    """No token, or a person's own: an API key gets 403 like on every other /users route."""
    if credentials is None:
        return None
    return await _person_user(request, response, background, credentials, session, runtime)


async def _session_of(request: Request, user: Annotated[User, Depends(_person_user)]) -> str | None:
    """The API session (refresh-token family) the caller's access token was issued in."""
    session_id = getattr(request.state, "session_id", None)
    return session_id if isinstance(session_id, str) else None


async def _admin_user(user: Annotated[User, Depends(_person_user)]) -> User:
    if not user.is_admin:
        raise Forbidden("this operation is for administrators")
    return user


CurrentUser = Annotated[User, Depends(_current_user)]
# A person's own session only (account, billing, membership): an API key gets 403.
PersonUser = Annotated[User, Depends(_person_user)]
# No token at all, or a person's own (an API key gets 403).
OptionalPerson = Annotated[User | None, Depends(_optional_person)]
AdminUser = Annotated[User, Depends(_admin_user)]
# The caller's own API session id (None for tokens made before sessions were named).
CurrentSessionId = Annotated[str | None, Depends(_session_of)]

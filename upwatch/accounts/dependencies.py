"""Who is calling: the bearer token's account, as ``Annotated`` aliases for endpoints.

Authentication is the accounts domain's; the per-day API metering of billing runs right after
it, so every authenticated request is counted exactly once.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import Request

from upwatch.accounts.service import AccountService
from upwatch.billing.service import admit_request
from upwatch.dependencies import RuntimeDep, Session
from upwatch.kit.errors import Forbidden, Unauthorized
from upwatch.models import User

_bearer = HTTPBearer(scheme_name="bearer", bearerFormat="JWT", auto_error=False)
BearerCredentials = Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)]


async def _current_user(
    request: Request,
    response: Response,
    credentials: BearerCredentials,
    session: Session,
    runtime: RuntimeDep,
) -> User:
    if credentials is None:
        raise Unauthorized("a bearer token is required")
    user = await AccountService(session, runtime).authenticate(credentials.credentials)
    request.state.user_id = user.id
    if runtime.settings.api_metering:
        await admit_request(session, runtime, user.id, response)
    return user


async def _optional_user(
    request: Request,
    response: Response,
    credentials: BearerCredentials,
    session: Session,
    runtime: RuntimeDep,
) -> User | None:
    if credentials is None:
        return None
    return await _current_user(request, response, credentials, session, runtime)


async def _admin_user(user: Annotated[User, Depends(_current_user)]) -> User:
    if not user.is_admin:
        raise Forbidden("this operation is for administrators")
    return user


CurrentUser = Annotated[User, Depends(_current_user)]
OptionalUser = Annotated[User | None, Depends(_optional_user)]
AdminUser = Annotated[User, Depends(_admin_user)]

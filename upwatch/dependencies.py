"""Request dependencies as ``Annotated`` aliases: the session, the runtime, the caller."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Response
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from sqlalchemy.ext.asyncio import AsyncSession
from starlette.requests import Request

from upwatch.accounts.service import AccountService
from upwatch.billing.service import admit_request
from upwatch.kit.db import request_session
from upwatch.kit.errors import Forbidden, Unauthorized
from upwatch.models import User
from upwatch.runtime import Runtime, get_runtime

# scope="function": the session closes (and commits) before the response is sent, so a
# failed commit becomes an error response instead of a silent loss.
Session = Annotated[AsyncSession, Depends(request_session, scope="function")]
RuntimeDep = Annotated[Runtime, Depends(get_runtime)]

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


def client_address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


ClientAddress = Annotated[str, Depends(client_address)]

"""A person's access token as a caller."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.callers.repository import UserDirectory
from upwatch.kit.errors import Unauthorized
from upwatch.kit.security import InvalidToken
from upwatch.models import User
from upwatch.runtime import Runtime


async def user_of_access_token(session: AsyncSession, runtime: Runtime, access_token: str) -> User:
    """The account an access token belongs to; 401 when it is invalid, expired or revoked."""
    user, _ = await caller_of_access_token(session, runtime, access_token)
    return user


async def caller_of_access_token(
    session: AsyncSession, runtime: Runtime, access_token: str
) -> tuple[User, str | None]:
    """The account an access token belongs to and the API session (refresh-token family) it
    was issued in; 401 when it is invalid, expired or revoked: the account's token version
    moved on (a password change or reset), or its session was ended (signed out, ended from
    the sessions list, or a replayed refresh token). Tokens older than the session claim
    name none and hold until they expire (docs/sessions.md)."""
    try:
        claims = runtime.tokens.decode(access_token, runtime.clock.now())
    except InvalidToken as exc:
        raise Unauthorized("the access token is invalid or expired") from exc
    users = UserDirectory(session)
    if claims.session_id is None:
        user, still_open = await users.get(claims.user_id), True
    else:
        user, still_open = await users.with_session(claims.user_id, claims.session_id)
    if user is None or user.token_version != claims.token_version or not still_open:
        raise Unauthorized("the access token has been revoked")
    return user, claims.session_id

"""A person's access token as a caller."""

from __future__ import annotations

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.callers.repository import UserDirectory
from upwatch.kit.errors import Unauthorized
from upwatch.kit.security import InvalidToken
from upwatch.models import User
from upwatch.runtime import Runtime


async def user_of_access_token(session: AsyncSession, runtime: Runtime, access_token: str) -> User:
    """The account an access token belongs to; 401 when it is invalid, expired or revoked (the
    account's token version moved on: a password change or "sign out everywhere")."""
    try:
        claims = runtime.tokens.decode(access_token, runtime.clock.now())
    except InvalidToken as exc:
        raise Unauthorized("the access token is invalid or expired") from exc
    user = await UserDirectory(session).get(claims.user_id)
    if user is None or user.token_version != claims.token_version:
        raise Unauthorized("the access token has been revoked")
    return user

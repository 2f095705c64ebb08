"""Browser sessions and their CSRF tokens: the console's way in, under the API's token rules.

A session is an opaque token in an HttpOnly cookie, stored as its digest. It ends when the
person signs out, when it expires, and when the account's ``token_version`` moves on (a
password change or reset, which also ends every API token) or the account is deleted. The
bearer API never reads the cookie.
"""

from __future__ import annotations

import hmac
import secrets
from dataclasses import dataclass
from datetime import timedelta
from typing import Final

from upwatch.accounts.repository import UserRepository
from upwatch.console.repository import SessionRepository
from upwatch.kit.ids import new_id
from upwatch.kit.security import new_opaque_token, token_digest
from upwatch.models import BrowserSession, User
from upwatch.runtime import DomainService, uses

SESSION_DAYS: Final = 14


@dataclass(frozen=True)
class SignedIn:
    user: User
    csrf: str


def same_token(given: str | None, expected: str) -> bool:
    """A CSRF token compared in constant time."""
    # As bytes: compare_digest refuses a str with characters beyond ASCII.
    return bool(given) and hmac.compare_digest(str(given).encode(), expected.encode())


def new_csrf_token() -> str:
    return secrets.token_urlsafe(32)


class ConsoleSessions(DomainService):
    sessions = uses(SessionRepository)
    users = uses(UserRepository)

    async def open(self, user: User) -> str:
        """A new session for ``user``; the cookie's value."""
        token = new_opaque_token()
        now = self.runtime.clock.now()
        await self.sessions.add(
            BrowserSession(
                id=new_id(),
                user_id=user.id,
                token_hash=token_digest(token),
                token_version=user.token_version,
                csrf_token=new_csrf_token(),
                created_at=now,
                expires_at=now + timedelta(days=SESSION_DAYS),
            )
        )
        return token

    async def resolve(self, token: str | None) -> SignedIn | None:
        if not token:
            return None
        row = await self.sessions.by_hash(token_digest(token))
        if row is None or row.expires_at <= self.runtime.clock.now():
            return None
        user = await self.users.get(row.user_id)
        if user is None or user.token_version != row.token_version:
            return None
        return SignedIn(user, row.csrf_token)

    async def close(self, token: str | None) -> None:
        if token:
            await self.sessions.remove(token_digest(token))

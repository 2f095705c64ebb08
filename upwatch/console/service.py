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
from datetime import datetime, timedelta
from typing import Final

from upwatch.accounts.repository import UserRepository
from upwatch.console.repository import SessionRepository
from upwatch.kit.db import Database
from upwatch.kit.ids import new_id
from upwatch.kit.origin import request_origin
from upwatch.kit.security import new_opaque_token, token_digest
from upwatch.models import BrowserSession, User
from upwatch.runtime import DomainService, uses

SESSION_DAYS: Final = 14
# A session's last use is written at most this often: the sessions list needs the day and
# hour, not a write per page view.
TOUCH_EVERY: Final = timedelta(minutes=5)


@dataclass(frozen=True)
class SignedIn:
    user: User
    csrf: str
    # The browser session's id: the sessions list marks it "this browser".
    session_id: str = ""
    # Its last use is older than TOUCH_EVERY: the page records this one after the response.
    touch_due: bool = False


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
        origin = request_origin.get()
        await self.sessions.add(
            BrowserSession(
                id=new_id(),
                user_id=user.id,
                token_hash=token_digest(token),
                token_version=user.token_version,
                csrf_token=new_csrf_token(),
                created_at=now,
                expires_at=now + timedelta(days=SESSION_DAYS),
                address=origin.address,
                user_agent=origin.user_agent,
                last_used_at=now,
            )
        )
        return token

    async def resolve(self, token: str | None) -> SignedIn | None:
        if not token:
            return None
        row = await self.sessions.by_hash(token_digest(token))
        now = self.runtime.clock.now()
        if row is None or row.expires_at <= now:
            return None
        user = await self.users.get(row.user_id)
        if user is None or user.token_version != row.token_version:
            return None
        due = row.last_used_at is None or now - row.last_used_at >= TOUCH_EVERY
        return SignedIn(user, row.csrf_token, row.id, due)

    async def close(self, token: str | None) -> None:
        if token:
            await self.sessions.remove(token_digest(token))


async def touch_session(database: Database, session_id: str, now: datetime) -> None:
    """Record a console session's use, after the response (its own short transaction)."""
    async with database.worksession() as session:
        await SessionRepository(session).touch(session_id, now)
        await session.commit()

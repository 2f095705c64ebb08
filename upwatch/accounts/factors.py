"""Second factors: whether an account has one, and the sign-in that waits for it.

A console sign-in whose password (or other first factor) was right, for an account with a
second factor, is not a session yet: it is a *pending sign-in*, a value signed with the
service key that the console keeps in a short-lived cookie until the second factor (a TOTP
code, a recovery code or a passkey) is given. It names the account and its token version, so
a password change in between voids it."""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Final

from sqlalchemy import exists, select
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.models import PasskeyCredential, User

PENDING_COOKIE: Final = "upwatch_pending"
PENDING_LIFETIME: Final = timedelta(minutes=5)


async def has_second_factor(session: AsyncSession, user: User) -> bool:
    """TOTP turned on, or at least one passkey registered."""
    if user.totp_enabled_at is not None:
        return True
    found = await session.scalar(select(exists().where(PasskeyCredential.user_id == user.id)))
    return bool(found)


@dataclass(frozen=True, slots=True)
class PendingSignIn:
    user_id: str
    token_version: int
    # How the first factor was given ("password", "oidc"), for the audit log.
    method: str


class PendingSignIns:
    """Issues and reads pending sign-ins (the value of ``PENDING_COOKIE``)."""

    def __init__(self, key: str) -> None:
        self._key = hashlib.sha256(b"upwatch pending sign-in\0" + key.encode()).digest()

    def _mac(self, payload: str) -> str:
        return hmac.new(self._key, payload.encode(), hashlib.sha256).hexdigest()

    def issue(self, user: User, method: str, now: datetime) -> str:
        expires = int((now + PENDING_LIFETIME).timestamp())
        payload = f"{user.id}.{user.token_version}.{method}.{expires}"
        return f"{payload}.{self._mac(payload)}"

    def read(self, value: str | None, now: datetime) -> PendingSignIn | None:
        """The pending sign-in ``value`` holds, or None if it is forged, malformed or old."""
        if not value:
            return None
        payload, _, mac = value.rpartition(".")
        # As bytes: compare_digest raises on a str with characters beyond ASCII.
        if not hmac.compare_digest(mac.encode(), self._mac(payload).encode()):
            return None
        parts = payload.split(".")
        if len(parts) != 4 or not parts[1].isdigit() or not parts[3].isdigit():
            return None
        user_id, version, method, expires = parts
        if int(expires) <= now.timestamp():
            return None
        return PendingSignIn(user_id, int(version), method)

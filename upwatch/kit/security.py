"""Password hashing (Argon2id), access tokens (JWT HS256) and opaque tokens stored hashed."""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

import anyio.to_thread
import jwt
from argon2 import PasswordHasher, Type
from argon2.exceptions import InvalidHashError, VerificationError

from upwatch.config import Settings

# Shown in place of a secret in every response (with at most its last four characters).
SECRET_MASK = "****"  # noqa: S105 - a mask, not a password


class Passwords:
    """Argon2id hashing off the event loop: a hash costs tens of milliseconds of CPU."""

    def __init__(self, settings: Settings) -> None:
        self._hasher = PasswordHasher(
            time_cost=settings.argon2_time_cost,
            memory_cost=settings.argon2_memory_kib,
            parallelism=settings.argon2_parallelism,
            type=Type.ID,
        )
        # Verified against when the account is unknown, so both paths cost the same.
        self._dummy_hash = self._hasher.hash(secrets.token_urlsafe(16))
        # Each hash takes argon2_memory_kib of RAM and a core: a burst of logins waits here
        # instead of taking every worker thread and gigabytes of memory.
        self._limiter = anyio.CapacityLimiter(settings.password_hash_concurrency)

    async def hash(self, password: str) -> str:
        return await anyio.to_thread.run_sync(self._hasher.hash, password, limiter=self._limiter)

    async def verify(self, password_hash: str | None, password: str) -> bool:
        def check() -> bool:
            try:
                return self._hasher.verify(password_hash or self._dummy_hash, password)
            except (VerificationError, InvalidHashError):
                return False

        ok = await anyio.to_thread.run_sync(check, limiter=self._limiter)
        return ok and password_hash is not None


@dataclass(frozen=True)
class AccessClaims:
    user_id: str
    token_version: int
    # The refresh-token family (API session) the token was issued in; None in tokens made
    # before sessions were listed, which stay valid until they expire.
    session_id: str | None = None


class InvalidToken(Exception):
    pass


class AccessTokens:
    algorithm = "HS256"

    def __init__(self, settings: Settings) -> None:
        self._key = settings.signing_key
        self._lifetime = timedelta(minutes=settings.access_token_minutes)

    def issue(
        self, user_id: str, token_version: int, now: datetime, session_id: str | None = None
    ) -> str:
        claims: dict[str, str | int] = {
            "sub": user_id,
            "ver": token_version,
            "typ": "access",
            "iat": int(now.timestamp()),
            "exp": int((now + self._lifetime).timestamp()),
        }
        if session_id is not None:
            claims["sid"] = session_id
        return jwt.encode(claims, self._key, algorithm=self.algorithm)

    def decode(self, token: str, now: datetime) -> AccessClaims:
        try:
            # Expiry and issue time are the service clock's business (below), not the wall clock
            # inside PyJWT, so time rules stay testable with a controlled clock.
            claims = jwt.decode(
                token,
                self._key,
                algorithms=[self.algorithm],
                options={
                    "require": ["sub", "ver", "exp", "iat"],
                    "verify_exp": False,
                    "verify_iat": False,
                },
            )
        except jwt.PyJWTError as exc:
            raise InvalidToken(str(exc)) from exc
        expires = claims.get("exp")
        if not isinstance(expires, int) or expires <= now.timestamp():
            raise InvalidToken("expired")
        sub, ver = claims.get("sub"), claims.get("ver")
        if claims.get("typ") != "access" or not isinstance(sub, str) or not isinstance(ver, int):
            raise InvalidToken("not an access token")
        sid = claims.get("sid")
        if sid is not None and not isinstance(sid, str):
            raise InvalidToken("not an access token")
        return AccessClaims(user_id=sub, token_version=ver, session_id=sid)


def new_opaque_token() -> str:
    return secrets.token_urlsafe(32)


def token_digest(token: str) -> str:
    """Opaque tokens are high-entropy, so a plain SHA-256 is enough to store them safely."""
    return hashlib.sha256(token.encode()).hexdigest()

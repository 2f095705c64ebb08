"""Two-factor sign-in with TOTP: enrolment, confirmation, turning it off, recovery codes, and
checking a code at sign-in (docs/two-factor.md).

A wrong code on the /users/me/mfa routes counts toward the account's login throttle like a
wrong password: a stolen access token must not become a way to guess codes."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from upwatch.accounts import totp
from upwatch.accounts.factors import has_second_factor
from upwatch.accounts.repository import SecondFactorRepository
from upwatch.audit import kinds
from upwatch.audit.service import record
from upwatch.kit.errors import Conflict, TooManyRequests, ValidationFailed
from upwatch.models import User
from upwatch.runtime import DomainService, uses

Factor = Literal["totp", "recovery_code"]
WRONG_CODE = "the code is wrong, expired or was used already"


@dataclass(frozen=True, slots=True)
class TwoFactorState:
    totp_enabled_at: datetime | None
    totp_pending: bool
    recovery_codes_left: int
    passkey_count: int
    has_second_factor: bool


class TwoFactorService(DomainService):
    factors = uses(SecondFactorRepository)

    def _box(self) -> totp.SecretBox:
        return totp.SecretBox(self.runtime.settings.signing_key)

    async def state(self, user: User) -> TwoFactorState:
        return TwoFactorState(
            totp_enabled_at=user.totp_enabled_at,
            totp_pending=user.totp_enabled_at is None and user.totp_secret is not None,
            recovery_codes_left=await self.factors.recovery_codes_left(user.id),
            passkey_count=await self.factors.passkey_count(user.id),
            has_second_factor=await has_second_factor(self.session, user),
        )

    async def start_totp(self, user: User) -> tuple[str, str]:
        """A fresh secret, kept unconfirmed (replacing one not confirmed); it and its
        ``otpauth://`` address are shown this once."""
        if user.totp_enabled_at is not None:
            raise Conflict("two-factor sign-in is on already: turn it off first to enrol anew")
        secret = totp.new_secret()
        user.totp_secret = self._box().seal(secret)
        user.totp_last_step = None
        await self.session.flush()
        return secret, totp.provisioning_uri(secret, user.email)

    async def confirm_totp(self, user: User, code: str) -> list[str]:
        """Turn TOTP on with a code of the pending secret; the new recovery codes."""
        if user.totp_enabled_at is not None:
            raise Conflict("two-factor sign-in is on already")
        if user.totp_secret is None:
            raise Conflict("no enrolment to confirm: start one with POST /users/me/mfa/totp")
        async with self._guarded(user):
            if not await self._totp_accepted(user, code):
                raise ValidationFailed.on("code", WRONG_CODE)
        user.totp_enabled_at = self.runtime.clock.now()
        codes = await self._new_recovery_codes(user)
        await record(self.session, kinds.TOTP_ENABLED, self.runtime.clock.now(), actor=user)
        return codes

    async def turn_off_totp(self, user: User, code: str) -> None:
        """With a TOTP or recovery code: the secret and the recovery codes go."""
        self._require_on(user)
        async with self._guarded(user):
            if await self.check_code(user, code) is None:
                raise ValidationFailed.on("code", WRONG_CODE)
        user.totp_secret = None
        user.totp_enabled_at = None
        user.totp_last_step = None
        await self.factors.delete_recovery_codes(user.id)
        await self.session.flush()
        await record(self.session, kinds.TOTP_DISABLED, self.runtime.clock.now(), actor=user)

    async def renew_recovery_codes(self, user: User, code: str) -> list[str]:
        """A new set of ten, with a TOTP or recovery code; the old ones stop working."""
        self._require_on(user)
        async with self._guarded(user):
            if await self.check_code(user, code) is None:
                raise ValidationFailed.on("code", WRONG_CODE)
        return await self._new_recovery_codes(user)

    async def check_code(self, user: User, code: str) -> Factor | None:
        """Which factor ``code`` is, once accepted (a TOTP code's step or a recovery code is
        spent by this), or None. Only for an account with TOTP on."""
        if user.totp_enabled_at is None:
            return None
        if totp.is_totp_code(code):
            return "totp" if await self._totp_accepted(user, code) else None
        now = self.runtime.clock.now()
        if not await self.factors.spend_recovery_code(user.id, totp.recovery_digest(code), now):
            return None
        left = await self.factors.recovery_codes_left(user.id)
        await record(
            self.session, kinds.RECOVERY_CODE_USED, now, actor=user, details={"left": left}
        )
        return "recovery_code"

    async def _totp_accepted(self, user: User, code: str) -> bool:
        if user.totp_secret is None or not totp.is_totp_code(code):
            return False
        secret = self._box().open(user.totp_secret)
        if secret is None:
            return False
        now = self.runtime.clock.now()
        step = totp.matching_step(secret, code, now, user.totp_last_step)
        return step is not None and await self.factors.accept_step(user, step)

    async def _new_recovery_codes(self, user: User) -> list[str]:
        codes = totp.new_recovery_codes()
        digests = [totp.recovery_digest(code) for code in codes]
        await self.factors.replace_recovery_codes(user.id, digests, self.runtime.clock.now())
        return codes

    @staticmethod
    def _require_on(user: User) -> None:
        if user.totp_enabled_at is None:
            raise Conflict("two-factor sign-in is not on")

    def _guarded(self, user: User) -> _CodeAttempt:
        return _CodeAttempt(self, user)


class _CodeAttempt:
    """One code typed on a /users/me/mfa route: a slot of the account's login throttle,
    given back when the code was right and kept (a failure) when it was not."""

    def __init__(self, service: TwoFactorService, user: User) -> None:
        self._window = service.runtime.throttles.login_account
        self._key = user.email

    async def __aenter__(self) -> None:
        wait = await self._window.take(self._key)
        if wait is not None:
            raise TooManyRequests("too many wrong codes; try again later", retry_after=wait)

    async def __aexit__(self, kind: type[BaseException] | None, *_: object) -> None:
        if kind is None:
            await self._window.release(self._key)

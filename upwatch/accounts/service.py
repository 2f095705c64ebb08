"""Account rules: who may sign up, log in, refresh, reset, change what."""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import timedelta
from typing import Any

from pydantic.alias_generators import to_snake

from upwatch.accounts import preferences
from upwatch.accounts.factors import has_second_factor
from upwatch.accounts.repository import SSO_PROVIDER, TokenRepository, UserRepository
from upwatch.accounts.schemas import (
    CreateUserRequest,
    SignupRequest,
    UpdateProfileRequest,
)
from upwatch.accounts.twofactor import Factor, TwoFactorService
from upwatch.audit import kinds
from upwatch.audit.service import record
from upwatch.kit import languages
from upwatch.kit.db import commit_and_notify
from upwatch.kit.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    TooManyRequests,
    Unauthorized,
)
from upwatch.kit.ids import new_id
from upwatch.kit.origin import request_origin
from upwatch.kit.security import new_opaque_token, token_digest
from upwatch.models import PasswordResetToken, RefreshToken, User
from upwatch.runtime import DomainService, Runtime, uses

log = logging.getLogger(__name__)


class RefreshTokenReplayed(Unauthorized):
    # The family revocation must be committed although the request is refused.
    keep_changes = True


class WrongCredentials(Unauthorized):
    # The failed sign-in's audit event must be committed although the request is refused.
    keep_changes = True


class MfaRequired(
    WrongCredentials, status=401, slug="mfa-required", title="A second factor is required"
):
    """The password was right; the account's second factor was not given."""


class LoginThrottled(TooManyRequests):
    """Not recorded in the audit log: a flood of refused attempts would fill it."""


class SignupClosed(Forbidden):
    slug, title = "signup-closed", "Sign-up is closed"


def admit_signup(mode: str, invitation_token: str | None, caller: User | None = None) -> None:
    """Whether this service takes a new account now (``UPWATCH_SIGNUP``): always from an
    administrator; in ``invite`` mode from anyone holding a project invitation; in
    ``closed`` mode from nobody else. Whether the invitation is valid is checked when it is
    accepted, in the same transaction, so a wrong one creates no account either. In ``sso``
    mode accounts come from single sign-on (``sso/service.py``) and from administrators."""
    if mode == "open" or (caller is not None and caller.is_admin):
        return
    if mode == "invite":
        if invitation_token is None:
            raise SignupClosed(
                "this service creates accounts by invitation only: sign up with the "
                "invitationToken from your project invitation e-mail"
            )
        return
    if mode == "sso":
        raise SignupClosed(
            "this service creates accounts through single sign-on only: sign in with single "
            "sign-on instead"
        )
    raise SignupClosed("this service does not take sign-ups; ask an administrator for an account")


async def accept_reset_request(runtime: Runtime, email: str, client: str) -> bool:
    """Whether a reset e-mail may be sent: at most a few per address and per client.

    Refused requests are answered like accepted ones, so this reveals nothing either.
    """
    throttles = runtime.throttles
    key = email.strip().lower()
    if await throttles.password_mail.take(key) is not None:
        return False
    if await throttles.password_mail_address.take(client) is not None:
        await throttles.password_mail.release(key)
        return False
    return True


async def send_reset_link(runtime: Runtime, email: str) -> None:
    """Runs after the response: whether the account exists never shows in response time."""
    try:
        async with runtime.db.worksession() as session:
            await AccountService(session, runtime).mail_reset_link(email)
            await commit_and_notify(session)
    except Exception:
        log.exception("could not prepare a password-reset e-mail")


class AccountService(DomainService):
    users = uses(UserRepository)
    tokens = uses(TokenRepository)

    # ---- tokens ----

    async def issue_tokens(self, user: User, family_id: str | None = None) -> tuple[str, str]:
        now = self.runtime.clock.now()
        link_id = new_id()
        family_id = family_id or link_id
        # The access token names its family (the session), so the sessions list can mark the
        # caller's own and an ended session's tokens stop at once.
        access = self.runtime.tokens.issue(user.id, user.token_version, now, family_id)
        refresh = new_opaque_token()
        origin = request_origin.get()
        link = RefreshToken(
            id=link_id,
            family_id=family_id,
            user_id=user.id,
            token_hash=token_digest(refresh),
            created_at=now,
            expires_at=now + timedelta(days=self.runtime.settings.refresh_token_days),
            address=origin.address,
            user_agent=origin.user_agent,
        )
        await self.tokens.add(link)
        return access, refresh

    async def refresh(self, refresh_token: str) -> tuple[str, str]:
        now = self.runtime.clock.now()
        link = await self.tokens.refresh_by_hash(token_digest(refresh_token))
        if link is None or link.revoked_at is not None or link.expires_at <= now:
            raise Unauthorized("the refresh token is invalid or expired")
        if not await self.tokens.spend_refresh(link.id, now):
            # Replay: someone holds a copy. Kill the whole family, the legitimate
            # successor included, so the thief's copy dies too.
            await self.tokens.revoke_family(link.family_id, now)
            raise RefreshTokenReplayed("the refresh token was already used")
        user = await self.users.get(link.user_id)
        if user is None:
            raise Unauthorized("the refresh token is invalid or expired")
        return await self.issue_tokens(user, family_id=link.family_id)

    async def logout(self, refresh_token: str) -> None:
        link = await self.tokens.refresh_by_hash(token_digest(refresh_token))
        if link is not None:
            await self.tokens.revoke_family(link.family_id, self.runtime.clock.now())

    async def _revoke_everything(self, user: User) -> None:
        now = self.runtime.clock.now()
        user.token_version += 1
        await self.tokens.revoke_all_refresh(user.id, now)
        await self.tokens.spend_all_resets(user.id, now)

    # ---- registration and login ----

    async def signup(self, body: SignupRequest) -> User:
        admit_signup(self.runtime.settings.signup, body.invitationToken)
        if await self.users.email_taken(body.email):
            raise Conflict("an account with this e-mail already exists")
        user = User(
            email=body.email,
            password_hash=await self.runtime.passwords.hash(body.password),
            first_name=body.firstName,
            last_name=body.lastName,
            roles=["user"],
            settings={},
        )
        return await self.users.add(user, self.runtime.catalog.default_plan)

    async def create_user(self, body: CreateUserRequest, caller: User | None) -> User:
        admit_signup(self.runtime.settings.signup, body.invitationToken, caller)
        is_admin = caller is not None and caller.is_admin
        if not is_admin and (body.roles != ["user"] or body.isEmailVerified):
            raise Forbidden("only an administrator may grant roles or e-mail verification")
        if not is_admin:
            _check_sso_link(None, body.provider)
        _check_super_admin_grant(caller, body.roles, current=[])
        if await self.users.email_taken(body.email):
            raise Conflict("an account with this e-mail already exists")
        password_hash = await self.runtime.passwords.hash(body.password) if body.password else None
        user = User(
            email=body.email,
            password_hash=password_hash,
            first_name=body.firstName,
            last_name=body.lastName,
            image=body.image,
            provider=body.provider,
            provider_id=body.providerId,
            roles=list(body.roles),
            is_email_verified=body.isEmailVerified,
            settings={},
        )
        added = await self.users.add(user, self.runtime.catalog.default_plan)
        if is_admin and (body.roles != ["user"] or body.isEmailVerified):
            assert caller is not None
            await self._admin_action(caller, added, "create_user")
        return added

    async def _admin_action(self, caller: User, user: User, action: str) -> None:
        await record(
            self.session,
            kinds.ADMIN_ACTION,
            self.runtime.clock.now(),
            actor=caller,
            account_id=user.id,
            target_type="account",
            target_id=user.id,
            target_label=user.email,
            details={"action": action},
        )

    async def login(self, email: str, password: str, client: str, otp: str | None = None) -> User:
        """The API's sign-in: the password, and with two-factor sign-in on, ``otp`` (a TOTP
        or recovery code) in the same request."""
        user = await self.first_factor(email, password, client)
        factor = None
        if await has_second_factor(self.session, user):
            if user.totp_enabled_at is None:
                # Passkeys need a browser: the console signs such an account in.
                await self._sign_in_failed(user, "second_factor_missing")
                raise MfaRequired(
                    "this account's second factor is a passkey: sign in on the web console, "
                    "or use an API key"
                )
            if otp is None:
                await self._sign_in_failed(user, "second_factor_missing")
                raise MfaRequired(
                    "two-factor sign-in is on: send the code of your authenticator app (or a "
                    "recovery code) as `otp`"
                )
            factor = await self.second_factor(user, otp, client, first_step_done=True)
        await self.signed_in(user, client, factor)
        return user

    async def first_factor(self, email: str, password: str, client: str) -> User:
        """The account whose password this is. The throttle slot it takes stays taken (a
        failure) until ``signed_in``: a right password with the second factor missing must
        not become a free oracle for guessing passwords."""
        throttles = self.runtime.throttles
        account_key = email.strip().lower()
        # Count the attempt before the slow verification, taking a slot atomically:
        # concurrent attempts (in any API process) cannot all slip through one free slot.
        wait = await throttles.login_account.take(account_key)
        if wait is None:
            wait = await throttles.login_address.take(client)
            if wait is not None:
                await throttles.login_account.release(account_key)
        if wait is not None:
            raise LoginThrottled("too many failed logins; try again later", retry_after=wait)
        user = await self.users.get_by_email(account_key)
        ok = await self.runtime.passwords.verify(user.password_hash if user else None, password)
        if user is None or not ok:
            await self._sign_in_failed(user, "password", tried=account_key)
            raise WrongCredentials("the e-mail or password is wrong")
        return user

    async def second_factor(
        self, user: User, code: str, client: str, *, first_step_done: bool = False
    ) -> Factor:
        """Check a TOTP or recovery code after the password; a wrong or replayed one is a
        failure the throttle counts. ``first_step_done``: this request took its throttle
        slot already (the API's one-step login); the console's second step takes its own."""
        throttles = self.runtime.throttles
        if not first_step_done:
            wait = await throttles.login_account.take(user.email)
            if wait is None:
                wait = await throttles.login_address.take(client)
                if wait is not None:
                    await throttles.login_account.release(user.email)
            if wait is not None:
                raise LoginThrottled("too many failed logins; try again later", retry_after=wait)
        factor = await TwoFactorService(self.session, self.runtime).check_code(user, code)
        if factor is None:
            await self._sign_in_failed(user, "otp")
            raise WrongCredentials("the one-time code is wrong, expired or was used already")
        return factor

    async def signed_in(
        self, user: User, client: str, factor: Factor | None, *, via: str = "password"
    ) -> None:
        """Every factor was right: the failures counted for this sign-in are forgiven."""
        await self.forgive_failures(user, client)
        await record(
            self.session,
            kinds.SIGN_IN_SUCCEEDED,
            self.runtime.clock.now(),
            actor=user,
            target_type="account",
            target_id=user.id,
            target_label=user.email,
            via=via,
            details={"secondFactor": factor},
        )

    async def forgive_failures(self, user: User, client: str) -> None:
        """The throttle slots the password step took (kept as a failure while the second
        factor was awaited) are given back once every factor was right, by whichever second
        factor: else a few ordinary sign-ins would shut the account and its address out."""
        throttles = self.runtime.throttles
        await throttles.login_account.clear(user.email)
        await throttles.login_address.release(client)

    async def _sign_in_failed(self, user: User | None, reason: str, tried: str = "") -> None:
        """Recorded with the account when it exists, else with the address ``tried``; never
        the password or code that was typed."""
        await record(
            self.session,
            kinds.SIGN_IN_FAILED,
            self.runtime.clock.now(),
            actor=None,
            account_id=user.id if user else None,
            target_type="account",
            target_id=user.id if user else None,
            target_label=user.email if user else tried,
            via="password",
            details={"reason": reason},
        )

    # ---- password reset ----

    async def mail_reset_link(self, email: str) -> None:
        """Write a reset token and its e-mail if the account exists; nothing otherwise."""
        user = await self.users.get_by_email(email.strip().lower())
        if user is None:
            return
        now = self.runtime.clock.now()
        token = new_opaque_token()
        minutes = self.runtime.settings.reset_token_minutes
        await self.tokens.add(
            PasswordResetToken(
                user_id=user.id,
                token_hash=token_digest(token),
                created_at=now,
                expires_at=now + timedelta(minutes=minutes),
            )
        )
        link = f"{self.runtime.settings.public_url}/reset-password?token={token}"
        language = languages.of_settings(user.settings)
        _, ngettext = languages.gettext_in(language), languages.ngettext_in(language)
        await self.runtime.mailer.enqueue(
            self.session,
            to=user.email,
            subject=_("Reset your Upwatch password"),
            body=(
                _("Someone asked to reset the password of the Upwatch account %(address)s.")
                % {"address": user.email}
                + "\n\n"
                + ngettext(
                    "To choose a new password, open this link within %(minutes)d minute:",
                    "To choose a new password, open this link within %(minutes)d minutes:",
                    minutes,
                )
                % {"minutes": minutes}
                + f"\n\n{link}\n\n"
                + _(
                    "The link works once. If you did not ask for this, ignore this e-mail; "
                    "your password stays as it is."
                )
                + "\n"
            ),
            category="password_reset",
        )

    async def reset_password(self, token: str, new_password: str) -> None:
        now = self.runtime.clock.now()
        reset = await self.tokens.reset_by_hash(token_digest(token))
        if reset is None or reset.used_at is not None or reset.expires_at <= now:
            raise BadRequest("the reset token is invalid, expired or already used")
        user = await self.users.get(reset.user_id)
        if user is None or not await self.tokens.spend_reset(reset.id, now):
            raise BadRequest("the reset token is invalid, expired or already used")
        user.password_hash = await self.runtime.passwords.hash(new_password)
        await self._revoke_everything(user)
        await record(
            self.session,
            kinds.PASSWORD_RESET,
            now,
            actor=None,
            account_id=user.id,
            target_type="account",
            target_id=user.id,
            target_label=user.email,
            via="reset_link",
        )

    # ---- profile ----

    async def update_profile(self, user: User, body: UpdateProfileRequest) -> User:
        if body.roles is not None and set(body.roles) != set(user.roles):
            if not user.is_admin:
                raise Forbidden("only an administrator may change roles")
            _check_super_admin_grant(user, body.roles, current=user.roles)
        if (body.provider is not None or body.providerId is not None) and not user.is_admin:
            _check_sso_link(user, body.provider)
        email_changes = body.email is not None and body.email != user.email
        # Verification is granted, never claimed: a new address is unverified, and only an
        # administrator may mark one verified.
        claims_verified = body.isEmailVerified is True and (
            email_changes or not user.is_email_verified
        )
        if claims_verified and not user.is_admin:
            raise Forbidden("only an administrator may mark an e-mail address verified")
        if body.email is not None and email_changes:
            if await self.users.email_taken(body.email, besides=user.id):
                raise Conflict("an account with this e-mail already exists")
            user.email = body.email
            user.is_email_verified = False
            # A reset link mailed to the old address must not outlive the change.
            await self.tokens.spend_all_resets(user.id, self.runtime.clock.now())
        if body.isEmailVerified is not None and (user.is_admin or not body.isEmailVerified):
            user.is_email_verified = body.isEmailVerified
        if user.is_admin and (body.roles is not None and set(body.roles) != set(user.roles)):
            await self._admin_action(user, user, "set_own_roles")
        if body.roles is not None:
            user.roles = list(body.roles)
        plain = {"firstName", "lastName", "image", "provider", "providerId"}
        for field, value in body.model_dump(include=plain, exclude_none=True).items():
            setattr(user, to_snake(field), value)
        if body.settings is not None:
            changes = preferences.checked(
                user.settings,
                body.settings.model_dump(exclude_unset=True),
                user.email,
                self.runtime.guard,
                prefix="settings.",
            )
            user.settings = preferences.merge(user.settings, changes)
        if body.password is not None:
            user.password_hash = await self.runtime.passwords.hash(body.password)
            await self._revoke_everything(user)
            await record(
                self.session,
                kinds.PASSWORD_CHANGED,
                self.runtime.clock.now(),
                actor=user,
                target_type="account",
                target_id=user.id,
                target_label=user.email,
            )
        await self.session.flush()
        return user

    async def update_settings(self, user: User, changes: dict[str, Any]) -> User:
        changes = preferences.checked(user.settings, changes, user.email, self.runtime.guard)
        user.settings = preferences.merge(user.settings, changes)
        await self.session.flush()
        return user

    async def delete_account(self, user: User) -> None:
        await self.users.delete(user)


def _check_super_admin_grant(
    caller: User | None, roles: Sequence[str], *, current: Sequence[str]
) -> None:
    """Only a super_admin may hand out super_admin."""
    granting = "super_admin" in roles and "super_admin" not in current
    if granting and (caller is None or "super_admin" not in caller.roles):
        raise Forbidden("only a super_admin may grant super_admin")


def _check_sso_link(user: User | None, provider: str | None) -> None:
    """Single sign-on finds an account by its ``provider_id`` (the provider's subject): a
    person who could write it could set another person's subject on their own account, and
    that person's next sign-in through the provider would land in it. So the link is made by
    signing in through the provider only, never by a profile field."""
    linked = user is not None and user.provider == SSO_PROVIDER
    claimed = provider is not None and provider.strip().lower() == SSO_PROVIDER
    if linked or claimed:
        raise Forbidden(
            "the single sign-on link of an account is made by signing in through it; only "
            "an administrator may change it"
        )

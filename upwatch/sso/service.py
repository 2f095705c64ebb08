"""Which account a person signed in at the provider is: linked by subject, else by verified
e-mail, else new where sign-up allows it; and the administrator role the provider grants."""

from __future__ import annotations

import hashlib
from typing import Any

from upwatch.audit import kinds
from upwatch.audit.service import record
from upwatch.kit.languages import N_
from upwatch.models import User
from upwatch.runtime import DomainService, uses
from upwatch.sso.provider import SignInRefused
from upwatch.sso.repository import PROVIDER, SsoAccounts

ADMIN: str = "admin"


class AccountRefused(SignInRefused):
    """The provider vouched for the person, but this service takes no account for them."""

    status = 403


def provider_id(issuer: str, subject: str) -> str:
    """The subject scoped by its issuer (a subject is unique at one provider only), in the
    column's 255 characters: readable when it fits, a digest when it does not."""
    scoped = f"{subject}@{issuer}"
    if len(scoped) <= 255:
        return scoped
    return "sha256:" + hashlib.sha256(f"{issuer}\0{subject}".encode()).hexdigest()


def grants_admin(setting: str, claims: dict[str, Any]) -> bool:
    """``UPWATCH_OIDC_ADMIN_CLAIM`` is ``claim=value``: the claim equals the value, or is a
    list (e.g. groups) that holds it."""
    if not setting:
        return False
    name, _, value = setting.partition("=")
    found = claims.get(name)
    if isinstance(found, list):
        return value in found
    return isinstance(found, str) and found == value


def _verified(claims: dict[str, Any]) -> str:
    email = claims.get("email")
    if not isinstance(email, str) or "@" not in email or len(email) > 320:
        raise AccountRefused(N_("The sign-in provider gave no e-mail address."), "no_email")
    # Some providers send the boolean as text.
    if claims.get("email_verified") not in (True, "true"):
        raise AccountRefused(
            N_(
                "The sign-in provider has not verified your e-mail address: verify it there, "
                "then sign in again."
            ),
            "email_unverified",
        )
    return email.strip().lower()


def _name(claims: dict[str, Any], key: str) -> str:
    value = claims.get(key)
    return value.strip()[:100] if isinstance(value, str) else ""


class SsoService(DomainService):
    accounts = uses(SsoAccounts)

    async def sign_in(self, claims: dict[str, Any]) -> User:
        """The account of the person ``claims`` describe (already verified as the
        provider's), linked or made as needed, with the administrator role synced."""
        settings = self.runtime.settings
        email = _verified(claims)
        subject = provider_id(settings.oidc_issuer, str(claims["sub"]))
        user = await self.accounts.by_subject(subject)
        if user is None:
            user = await self.accounts.get_by_email(email)
            if user is not None:
                await self._link(user, subject)
            else:
                user = await self._create(email, subject, claims)
        if settings.oidc_admin_claim:
            self._sync_admin(user, grants_admin(settings.oidc_admin_claim, claims))
        return user

    async def _link(self, user: User, subject: str) -> None:
        if user.provider is not None:
            # Another identity (another subject, or another provider) holds this account:
            # an e-mail address the provider reassigned must not take it over.
            raise AccountRefused(
                N_(
                    "An account with this e-mail address is linked to another sign-in; sign in "
                    "with that one, or ask an administrator."
                ),
                "linked_elsewhere",
            )
        user.provider, user.provider_id = PROVIDER, subject
        user.is_email_verified = True
        now = self.runtime.clock.now()
        await record(
            self.session,
            kinds.SSO_LINKED,
            now,
            actor=user,
            target_type="account",
            target_id=user.id,
            target_label=user.email,
            via="oidc",
            details={"method": "oidc"},
        )

    async def _create(self, email: str, subject: str, claims: dict[str, Any]) -> User:
        if self.runtime.settings.signup not in ("open", "sso"):
            raise AccountRefused(
                N_(
                    "There is no account for this e-mail address, and this service does not "
                    "create accounts by single sign-on; ask an administrator."
                ),
                "signup_closed",
            )
        user = User(
            email=email,
            password_hash=None,
            first_name=_name(claims, "given_name"),
            last_name=_name(claims, "family_name"),
            provider=PROVIDER,
            provider_id=subject,
            roles=["user"],
            is_email_verified=True,
            settings={},
        )
        return await self.accounts.add(user, self.runtime.catalog.default_plan)

    def _sync_admin(self, user: User, granted: bool) -> None:
        # The provider's claim is the one place administrators are named: it grants the role
        # and, gone, takes it back. super_admin is never touched.
        if granted and ADMIN not in user.roles:
            user.roles = [*user.roles, ADMIN]
        elif not granted and ADMIN in user.roles:
            user.roles = [role for role in user.roles if role != ADMIN]

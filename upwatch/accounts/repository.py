"""Every query of the accounts domain."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, String, Update, cast, delete, func, or_, select, update
from sqlalchemy.orm.attributes import set_committed_value

from upwatch.callers.repository import UserDirectory
from upwatch.kit.repository import Repository
from upwatch.models import (
    Alert,
    ApiUsage,
    PasskeyCredential,
    PasswordResetToken,
    Project,
    ProjectInvitation,
    ProjectMember,
    RecoveryCode,
    RefreshToken,
    Subscription,
    User,
)

# The ``provider`` of an account linked to single sign-on (sso/service.py): its
# ``provider_id`` is the subject the provider signs in, so nobody but the sign-in sets it.
SSO_PROVIDER = "oidc"


class UserRepository(UserDirectory):
    async def email_taken(self, email: str, *, besides: str | None = None) -> bool:
        query = select(User.id).where(User.email == email)
        if besides is not None:
            query = query.where(User.id != besides)
        return await self.session.scalar(query) is not None

    async def add(self, user: User, plan: str) -> User:
        """A new account, with its subscription to ``plan`` (active)."""
        self.session.add(user)
        await self.session.flush()
        self.session.add(Subscription(user_id=user.id, plan=plan, status="active"))
        await self.session.flush()
        return user

    async def delete(self, user: User) -> None:
        # Explicit deletes rather than relying on ON DELETE CASCADE alone, so behaviour is the
        # same whether or not a backend enforces foreign keys.
        owned = select(Project.id).where(Project.owner_id == user.id)
        for child in (ProjectMember, ProjectInvitation):
            await self.session.execute(delete(child).where(child.project_id.in_(owned)))
        await self.session.execute(delete(Project).where(Project.owner_id == user.id))
        # Alerts to the account's personal channels go with it (attempts by their cascade).
        models = (
            RefreshToken,
            PasswordResetToken,
            Subscription,
            ProjectMember,
            ApiUsage,
            Alert,
            PasskeyCredential,
            RecoveryCode,
        )
        for model in models:
            await self.session.execute(delete(model).where(model.user_id == user.id))
        await self.session.delete(user)
        await self.session.flush()

    async def admins(self) -> Sequence[User]:
        # Roles are a JSON array; matching its text with quotes keeps "admin" apart from
        # "super_admin" and works the same on SQLite and PostgreSQL.
        roles = cast(User.roles, String)
        query = select(User).where(or_(roles.like('%"admin"%'), roles.like('%"super_admin"%')))
        return (await self.session.scalars(query.order_by(User.created_at))).all()

    async def list_with_subscriptions(
        self, limit: int, offset: int
    ) -> Sequence[tuple[User, Subscription | None]]:
        rows = await self.session.execute(
            select(User, Subscription)
            .outerjoin(Subscription, Subscription.user_id == User.id)
            .order_by(User.created_at.desc(), User.id)
            .limit(limit)
            .offset(offset)
        )
        return [(user, sub) for user, sub in rows.all()]

    async def count(self) -> int:
        return int(await self.session.scalar(select(func.count()).select_from(User)) or 0)


class TokenRepository(Repository):
    async def refresh_by_hash(self, token_hash: str) -> RefreshToken | None:
        return await self.session.scalar(
            select(RefreshToken).where(RefreshToken.token_hash == token_hash)
        )

    async def spend_refresh(self, token_id: str, now: datetime) -> bool:
        """Mark a refresh token used; False when another request spent or revoked it first.

        A conditional UPDATE, so of two concurrent refreshes with one token exactly one wins.
        """
        return await self.changed_one(
            update(RefreshToken)
            .where(
                RefreshToken.id == token_id,
                RefreshToken.used_at.is_(None),
                RefreshToken.revoked_at.is_(None),
            )
            .values(used_at=now)
        )

    async def revoke_family(self, family_id: str, now: datetime) -> None:
        await self._revoke_refresh(RefreshToken.family_id == family_id, now)

    async def revoke_all_refresh(self, user_id: str, now: datetime) -> None:
        await self._revoke_refresh(RefreshToken.user_id == user_id, now)

    async def _revoke_refresh(self, which: ColumnElement[bool], now: datetime) -> None:
        # A token revoked before keeps the time it was revoked at.
        await self.session.execute(
            update(RefreshToken)
            .where(which, RefreshToken.revoked_at.is_(None))
            .values(revoked_at=now)
        )

    async def reset_by_hash(self, token_hash: str) -> PasswordResetToken | None:
        return await self.session.scalar(
            select(PasswordResetToken).where(PasswordResetToken.token_hash == token_hash)
        )

    async def spend_reset(self, token_id: str, now: datetime) -> bool:
        """Use a reset token once; False when a concurrent request used it first."""
        return await self.changed_one(_spend_resets(PasswordResetToken.id == token_id, now))

    async def spend_all_resets(self, user_id: str, now: datetime) -> None:
        await self.session.execute(_spend_resets(PasswordResetToken.user_id == user_id, now))


def _spend_resets(which: ColumnElement[bool], now: datetime) -> Update:
    """Mark the unused reset tokens ``which`` selects used at ``now``."""
    return (
        update(PasswordResetToken)
        .where(which, PasswordResetToken.used_at.is_(None))
        .values(used_at=now)
    )


class PasskeyRepository(Repository):
    """An account's passkeys; another account's are never returned by id."""

    async def of_user(self, user_id: str) -> Sequence[PasskeyCredential]:
        return await self.rows_of(
            select(PasskeyCredential)
            .where(PasskeyCredential.user_id == user_id)
            .order_by(PasskeyCredential.created_at.desc(), PasskeyCredential.id)
        )

    async def count_of_user(self, user_id: str) -> int:
        return await self.count_of(
            select(PasskeyCredential.id).where(PasskeyCredential.user_id == user_id)
        )

    async def get_of_user(self, user_id: str, passkey_id: str) -> PasskeyCredential | None:
        return await self.session.scalar(
            select(PasskeyCredential).where(
                PasskeyCredential.id == passkey_id, PasskeyCredential.user_id == user_id
            )
        )

    async def by_credential_id(self, credential_id: str) -> PasskeyCredential | None:
        return await self.session.scalar(
            select(PasskeyCredential).where(PasskeyCredential.credential_id == credential_id)
        )

    async def use(
        self, passkey_id: str, seen_count: int, new_count: int, issued_at: datetime, now: datetime
    ) -> bool:
        """Record a sign-in with the passkey, if nobody used it since ``seen_count`` was read
        and not since the challenge was issued (``issued_at``); whether it was recorded."""
        result = await self.session.execute(
            update(PasskeyCredential)
            .where(
                PasskeyCredential.id == passkey_id,
                PasskeyCredential.sign_count == seen_count,
                or_(
                    PasskeyCredential.last_used_at.is_(None),
                    PasskeyCredential.last_used_at < issued_at,
                ),
            )
            .values(sign_count=new_count, last_used_at=now)
            .execution_options(synchronize_session=False)
        )
        return getattr(result, "rowcount", 0) == 1


class SecondFactorRepository(Repository):
    """TOTP's replay guard and recovery codes."""

    async def accept_step(self, user: User, step: int) -> bool:
        """Record ``step`` as the last one a TOTP code was accepted for; False when it is not
        after the one recorded (a replay, or a concurrent request with the same code won)."""
        accepted = await self.changed_one(
            update(User)
            .where(
                User.id == user.id,
                or_(User.totp_last_step.is_(None), User.totp_last_step < step),
            )
            .values(totp_last_step=step)
            .execution_options(synchronize_session=False)
        )
        if accepted:
            set_committed_value(user, "totp_last_step", step)
        return accepted

    async def replace_recovery_codes(self, user_id: str, digests: list[str], now: datetime) -> None:
        await self.delete_recovery_codes(user_id)
        self.session.add_all(
            RecoveryCode(user_id=user_id, code_hash=digest, created_at=now) for digest in digests
        )
        await self.session.flush()

    async def delete_recovery_codes(self, user_id: str) -> None:
        await self.session.execute(delete(RecoveryCode).where(RecoveryCode.user_id == user_id))

    async def spend_recovery_code(self, user_id: str, digest: str, now: datetime) -> bool:
        """Use the unused code of this account with ``digest``; False when there is none (or a
        concurrent request used it first)."""
        return await self.changed_one(
            update(RecoveryCode)
            .where(
                RecoveryCode.user_id == user_id,
                RecoveryCode.code_hash == digest,
                RecoveryCode.used_at.is_(None),
            )
            .values(used_at=now)
            .execution_options(synchronize_session=False)
        )

    async def recovery_codes_left(self, user_id: str) -> int:
        query = select(func.count()).where(
            RecoveryCode.user_id == user_id, RecoveryCode.used_at.is_(None)
        )
        return int(await self.session.scalar(query) or 0)

    async def passkey_count(self, user_id: str) -> int:
        query = select(func.count()).where(PasskeyCredential.user_id == user_id)
        return int(await self.session.scalar(query) or 0)

"""The queries caller resolution needs: accounts by id or address, keys by digest, an owner's
subscription, the daily API counters. The domains' repositories extend these classes rather
than repeat the queries."""

from __future__ import annotations

from datetime import datetime

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.kit.db import dialect_insert
from upwatch.models import ApiKey, ApiUsage, RefreshToken, Subscription, User


class UserDirectory:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def get(self, user_id: str) -> User | None:
        return await self.session.get(User, user_id)

    async def get_by_email(self, email: str) -> User | None:
        return await self.session.scalar(select(User).where(User.email == email))

    async def with_session(self, user_id: str, family_id: str) -> tuple[User | None, bool]:
        """The account, and whether its API session (refresh-token family) has not been
        ended, in one statement (every request asks): a lookup on the indexed ``family_id``,
        stopping at the first link not revoked."""
        still_open = (
            select(RefreshToken.id)
            .where(
                RefreshToken.family_id == family_id,
                RefreshToken.user_id == User.id,
                RefreshToken.revoked_at.is_(None),
            )
            .exists()
        )
        row = (
            await self.session.execute(select(User, still_open).where(User.id == user_id))
        ).first()
        if row is None:
            return None, False
        user, is_open = row
        return user, bool(is_open)


class KeyDirectory:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def by_digest(self, digest: str) -> ApiKey | None:
        return await self.session.scalar(select(ApiKey).where(ApiKey.digest == digest))

    async def touch(self, key_id: str, now: datetime) -> None:
        await self.session.execute(
            update(ApiKey).where(ApiKey.id == key_id).values(last_used_at=now)
        )


class SubscriptionDirectory:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def of(self, user_id: str) -> Subscription | None:
        return await self.session.scalar(
            select(Subscription).where(Subscription.user_id == user_id)
        )


class ApiUsageRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def count(self, user_id: str, day: str) -> int:
        value = await self.session.scalar(
            select(ApiUsage.count).where(ApiUsage.user_id == user_id, ApiUsage.day == day)
        )
        return int(value or 0)

    async def add(self, increments: dict[tuple[str, str], int]) -> None:
        """Add a batch of counts with one upsert statement."""
        users = {user_id for user_id, _ in increments}
        # Accounts deleted since their requests were counted have nothing left to count on.
        existing = set(
            (await self.session.scalars(select(User.id).where(User.id.in_(users)))).all()
        )
        rows = [
            {"user_id": user_id, "day": day, "count": count}
            for (user_id, day), count in increments.items()
            if user_id in existing
        ]
        if not rows:
            return
        insert = dialect_insert(self.session)
        statement = insert(ApiUsage).values(rows)
        await self.session.execute(
            statement.on_conflict_do_update(
                index_elements=["user_id", "day"],
                set_={"count": ApiUsage.count + statement.excluded.count},
            )
        )

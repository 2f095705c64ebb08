"""Claims on an owner's daily retention run: which owners are due, taking, renewing and
finishing a run, so two processes never work on one owner at once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from sqlalchemy import ColumnElement, and_, or_, select, update
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.kit.db import dialect_insert
from upwatch.models import RetentionRun, User
from upwatch.retention.repository.scope import NO_SYNC, rowcount


def _due_and_free(today: str, now: datetime) -> ColumnElement[bool]:
    """Not done today, and held by no process (or by one whose claim expired)."""
    return and_(
        or_(RetentionRun.done_day.is_(None), RetentionRun.done_day < today),
        or_(RetentionRun.claimed_until.is_(None), RetentionRun.claimed_until < now),
    )


class ClaimRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def owners_due(self, today: str, now: datetime, limit: int) -> Sequence[str]:
        query = (
            select(User.id)
            .outerjoin(RetentionRun, RetentionRun.user_id == User.id)
            .where(_due_and_free(today, now))
            .order_by(User.id)
            .limit(limit)
        )
        return (await self.session.scalars(query)).all()

    async def claim(
        self, owner_id: str, today: str, now: datetime, until: datetime, token: str
    ) -> bool:
        """Take the owner's run for today, unless it is done or another process holds it."""
        insert = dialect_insert(self.session)
        await self.session.execute(
            insert(RetentionRun)
            .values(user_id=owner_id, result_rows=0)
            .on_conflict_do_nothing(index_elements=["user_id"])
        )
        result = await self.session.execute(
            update(RetentionRun)
            .where(RetentionRun.user_id == owner_id, _due_and_free(today, now))
            .values(claim=token, claimed_until=until)
            .execution_options(**NO_SYNC)
        )
        return rowcount(result) == 1

    async def renew(self, owner_id: str, token: str, until: datetime) -> bool:
        """Extend our claim; False when it was lost (expired and taken by another run)."""
        result = await self.session.execute(
            update(RetentionRun)
            .where(RetentionRun.user_id == owner_id, RetentionRun.claim == token)
            .values(claimed_until=until)
            .execution_options(**NO_SYNC)
        )
        return rowcount(result) == 1

    async def finish(
        self,
        owner_id: str,
        token: str,
        today: str,
        result_rows: int,
        kept_from_day: str | None,
        through_day: str,
    ) -> bool:
        result = await self.session.execute(
            update(RetentionRun)
            .where(RetentionRun.user_id == owner_id, RetentionRun.claim == token)
            .values(
                done_day=today,
                claim=None,
                claimed_until=None,
                result_rows=result_rows,
                kept_from_day=kept_from_day,
                through_day=through_day,
            )
            .execution_options(**NO_SYNC)
        )
        return rowcount(result) == 1

    async def run_of(self, owner_id: str) -> RetentionRun | None:
        return await self.session.get(RetentionRun, owner_id)

"""Counting authenticated requests per account per UTC day, without a write per request, and
admitting each one against its plan's apiCallsPerDay."""

from __future__ import annotations

import asyncio
import contextlib
import logging
from datetime import datetime, time, timedelta

from fastapi import Response
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.callers.plans import plan_of
from upwatch.callers.repository import ApiUsageRepository
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.errors import TooManyRequests
from upwatch.kit.progress import progress, stop_if_cancelled
from upwatch.runtime import Runtime

log = logging.getLogger(__name__)


def utc_day(moment: datetime) -> str:
    return moment.date().isoformat()


def seconds_until_next_day(moment: datetime) -> int:
    midnight = datetime.combine(moment.date() + timedelta(days=1), time(), tzinfo=moment.tzinfo)
    return max(1, int((midnight - moment).total_seconds()))


class MemoryMeter:
    """Counts in memory; a background task adds them to ``api_usage`` in batches.

    Today's count of an account is read from the database once (the first request of the day
    in this process) and kept up to date in memory after that.
    """

    def __init__(self, db: Database, clock: Clock, flush_seconds: float) -> None:
        self.db = db
        self.clock = clock
        self.flush_seconds = flush_seconds
        self._totals: dict[tuple[str, str], int] = {}
        self._pending: dict[tuple[str, str], int] = {}

    async def _total(self, session: AsyncSession, key: tuple[str, str]) -> int:
        total = self._totals.get(key)
        if total is None:
            stored = await ApiUsageRepository(session).count(*key)
            # Another request may have loaded it while this one waited.
            total = self._totals.setdefault(key, stored + self._pending.get(key, 0))
        return total

    async def admit(self, session: AsyncSession, user_id: str, limit: int) -> int | None:
        key = (user_id, utc_day(self.clock.now()))
        total = await self._total(session, key)
        if total >= limit:
            return None
        # No await between the check above and this count: concurrent requests cannot race.
        total = self._totals[key] = self._totals[key] + 1
        self._pending[key] = self._pending.get(key, 0) + 1
        return total

    async def today(self, session: AsyncSession, user_id: str) -> int:
        return await self._total(session, (user_id, utc_day(self.clock.now())))

    async def flush(self) -> None:
        batch, self._pending = self._pending, {}
        if not batch:
            return
        try:
            async with self.db.worksession() as session:
                await ApiUsageRepository(session).add(batch)
                await session.commit()
        except Exception:
            # Keep the counts for the next flush rather than lose them.
            for key, count in batch.items():
                self._pending[key] = self._pending.get(key, 0) + count
            raise
        today = utc_day(self.clock.now())
        for key in [k for k in self._totals if k[1] != today and k not in self._pending]:
            del self._totals[key]

    async def run(self) -> None:
        """Flush every few seconds; a failed flush keeps its counts in memory and raises, so
        the supervisor logs it and restarts the loop."""
        try:
            while True:
                stop_if_cancelled()
                await asyncio.sleep(self.flush_seconds)
                # Shielded: a stop that lands mid-flush would leave the connection inside a
                # write transaction (SQLite stays locked until it is garbage-collected).
                await asyncio.shield(self.flush())
                progress()
        finally:
            with contextlib.suppress(Exception):
                await asyncio.shield(self.flush())


class RedisMeter:
    """Counts in Redis, shared by every API process (distributed mode)."""

    def __init__(self, url: str, clock: Clock) -> None:
        from upwatch.kit.redisclient import connect

        self.redis = connect(url)
        self.clock = clock

    def _key(self, user_id: str) -> str:
        return f"upwatch:api-calls:{user_id}:{utc_day(self.clock.now())}"

    async def admit(self, session: AsyncSession, user_id: str, limit: int) -> int | None:
        key = self._key(user_id)
        async with self.redis.pipeline(transaction=True) as pipe:
            pipe.incr(key)
            pipe.expire(key, 2 * 86400)
            count, _ = await pipe.execute()
        if int(count) > limit:
            await self.redis.decr(key)
            return None
        return int(count)

    async def today(self, session: AsyncSession, user_id: str) -> int:
        value = await self.redis.get(self._key(user_id))
        return int(value or 0)

    async def flush(self) -> None:
        return None

    async def run(self) -> None:
        """Nothing to flush (Redis holds the counts); stays alive to close the client."""
        try:
            while True:
                progress()
                await asyncio.sleep(5)
        finally:
            await self.redis.aclose()


async def admit_request(
    session: AsyncSession, runtime: Runtime, user_id: str, response: Response
) -> None:
    """Count an authenticated request against apiCallsPerDay; 429 past it until the next UTC
    day. Adds the RateLimit-* headers."""
    plan = runtime.plan_cache.get(user_id)
    if plan is None:
        plan = await plan_of(session, runtime.catalog, user_id)
        runtime.plan_cache.put(user_id, plan)
    limit = plan.apiCallsPerDay
    count = await runtime.meter.admit(session, user_id, limit)
    reset = seconds_until_next_day(runtime.clock.now())
    headers = {
        "RateLimit-Limit": str(limit),
        "RateLimit-Remaining": str(max(0, limit - count) if count is not None else 0),
        "RateLimit-Reset": str(reset),
    }
    if count is None:
        raise TooManyRequests(
            f"apiCallsPerDay: the {plan.name} plan allows {limit} requests a day",
            retry_after=reset,
            headers=headers,
        )
    response.headers.update(headers)

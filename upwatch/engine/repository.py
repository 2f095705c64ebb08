"""The engine's statements: regions and their presence, the monitors it schedules.

Region presence lives in the database: whoever receives a worker's heartbeats (the embedded
engine today, the ingester in distributed mode) writes the region's ``last_seen_at``, and
everyone (the scheduler, the API) reads who is online from there, never from a process's memory.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from datetime import datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.kit.db import new_id
from upwatch.models import Monitor, Region


class EngineRepository:
    def __init__(self, session: AsyncSession) -> None:
        self.session = session

    async def ensure_region(self, code: str, name: str, now: datetime) -> str:
        """The id of the built-in region ``code``, created on first start."""
        region = await self.session.scalar(select(Region).where(Region.code == code))
        if region is None:
            region = Region(id=new_id(), code=code, name=name, builtin=True, created_at=now)
            self.session.add(region)
            await self.session.flush()
        return region.id

    async def report_alive(self, region_ids: Collection[str], now: datetime) -> None:
        if region_ids:
            await self.session.execute(
                update(Region).where(Region.id.in_(region_ids)).values(last_seen_at=now)
            )

    async def online_region_ids(self, now: datetime, online_seconds: float) -> tuple[str, ...]:
        rows = await self.session.scalars(
            select(Region.id).where(Region.last_seen_at >= now - timedelta(seconds=online_seconds))
        )
        return tuple(sorted(rows.all()))

    async def active_monitors(self) -> Sequence[Monitor]:
        return (await self.session.scalars(select(Monitor).where(Monitor.is_active))).all()

    async def monitors(self, monitor_ids: Collection[str]) -> Sequence[Monitor]:
        return (
            await self.session.scalars(select(Monitor).where(Monitor.id.in_(monitor_ids)))
        ).all()

"""Which regions are online: written to the database by whoever hears the workers beat.

The embedded engine hears its own worker; with the Redis broker the workers beat in Redis
(``regionworker``), and the process that owns presence copies that into the database and
tells starting workers each region's id by its code. Everyone else reads who is online from
the database, never from a process's memory.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from upwatch.engine.repository import EngineRepository
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database

if TYPE_CHECKING:
    from redis.asyncio import Redis


async def beating_in_redis(
    db: Database, redis: Redis, prefix: str, clock: Clock, online_seconds: float
) -> dict[str, int]:
    """Workers that beat in Redis lately, counted per region; and, for workers starting,
    each region's id by its code, copied from the database to Redis."""
    from upwatch.engine.regionworker import online_workers, publish_regions

    async with db.workreader() as session:
        codes = await EngineRepository(session).region_ids_by_code()
    await publish_regions(redis, prefix, codes)
    now = clock.now().timestamp()
    return await online_workers(redis, prefix, now, online_seconds)


async def report_alive(
    db: Database, clock: Clock, alive: Mapping[str, int], online_seconds: float
) -> tuple[str, ...]:
    """Write ``alive`` regions (with their worker counts) as seen now; the regions online as
    of now."""
    now = clock.now()
    async with db.worksession() as session:
        repository = EngineRepository(session)
        await repository.report_alive(alive, now)
        online = await repository.online_region_ids(now, online_seconds)
        await session.commit()
    return online


async def online_now(db: Database, clock: Clock, online_seconds: float) -> tuple[str, ...]:
    async with db.workreader() as session:
        return await EngineRepository(session).online_region_ids(clock.now(), online_seconds)

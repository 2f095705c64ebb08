"""One scheduler at a time: a PostgreSQL advisory lock held on a connection of its own.

Whoever holds the session-level lock ``SCHEDULER_LOCK`` leads; the others stand by and try
again every ``retry_seconds``. The lock lives as long as the leader's connection: a leader
killed with SIGKILL, or cut off from PostgreSQL, loses it the moment PostgreSQL sees the
connection end, and a standby takes over on its next try. The leader checks its connection
every ``retry_seconds`` too and stops leading as soon as the check fails, so two leaders
overlap for at most that long (their jobs then run twice, which stores two results of one
due time, never loses one).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from sqlalchemy import text
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from upwatch.kit.progress import progress

log = logging.getLogger(__name__)

# Any fixed 64-bit number: the one lock every scheduler of a database competes for.
SCHEDULER_LOCK = 0x55707761_74636831  # "Upwatch1"


class LostLeadership(Exception):
    """The connection holding the lock failed: someone else may lead now."""


async def lead(
    engine: AsyncEngine,
    work: Callable[[], Coroutine[Any, Any, None]],
    retry_seconds: float = 2.0,
    key: int = SCHEDULER_LOCK,
    on_change: Callable[[bool], None] | None = None,
) -> None:
    """Stand by until this process holds the lock, then run ``work`` while it does.

    Returns never: raises ``LostLeadership`` when the lock's connection fails (the supervisor
    then starts over, as a standby), or whatever ``work`` raises.
    """
    async with engine.connect() as connection:
        told = False
        while not await _try_lock(connection, key):
            if not told:
                log.info("another scheduler leads; standing by")
                told = True
            progress()
            await asyncio.sleep(retry_seconds)
        log.info("this scheduler leads now")
        if on_change is not None:
            on_change(True)
        try:
            async with asyncio.TaskGroup() as tasks:
                tasks.create_task(_hold(connection, retry_seconds))
                tasks.create_task(work())
        except* LostLeadership:
            raise LostLeadership("the connection holding the scheduler lock failed") from None
        finally:
            if on_change is not None:
                on_change(False)
            with contextlib.suppress(Exception):
                await connection.execute(text("SELECT pg_advisory_unlock(:key)"), {"key": key})


async def _try_lock(connection: AsyncConnection, key: int) -> bool:
    taken = await connection.scalar(text("SELECT pg_try_advisory_lock(:key)"), {"key": key})
    # Outside any transaction: a session lock outlives transactions, and an open one
    # would hold back vacuum for as long as this process leads.
    await connection.commit()
    return bool(taken)


async def _hold(connection: AsyncConnection, check_seconds: float) -> None:
    while True:
        await asyncio.sleep(check_seconds)
        try:
            await connection.execute(text("SELECT 1"))
            await connection.commit()
        except Exception as exc:
            raise LostLeadership(str(exc)) from exc

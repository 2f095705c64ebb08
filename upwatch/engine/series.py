"""Which monitors an ``upwatch ingester`` process shows series of (``upwatch_monitor_*``).

An ingester sets a monitor's series when it stores the monitor's results. In a distributed
deployment several ingesters share the result stream, so consecutive checks of one monitor
may be stored by different processes, and a monitor may be deleted or paused without any
ingester hearing of it (the scheduler does). Left alone, each ingester would go on showing
what it last stored: a monitor counted twice, one of them stale, and deleted monitors forever.

``SeriesSweep`` reads, every ``period_seconds``, the last check time of the monitors this
process shows, and drops the series of each one that is gone, paused, or whose latest check
another process stored (the database holds a later one than this process wrote). Between
two sweeps a monitor may show in two processes for a moment; after one, only the process
that stored its latest check shows it. The embedded engine has one ingester, and its
scheduler removes the series of deleted and paused monitors: it needs no sweep.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from datetime import datetime

from upwatch.engine.repository import EngineRepository
from upwatch.kit.db import Database
from upwatch.kit.metrics import Metrics
from upwatch.kit.progress import progress

log = logging.getLogger(__name__)

# The last check time of each of the given monitors that exists and is active.
LastChecks = Callable[[Collection[str]], Awaitable[Mapping[str, datetime | None]]]


def last_checks_in(db: Database) -> LastChecks:
    async def read(monitor_ids: Collection[str]) -> Mapping[str, datetime | None]:
        async with db.workreader() as session:
            return await EngineRepository(session).last_checks(monitor_ids)

    return read


class SeriesSweep:
    def __init__(self, metrics: Metrics, latest: LastChecks, period_seconds: float = 15.0) -> None:
        self.metrics = metrics
        self.latest = latest
        self.period_seconds = period_seconds

    async def run(self) -> None:
        while True:
            await asyncio.sleep(self.period_seconds)
            await self.sweep()
            progress()

    async def sweep(self) -> list[str]:
        """Drop the series that are not this process's to show; returns their monitors."""
        shown = self.metrics.monitors_shown()
        if not shown:
            return []
        latest = await self.latest(list(shown))
        dropped = []
        for monitor_id in shown:
            # Compared with what this process holds now, not when the sweep began: a check
            # it stored meanwhile is at least as recent as what the database said.
            mine = self.metrics.monitor_checked_at(monitor_id)
            if monitor_id not in latest:
                dropped.append(monitor_id)  # deleted or paused
            elif (stored := latest[monitor_id]) is not None and (mine is None or stored > mine):
                dropped.append(monitor_id)  # another ingester stored a later check
        for monitor_id in dropped:
            self.metrics.monitor_gone(monitor_id)
        return dropped

"""The monitoring engine as it runs inside `upwatch serve`: every role in one process.

Scheduler -> MemoryBroker -> worker pool of region `local` -> MemoryBroker -> ingester.
A distributed deployment swaps the broker and runs roles in separate processes.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import timedelta
from typing import TYPE_CHECKING

from sqlalchemy import select, update

from upwatch.engine.broker import CheckReport, MemoryBroker
from upwatch.engine.checks import ProbeKit, run_check
from upwatch.engine.ingester import Ingester
from upwatch.engine.scheduler import Scheduler
from upwatch.engine.targets import MonitorSpec
from upwatch.engine.worker import Worker
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database, new_id
from upwatch.kit.errors import ServiceUnavailable
from upwatch.kit.metrics import Metrics
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.kit.outbox import stop_if_cancelled
from upwatch.models import CheckResult, Monitor, Region

if TYPE_CHECKING:
    from upwatch.incidents.automatic import IncidentAutomation

log = logging.getLogger(__name__)

LOCAL_REGION = "local"
# A region counts as online while its worker reported within this long.
ONLINE_SECONDS = 60
REPORT_EVERY_SECONDS = 15


class Engine:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        allow_private: bool,
        metrics: Metrics,
        concurrency: int = 500,
        loopback_only: bool = False,
        automation: IncidentAutomation | None = None,
    ) -> None:
        self.metrics = metrics
        self.db = db
        self.clock = clock
        self.guard = NetworkGuard(allow_private=allow_private, loopback_only=loopback_only)
        self.broker = MemoryBroker()
        self.local_region_id = ""
        self._online: tuple[str, ...] = ()
        self.scheduler = Scheduler(db, self.broker, clock, self.online_region_ids)
        self.ingester = Ingester(db, self.broker, self.online_region_ids, automation=automation)
        self.concurrency = concurrency
        self.kit: ProbeKit | None = None
        self.worker: Worker | None = None
        self.ready = asyncio.Event()
        self._counted = 0
        self._tasks: list[asyncio.Task[None]] = []

    def online_region_ids(self) -> tuple[str, ...]:
        return self._online

    async def _ensure_local_region(self) -> None:
        async with self.db.sessionmaker() as session:
            region = await session.scalar(select(Region).where(Region.code == LOCAL_REGION))
            if region is None:
                region = Region(
                    id=new_id(),
                    code=LOCAL_REGION,
                    name="Local",
                    builtin=True,
                    created_at=self.clock.now(),
                )
                session.add(region)
            region.last_seen_at = self.clock.now()
            await session.commit()
            self.local_region_id = region.id
        await self.refresh_regions()

    async def refresh_regions(self) -> None:
        """Report this process's worker as alive and re-read which regions are online."""
        now = self.clock.now()
        async with self.db.sessionmaker() as session:
            await session.execute(
                update(Region).where(Region.id == self.local_region_id).values(last_seen_at=now)
            )
            await session.commit()
            rows = await session.scalars(
                select(Region.id).where(
                    Region.last_seen_at >= now - timedelta(seconds=ONLINE_SECONDS)
                )
            )
            self._online = tuple(sorted(rows.all()))

    async def _report_alive(self) -> None:
        while True:
            stop_if_cancelled()
            for queue, depth in self.broker.depth().items():
                self.metrics.queue_depth.labels(queue).set(depth)
            self.metrics.results_written.inc(self.ingester.written - self._counted)
            self._counted = self.ingester.written
            await asyncio.sleep(REPORT_EVERY_SECONDS)
            try:
                await self.refresh_regions()
            except Exception:
                log.exception("could not report region liveness")

    async def start(self) -> None:
        """Start in the background: the service answers (and /readyz tells) even while the
        database is not reachable yet; the engine's roles begin once it is."""
        self.kit = ProbeKit(guard=self.guard, http=guarded_session(self.guard))
        self._tasks.append(asyncio.create_task(self._run(), name="engine"))

    async def _run(self) -> None:
        while True:
            stop_if_cancelled()
            try:
                await self._ensure_local_region()
                break
            except Exception:
                log.exception("the engine waits for the database")
                await asyncio.sleep(2)
        assert self.kit is not None
        self.worker = Worker(
            self.local_region_id,
            self.broker,
            self.kit,
            self.clock,
            self.metrics,
            self.concurrency,
        )
        self.ready.set()
        async with asyncio.TaskGroup() as roles:
            roles.create_task(self.scheduler.run(), name="scheduler")
            roles.create_task(self.worker.run(), name="worker-local")
            roles.create_task(self.ingester.run(), name="ingester")
            roles.create_task(self._report_alive(), name="region-liveness")

    @property
    def tasks(self) -> list[asyncio.Task[None]]:
        return self._tasks

    async def close(self) -> None:
        if self.kit is not None:
            with contextlib.suppress(Exception):
                await self.kit.http.close()

    def changed(self, monitor_id: str) -> None:
        self.scheduler.changed(monitor_id)

    async def check_now(self, monitor: Monitor) -> CheckResult | None:
        """Run one check in this process and store it through the same path as scheduled ones.

        It runs from region `local` when the monitor checks there (or everywhere), else from
        the first of its regions, whose results it then stands for.
        """
        if self.kit is None or not self.ready.is_set():
            raise ServiceUnavailable("the monitoring engine is starting; try again shortly")
        spec = MonitorSpec.of(monitor)
        region = self.local_region_id
        if spec.region_ids and region not in spec.region_ids:
            region = spec.region_ids[0]
        started = time.time()
        outcome = await run_check(spec, self.kit, self.clock.now())
        report = CheckReport(
            monitor_id=spec.id,
            region_id=region,
            due_at=started,
            started_at=started,
            checked_at=self.clock.now(),
            outcome=outcome,
        )
        stored = await self.ingester.ingest([report])
        kind = "up" if outcome.ok else (outcome.error_kind or "down")
        self.metrics.checks.labels(spec.type, str(kind)).inc()
        return stored[0] if stored else None

"""Workers of one region: take jobs, run probes with bounded concurrency, report results."""

from __future__ import annotations

import asyncio
import logging
import time

from upwatch.engine.broker import Broker, CheckJob, CheckReport
from upwatch.engine.checks import ProbeKit, run_check
from upwatch.kit.clock import Clock
from upwatch.kit.mail import stop_if_cancelled

log = logging.getLogger(__name__)


class Worker:
    def __init__(
        self, region_id: str, broker: Broker, kit: ProbeKit, clock: Clock, concurrency: int = 500
    ) -> None:
        self.region_id = region_id
        self.broker = broker
        self.kit = kit
        self.clock = clock
        self._slots = asyncio.Semaphore(concurrency)
        self._running: set[asyncio.Task[None]] = set()
        self.lateness: list[float] = []  # seconds each check started after its due time

    async def run(self) -> None:
        try:
            while True:
                stop_if_cancelled()
                job = await self.broker.next_job(self.region_id)
                await self._slots.acquire()
                task = asyncio.create_task(self._check(job))
                self._running.add(task)
                task.add_done_callback(self._running.discard)
        finally:
            for task in self._running:
                task.cancel()

    async def _check(self, job: CheckJob) -> None:
        try:
            started = time.time()
            self.lateness.append(started - job.due_at)
            if len(self.lateness) > 100_000:
                del self.lateness[:50_000]
            outcome = await run_check(job.spec, self.kit, self.clock.now())
            await self.broker.publish_result(
                CheckReport(
                    monitor_id=job.spec.id,
                    region_id=job.region_id,
                    due_at=job.due_at,
                    started_at=started,
                    checked_at=self.clock.now(),
                    outcome=outcome,
                )
            )
        except Exception:
            log.exception("check of monitor %s failed to run", job.spec.id)
        finally:
            self._slots.release()

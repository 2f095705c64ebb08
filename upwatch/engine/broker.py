"""How the scheduler, workers and ingester talk: jobs out per region, results back.

Nothing else knows which implementation runs. The embedded default is in-process; a
distributed one (Redis Streams, NATS JetStream) implements the same protocol.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from upwatch.engine.targets import MonitorSpec
from upwatch.kit.db import new_id
from upwatch.probes.outcome import Outcome


@dataclass(frozen=True, slots=True)
class CheckJob:
    """Carries the monitor's snapshot, so a worker needs no database."""

    spec: MonitorSpec
    region_id: str
    due_at: float  # epoch seconds the check was scheduled for


@dataclass(frozen=True, slots=True)
class CheckReport:
    monitor_id: str
    region_id: str
    due_at: float
    started_at: float
    checked_at: datetime
    outcome: Outcome
    # Made where the check ran and kept through every retry and redelivery: the stored
    # result's unique key, so storing a report twice writes it once.
    id: str = field(default_factory=new_id)


class Broker(Protocol):
    async def publish_job(self, job: CheckJob) -> bool:
        """Queue a job; False when the region's queue is full (the job is dropped)."""

    async def next_job(self, region_id: str) -> CheckJob: ...

    async def publish_result(self, report: CheckReport) -> None:
        """Queue a result; waits while the result queue is full (back-pressure on workers)."""

    async def next_results(self, max_batch: int, max_wait: float) -> list[CheckReport]:
        """Wait for at least one result, then gather more for up to ``max_wait`` seconds."""

    def depth(self) -> dict[str, int]: ...


class MemoryBroker:
    """In-process queues: one bounded job queue per region, one bounded result queue.

    While the database is away the ingester keeps its batch and the result queue fills; then
    ``publish_result`` waits, workers stop taking jobs, and the scheduler drops jobs it cannot
    queue: memory stays bounded and no result that was measured is lost.
    """

    def __init__(self, max_jobs_per_region: int = 100_000, max_results: int = 20_000) -> None:
        self.max_jobs = max_jobs_per_region
        self._jobs: dict[str, asyncio.Queue[CheckJob]] = {}
        self._results: asyncio.Queue[CheckReport] = asyncio.Queue(max_results)

    def _queue(self, region_id: str) -> asyncio.Queue[CheckJob]:
        queue = self._jobs.get(region_id)
        if queue is None:
            queue = self._jobs[region_id] = asyncio.Queue(self.max_jobs)
        return queue

    async def publish_job(self, job: CheckJob) -> bool:
        try:
            self._queue(job.region_id).put_nowait(job)
        except asyncio.QueueFull:
            return False
        return True

    async def next_job(self, region_id: str) -> CheckJob:
        return await self._queue(region_id).get()

    async def publish_result(self, report: CheckReport) -> None:
        await self._results.put(report)

    async def next_results(self, max_batch: int, max_wait: float) -> list[CheckReport]:
        batch = [await self._results.get()]
        loop = asyncio.get_running_loop()
        deadline = loop.time() + max_wait
        while len(batch) < max_batch:
            while len(batch) < max_batch and not self._results.empty():
                batch.append(self._results.get_nowait())
            remaining = deadline - loop.time()
            if len(batch) >= max_batch or remaining <= 0:
                break
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(remaining):
                    batch.append(await self._results.get())
        return batch

    def depth(self) -> dict[str, int]:
        depths = {f"jobs:{region}": q.qsize() for region, q in self._jobs.items()}
        depths["results"] = self._results.qsize()
        return depths

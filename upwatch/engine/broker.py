"""How the scheduler, workers and ingester talk: jobs out per region, results back.

Nothing else knows which implementation runs. The embedded default is in-process; a
distributed one (Redis Streams, NATS JetStream) implements the same protocol.
"""

from __future__ import annotations

import asyncio
import collections
import contextlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol

from upwatch.kit.ids import new_id
from upwatch.probes.outcome import Outcome
from upwatch.probes.spec import CheckSpec


@dataclass(frozen=True, slots=True)
class CheckJob:
    """Carries the monitor's snapshot, so a worker needs no database."""

    spec: CheckSpec
    region_id: str
    due_at: float  # epoch seconds the check was scheduled for
    # The id its report will carry, when someone waits for that report (a check asked for
    # now by an API process of a distributed deployment); else the worker makes one.
    report_id: str | None = None


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


class JobSource(Protocol):
    """What a worker needs: jobs to take, and somewhere to put their results."""

    async def next_job(self, region_id: str) -> CheckJob: ...

    async def ack_job(self, job: CheckJob) -> None:
        """The job's result is published: it is never delivered again. A job taken and not
        acknowledged (its worker died) is delivered again to another worker."""

    async def publish_result(self, report: CheckReport) -> None:
        """Queue a result; waits while the result queue is full (back-pressure on workers)."""


class Broker(JobSource, Protocol):
    async def publish_job(self, job: CheckJob) -> bool:
        """Queue a job; False when the region's queue is full (the job is dropped)."""

    async def publish_jobs(self, jobs: Sequence[CheckJob]) -> int:
        """Queue jobs (one call for a scheduler's wake-up); how many were queued, the rest
        dropped because their region's queue was full."""

    async def next_results(self, max_batch: int, max_wait: float) -> list[CheckReport]:
        """Wait for at least one result, then gather more for up to ``max_wait`` seconds."""

    async def ack_results(self, reports: Sequence[CheckReport]) -> None:
        """The reports are stored (their transaction committed): never delivered again."""

    def depth(self) -> dict[str, int]: ...


class _JobQueue:
    """A region's bounded job queue, into which jobs a dead worker held go back first."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._jobs: collections.deque[CheckJob] = collections.deque()
        self._arrived = asyncio.Event()

    def put(self, job: CheckJob) -> bool:
        if len(self._jobs) >= self.limit:
            return False
        self._jobs.append(job)
        self._arrived.set()
        return True

    def put_back(self, jobs: Sequence[CheckJob]) -> None:
        """Ahead of the queue and past its limit: they were admitted once, so they are not
        dropped now."""
        self._jobs.extendleft(reversed(jobs))
        if jobs:
            self._arrived.set()

    async def get(self) -> CheckJob:
        while not self._jobs:
            self._arrived.clear()
            await self._arrived.wait()
        return self._jobs.popleft()

    def oldest_due(self) -> float | None:
        """When the job waiting longest was due (epoch seconds), if any waits."""
        return self._jobs[0].due_at if self._jobs else None

    def take(self, most: int) -> list[CheckJob]:
        """Up to ``most`` queued jobs, without waiting."""
        taken: list[CheckJob] = []
        while self._jobs and len(taken) < most:
            taken.append(self._jobs.popleft())
        return taken

    def __len__(self) -> int:
        return len(self._jobs)


class MemoryBroker:
    """In-process queues: one bounded job queue per region, one bounded result queue.

    While the database is away the ingester keeps its batch and the result queue fills; then
    ``publish_result`` waits, workers stop taking jobs, and the scheduler drops jobs it cannot
    queue: memory stays bounded and no result that was measured is lost.

    Acknowledgements are no-ops here: a job or result lives in this process and dies with it.
    A worker in another process takes jobs through a link (``engine.workerprocess``) that
    keeps what it sent until the result comes back and puts it back with ``requeue_jobs``.
    """

    def __init__(self, max_jobs_per_region: int = 100_000, max_results: int = 20_000) -> None:
        self.max_jobs = max_jobs_per_region
        self._jobs: dict[str, _JobQueue] = {}
        self._results: asyncio.Queue[CheckReport] = asyncio.Queue(max_results)

    def _queue(self, region_id: str) -> _JobQueue:
        queue = self._jobs.get(region_id)
        if queue is None:
            queue = self._jobs[region_id] = _JobQueue(self.max_jobs)
        return queue

    async def publish_job(self, job: CheckJob) -> bool:
        return self._queue(job.region_id).put(job)

    async def publish_jobs(self, jobs: Sequence[CheckJob]) -> int:
        return sum(self._queue(job.region_id).put(job) for job in jobs)

    async def next_job(self, region_id: str) -> CheckJob:
        return await self._queue(region_id).get()

    async def next_jobs(self, region_id: str, max_jobs: int) -> list[CheckJob]:
        """Wait for one job, then take what else is queued, up to ``max_jobs``."""
        queue = self._queue(region_id)
        jobs = [await queue.get()]
        jobs.extend(queue.take(max_jobs - 1))
        return jobs

    async def ack_job(self, job: CheckJob) -> None:
        pass

    def requeue_jobs(self, jobs: Sequence[CheckJob]) -> None:
        """Jobs a worker took and never finished (its process died), to be delivered again."""
        by_region: dict[str, list[CheckJob]] = {}
        for job in jobs:
            by_region.setdefault(job.region_id, []).append(job)
        for region_id, held in by_region.items():
            self._queue(region_id).put_back(held)  # in the order they were taken

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

    async def ack_results(self, reports: Sequence[CheckReport]) -> None:
        pass

    def behind(self, now: float, late_seconds: float) -> list[str]:
        """What cannot keep up: workers (a region's oldest queued job is ``late_seconds``
        overdue) or storage (the result queue is nine tenths full)."""
        reasons = []
        for region, queue in self._jobs.items():
            due = queue.oldest_due()
            if due is not None and now - due > late_seconds:
                reasons.append(
                    f"checks of region {region} start {now - due:.0f} s late ({len(queue)} "
                    "queued): its workers cannot keep up"
                )
        limit = self._results.maxsize
        if self._results.qsize() >= 0.9 * limit:
            reasons.append(
                f"{self._results.qsize()} results wait to be stored (limit {limit}): storing "
                "cannot keep up, and workers are held back"
            )
        return reasons

    def depth(self) -> dict[str, int]:
        depths = {f"jobs:{region}": len(q) for region, q in self._jobs.items()}
        depths["results"] = self._results.qsize()
        return depths

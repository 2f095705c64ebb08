"""Workers of one region: take jobs, run probes with bounded concurrency, report results."""

from __future__ import annotations

import asyncio
import logging
import time
from dataclasses import InitVar, dataclass, field
from typing import TYPE_CHECKING

from upwatch.engine.broker import CheckJob, CheckReport, JobSource
from upwatch.engine.checks import ProbeKit, run_check
from upwatch.kit.clock import Clock
from upwatch.kit.ids import new_id
from upwatch.kit.progress import progress, stop_if_cancelled

if TYPE_CHECKING:  # a worker process has no metrics of its own
    from upwatch.kit.metrics import Metrics

log = logging.getLogger(__name__)

# The longest a worker holds a job that came before its due time (the scheduler's lead is at
# most this): a clock that disagrees with the scheduler's never holds checks back for long.
EARLY_LIMIT_SECONDS = 1.0
TIMER_SLACK_SECONDS = 0.002


def observe(metrics: Metrics, job: CheckJob, report: CheckReport) -> None:
    """A finished check's figures for /metrics (made where the metrics are served)."""
    metrics.lateness.observe(max(0.0, report.started_at - job.due_at))
    duration = report.checked_at.timestamp() - report.started_at
    metrics.probe_duration.labels(job.spec.type).observe(max(0.0, duration))
    outcome = report.outcome
    kind = "up" if outcome.ok else (outcome.error_kind or "down")
    metrics.checks.labels(job.spec.type, str(kind)).inc()


@dataclass(eq=False)
class Worker:
    region_id: str
    broker: JobSource
    kit: ProbeKit
    clock: Clock
    metrics: Metrics | None
    concurrency: InitVar[int] = 500
    _running: set[asyncio.Task[None]] = field(default_factory=set, init=False)

    def __post_init__(self, concurrency: int) -> None:
        self._slots = asyncio.Semaphore(concurrency)

    async def run(self) -> None:
        try:
            while True:
                stop_if_cancelled()
                try:
                    # Wake now and then even when idle, to report this worker alive.
                    async with asyncio.timeout(5):
                        job = await self.broker.next_job(self.region_id)
                except TimeoutError:
                    progress()
                    continue
                progress()
                # Jobs come in due order, up to the scheduler's lead early: start each on time.
                early = job.due_at - self.clock.now().timestamp()
                if early > 0:
                    await asyncio.sleep(min(early, EARLY_LIMIT_SECONDS))
                    # Timers may fire a fraction of a millisecond early (uvloop counts in whole
                    # milliseconds): a check never starts before its due time.
                    rest = job.due_at - self.clock.now().timestamp()
                    if 0 < rest < TIMER_SLACK_SECONDS:
                        await asyncio.sleep(rest + TIMER_SLACK_SECONDS)
                await self._slots.acquire()
                task = asyncio.create_task(self._check(job))
                self._running.add(task)
                task.add_done_callback(self._running.discard)
        except asyncio.CancelledError:
            # Stopping: checks in flight stop too. After a failure of this loop instead, they
            # run to the end and report, so a restart of the loop loses no check.
            for task in self._running:
                task.cancel()
            raise

    async def _check(self, job: CheckJob) -> None:
        try:
            started = time.time()
            outcome = await run_check(job.spec, self.kit, self.clock.now())
            report = CheckReport(
                monitor_id=job.spec.id,
                region_id=job.region_id,
                due_at=job.due_at,
                started_at=started,
                checked_at=self.clock.now(),
                outcome=outcome,
                # Made here, where the check ran (or by whoever waits for it): it follows
                # the report everywhere, and a job run twice is stored once.
                id=job.report_id or new_id(),
            )
            if self.metrics is not None:
                observe(self.metrics, job, report)
            await self.broker.publish_result(report)
            progress()
        except Exception:
            log.exception("check of monitor %s failed to run", job.spec.id)
        finally:
            self._slots.release()
        # After the result is published, or after a failure that a second delivery would
        # only repeat.
        await self.broker.ack_job(job)

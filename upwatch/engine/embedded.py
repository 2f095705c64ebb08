"""The monitoring engine as it runs inside `upwatch serve`: every role in one process.

Scheduler -> MemoryBroker -> worker pool of region `local` -> MemoryBroker -> ingester.
The worker pool runs in ``worker_processes`` child processes (``engine.workerprocess``), or
in this process when that is 0. A distributed deployment swaps the broker and runs roles in
separate processes.

The per-monitor series of /metrics (``upwatch_monitor_up``, ``upwatch_monitor_response_seconds``)
are set by the ingester and removed by the scheduler when a reload finds the monitor deleted or
paused.

Each role runs under the process's ``Supervisor``: a failure restarts that role alone. The
engine implements the ``MonitorChanges`` and ``CheckRunner`` ports; requests never see it.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
from datetime import timedelta
from functools import partial
from typing import TYPE_CHECKING

from upwatch.engine.broker import Broker, CheckReport, MemoryBroker
from upwatch.engine.checks import ProbeKit, run_check
from upwatch.engine.ingester import Ingester
from upwatch.engine.ports import MaintenanceCalendar, TransitionHandler
from upwatch.engine.presence import report_alive
from upwatch.engine.repository import EngineRepository
from upwatch.engine.scheduler import Scheduler
from upwatch.engine.targets import MonitorSpec
from upwatch.engine.worker import Worker
from upwatch.engine.workerprocess import ChildConfig, WorkerProcess
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.errors import ServiceUnavailable
from upwatch.kit.metrics import Metrics
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.kit.supervisor import Role, Supervisor, progress
from upwatch.models import CheckResult, Monitor

if TYPE_CHECKING:  # Redis is imported only where it is configured
    from upwatch.engine.redisbroker import RedisBroker

log = logging.getLogger(__name__)

LOCAL_REGION = "local"


class Engine:
    def __init__(
        self,
        db: Database,
        clock: Clock,
        metrics: Metrics,
        guard: NetworkGuard,
        concurrency: int = 500,
        automation: TransitionHandler | None = None,
        report_seconds: float = 15.0,
        online_seconds: float = 60.0,
        worker_processes: int = 0,
        log_format: str = "text",
        late_seconds: float = 30.0,
        dispatch_lead_seconds: float = 0.0,
        ingest_max_wait_seconds: float = 0.25,
        remote: RedisBroker | None = None,
        maintenance: MaintenanceCalendar | None = None,
        aggregate_flush_seconds: float = 0.0,
    ) -> None:
        self.metrics = metrics
        self.db = db
        self.clock = clock
        self.guard = guard
        self.report_seconds = report_seconds
        self.online_seconds = online_seconds
        self.memory = MemoryBroker()
        # With a Redis broker the checks run in `upwatch worker` processes of any region,
        # none in this one; this process schedules and stores (docs/architecture.md).
        self.remote = remote
        self.broker: Broker = remote if remote is not None else self.memory
        self.local_region_id = ""
        self._online: tuple[str, ...] = ()
        self.scheduler = Scheduler(
            db,
            self.broker,
            clock,
            self.online_region_ids,
            gone=metrics.monitor_gone,
            lead_seconds=dispatch_lead_seconds,
        )
        # A result dropped for a deleted or paused monitor reloads it in the scheduler, which
        # then stops checking it and removes its series (a monitor deleted with its project
        # or account is announced no other way).
        self.ingester = Ingester(
            db,
            self.broker,
            self.online_region_ids,
            automation=automation,
            metrics=metrics,
            gone=self.changed,
            max_wait=ingest_max_wait_seconds,
            maintenance=maintenance,
            aggregate_flush_seconds=aggregate_flush_seconds,
        )
        self.concurrency = concurrency
        self.worker_processes = worker_processes
        self.late_seconds = late_seconds  # a queued check this overdue makes /readyz say so
        self.log_format = log_format
        self.kit: ProbeKit | None = None
        self.worker: Worker | None = None
        self.processes: list[WorkerProcess] = []
        self.ready = asyncio.Event()
        self._setup_lock = asyncio.Lock()
        self._counted = 0
        self.roles: dict[str, Role] = {}

    def online_region_ids(self) -> tuple[str, ...]:
        """Regions whose workers reported within ``online_seconds``, as last read from the
        database (refreshed by the presence role)."""
        return self._online

    async def _setup(self) -> None:
        """Make sure region `local` exists; every role waits for it, so the service answers
        (and /readyz tells why not) even while the database is not reachable yet."""
        async with self._setup_lock:
            if self.ready.is_set():
                return
            now = self.clock.now()
            async with self.db.worksession() as session:
                repository = EngineRepository(session)
                self.local_region_id = await repository.ensure_region(LOCAL_REGION, "Local", now)
                if self.remote is None:  # with the Redis broker, `local` has no worker
                    local_workers = max(1, self.worker_processes)
                    await repository.report_alive({self.local_region_id: local_workers}, now)
                self._online = await repository.online_region_ids(now, self.online_seconds)
                await session.commit()
            assert self.kit is not None
            self.worker = Worker(
                self.local_region_id,
                self.memory,
                self.kit,
                self.clock,
                self.metrics,
                self.concurrency,
            )
            level = logging.getLevelName(logging.getLogger().getEffectiveLevel()).lower()
            config = ChildConfig(
                region_id=self.local_region_id,
                concurrency=self.concurrency,
                allow_private=self.guard.allow_private,
                loopback_only=self.guard.loopback_only,
                log_format=self.log_format,
                log_level=level,
            )
            self.processes = [
                WorkerProcess(self.memory, config, self.metrics)
                for _ in range(self.worker_processes)
            ]
            self.ready.set()

    def start(self, supervisor: Supervisor) -> None:
        """Start every role under ``supervisor``; call inside the running loop."""
        self.kit = ProbeKit(guard=self.guard, http=guarded_session(self.guard))
        depth = self.broker.depth

        def has_jobs() -> bool:
            return any(n for q, n in depth().items() if q.startswith("jobs:"))

        def has_results() -> bool:
            return depth().get("results", 0) > 0 or bool(self.ingester.pending)

        start = supervisor.start
        supervisor.watch(
            lambda: self.memory.behind(self.clock.now().timestamp(), self.late_seconds)
        )
        # The scheduler ticks at least every second; the worker takes a job or waits at most
        # five; a worker stuck behind slow probes is lagging, not stalled, for a probe timeout.
        self.roles["scheduler"] = start("scheduler", self._run_scheduler, period_seconds=1.0)
        if self.remote is not None:
            pass  # the workers are `upwatch worker` processes
        elif self.worker_processes:
            # A process beats every few seconds even when idle; a stuck or dead one does not.
            for n in range(self.worker_processes):
                self.roles[f"worker-{n}"] = start(
                    f"worker-local-{n}", partial(self._run_process, n), 30.0, busy=has_jobs
                )
        else:
            self.roles["worker"] = start("worker-local", self._run_worker, 30.0, busy=has_jobs)
        self.roles["ingester"] = start("ingester", self._run_ingester, 5.0, busy=has_results)
        aggregates = self.ingester.aggregates
        if aggregates.deferred:
            self.roles["aggregates"] = start(
                "aggregate-flush",
                aggregates.run,
                aggregates.flush_seconds,
                busy=lambda: bool(aggregates.held),
            )
        self.roles["presence"] = start("region-presence", self._run_presence, self.report_seconds)

    async def _run_scheduler(self) -> None:
        await self._setup()
        await self.scheduler.run()

    async def _run_worker(self) -> None:
        await self._setup()
        assert self.worker is not None
        await self.worker.run()

    async def _run_process(self, n: int) -> None:
        await self._setup()
        await self.processes[n].run()

    async def _run_ingester(self) -> None:
        await self._setup()
        await self.ingester.run()

    async def _run_presence(self) -> None:
        """Report this process's worker alive while it beats, and re-read who is online."""
        await self._setup()
        while True:
            for queue, depth in self.broker.depth().items():
                self.metrics.queue_depth.labels(queue).set(depth)
            self.metrics.results_written.inc(self.ingester.written - self._counted)
            self._counted = self.ingester.written
            # A worker that stopped beating (dead, or stuck) no longer keeps its region online.
            beating = sum(
                time.monotonic() - role.last_beat < 3 * self.report_seconds
                for name, role in self.roles.items()
                if name.startswith("worker")
            )
            alive = {self.local_region_id: beating} if beating else {}
            if self.remote is not None:
                alive = await self._remote_presence()
            # Shielded, so a stop never leaves the connection inside its write transaction.
            await asyncio.shield(self._report(alive))
            progress()
            await asyncio.sleep(self.report_seconds)

    async def _remote_presence(self) -> dict[str, int]:
        from upwatch.engine.presence import beating_in_redis

        assert self.remote is not None
        return await beating_in_redis(
            self.db, self.remote.redis, self.remote.prefix, self.clock, self.online_seconds
        )

    async def _report(self, alive: dict[str, int]) -> None:
        self._online = await report_alive(self.db, self.clock, alive, self.online_seconds)

    async def close(self) -> None:
        if self.remote is not None:
            await self.remote.close()
            await self.remote.redis.aclose()
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
        checked_at = self.clock.now()
        if monitor.last_checked_at is not None:
            # Results are keyed by monitor, region and millisecond: a check asked for in the
            # millisecond of the last one (a clock that stands still in tests) comes after it.
            checked_at = max(checked_at, monitor.last_checked_at + timedelta(milliseconds=1))
        report = CheckReport(
            monitor_id=spec.id,
            region_id=region,
            due_at=started,
            started_at=started,
            checked_at=checked_at,
            outcome=outcome,
        )
        stored = await self.ingester.ingest([report])
        kind = "up" if outcome.ok else (outcome.error_kind or "down")
        self.metrics.checks.labels(spec.type, str(kind)).inc()
        if not stored:
            return None
        async with self.db.workreader() as session:
            return await EngineRepository(session).result(
                report.monitor_id, report.region_id, report.checked_at
            )

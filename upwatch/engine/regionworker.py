"""``upwatch worker --region CODE``: one region's probes over Redis, with no database.

A worker needs a Redis address and nothing else: it can run in another place than the rest of
the service. It learns its region's id from the ``{prefix}:regions`` hash (code to id, written
by whoever reads the regions from the database: the scheduler), takes that region's jobs from
the broker, and sends results back through it. While it runs it beats in ``{prefix}:presence``
(a sorted set of "region-id consumer" by the time of the last beat), which is how the rest of
the service knows a region is online and how many workers it has.

Stopping (SIGTERM or SIGINT): checks in flight are cancelled and the results and
acknowledgements already made are sent; the jobs it held unfinished are run by another worker
of the region once ``UPWATCH_BROKER_RECLAIM_SECONDS`` have passed, as after a SIGKILL.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
import time
from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING

from upwatch.engine.checks import ProbeKit
from upwatch.engine.redisbroker import RedisBroker
from upwatch.engine.worker import Worker
from upwatch.kit.clock import Clock
from upwatch.kit.metrics import Metrics
from upwatch.kit.metricsport import start_metrics_port
from upwatch.kit.net import NetworkGuard, guarded_session, probe_user_agent
from upwatch.kit.progress import progress
from upwatch.kit.supervisor import Supervisor

if TYPE_CHECKING:
    from redis.asyncio import Redis

    from upwatch.config import Settings

log = logging.getLogger(__name__)


def regions_key(prefix: str) -> str:
    return f"{prefix}:regions"


def presence_key(prefix: str) -> str:
    return f"{prefix}:presence"


async def publish_regions(redis: Redis, prefix: str, ids_by_code: dict[str, str]) -> None:
    """Tell workers which id each region code has (the scheduler's part)."""
    if ids_by_code:
        pairs = [part for pair in sorted(ids_by_code.items()) for part in pair]
        await redis.hset(regions_key(prefix), items=pairs)


async def online_workers(
    redis: Redis, prefix: str, now: float, online_seconds: float
) -> dict[str, int]:
    """Workers that beat within ``online_seconds``, counted per region id."""
    members = await redis.zrangebyscore(presence_key(prefix), now - online_seconds, "+inf")
    counts: dict[str, int] = {}
    for member in members:
        region_id = _text(member).split(" ", 1)[0]
        counts[region_id] = counts.get(region_id, 0) + 1
    return counts


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


async def _region_id(redis: Redis, prefix: str, code: str, poll_seconds: float) -> str:
    told = False
    while True:
        found = await redis.hget(regions_key(prefix), code)
        if found is not None:
            return _text(found)
        if not told:
            log.warning(
                "region %s is not known yet (define it with POST /regions and start the "
                "scheduler); waiting",
                code,
            )
            told = True
        await asyncio.sleep(poll_seconds)


@dataclass(eq=False)
class RegionWorker:
    settings: Settings
    redis: Redis
    region_code: str
    concurrency: int
    beat: InitVar[float | None] = None

    def __post_init__(self, beat: float | None) -> None:
        self.beat_seconds = beat or self.settings.region_report_seconds
        self.consumer = f"{socket.gethostname()}-{os.getpid()}"
        self.prefix = self.settings.broker_prefix

    async def run(self) -> None:
        """Work until cancelled."""
        settings = self.settings
        metrics = Metrics()  # the checks run here: their counts and timings are this process's
        supervisor = Supervisor(
            metrics,
            first_backoff_seconds=settings.role_restart_seconds,
            max_backoff_seconds=settings.role_restart_max_seconds,
        )
        # Served while the worker still waits for its region to be known, too.
        start_metrics_port(supervisor, metrics, settings)
        try:
            await self._work(supervisor, metrics)
        finally:
            await stop_roles(supervisor)

    async def _work(self, supervisor: Supervisor, metrics: Metrics) -> None:
        settings = self.settings
        region_id = await _region_id(self.redis, self.prefix, self.region_code, self.beat_seconds)
        broker = RedisBroker(
            self.redis,
            self.consumer,
            prefix=self.prefix,
            reclaim_seconds=settings.broker_reclaim_seconds,
            prefetch=min(self.concurrency, 200),
        )
        guard = NetworkGuard(
            allow_private=settings.allow_private_targets,
            loopback_only=settings.targets_loopback_only,
        )
        http = guarded_session(guard, user_agent=probe_user_agent(self.region_code))
        kit = ProbeKit(guard=guard, http=http)
        worker = Worker(region_id, broker, kit, Clock(), metrics, self.concurrency)
        member = f"{region_id} {self.consumer}"
        log.info(
            "worker %s checks region %s (%s) with up to %d checks at once",
            self.consumer,
            self.region_code,
            region_id,
            self.concurrency,
        )
        try:
            supervisor.start("worker", worker.run, period_seconds=5.0)
            supervisor.start("results", broker.pump, period_seconds=5.0)
            supervisor.start("presence", lambda: self._beat(member), self.beat_seconds)
            await asyncio.Event().wait()
        finally:
            await stop_roles(supervisor)
            await broker.close()
            with contextlib.suppress(Exception):
                # What finished goes out (not waiting long on a full result stream); the rest
                # is reclaimed later.
                async with asyncio.timeout(5):
                    await broker.flush()
                await self.redis.zrem(presence_key(self.prefix), member)
            await http.close()

    async def _beat(self, member: str) -> None:
        while True:
            await self.redis.zadd(presence_key(self.prefix), {member: time.time()})
            progress()
            await asyncio.sleep(self.beat_seconds)


async def stop_roles(supervisor: Supervisor) -> None:
    """Cancel the supervisor's roles and wait for them."""
    tasks = supervisor.tasks
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)


async def serve_region(settings: Settings, region_code: str, concurrency: int) -> None:
    """The ``upwatch worker`` process: a ``RegionWorker`` until SIGTERM or SIGINT."""
    from upwatch.kit.redisclient import connect

    redis = connect(settings.redis_url)
    task = asyncio.create_task(RegionWorker(settings, redis, region_code, concurrency).run())
    loop = asyncio.get_running_loop()
    for stop in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(stop, task.cancel)
    try:
        await task
    except asyncio.CancelledError:
        log.info("worker for region %s stopped", region_code)
    finally:
        await redis.aclose()

"""Distributed mode: the background roles as processes of their own over PostgreSQL and Redis.

`upwatch serve --roles api` answers HTTP; these run the rest (docs/deployment.md):

- ``upwatch scheduler``: the leading scheduler (a lease in Redis; others stand by and take
  over within seconds of its death), following monitor changes from Redis, and region
  presence (Redis beats into the database);
- ``upwatch ingester``: stores results from the broker (several may run: each batch locks
  its monitors, and a result delivered twice is stored once), opens and resolves incidents
  and writes their alerts to the outbox;
- ``upwatch sender``: delivers alerts and e-mail from the outbox, expands status-page
  subscriber notices and delivers their webhook and Slack ones, and pages escalation steps
  and reminders as they come due (several may run: each page is claimed on its incident,
  each notice and delivery by a lease);
- ``upwatch retention``: the daily expiry of old data.

Each is supervised like the embedded roles and stops on SIGTERM or SIGINT. They need
PostgreSQL (SQLite is one file on one machine, with one writer at a time) and a schema made by
``upwatch migrate`` or a first ``serve``. With ``UPWATCH_METRICS_PORT`` set, each serves
``/metrics`` there (``kit/metricsport.py``); the per-monitor series come from the ingesters.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import socket
from collections.abc import Callable, Coroutine
from typing import Any

from upwatch.config import Settings
from upwatch.engine.baseline import BaselineLoop
from upwatch.engine.changefeed import ChangeFeed, ChangeReader
from upwatch.engine.ingester import Ingester
from upwatch.engine.leadership import Lease
from upwatch.engine.presence import beating_in_redis, online_now, report_alive
from upwatch.engine.redisbroker import RedisBroker
from upwatch.engine.scheduler import Scheduler
from upwatch.engine.series import SeriesSweep, last_checks_in
from upwatch.escalation.pager import Pager
from upwatch.escalation.paging import PolicyPaging
from upwatch.incidents.automatic import IncidentAutomation
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.metrics import Metrics
from upwatch.kit.metricsport import start_metrics_port
from upwatch.kit.net import NetworkGuard
from upwatch.kit.plans import PlanCatalog
from upwatch.kit.progress import progress
from upwatch.kit.redisclient import connect
from upwatch.kit.supervisor import Supervisor
from upwatch.mail.sender import Mailer
from upwatch.maintenance.calendar import WindowCalendar
from upwatch.notifications.channels import plan_channels
from upwatch.notifications.delivery import AlertOutbox, AlertSender
from upwatch.retention.job import RetentionJob
from upwatch.statuspages.fanout import Fanout, start_subscriber_roles
from upwatch.statuspages.hooks import SubscriberHooks
from upwatch.statuspages.subscribers import IncidentNotices

log = logging.getLogger(__name__)

ROLES = ("scheduler", "ingester", "sender", "retention")


class RoleProcess:
    """What every role process shares: settings, a clock, the database, Redis, a supervisor."""

    def __init__(self, settings: Settings, role: str) -> None:
        self.settings = settings
        self.role = role
        self.clock = Clock()
        self.metrics = Metrics()
        self.db = Database(settings)
        self.redis = connect(settings.redis_url)
        self.consumer = f"{socket.gethostname()}-{os.getpid()}"
        self.supervisor = Supervisor(
            self.metrics,
            first_backoff_seconds=settings.role_restart_seconds,
            max_backoff_seconds=settings.role_restart_max_seconds,
            stall_seconds=settings.ready_stall_seconds,
        )
        self.online: tuple[str, ...] = ()
        self.closing: list[Callable[[], Coroutine[Any, Any, None]]] = []

    def broker(self) -> RedisBroker:
        settings = self.settings
        return RedisBroker(
            self.redis,
            self.consumer,
            prefix=settings.broker_prefix,
            reclaim_seconds=settings.broker_reclaim_seconds,
        )

    def online_region_ids(self) -> tuple[str, ...]:
        return self.online

    async def follow_online(self) -> None:
        """Re-read which regions are online (the scheduler process writes it)."""
        settings = self.settings
        while True:
            self.online = await online_now(self.db, self.clock, settings.region_online_seconds)
            progress()
            await asyncio.sleep(settings.region_report_seconds)

    async def run(self) -> None:
        """Until cancelled (SIGTERM, SIGINT); then stop the roles and close what is open."""
        try:
            await asyncio.Event().wait()
        finally:
            tasks = [r.task for r in self.supervisor.roles.values() if r.task is not None]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            for close in self.closing:
                with contextlib.suppress(Exception):
                    await close()
            await self.redis.aclose()
            await self.db.dispose()


def _scheduler(process: RoleProcess) -> None:
    settings = process.settings
    broker = process.broker()
    scheduler = Scheduler(
        process.db,
        broker,
        process.clock,
        process.online_region_ids,
        lead_seconds=settings.check_dispatch_lead_seconds,
    )
    changes = ChangeReader(process.redis, settings.broker_prefix)

    async def leading() -> None:
        since = await changes.position()  # before loading: no change falls in between
        async with asyncio.TaskGroup() as tasks:
            tasks.create_task(scheduler.run())
            tasks.create_task(changes.follow(since, scheduler.changed))

    async def presence() -> None:
        while True:
            alive = await beating_in_redis(
                process.db,
                process.redis,
                settings.broker_prefix,
                process.clock,
                settings.region_online_seconds,
            )
            process.online = await report_alive(
                process.db, process.clock, alive, settings.region_online_seconds
            )
            progress()
            await asyncio.sleep(settings.region_report_seconds)

    start = process.supervisor.start
    lease = Lease(process.redis, settings.broker_prefix, "scheduler")
    start("scheduler", lambda: lease.lead(leading), period_seconds=5.0)
    start("region-presence", presence, settings.region_report_seconds)


def _ingester(process: RoleProcess) -> None:
    settings = process.settings
    catalog = PlanCatalog.load(settings.plans_file, settings.edition, channels=plan_channels())
    feed = ChangeFeed(process.redis, settings.broker_prefix)

    def gone(monitor_id: str) -> None:
        """A result of a deleted or paused monitor: the scheduler reloads it and stops, and
        its series go from this process."""
        feed.changed(monitor_id)
        process.metrics.monitor_gone(monitor_id)

    ingester = Ingester(
        process.db,
        process.broker(),
        process.online_region_ids,
        # The sender process finds the alerts in the outbox on its next poll.
        automation=IncidentAutomation(
            AlertOutbox(catalog, lambda: None),
            public_url=settings.public_url,
            notices=IncidentNotices(settings),
            escalation=PolicyPaging(),
        ),
        metrics=process.metrics,
        gone=gone,
        max_wait=settings.ingest_max_wait_seconds,
        maintenance=WindowCalendar(),
        aggregate_flush_seconds=settings.aggregate_flush_seconds,
    )
    # Per-monitor series come from the ingesters only (an API process stores no results):
    # the sweep keeps each monitor's to the ingester that stored its latest check.
    sweep = SeriesSweep(process.metrics, last_checks_in(process.db))
    start = process.supervisor.start
    start("ingester", ingester.run, 5.0, busy=lambda: bool(ingester.pending))
    aggregates = ingester.aggregates
    if aggregates.deferred:
        # Each ingester flushes its own batches, and a dead peer's once they are stale.
        start(
            "aggregate-flush",
            aggregates.run,
            aggregates.flush_seconds,
            busy=lambda: bool(aggregates.held),
        )
    start("change-feed", feed.run, 30.0, busy=lambda: False)
    start("online-regions", process.follow_online, settings.region_report_seconds)
    start("monitor-series", sweep.run, sweep.period_seconds * 2)
    # Several ingesters reach the same verdicts and write only a change: harmless.
    baseline = BaselineLoop(process.db, process.clock)
    start("baseline", baseline.run, baseline.period_seconds * 2, busy=lambda: False)


def _sender(process: RoleProcess) -> None:
    settings = process.settings
    catalog = PlanCatalog.load(settings.plans_file, settings.edition, channels=plan_channels())
    mailer = Mailer(settings, process.db, process.clock, process.metrics)
    guard = NetworkGuard(
        allow_private=settings.allow_private_targets, loopback_only=settings.targets_loopback_only
    )
    alerts = AlertSender(settings, process.db, process.clock, process.metrics, guard)
    alerts.start()
    process.closing.append(alerts.close)
    start = process.supervisor.start
    start("mail-sender", mailer.run, settings.mail_poll_seconds + settings.smtp_timeout_seconds)
    start("alert-sender", alerts.run, settings.alert_poll_seconds + settings.alert_timeout_seconds)
    hooks = SubscriberHooks(settings, process.db, process.clock, guard)
    process.closing.append(hooks.close)
    fanout = Fanout(settings, process.db, process.clock, mailer, hooks.wake)
    start_subscriber_roles(process.supervisor, settings, fanout, hooks)
    automation = IncidentAutomation(
        AlertOutbox(catalog, alerts.wake),
        public_url=settings.public_url,
        notices=IncidentNotices(settings),
        escalation=PolicyPaging(),
    )
    pager = Pager(process.db, process.clock, automation, settings.pager_poll_seconds)
    start("pager", pager.run, settings.pager_poll_seconds * 2)


def _retention(process: RoleProcess) -> None:
    settings = process.settings
    catalog = PlanCatalog.load(settings.plans_file, settings.edition, channels=plan_channels())
    mailer = Mailer(settings, process.db, process.clock, process.metrics)
    job = RetentionJob(settings, process.db, process.clock, process.metrics, mailer, catalog)
    process.supervisor.start(
        "retention", job.run, settings.retention_poll_seconds, busy=lambda: False
    )


_BUILD = {
    "scheduler": _scheduler,
    "ingester": _ingester,
    "sender": _sender,
    "retention": _retention,
}


def needs(settings: Settings) -> str | None:
    """Why a role process cannot run with these settings, if it cannot."""
    if not settings.redis_url:
        return "distributed roles need UPWATCH_REDIS_URL (the broker)"
    if settings.is_sqlite:
        return "distributed roles need PostgreSQL (UPWATCH_DATABASE_URL=postgresql://...)"
    return None


async def run_role(settings: Settings, role: str) -> None:
    """The ``upwatch <role>`` process, until SIGTERM or SIGINT."""
    process = RoleProcess(settings, role)
    _BUILD[role](process)
    start_metrics_port(process.supervisor, process.metrics, settings)
    log.info("upwatch %s started (process %d)", role, os.getpid())
    task = asyncio.create_task(process.run())
    loop = asyncio.get_running_loop()
    for stop in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(stop, task.cancel)
    with contextlib.suppress(asyncio.CancelledError):
        await task
    log.info("upwatch %s stopped", role)

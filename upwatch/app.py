"""The application factory and its lifespan: engines, clients and background tasks."""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

from fastapi import FastAPI
from fastapi_offline import FastAPIOffline

from upwatch import __version__
from upwatch.accounts.endpoints import auth, users
from upwatch.admin.endpoints import router as admin_router
from upwatch.apikeys.endpoints import router as api_keys_router
from upwatch.audit import endpoints as audit_log
from upwatch.billing.endpoints import router as billing_router
from upwatch.callers.metering import MemoryMeter, RedisMeter
from upwatch.client.endpoints import router as config_schema_router
from upwatch.config import Settings
from upwatch.console.endpoints import install as install_console
from upwatch.console.render import POLICY as CONSOLE_POLICY
from upwatch.contact.endpoints import router as contact_router
from upwatch.engine.baseline import BaselineLoop
from upwatch.engine.changefeed import ChangeFeed
from upwatch.engine.embedded import Engine
from upwatch.escalation.endpoints import router as escalation_router
from upwatch.escalation.pager import Pager
from upwatch.escalation.paging import PolicyPaging
from upwatch.incidents.automatic import IncidentAutomation
from upwatch.incidents.endpoints import router as incidents_router
from upwatch.kit.boundary import RequestGuard
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.error_handlers import install_error_handlers, install_redis_handlers
from upwatch.kit.headers import SecurityHeaders, docs_policy
from upwatch.kit.metrics import Metrics, MetricsMiddleware
from upwatch.kit.net import NetworkGuard
from upwatch.kit.plans import PlanCatalog
from upwatch.kit.response_headers import declare as declare_response_headers
from upwatch.kit.security import AccessTokens, Passwords
from upwatch.kit.supervisor import Supervisor
from upwatch.mail.sender import Mailer
from upwatch.maintenance.calendar import WindowCalendar
from upwatch.maintenance.endpoints import router as maintenance_router
from upwatch.migrations import upgrade
from upwatch.monitors.endpoints import board as dashboard_router
from upwatch.monitors.endpoints import heartbeats as heartbeats_router
from upwatch.monitors.endpoints import regions as regions_router
from upwatch.monitors.endpoints import reports_router as project_reports_router
from upwatch.monitors.endpoints import router as monitors_router
from upwatch.notifications.channels import plan_channels
from upwatch.notifications.delivery import AlertOutbox, AlertSender
from upwatch.notifications.endpoints import router as notifications_router
from upwatch.operations.endpoints import router as operations_router
from upwatch.ports import ApiMeter, CheckRunner, NoEngine
from upwatch.projects.endpoints import router as projects_router
from upwatch.retention.endpoints import router as retention_router
from upwatch.retention.job import RetentionJob
from upwatch.runtime import PlanCache, Runtime, Throttles
from upwatch.sessions.endpoints import router as sessions_router
from upwatch.statuspages.endpoints import router as status_pages_router
from upwatch.statuspages.fanout import Fanout, start_subscriber_roles
from upwatch.statuspages.hooks import SubscriberHooks
from upwatch.statuspages.public import public as public_status_router
from upwatch.statuspages.serving import PublicPages
from upwatch.statuspages.site import site as status_site_router
from upwatch.statuspages.snapshot import Snapshots
from upwatch.statuspages.subscribers import IncidentNotices

if TYPE_CHECKING:  # imported where Redis is configured: a process without it never loads it
    from redis.asyncio import Redis

    from upwatch.engine.redisbroker import RedisBroker

log = logging.getLogger(__name__)

DESCRIPTION = """
Upwatch checks websites and services on schedule, keeps every result, opens incidents and
alerts people. Authenticate with `Authorization: Bearer <access_token>` from
`POST /auth/signup` or `POST /auth/login`. Every error is an RFC 9457 problem document
(`application/problem+json`).
"""


async def stop_tasks(tasks: list[asyncio.Task[None]], grace_seconds: float = 3.0) -> None:
    """Cancel background tasks and wait a bounded time; name any that will not stop."""
    for task in tasks:
        task.cancel()
    _, pending = await asyncio.wait(tasks, timeout=grace_seconds)
    for task in pending:
        frames = "".join(
            f"\n  {f.f_code.co_filename}:{f.f_lineno} {f.f_code.co_name}" for f in task.get_stack()
        )
        log.error(
            "background task %s did not stop within %ss:%s", task.get_name(), grace_seconds, frames
        )
        # Once more: a cancellation that a driver turned into an ordinary error is lost, and
        # a task still holding a database transaction must not outlive the process's stop.
        task.cancel()
    if pending:
        await asyncio.wait(pending, timeout=grace_seconds)


def remote_broker(settings: Settings) -> RedisBroker | None:
    """The Redis broker when the checks run in `upwatch worker` processes."""
    if settings.broker != "redis":
        return None
    from upwatch.engine.redisbroker import RedisBroker
    from upwatch.kit.redisclient import connect

    consumer = f"{socket.gethostname()}-{os.getpid()}"
    return RedisBroker(
        connect(settings.redis_url),
        consumer,
        prefix=settings.broker_prefix,
        reclaim_seconds=settings.broker_reclaim_seconds,
    )


def remote_checks(settings: Settings, db: Database, clock: Clock, shared: Redis) -> CheckRunner:
    """ "Check now" in an API process: the check goes to a worker of the monitor's region
    through Redis, like a scheduled one, and the answer waits for its stored result."""
    from upwatch.engine.redisbroker import RedisBroker
    from upwatch.engine.remotecheck import RemoteChecks

    broker = RedisBroker(
        shared,
        f"{socket.gethostname()}-{os.getpid()}-api",
        prefix=settings.broker_prefix,
        reclaim_seconds=settings.broker_reclaim_seconds,
    )
    # Beyond the check's timeout: a worker's result batch and an ingester's, with room.
    extra = settings.ingest_max_wait_seconds + 10.0
    return RemoteChecks(db, broker, clock, settings.region_online_seconds, extra)


def create_app(settings: Settings | None = None, clock: Clock | None = None) -> FastAPI:
    settings = settings or Settings()
    clock = clock or Clock()
    metrics = Metrics()
    # Read at creation, so a broken plans file stops the service before it serves anything.
    catalog = PlanCatalog.load(settings.plans_file, settings.edition, channels=plan_channels())

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        db = Database(settings)
        if settings.migrate_on_start:
            await upgrade(db.engine)
        # The one guard for every user-supplied address: probes, webhooks and chat hooks.
        guard = NetworkGuard(
            allow_private=settings.allow_private_targets,
            loopback_only=settings.targets_loopback_only,
        )
        supervisor = Supervisor(
            metrics,
            first_backoff_seconds=settings.role_restart_seconds,
            max_backoff_seconds=settings.role_restart_max_seconds,
            stall_seconds=settings.ready_stall_seconds,
        )
        mailer = Mailer(settings, db, clock, metrics)
        alerts = AlertSender(settings, db, clock, metrics, guard)
        alerts.start()
        engine: Engine | None = None
        everything = settings.roles == "all"
        hooks = SubscriberHooks(settings, db, clock, guard)
        fanout = Fanout(settings, db, clock, mailer, hooks.wake)
        followers = IncidentNotices(settings, fanout.wake)
        automation = IncidentAutomation(
            AlertOutbox(catalog, alerts.wake),
            public_url=settings.public_url,
            notices=followers,
            escalation=PolicyPaging(),
        )
        if settings.engine and everything:
            engine = Engine(
                db,
                clock,
                metrics=metrics,
                guard=guard,
                automation=automation,
                report_seconds=settings.region_report_seconds,
                online_seconds=settings.region_online_seconds,
                concurrency=settings.check_concurrency,
                worker_processes=settings.worker_processes,
                log_format=settings.log_format,
                late_seconds=settings.ready_late_seconds,
                dispatch_lead_seconds=settings.check_dispatch_lead_seconds,
                ingest_max_wait_seconds=settings.ingest_max_wait_seconds,
                remote=remote_broker(settings),
                maintenance=WindowCalendar(),
                aggregate_flush_seconds=settings.aggregate_flush_seconds,
            )
        meter: ApiMeter = (
            RedisMeter(settings.redis_url, clock)
            if settings.redis_url
            else MemoryMeter(db, clock, settings.usage_flush_seconds)
        )
        app.state.engine = engine  # for operators' tooling and tests; requests use the ports
        # Redis, when configured, holds what every API process must share: throttles, and
        # (an API process of a distributed deployment) monitor changes for the scheduler.
        shared: Redis | None = None
        if settings.redis_url:
            from upwatch.kit.redisclient import connect

            shared = connect(settings.redis_url)
        changes: ChangeFeed | None = None
        checks: CheckRunner = engine or NoEngine()
        if engine is None and not everything and shared is not None:
            changes = ChangeFeed(shared, settings.broker_prefix)
            checks = remote_checks(settings, db, clock, shared)
        snapshots = Snapshots(
            db.readsession, clock, settings.status_page_max_age_seconds, settings.public_url
        )
        app.state.status_page_snapshots = snapshots
        app.state.runtime = Runtime(
            settings=settings,
            clock=clock,
            db=db,
            metrics=metrics,
            passwords=Passwords(settings),
            tokens=AccessTokens(settings),
            mailer=mailer,
            throttles=Throttles.from_settings(settings, clock, shared),
            catalog=catalog,
            meter=meter,
            plan_cache=PlanCache(clock),
            guard=guard,
            supervisor=supervisor,
            monitor_changes=engine or changes or NoEngine(),
            checks=checks,
            alerts=alerts,
            status_pages=snapshots,
            incident_followers=followers,
        )
        if everything:
            # A sender's pass may take a delivery timeout: that is lagging, not a stall.
            supervisor.start(
                "mail-sender",
                mailer.run,
                settings.mail_poll_seconds + settings.smtp_timeout_seconds,
            )
            supervisor.start(
                "alert-sender",
                alerts.run,
                settings.alert_poll_seconds + settings.alert_timeout_seconds,
            )
            start_subscriber_roles(supervisor, settings, fanout, hooks)
            pager = Pager(db, clock, automation, settings.pager_poll_seconds)
            app.state.pager = pager  # for tests with a controlled clock
            supervisor.start("pager", pager.run, settings.pager_poll_seconds * 2)
        if changes is not None:
            supervisor.start("change-feed", changes.run, 30.0, busy=lambda: False)
        supervisor.start("usage-flusher", meter.run, settings.usage_flush_seconds)
        if settings.retention and everything:
            retention = RetentionJob(settings, db, clock, metrics, mailer, catalog)
            # Idle between passes, so never "stalled"; a pass beats after each batch.
            supervisor.start(
                "retention", retention.run, settings.retention_poll_seconds, busy=lambda: False
            )
        if engine is not None:
            engine.start(supervisor)
            baseline = BaselineLoop(db, clock)
            # Idle between passes, like retention.
            supervisor.start(
                "baseline", baseline.run, baseline.period_seconds * 2, busy=lambda: False
            )
        log.info("Upwatch %s ready on %s", __version__, settings.sqlalchemy_url.split("://")[0])
        if not settings.smtp_configured:
            log.warning(
                "SMTP is not configured (UPWATCH_SMTP_HOST): e-mail is kept in the outbox "
                "(GET /admin/mail) and written to this log in full"
            )
        try:
            yield
        finally:
            await stop_tasks(supervisor.tasks)
            await hooks.close()
            if engine is not None:
                await engine.close()
            if changes is not None:
                with contextlib.suppress(Exception):
                    await changes.flush()  # changes made just before the stop
            if shared is not None:
                await shared.aclose()
            await alerts.close()
            await db.dispose()

    # /docs and /redoc load their scripts from the installed package, never from a CDN, so
    # an air-gapped service still shows its API.
    app = FastAPIOffline(
        title="Upwatch",
        version=__version__,
        description=DESCRIPTION,
        lifespan=lifespan,
        static_url="/docs/assets",
        # No badge from the public validator service: nothing leaves the machine.
        swagger_ui_parameters={"validatorUrl": None},
    )
    install_error_handlers(app)
    if settings.redis_url:
        install_redis_handlers(app)
    for router in (
        auth,
        users,
        sessions_router,
        projects_router,
        api_keys_router,
        monitors_router,
        project_reports_router,
        regions_router,
        heartbeats_router,
        dashboard_router,
        incidents_router,
        maintenance_router,
        escalation_router,
        status_pages_router,
        public_status_router,
        status_site_router,
        notifications_router,
        billing_router,
        contact_router,
        retention_router,
        admin_router,
        audit_log.projects,
        audit_log.admin,
        audit_log.own,
        operations_router,
        config_schema_router,
    ):
        app.include_router(router)
    install_console(app)
    declare_response_headers(app)
    app.add_middleware(
        RequestGuard,
        max_body_bytes=settings.max_body_bytes,
        retries=settings.conflict_retries,
        retry_seconds=settings.conflict_retry_seconds,
    )
    docs = docs_policy(settings.public_url)
    app.add_middleware(
        SecurityHeaders,
        policies={
            "/app": CONSOLE_POLICY,
            app.docs_url or "/docs": docs,
            app.redoc_url or "/redoc": docs,
        },
    )
    # Public status pages from their snapshots, ahead of routing (statuspages/serving.py).
    app.add_middleware(PublicPages)
    app.add_middleware(MetricsMiddleware, metrics=metrics)
    return app

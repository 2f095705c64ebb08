"""Reliable alerting: alerts are outbox rows, delivered by a sender that retries with back-off.

``AlertOutbox.enqueue`` writes one row per provider, and one per active personal channel of
each project member (``personal.py``), in the caller's transaction (the one that changed the
monitor's state), already marked suppressed when quiet hours, a disabled provider or the
owner's plan say so. ``AlertSender`` claims due rows, delivers them through the channel's
transport and records every attempt. A claim is committed before sending, so after a crash an
alert is retried only when its outcome was never recorded; receivers get the alert's delivery
id (``X-Upwatch-Delivery``, PagerDuty's dedup key) to drop such a rare repeat.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import time
import uuid
from collections.abc import Callable, Collection
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy.ext.asyncio import AsyncSession

from upwatch.callers.plans import plan_of
from upwatch.config import Settings
from upwatch.kit import languages
from upwatch.kit.backoff import Draw, backoff
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database, after_commit
from upwatch.kit.logs import log_event
from upwatch.kit.metrics import Metrics
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.kit.outbox import Wakeable
from upwatch.kit.plans import PlanCatalog
from upwatch.mail.sender import SmtpTransport
from upwatch.models import Alert, AlertAttempt, NotificationProvider, Project, User
from upwatch.notifications import personal
from upwatch.notifications.channels import REGISTRY, DeliveryKit, TransportError, deliver
from upwatch.notifications.events import AlertEvent, EventKind
from upwatch.notifications.repository import AlertRepository, ProviderRepository
from upwatch.notifications.rules import suppression
from upwatch.projects.repository import ProjectRepository

log = logging.getLogger(__name__)

# Deliveries in flight at once, so one slow receiver does not hold up the others.
CONCURRENCY = 10


def retry_delay(
    settings: Settings,
    attempts: int,
    retry_after: float | None = None,
    draw: Draw = random.random,
) -> timedelta:
    """The wait before the next attempt: the jittered back-off, or longer when the receiver
    asked for longer (``Retry-After``), never past the configured cap."""
    cap = settings.alert_retry_max_seconds
    delay = backoff(attempts, settings.alert_retry_seconds, cap, draw)
    if retry_after is not None:
        delay = max(delay, timedelta(seconds=min(retry_after, cap)))
    return delay


def alert_row(
    destination: dict[str, Any],
    project_id: str,
    incident_id: str | None,
    event: AlertEvent,
    status: str,
    reason: str | None,
    now: datetime,
    attempts: int = 0,
) -> Alert:
    """The alert row for ``event`` to ``destination`` (``to_provider`` or ``to_member``), its
    facts captured now."""
    return Alert(
        **destination,
        project_id=project_id,
        incident_id=incident_id,
        event=event.kind.value,
        facts=event.to_json(),
        status=status,
        reason=reason,
        attempts=attempts,
        next_attempt_at=now,
        sent_at=now if status == "sent" else None,
        created_at=now,
    )


def to_provider(provider: NotificationProvider) -> dict[str, Any]:
    return {
        "provider_id": provider.id,
        "provider_type": provider.type,
        "provider_name": provider.name,
    }


def to_member(user: User, channel: str) -> dict[str, Any]:
    """A member's personal ``channel``: no provider, the member named instead."""
    label = REGISTRY[channel].label
    return {
        "provider_id": None,
        "provider_type": channel,
        "provider_name": f"personal {label}: {user.email}"[:100],
        "user_id": user.id,
    }


async def destination_of(session: AsyncSession, alert: Alert) -> tuple[str, dict[str, Any]] | str:
    """The channel and config to deliver ``alert`` with, read now, or why it is not sent.

    A personal alert goes only to a member of the alert's project whose channel is still
    active: leaving the project or turning the channel off stops pending alerts.
    """
    if alert.user_id is not None:
        user = await session.get(User, alert.user_id)
        if user is None:
            return "the user was deleted"
        if await ProjectRepository(session).member(alert.project_id, user.id) is None:
            return "the user is no longer a member of the project"
        config = personal.delivery_config(
            personal.complete(user.settings), user.email, alert.provider_type
        )
        return config if isinstance(config, str) else (alert.provider_type, config)
    provider = (
        await session.get(NotificationProvider, alert.provider_id)
        if alert.provider_id is not None
        else None
    )
    if provider is None:
        return "the provider was deleted"
    if not provider.is_enabled:
        return "the provider was disabled"
    return provider.type, provider.config


class AlertOutbox:
    """Writes alerts in the transaction of the change they report."""

    def __init__(self, catalog: PlanCatalog, wake: Callable[[], None]) -> None:
        self.catalog = catalog
        self.wake = wake

    async def enqueue(
        self,
        session: AsyncSession,
        project: Project,
        event: Callable[[str], AlertEvent],
        incident_id: str | None,
        now: datetime,
        only: Collection[str] | None = None,
    ) -> list[Alert]:
        """One alert per provider of ``project`` and per active personal channel of each
        member; ``event`` builds the facts for a delivery id. ``only``: just these providers
        and no personal channel (an escalation policy decides who is paged). The sender is
        woken once the transaction commits."""
        providers = await ProviderRepository(session).of_project(project.id)
        members = await ProjectRepository(session).members(project.id)
        if only is not None:
            providers = [p for p in providers if p.id in only]
            members = []
        if not providers and not members:
            return []
        owner = await session.get(User, project.owner_id)
        timezone = str((owner.settings if owner else {}).get("timezone") or "UTC")
        plan = await plan_of(session, self.catalog, project.owner_id)
        alerts = []
        repository = AlertRepository(session)
        alerted: set[str] | None = None  # read once, for a recovery only
        for provider in providers:
            facts = replace(
                event(f"{incident_id or 'none'}:{provider.id}:{uuid.uuid4().hex[:8]}"),
                language=project.alert_language,
            )
            if alerted is None:
                # A recovery reaches whoever heard of the outage, quiet hours or not.
                alerted = (
                    await repository.outage_alerted(incident_id)
                    if facts.kind is EventKind.RESOLVED and incident_id is not None
                    else set()
                )
            reason = suppression(
                enabled=provider.is_enabled,
                channel=provider.type,
                channels_in_plan=plan.notificationChannels,
                quiet_start=provider.quiet_hours_start,
                quiet_end=provider.quiet_hours_end,
                timezone=timezone,
                now=now,
                ends_a_delivered_alert=provider.id in alerted,
            )
            status = "pending" if reason is None else "suppressed"
            alert = alert_row(
                to_provider(provider), project.id, incident_id, facts, status, reason, now
            )
            repository.add(alert)
            alerts.append(alert)
        for _membership, user in members:
            # Personal channels have no quiet hours; the owner's plan applies to them too.
            for channel in personal.active_channels(personal.complete(user.settings), user.email):
                facts = replace(
                    event(f"{incident_id or 'none'}:{user.id}.{channel}:{uuid.uuid4().hex[:8]}"),
                    language=languages.of_settings(user.settings),
                )
                reason = suppression(
                    enabled=True,
                    channel=channel,
                    channels_in_plan=plan.notificationChannels,
                    quiet_start=None,
                    quiet_end=None,
                    timezone=timezone,
                    now=now,
                )
                status = "pending" if reason is None else "suppressed"
                alert = alert_row(
                    to_member(user, channel), project.id, incident_id, facts, status, reason, now
                )
                repository.add(alert)
                alerts.append(alert)
        await session.flush()
        after_commit(session, self.wake)
        return alerts


@dataclass(eq=False)
class AlertSender:
    settings: Settings
    database: Database
    clock: Clock
    metrics: Metrics
    guard: NetworkGuard
    # The jitter of retry delays; tests pass their own to pin the draw.
    draw: Draw = field(default=random.random, repr=False)
    kit: DeliveryKit | None = field(default=None, init=False)
    loop: Wakeable = field(default_factory=Wakeable, init=False)

    def start(self) -> None:
        """Create the HTTP client; call inside the running loop (the app's lifespan)."""
        self.kit = DeliveryKit(
            settings=self.settings,
            http=guarded_session(self.guard, limit=100),
            smtp=SmtpTransport(self.settings),
            clock=self.clock,
        )

    async def close(self) -> None:
        if self.kit is not None:
            with contextlib.suppress(Exception):
                await self.kit.http.close()

    def wake(self) -> None:
        self.loop.wake()

    async def run(self) -> None:
        """Deliver due alerts until cancelled; wakes on new alerts or every poll interval."""
        await self.loop.drain_forever(self.deliver_due, lambda: self.settings.alert_poll_seconds)

    async def deliver_due(self, batch: int = 50) -> int:
        """One pass over due alerts; returns how many were attempted."""
        now = self.clock.now()
        async with self.database.workreader() as session:
            due = await AlertRepository(session).due(now, batch)
        limiter = asyncio.Semaphore(CONCURRENCY)

        async def attempt(alert_id: int, due_at: datetime) -> bool:
            async with limiter:
                # Claimed only when its turn comes, so a claim never ages while it waits.
                claimed_until = self.clock.now() + timedelta(
                    seconds=self.settings.alert_claim_seconds
                )
                async with self.database.worksession() as session:
                    won = await AlertRepository(session).claim(alert_id, due_at, claimed_until)
                    await session.commit()
                if won:
                    await self._attempt(alert_id, claimed_until)
                return won

        results = await asyncio.gather(*(attempt(a, t) for a, t in due))
        return sum(results)

    async def send(
        self, provider: NotificationProvider, event: AlertEvent
    ) -> TransportError | None:
        """Deliver one message now; the error, or None when it was delivered."""
        return await self._send(provider.type, provider.config, event)

    async def _send(
        self, channel: str, config: dict[str, Any], event: AlertEvent
    ) -> TransportError | None:
        if self.kit is None:
            return TransportError("the alert sender is not running", retryable=True)
        try:
            await deliver(channel, config, event, self.kit)
        except TransportError as exc:
            return exc
        return None

    async def _attempt(self, alert_id: int, claimed_until: datetime) -> None:
        async with self.database.workreader() as session:
            alert = await session.get(Alert, alert_id)
            target = await destination_of(session, alert) if alert is not None else None
        if alert is None or target is None:
            return  # deleted with its incident or project meanwhile
        started = time.perf_counter()
        error: str | None
        retryable = False
        retry_after: float | None = None
        if isinstance(target, str):
            error = target
        else:
            try:
                failure = await self._send(*target, AlertEvent.from_json(alert.facts))
            except Exception as exc:
                # Counted as an attempt all the same, so an alert can never loop unrecorded.
                log.exception("unexpected error delivering alert %s", alert_id)
                # Only the type: the text could quote a credential, and users see this.
                error, retryable = f"unexpected error ({type(exc).__name__})", True
            else:
                error = failure.message if failure else None
                retryable = failure is not None and failure.retryable
                retry_after = failure.retry_after if failure else None
        duration_ms = (time.perf_counter() - started) * 1000
        now = self.clock.now()
        attempts = alert.attempts + 1
        values: dict[str, object] = {"attempts": attempts, "reason": error}
        if error is None:
            outcome = "sent"
            values.update(status="sent", sent_at=now)
        elif retryable and attempts < self.settings.alert_max_attempts:
            outcome = "retry"
            delay = retry_delay(self.settings, attempts, retry_after, self.draw)
            values.update(next_attempt_at=now + delay)
            log.warning("alert %s attempt %d failed: %s", alert_id, attempts, error)
        else:
            outcome = "failed"
            values.update(status="failed")
        self.metrics.alert_deliveries.labels(alert.provider_type, outcome).inc()
        async with self.database.worksession() as session:
            kept = await AlertRepository(session).record(
                alert_id,
                claimed_until,
                AlertAttempt(
                    alert_id=alert_id,
                    attempt=attempts,
                    outcome=outcome,
                    error=error,
                    duration_ms=round(duration_ms, 3),
                    attempted_at=now,
                ),
                **values,
            )
            if not kept:
                log.warning("alert %s was taken over by another sender; outcome dropped", alert_id)
            await session.commit()
        if kept and outcome != "retry":
            _log_outcome(alert, attempts, error)


def _log_outcome(alert: Alert, attempts: int, error: str | None) -> None:
    """The alert's end: delivered (INFO), or given up (ERROR: a person was not told)."""
    ids: dict[str, Any] = {
        "alert_id": alert.id,
        "provider_type": alert.provider_type,
        "provider_id": alert.provider_id,
        "incident_id": alert.incident_id,
        "monitor_id": alert.facts.get("monitor_id"),
        "project_id": alert.project_id,
        "attempts": attempts,
    }
    what = (
        f"alert {alert.id} ({alert.event}, incident {alert.incident_id}) "
        f"to {alert.provider_type} provider {alert.provider_id}"
    )
    if error is None:
        log_event(log, "alert.delivered", "%s delivered after %d attempt(s)", what, attempts, **ids)
    else:
        log_event(
            log,
            "alert.given_up",
            "%s given up after %d attempt(s): %s",
            what,
            attempts,
            error,
            level=logging.ERROR,
            **ids,
        )

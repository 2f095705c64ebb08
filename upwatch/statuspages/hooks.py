"""Webhook and Slack subscribers' notices: the sender of ``subscriber_deliveries``.

A webhook subscriber gets a JSON POST signed per the Standard Webhooks specification
(``webhook-id``, ``webhook-timestamp``, ``webhook-signature``: an HMAC-SHA256 of id,
timestamp and body with the subscription's secret), so a receiver can check it with the
reference libraries and refuse a replayed delivery; a Slack subscriber a message to its
incoming webhook. Every request goes through the network guard without following redirects.
A delivery is claimed by moving its due time (as alerts are), retried with back-off on a
network failure, 408, 425, 429 and 5xx with back-off and jitter, waiting at least what a
429 or 503 asks in ``Retry-After``, up to ``UPWATCH_ALERT_MAX_ATTEMPTS`` times.
"""

from __future__ import annotations

import json
import logging
from datetime import timedelta
from typing import Any

import aiohttp

from upwatch.config import Settings
from upwatch.kit.backoff import backoff
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.net import NetworkGuard, guarded_session
from upwatch.kit.outbox import Wakeable
from upwatch.kit.webhooks import signed_headers
from upwatch.models import StatusPageSubscriber, SubscriberDelivery, SubscriberNotice
from upwatch.notifications.channels.base import TransportError, post_once
from upwatch.statuspages.outbox import NoticeRepository
from upwatch.statuspages.render import iso

log = logging.getLogger(__name__)


def webhook_body(notice: SubscriberNotice) -> bytes:
    """The JSON a webhook subscriber receives: ``type``, ``timestamp`` and ``data``."""
    value = {"type": notice.event, "timestamp": iso(notice.created_at), "data": notice.payload}
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def slack_body(notice: SubscriberNotice) -> bytes:
    return json.dumps({"text": f"*{notice.subject}*\n{notice.text}"}).encode()


class SubscriberHooks:
    def __init__(self, settings: Settings, db: Database, clock: Clock, guard: NetworkGuard):
        self.settings = settings
        self.db = db
        self.clock = clock
        self.guard = guard
        self.loop = Wakeable()
        self.http: aiohttp.ClientSession | None = None

    def start(self) -> None:
        """Create the guarded session; inside the running loop."""
        self.http = guarded_session(self.guard, limit=100)

    async def close(self) -> None:
        if self.http is not None:
            await self.http.close()

    def wake(self) -> None:
        self.loop.wake()

    async def run(self) -> None:
        await self.loop.drain_forever(self.deliver_due, lambda: self.settings.alert_poll_seconds)

    async def deliver_due(self, batch: int = 50) -> int:
        now = self.clock.now()
        async with self.db.workreader() as session:
            due = await NoticeRepository(session).due_deliveries(now, batch)
        attempted = 0
        claim = timedelta(seconds=self.settings.alert_claim_seconds)
        for delivery_id, due_at in due:
            async with self.db.worksession() as session:
                notices = NoticeRepository(session)
                won = await notices.claim_delivery(delivery_id, due_at, now + claim)
                await session.commit()
                found = await notices.delivery(delivery_id) if won else None
            if found is not None:
                attempted += 1
                await self._attempt(*found)
        return attempted

    async def _attempt(
        self, delivery: SubscriberDelivery, notice: SubscriberNotice, to: StatusPageSubscriber
    ) -> None:
        error: TransportError | None = None
        try:
            await self._send(delivery, notice, to)
        except TransportError as exc:
            error = exc
        now = self.clock.now()
        attempts = delivery.attempts + 1
        values: dict[str, Any] = {"attempts": attempts, "last_error": None}
        if error is None:
            values.update(status="sent", sent_at=now)
        elif not error.retryable or attempts >= self.settings.alert_max_attempts:
            values.update(status="failed", last_error=error.message)
            log.warning("notice %s to subscriber %s failed: %s", notice.id, to.id, error.message)
        else:
            # Jittered: the subscribers of one page do not all come back at the same moment.
            wait = backoff(
                attempts, self.settings.alert_retry_seconds, self.settings.alert_retry_max_seconds
            )
            if error.retry_after is not None:
                # The receiver's own word, up to the longest back-off.
                asked = min(error.retry_after, self.settings.alert_retry_max_seconds)
                wait = max(wait, timedelta(seconds=asked))
            values.update(next_attempt_at=now + wait)
            values.update(last_error=error.message)
        async with self.db.worksession() as session:
            await NoticeRepository(session).record(delivery.id, values)
            await session.commit()

    async def _send(
        self, delivery: SubscriberDelivery, notice: SubscriberNotice, to: StatusPageSubscriber
    ) -> None:
        label = f"{to.kind} subscriber"
        if to.url is None:
            raise TransportError(f"{label}: it has no URL", retryable=False)
        if self.http is None:
            raise TransportError(f"{label}: the sender is not started", retryable=True)
        if to.kind == "webhook" and to.secret:
            body = webhook_body(notice)
            headers = signed_headers(to.secret, delivery.message_id, self.clock.now(), body)
        else:
            body, headers = slack_body(notice), {}
        # The URL is a secret for Slack (its path is the credential): errors never quote it.
        await post_once(
            self.http,
            to.url,
            data=body,
            headers={**headers, "Content-Type": "application/json"},
            seconds=self.settings.alert_timeout_seconds,
            clock=self.clock,
            label=label,
            secrets=[to.url],
        )

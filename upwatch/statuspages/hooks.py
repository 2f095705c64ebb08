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
from collections.abc import Mapping
from datetime import timedelta
from typing import Any

import aiohttp

from upwatch.config import Settings
from upwatch.kit.backoff import backoff
from upwatch.kit.clock import Clock
from upwatch.kit.db import Database
from upwatch.kit.net import NetworkGuard, TargetRefused, guarded_session, retry_after_seconds
from upwatch.kit.outbox import Wakeable
from upwatch.kit.webhooks import signed_headers
from upwatch.models import StatusPageSubscriber, SubscriberDelivery, SubscriberNotice
from upwatch.statuspages.outbox import NoticeRepository
from upwatch.statuspages.render import iso

log = logging.getLogger(__name__)

# A receiver's answer is read up to this much, then dropped.
MAX_ANSWER_BYTES = 64 * 1024


class Failed(Exception):
    def __init__(self, message: str, *, retryable: bool, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        # What a 429 or 503 asked for (Retry-After), in seconds.
        self.retry_after = retry_after


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
        error: Failed | None = None
        try:
            await self._send(delivery, notice, to)
        except Failed as exc:
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
        if to.url is None:
            raise Failed("the subscriber has no URL", retryable=False)
        if to.kind == "webhook" and to.secret:
            body = webhook_body(notice)
            headers = signed_headers(to.secret, delivery.message_id, self.clock.now(), body)
        else:
            body, headers = slack_body(notice), {}
        await self._post(to.url, body, {**headers, "Content-Type": "application/json"})

    async def _post(self, url: str, body: bytes, headers: Mapping[str, str]) -> None:
        """One POST; the errors never quote the URL (a Slack URL is a secret)."""
        if self.http is None:
            raise Failed("the sender is not started", retryable=True)
        timeout = aiohttp.ClientTimeout(total=self.settings.alert_timeout_seconds)
        try:
            async with self.http.post(
                url, data=body, headers=headers, timeout=timeout, allow_redirects=False
            ) as answer:
                status = answer.status
                asked = answer.headers.get("Retry-After") if status in (429, 503) else None
                await answer.content.read(MAX_ANSWER_BYTES)
        except TargetRefused as exc:
            raise Failed(f"the address is refused ({exc})", retryable=False) from None
        except aiohttp.InvalidURL:
            raise Failed("the URL is not valid", retryable=False) from None
        except (aiohttp.ClientError, OSError, TimeoutError) as exc:
            raise Failed(f"no delivery ({type(exc).__name__})", retryable=True) from None
        if 200 <= status < 300:
            return
        retryable = status in (408, 425, 429) or status >= 500
        delay = retry_after_seconds(asked, self.clock.now())
        raise Failed(f"HTTP {status}", retryable=retryable, retry_after=delay)

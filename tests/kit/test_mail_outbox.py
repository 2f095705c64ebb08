"""Mail that is never dropped: the outbox, retries, and delivery when SMTP comes back."""

from __future__ import annotations

import asyncio
import logging
from datetime import timedelta
from typing import Any

import httpx
import pytest
from sqlalchemy import select

from tests.app_settings import fixture_value, overriding
from tests.conftest import SignUp, SmtpServer, eventually
from upwatch.kit.clock import ManualClock
from upwatch.mail.sender import Mailer, retry_delay
from upwatch.models import MailMessage
from upwatch.runtime import Runtime


async def _outbox(runtime: Runtime) -> list[MailMessage]:
    async with runtime.db.sessionmaker() as session:
        return list((await session.scalars(select(MailMessage))).all())


class TestWhenSmtpIsDown:
    settings_overrides = overriding(smtp_port=fixture_value("late_smtp", "port"))

    async def test_a_failed_email_stays_in_the_outbox_and_goes_out_when_smtp_comes_back(
        self,
        client: httpx.AsyncClient,
        sign_up: SignUp,
        runtime: Runtime,
        late_smtp: SmtpServer,
        clock: ManualClock,
    ) -> None:
        await sign_up("alice@example.com")
        await client.post("/auth/forgot-password", json={"email": "alice@example.com"})

        async def attempted_once() -> bool:
            rows = await _outbox(runtime)
            return len(rows) == 1 and rows[0].attempts == 1

        await eventually(attempted_once)
        [message] = await _outbox(runtime)
        assert message.status == "pending"
        assert message.last_error
        assert message.next_attempt_at >= clock.now() + retry_delay(1, draw=lambda: 0.0)

        late_smtp.start()
        clock.advance(retry_delay(1, draw=lambda: 1.0) + timedelta(seconds=1))
        runtime.mailer.wake()
        await late_smtp.mailbox.wait_for("alice@example.com")

        # The server has the message a moment before the sender records the delivery.
        async def recorded_sent() -> bool:
            [row] = await _outbox(runtime)
            return row.status == "sent"

        await eventually(recorded_sent)
        [message] = await _outbox(runtime)
        assert (message.status, message.attempts) == ("sent", 2)
        assert len(late_smtp.mailbox.messages) == 1

    async def test_a_message_is_not_retried_before_its_back_off_has_passed(
        self, client: httpx.AsyncClient, sign_up: SignUp, runtime: Runtime, late_smtp: SmtpServer
    ) -> None:
        await sign_up("alice@example.com")
        await client.post("/auth/forgot-password", json={"email": "alice@example.com"})
        await eventually(lambda: _first_attempt_done(runtime))
        late_smtp.start()
        assert await runtime.mailer.deliver_due() == 0
        assert late_smtp.mailbox.messages == []


async def _first_attempt_done(runtime: Runtime) -> bool:
    rows = await _outbox(runtime)
    return bool(rows) and rows[0].attempts >= 1


class TestWithoutSmtpSettings:
    settings_overrides = overriding(smtp_host="")

    async def test_mail_is_kept_in_the_outbox_and_logged(
        self,
        client: httpx.AsyncClient,
        sign_up: SignUp,
        runtime: Runtime,
        caplog: pytest.LogCaptureFixture,
    ) -> None:
        await sign_up("alice@example.com")
        with caplog.at_level(logging.WARNING, logger="upwatch.mail.sender"):
            await client.post("/auth/forgot-password", json={"email": "alice@example.com"})
        await asyncio.sleep(0.3)  # one sender poll interval: nothing must go out
        [message] = await _outbox(runtime)
        assert (message.status, message.attempts) == ("pending", 0)
        assert "SMTP is not configured" in caplog.text


class RejectingHandler:
    async def handle_DATA(self, *_args: Any) -> str:  # noqa: N802
        return "554 5.7.1 Message rejected"


class TestWhenTheServerRejectsForGood:
    @pytest.fixture
    def rejecting_smtp(self, late_smtp: SmtpServer) -> SmtpServer:
        late_smtp.mailbox = RejectingHandler()  # type: ignore[assignment]
        late_smtp.start()
        return late_smtp

    settings_overrides = overriding(smtp_port=fixture_value("rejecting_smtp", "port"))

    async def test_a_permanent_rejection_marks_the_message_failed_without_retrying(
        self, client: httpx.AsyncClient, sign_up: SignUp, runtime: Runtime
    ) -> None:
        await sign_up("alice@example.com")
        await client.post("/auth/forgot-password", json={"email": "alice@example.com"})

        async def failed() -> bool:
            rows = await _outbox(runtime)
            return bool(rows) and rows[0].status == "failed"

        await eventually(failed)
        [message] = await _outbox(runtime)
        assert message.attempts == 1
        assert "554" in (message.last_error or "")


async def test_two_senders_never_deliver_the_same_message_twice(
    client: httpx.AsyncClient, sign_up: SignUp, runtime: Runtime, smtp: SmtpServer
) -> None:
    second = Mailer(runtime.settings, runtime.db, runtime.clock, runtime.metrics)
    await sign_up("alice@example.com")
    await client.post("/auth/forgot-password", json={"email": "alice@example.com"})
    await asyncio.gather(
        runtime.mailer.deliver_due(), second.deliver_due(), runtime.mailer.deliver_due()
    )
    await smtp.mailbox.wait_for("alice@example.com")
    await asyncio.sleep(0.2)
    assert len(smtp.mailbox.messages) == 1


def test_back_off_doubles_and_is_capped_at_an_hour() -> None:
    # The longest draw: the jitter only ever shortens a wait, down to half its step.
    delays = [retry_delay(n, draw=lambda: 1.0).total_seconds() for n in range(1, 10)]
    assert delays[:4] == [30, 60, 120, 240]
    assert max(delays) == 3600
    assert delays == sorted(delays)
    shortest = [retry_delay(n, draw=lambda: 0.0).total_seconds() for n in range(1, 10)]
    assert shortest == [delay / 2 for delay in delays]
